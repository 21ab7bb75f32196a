#include "loom/console/hall_view.hpp"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QSplitter>
#include <QUrlQuery>
#include <QVBoxLayout>

namespace loom::console {

LegendWidget::LegendWidget(QWidget* parent) : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void LegendWidget::setMetric(Metric m)
{
    metric_ = m;
    updateGeometry();
    update();
}

QSize LegendWidget::sizeHint() const { return {600, 22}; }

void LegendWidget::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const auto entries = legendFor(metric_);
    const QFontMetrics fm(font());
    int x = 4;
    const int h = height();
    if (legendIsRamp(metric_)) {
        // A continuous ramp with its end labels, then the no-data swatch.
        const Lut& lut = metric_ == Metric::Utilization ? utilizationLut() : temperatureLut();
        const int lo = metric_ == Metric::Utilization ? 0 : 20;
        const int hi = metric_ == Metric::Utilization ? 100 : 95;
        p.setPen(palette().color(QPalette::WindowText));
        const QString l0 = entries.front().label;
        p.drawText(x, 0, fm.horizontalAdvance(l0) + 4, h, Qt::AlignVCenter, l0);
        x += fm.horizontalAdvance(l0) + 6;
        const int w = 160;
        for (int i = 0; i < w; ++i)
            p.fillRect(x + i, 4, 1, h - 8, QColor(lut[static_cast<size_t>(lo + (hi - lo) * i / (w - 1))]));
        x += w + 4;
        const QString l1 = entries[entries.size() - 2].label;
        p.drawText(x, 0, fm.horizontalAdvance(l1) + 4, h, Qt::AlignVCenter, l1);
        x += fm.horizontalAdvance(l1) + 16;
        p.fillRect(x, 4, 14, h - 8, entries.back().color);
        p.drawText(x + 18, 0, 80, h, Qt::AlignVCenter, entries.back().label);
        return;
    }
    for (const auto& e : entries) {
        p.fillRect(x, 4, 14, h - 8, e.color);
        p.setPen(palette().color(QPalette::WindowText));
        const int tw = fm.horizontalAdvance(e.label);
        p.drawText(x + 18, 0, tw + 2, h, Qt::AlignVCenter, e.label);
        x += 18 + tw + 12;
    }
}

HallView::HallView(ClusterState* state, ApiClient* api, QWidget* parent)
    : QWidget(parent), state_(state), api_(api)
{
    map_ = new HallMapWidget(state, this);
    legend_ = new LegendWidget(this);
    metricBox_ = new QComboBox(this);
    for (auto m : {Metric::Utilization, Metric::Temperature, Metric::Health, Metric::Provisioning})
        metricBox_->addItem(metricName(m), static_cast<int>(m));
    auto* fit = new QPushButton(tr("Fit"), this);
    fit->setToolTip(tr("Show the whole hall (0). Zoom with the wheel or +/-, drag to pan."));
    detail_ = new QTextBrowser(this);
    detail_->setOpenLinks(false);
    detail_->setMinimumWidth(300);
    detail_->setHtml(tr("<p>Click a GPU or rack for details.</p>"));

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Colour by:"), this));
    bar->addWidget(metricBox_);
    bar->addWidget(fit);
    bar->addSpacing(12);
    bar->addWidget(legend_, 1);
    auto* split = new QSplitter(this);
    split->addWidget(map_);
    split->addWidget(detail_);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    auto* lay = new QVBoxLayout(this);
    lay->setContentsMargins(4, 4, 4, 4);
    lay->addLayout(bar);
    lay->addWidget(split, 1);

    connect(metricBox_, &QComboBox::currentIndexChanged, this, [this](int) {
        const auto m = static_cast<Metric>(metricBox_->currentData().toInt());
        map_->setMetric(m);
        legend_->setMetric(m);
    });
    connect(fit, &QPushButton::clicked, map_, &HallMapWidget::fitAll);
    connect(map_, &HallMapWidget::gpuClicked, this, &HallView::showGpu);
    connect(map_, &HallMapWidget::rackClicked, this, &HallView::showRack);
    connect(state, &ClusterState::layoutChanged, this, [this] {
        gpu_ = rack_ = -1;
        detail_->setHtml(tr("<p>Click a GPU or rack for details.</p>"));
    });
}

bool HallView::focusLocation(const QString& location, const QString& rack)
{
    const HallLayout& h = state_->layout();
    if (const int g = h.gpuIndex(location); g >= 0) {
        map_->selectGpu(g);
        map_->centerOnRack(h.gpuRack[static_cast<size_t>(g)]);
        showGpu(g);
        return true;
    }
    int r = h.rackIndex(location);
    if (r < 0)
        r = h.hostRack.value(location.section(u'/', 0, 0), -1);
    if (r < 0)
        r = h.rackIndex(rack);
    if (r < 0)
        return false;
    map_->selectRack(r);
    map_->centerOnRack(r);
    showRack(r);
    return true;
}

QString HallView::linksHtml(const QString& host) const
{
    const HallLayout& h = state_->layout();
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    static const char* names[] = {"up", "degraded", "down", "drained", "not in service"};
    QString out;
    int n = 0;
    const QString prefix = host + u'/';
    for (qsizetype j = 0; j < h.links.size(); ++j) {
        if (!h.links[j].startsWith(prefix))
            continue;
        const auto u = j < static_cast<qsizetype>(util.size()) ? util[static_cast<size_t>(j)] : kNoData;
        const auto s = j < static_cast<qsizetype>(health.size()) ? health[static_cast<size_t>(j)] : kNoData;
        out += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td></tr>")
                   .arg(h.links[j].toHtmlEscaped(),
                        u == kNoData ? QStringLiteral("–") : QStringLiteral("%1%").arg(u),
                        s < 5 ? QLatin1String(names[s]) : QStringLiteral("unknown"));
        if (++n >= 16)
            break;
    }
    if (n == 0)
        return tr("<p><i>No backend links listed for %1.</i></p>").arg(host.toHtmlEscaped());
    return QStringLiteral("<table cellspacing=4><tr><th align=left>link</th><th>util</th><th>state</th></tr>%1</table>").arg(out);
}

void HallView::showGpu(int gpu)
{
    const HallLayout& h = state_->layout();
    if (gpu < 0 || gpu >= h.gpus.size())
        return;
    gpu_ = gpu;
    rack_ = h.gpuRack[static_cast<size_t>(gpu)];
    const int gen = ++generation_;
    const QString name = h.gpus[gpu];
    identityHtml_ = tr("<p><i>loading GPU details…</i></p>");
    xidHtml_ = tr("<p><i>loading events…</i></p>");
    historyHtml_.clear();
    render();
    if (!api_)
        return;
    QPointer<HallView> self(this);
    api_->get(QStringLiteral("/api/v1/gpus/") + QString::fromLatin1(QUrl::toPercentEncoding(name)),
              [self, gen](Result<QJsonDocument> r) {
                  if (!self || gen != self->generation_)
                      return;
                  if (!r) {
                      self->identityHtml_ = QStringLiteral("<p style='color:#d33'>%1</p>").arg(r.error().toHtmlEscaped());
                  } else {
                      const auto o = r->object();
                      auto f = [&](const char* k) {
                          const auto v = o.value(QLatin1String(k)).toVariant().toString();
                          return v.isEmpty() ? QStringLiteral("–") : v.toHtmlEscaped();
                      };
                      self->identityHtml_ =
                          QStringLiteral("<table><tr><td>host</td><td>%1</td></tr><tr><td>model</td><td>%2</td></tr>"
                                         "<tr><td>serial</td><td>%3</td></tr><tr><td>UUID</td><td>%4</td></tr>"
                                         "<tr><td>state</td><td>%5</td></tr></table>")
                              .arg(f("host"), f("model"), f("serial"), f("uuid"), f("state"));
                  }
                  self->render();
              });
    QUrlQuery q;
    q.addQueryItem(QStringLiteral("location"), name);
    q.addQueryItem(QStringLiteral("limit"), QStringLiteral("20"));
    api_->get(QStringLiteral("/api/v1/events?") + q.toString(QUrl::FullyEncoded),
              [self, gen](Result<QJsonDocument> r) {
                  if (!self || gen != self->generation_)
                      return;
                  if (!r) {
                      self->xidHtml_ = QStringLiteral("<p style='color:#d33'>%1</p>").arg(r.error().toHtmlEscaped());
                  } else {
                      QString last;
                      for (const auto& v : r->object().value(u"items").toArray()) {
                          const auto ev = parseEvent(v.toObject());
                          if (ev && ev->kind.contains(u"xid") &&
                              (last.isEmpty() || true)) {
                              last = QStringLiteral("%1 — %2").arg(ev->openedAt.toLocalTime().toString(Qt::ISODate), ev->message.toHtmlEscaped());
                              break;
                          }
                      }
                      self->xidHtml_ = QStringLiteral("<p><b>Last XID:</b> %1</p>").arg(last.isEmpty() ? QStringLiteral("none") : last);
                  }
                  self->render();
              });
    if (rack_ >= 0)
        showRack(-2 - rack_);  // history of the GPU's rack, keeping the GPU view
}

void HallView::showRack(int rackArg)
{
    // rackArg <= -2 encodes "rack history for the GPU view"; otherwise a plain rack view.
    const bool keepGpu = rackArg <= -2;
    const int rack = keepGpu ? -2 - rackArg : rackArg;
    const HallLayout& h = state_->layout();
    if (rack < 0 || rack >= static_cast<int>(h.racks.size()))
        return;
    if (!keepGpu) {
        gpu_ = -1;
        rack_ = rack;
        ++generation_;
        identityHtml_.clear();
        xidHtml_.clear();
    }
    const int gen = generation_;
    historyHtml_ = tr("<p><i>loading rack history…</i></p>");
    render();
    if (!api_)
        return;
    QPointer<HallView> self(this);
    QUrlQuery q;
    q.addQueryItem(QStringLiteral("location"), h.racks[static_cast<size_t>(rack)].name);
    q.addQueryItem(QStringLiteral("limit"), QStringLiteral("15"));
    api_->get(QStringLiteral("/api/v1/events?") + q.toString(QUrl::FullyEncoded),
              [self, gen](Result<QJsonDocument> r) {
                  if (!self || gen != self->generation_)
                      return;
                  if (!r) {
                      self->historyHtml_ = QStringLiteral("<p style='color:#d33'>%1</p>").arg(r.error().toHtmlEscaped());
                  } else {
                      QString rows;
                      for (const auto& v : r->object().value(u"items").toArray()) {
                          const auto ev = parseEvent(v.toObject());
                          if (!ev)
                              continue;
                          rows += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td></tr>")
                                      .arg(ev->openedAt.toLocalTime().toString(QStringLiteral("MM-dd hh:mm:ss")),
                                           ev->kind.toHtmlEscaped(), ev->message.toHtmlEscaped());
                      }
                      self->historyHtml_ = rows.isEmpty()
                                               ? QStringLiteral("<p><b>History:</b> no events</p>")
                                               : QStringLiteral("<p><b>History</b></p><table cellspacing=3>%1</table>").arg(rows);
                  }
                  self->render();
              });
}

void HallView::render()
{
    const HallLayout& h = state_->layout();
    if (rack_ < 0 || rack_ >= static_cast<int>(h.racks.size()))
        return;
    const auto& r = h.racks[static_cast<size_t>(rack_)];
    QString html;
    if (gpu_ >= 0) {
        const QString name = h.gpus[gpu_];
        const int local = gpu_ - r.gpuOffset;
        const int perHost = r.hosts.isEmpty() ? r.gpuCount : std::max<int>(1, r.gpuCount / static_cast<int>(r.hosts.size()));
        const QString host = r.hosts.isEmpty() ? QString() : r.hosts.value(local / perHost);
        html += QStringLiteral("<h3>%1</h3><p>rack <b>%2</b> (%3) · row %4 · zone %5</p>")
                    .arg(name.toHtmlEscaped(), r.name.toHtmlEscaped(), r.state.toHtmlEscaped(),
                         r.row.toHtmlEscaped(), r.zone.toHtmlEscaped());
        html += identityHtml_ + xidHtml_;
        html += QStringLiteral("<p><b>Links of %1</b></p>").arg(host.toHtmlEscaped()) + linksHtml(host);
    } else {
        html += QStringLiteral("<h3>%1</h3><p>state <b>%2</b> · row %3 · zone %4<br>RTSW %5<br>hosts: %6<br>GPUs: %7</p>")
                    .arg(r.name.toHtmlEscaped(), r.state.toHtmlEscaped(), r.row.toHtmlEscaped(),
                         r.zone.toHtmlEscaped(), r.rtsw.toHtmlEscaped(), r.hosts.join(QStringLiteral(", ")).toHtmlEscaped())
                    .arg(r.gpuCount);
        for (const auto& host : r.hosts)
            html += QStringLiteral("<p><b>Links of %1</b></p>").arg(host.toHtmlEscaped()) + linksHtml(host);
    }
    html += historyHtml_;
    detail_->setHtml(html);
}

}  // namespace loom::console
