// The hall view: the hall map with its metric, window and legend controls, and the details
// panel beside it, filled when a GPU or a rack is picked (fetching its telemetry, events and
// last hour over the API). The panel's HTML (links, live values, elevation, failures, the
// last hour's charts) is written in hall_view_details.cpp.
#include "loom/console/hall_view.hpp"

#include "loom/console/sparkline.hpp"
#include "loom/console/xid.hpp"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QTimer>
#include <QSplitter>
#include <QTextDocument>
#include <QUrlQuery>
#include <QVBoxLayout>

#include <algorithm>

namespace loom::console {

LegendWidget::LegendWidget(QWidget* parent) : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Minimum);
}

void LegendWidget::resizeEvent(QResizeEvent*)
{
    // As tall as its lines at this width (the toolbar row grows for the provisioning legend).
    const int h = heightForWidth(width());
    if (minimumHeight() != h)
        setMinimumHeight(h);
}

void LegendWidget::setMetric(Metric m)
{
    metric_ = m;
    setMinimumHeight(heightForWidth(width() > 0 ? width() : 600));
    updateGeometry();
    update();
}

QSize LegendWidget::sizeHint() const { return {600, kLineHeight * lineCount(600)}; }

QSize LegendWidget::minimumSizeHint() const { return {200, kLineHeight}; }

int LegendWidget::heightForWidth(int width) const { return kLineHeight * lineCount(width); }

int LegendWidget::lineCount(int width) const
{
    if (legendIsRamp(metric_))
        return 1;
    const QFontMetrics fm(font());
    int x = 4, lines = 1;
    for (const auto& e : legendFor(metric_)) {
        const int w = 18 + fm.horizontalAdvance(e.label) + 12;
        if (x + w > width && x > 4) {
            ++lines;
            x = 4;
        }
        x += w;
    }
    return lines;
}

void LegendWidget::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const auto entries = legendFor(metric_);
    const QFontMetrics fm(font());
    int x = 4;
    const int h = height();
    if (legendIsRamp(metric_)) {
        // A continuous ramp over loomd's scale with its end labels and the detection
        // thresholds marked on it (GET /api/v1/legends), then the no-data swatch.
        const Lut& lut = metric_ == Metric::Utilization ? utilizationLut() : temperatureLut();
        const MetricScale& sc = metricScale(metric_);
        const double lo = sc.min, hi = sc.max;
        p.setPen(palette().color(QPalette::WindowText));
        const QString l0 = entries.front().label;
        p.drawText(x, 0, fm.horizontalAdvance(l0) + 4, h, Qt::AlignVCenter, l0);
        x += fm.horizontalAdvance(l0) + 6;
        const int w = 160;
        for (int i = 0; i < w; ++i)
            p.fillRect(x + i, 4, 1, h - 8,
                       QColor(lut[static_cast<size_t>(std::clamp(static_cast<int>(lo + (hi - lo) * i / (w - 1)), 0, 254))]));
        QStringList marks;
        for (const auto& t : sc.thresholds) {
            const int at = x + static_cast<int>((t.value - lo) / (hi - lo) * (w - 1));
            const QColor c(t.severity == u"critical" ? failedColor() : degradedColor());
            p.fillRect(at - 1, 1, 3, h - 2, QColor(255, 255, 255));
            p.fillRect(at, 2, 1, h - 4, c);
            marks << QStringLiteral("%1 %2%3").arg(t.severity).arg(t.value).arg(sc.unit);
        }
        x += w + 4;
        const QString l1 = entries[entries.size() - 2].label;
        p.drawText(x, 0, fm.horizontalAdvance(l1) + 4, h, Qt::AlignVCenter, l1);
        x += fm.horizontalAdvance(l1) + 16;
        if (!marks.isEmpty()) {
            const QString m = QStringLiteral("| ") + marks.join(QStringLiteral(" · "));
            p.drawText(x, 0, fm.horizontalAdvance(m) + 4, h, Qt::AlignVCenter, m);
            x += fm.horizontalAdvance(m) + 16;
        }
        p.fillRect(x, 4, 14, h - 8, entries.back().color);
        p.drawText(x + 18, 0, 80, h, Qt::AlignVCenter, entries.back().label);
        return;
    }
    int y = 0;
    for (const auto& e : entries) {
        const int tw = fm.horizontalAdvance(e.label);
        if (x + 18 + tw + 12 > width() && x > 4) {  // wrap, as lineCount() counted
            x = 4;
            y += kLineHeight;
        }
        p.fillRect(x, y + 4, 14, kLineHeight - 8, e.color);
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(x + 18, y, tw + 2, kLineHeight, Qt::AlignVCenter, e.label);
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
    windowBox_ = new QComboBox(this);
    windowBox_->setToolTip(tr("Utilization is the mean over this window, so the map does not flicker with every sample"));
    for (const auto& [secs, label] : {std::pair{1, tr("1 s (as sent)")}, std::pair{10, tr("mean 10 s")},
                                      std::pair{30, tr("mean 30 s")}, std::pair{60, tr("mean 1 min")},
                                      std::pair{300, tr("mean 5 min")}})
        windowBox_->addItem(label, secs);
    {
        const int saved = QSettings().value(QStringLiteral("hall/utilWindowSeconds"), 30).toInt();
        windowBox_->setCurrentIndex(std::max(0, windowBox_->findData(saved)));
    }
    auto* fit = new QPushButton(tr("Fit"), this);
    fit->setToolTip(tr("Show the whole hall (0). Zoom with the wheel or +/-, drag to pan."));
    detail_ = new QTextBrowser(this);
    detail_->setOpenLinks(false);
    detail_->setMinimumWidth(300);
    detail_->setHtml(tr("<p>Click a GPU or rack for details.</p>"));

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Colour by:"), this));
    bar->addWidget(metricBox_);
    bar->addWidget(windowBox_);
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
    connect(windowBox_, &QComboBox::currentIndexChanged, this, [this](int) {
        QSettings().setValue(QStringLiteral("hall/utilWindowSeconds"), windowBox_->currentData().toInt());
        applyWindow();
    });
    connect(state, &ClusterState::helloReceived, this, &HallView::applyWindow);
    // The selected GPU's events follow loomd: a change there (or a re-read of the list after a
    // reconnect) fetches its last XID again.
    connect(state, &ClusterState::eventAdded, this, [this](const Event& e) {
        const HallLayout& h = state_->layout();
        if (gpu_ >= 0 && gpu_ < h.gpus.size() && e.location == h.gpus[gpu_])
            fetchLastXid();
    });
    connect(state, &ClusterState::eventsReset, this, [this] { fetchLastXid(); });
    applyWindow();
    connect(fit, &QPushButton::clicked, map_, &HallMapWidget::fitAll);
    connect(map_, &HallMapWidget::gpuClicked, this, &HallView::showGpu);
    connect(map_, &HallMapWidget::rackClicked, this, &HallView::showRack);
    connect(detail_, &QTextBrowser::anchorClicked, this, [this](const QUrl& u) {
        if (u.scheme() == u"rack")
            showRack(u.path().toInt());
    });
    // The panel's live values follow the stream (once a second, while it is on screen);
    // power and memory are fetched again every few seconds.
    auto* live = new QTimer(this);
    live->start(1000);
    connect(live, &QTimer::timeout, this, [this] {
        if (!isVisible() || rack_ < 0)
            return;
        if (gpu_ >= 0 && ++liveTicks_ % 3 == 0)
            fetchGpuTelemetry();
        // The last hour: every 20 s, or every 3 s while it has no point yet (a GPU that has
        // just gone into service reports within seconds; "no data" must not stay 20 s).
        if (gpu_ >= 0 && (liveTicks_ % 20 == 0 || (liveTicks_ % 3 == 0 && !historyHasPoints())))
            fetchHistory();
        render();
    });
    connect(state, &ClusterState::legendsChanged, this, [this] {
        map_->setMetric(map_->metric());  // recoloured with loomd's scale
        legend_->update();
    });
    connect(state, &ClusterState::layoutChanged, this, [this] {
        gpu_ = rack_ = -1;
        detail_->setHtml(tr("<p>Click a GPU or rack for details.</p>"));
    });
}

void HallView::applyWindow()
{
    // One sample per stream interval: the window in seconds is that many intervals.
    const int secs = windowBox_->currentData().toInt();
    const int interval = std::max(100, state_->intervalMs());
    state_->setUtilWindow(std::max(1, secs * 1000 / interval));
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
    gpuTelemetry_ = {};
    gpuTelemetryError_.clear();
    gpuHistory_ = linkHistory_ = {};
    gpuHistoryError_.clear();
    gpuHistoryLoaded_ = false;
    elevation_ = {};
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
    fetchGpuTelemetry();
    fetchHistory();
    fetchLastXid();
    if (rack_ >= 0)
        showRack(-2 - rack_);  // history of the GPU's rack, keeping the GPU view
}

void HallView::fetchLastXid()
{
    const HallLayout& h = state_->layout();
    if (!api_ || gpu_ < 0 || gpu_ >= h.gpus.size())
        return;
    const int gen = generation_;
    const QString name = h.gpus[gpu_];
    QPointer<HallView> self(this);
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
                          if (ev && ev->kind.contains(u"xid")) {
                              last = QStringLiteral("%1 (%2) — %3")
                                         .arg(ev->openedAt.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")),
                                              ev->open() ? tr("open") : tr("closed"), ev->message.toHtmlEscaped());
                              if (ev->xid >= 0)
                                  last += QStringLiteral("<br><i>%1</i>").arg(xidSummary(ev->xid).toHtmlEscaped());
                              break;
                          }
                      }
                      self->xidHtml_ = QStringLiteral("<p><b>Last XID:</b> %1</p>").arg(last.isEmpty() ? QStringLiteral("none") : last);
                  }
                  self->render();
              });
}

void HallView::fetchGpuTelemetry()
{
    if (!api_ || gpu_ < 0)
        return;
    const int gen = generation_;
    QPointer<HallView> self(this);
    api_->get(QStringLiteral("/api/v1/telemetry/gpus/") +
                  QString::fromLatin1(QUrl::toPercentEncoding(state_->layout().gpus.value(gpu_))),
              [self, gen](Result<QJsonDocument> r) {
                  if (!self || gen != self->generation_)
                      return;
                  if (r) {
                      self->gpuTelemetry_ = r->object();
                      self->gpuTelemetryError_.clear();
                  } else {
                      self->gpuTelemetry_ = {};
                      self->gpuTelemetryError_ = r.error();
                  }
                  self->render();
              });
}

namespace {
// The GPU's own backend link (NIC i of its host carries GPU i's traffic), -1 if none.
int linkOfGpu(const HallLayout& h, int gpu)
{
    for (size_t j = 0; j < h.linkEnds.size(); ++j)
        if (h.linkEnds[j].gpu == gpu)
            return static_cast<int>(j);
    return -1;
}
}  // namespace

bool HallView::historyHasPoints() const
{
    auto anyPoint = [](const QJsonArray& items) {
        for (const auto& v : items)
            if (v.toObject().value(u"utilAvg").isDouble())
                return true;
        return false;
    };
    if (!gpuHistoryLoaded_ || !anyPoint(gpuHistory_))
        return false;
    return linkOfGpu(state_->layout(), gpu_) < 0 || anyPoint(linkHistory_);
}

void HallView::fetchHistory()
{
    if (!api_ || gpu_ < 0)
        return;
    const int gen = generation_;
    const HallLayout& h = state_->layout();
    QPointer<HallView> self(this);
    auto rollups = [](const QString& scope, const QString& name) {
        QUrlQuery q;
        q.addQueryItem(QStringLiteral("scope"), scope);
        q.addQueryItem(QStringLiteral("name"), name);
        return QStringLiteral("/api/v1/telemetry/rollups?") + q.toString(QUrl::FullyEncoded);
    };
    api_->get(rollups(QStringLiteral("gpu"), h.gpus.value(gpu_)), [self, gen](Result<QJsonDocument> r) {
        if (!self || gen != self->generation_)
            return;
        self->gpuHistoryLoaded_ = true;
        if (r) {
            self->gpuHistory_ = r->object().value(u"items").toArray();
            self->gpuHistoryError_.clear();
        } else {
            self->gpuHistoryError_ = r.error();
        }
        self->updateSparklines();
        self->render();
    });
    if (const int link = linkOfGpu(h, gpu_); link >= 0)
        api_->get(rollups(QStringLiteral("link"), h.links.value(link)), [self, gen](Result<QJsonDocument> r) {
            if (!self || gen != self->generation_ || !r)
                return;
            self->linkHistory_ = r->object().value(u"items").toArray();
            self->updateSparklines();
            self->render();
        });
}

namespace {
constexpr QRgb kUtilLine = 0xff29b6f6, kTempLine = 0xffffa726, kPowerLine = 0xffab47bc, kMemLine = 0xff66bb6a;
}  // namespace

void HallView::updateSparklines()
{
    // Images live in the panel's document under fixed names; setHtml keeps added resources.
    QTextDocument* doc = detail_->document();
    auto put = [doc](const char* name, const QImage& img) {
        doc->addResource(QTextDocument::ImageResource, QUrl(QLatin1String(name)), QVariant(img));
    };
    const auto power = seriesOf(gpuHistory_, "powerAvgW");
    double pmax = 700;
    for (const double v : power)
        if (v == v)
            pmax = std::max(pmax, v * 1.1);
    put("spark:gpu-util", sparkline(seriesOf(gpuHistory_, "utilAvg"), 0, 100, kUtilLine));
    put("spark:gpu-temp", sparkline(seriesOf(gpuHistory_, "tempMax"), 20, 100, kTempLine));
    put("spark:gpu-power", sparkline(power, 0, pmax, kPowerLine));
    put("spark:gpu-mem", sparkline(seriesOf(gpuHistory_, "fbUsedPct"), 0, 100, kMemLine));
    put("spark:link-util", sparkline(seriesOf(linkHistory_, "utilAvg"), 0, 100, kUtilLine,
                                     alarmsOf(linkHistory_, "downSamples")));
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
        lemonsHtml_.clear();
        elevation_ = {};
        map_->selectRack(rack);
    }
    const int gen = generation_;
    historyHtml_ = tr("<p><i>loading rack history…</i></p>");
    render();
    if (!api_)
        return;
    QPointer<HallView> self(this);
    const QString rackName = h.racks[static_cast<size_t>(rack)].name;
    QUrlQuery q;
    q.addQueryItem(QStringLiteral("location"), rackName);
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
                          rows += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                                      .arg(ev->openedAt.toLocalTime().toString(QStringLiteral("MM-dd hh:mm:ss")),
                                           ev->kind.toHtmlEscaped(), ev->location.toHtmlEscaped(), ev->message.toHtmlEscaped());
                      }
                      self->historyHtml_ = rows.isEmpty()
                                               ? QStringLiteral("<p><b>History:</b> no events</p>")
                                               : QStringLiteral("<p><b>History</b></p><table cellspacing=3>%1</table>").arg(rows);
                  }
                  self->render();
              });
    if (keepGpu)
        return;
    // Lemons (issue 34): the rack's hosts and their GPUs that were the suspect, or failed, in
    // several jobs within loomd's window — one request for the rack.
    api_->get(QStringLiteral("/api/v1/lemons?rack=") + QString::fromLatin1(QUrl::toPercentEncoding(rackName)),
              [self, gen](Result<QJsonDocument> r) {
                  if (!self || gen != self->generation_ || !r)
                      return;
                  QString rows;
                  for (const auto& v : r->object().value(u"items").toArray()) {
                      const QJsonObject o = v.toObject();
                      const bool lemon = o.value(u"lemon").toBool();
                      rows += QStringLiteral("<li%1><b>%2</b>%3 %4</li>")
                                  .arg(lemon ? QStringLiteral(" style='color:%1'").arg(QColor(degradedColor()).name()) : QString(),
                                       o.value(u"name").toString().toHtmlEscaped(),
                                       lemon ? tr(" is a lemon:") : QStringLiteral(":"),
                                       o.value(u"message").toString().section(u':', 1).trimmed().toHtmlEscaped());
                  }
                  self->lemonsHtml_ = rows;
                  self->render();
              });
    // The elevation: what is in the rack, by slot, with states (inventory list filters).
    const QString enc = QString::fromLatin1(QUrl::toPercentEncoding(rackName));
    for (const auto& [kind, key] : {std::pair{QStringLiteral("hosts"), QStringLiteral("hosts")},
                                    std::pair{QStringLiteral("switches"), QStringLiteral("switches")},
                                    std::pair{QStringLiteral("storage_nodes"), QStringLiteral("storage")}}) {
        api_->get(QStringLiteral("/api/v1/%1?rack=%2&limit=200").arg(kind, enc), [self, gen, key](Result<QJsonDocument> r) {
            if (!self || gen != self->generation_ || !r)
                return;
            self->elevation_.insert(key, r->object().value(u"items").toArray());
            self->render();
        });
    }
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
        const QString host = name.left(name.lastIndexOf(u'-'));
        html += QStringLiteral("<h3>%1</h3><p>host <b>%2</b> · rack <b>%3</b> (%4) · row %5 · zone %6</p>")
                    .arg(name.toHtmlEscaped(), host.toHtmlEscaped(), r.name.toHtmlEscaped(), r.state.toHtmlEscaped(),
                         r.row.toHtmlEscaped(), r.zone.toHtmlEscaped());
        html += QStringLiteral("<p><a href='rack:%1'>Rack %2: elevation and links →</a></p>").arg(rack_).arg(r.name.toHtmlEscaped());
        html += gpuLiveHtml(gpu_) + gpuLinkHtml(gpu_) + historyChartsHtml() + xidHtml_ + identityHtml_;
        html += rackFailuresHtml(rack_);
        html += QStringLiteral("<p><b>All backend links of %1</b></p>").arg(host.toHtmlEscaped()) + linksHtml(host);
    } else {
        const bool storage = r.gpuCount == 0;
        html += QStringLiteral("<h3>%1</h3><p>%2 rack · state <b>%3</b> · row %4 · zone %5</p>")
                    .arg(r.name.toHtmlEscaped(), storage ? tr("storage") : tr("GPU"), r.state.toHtmlEscaped(),
                         r.row.toHtmlEscaped(), r.zone.toHtmlEscaped());
        if (!storage)
            html += tr("<p>%1 hosts · %2 GPUs · RTSW %3</p>").arg(r.hosts.size()).arg(r.gpuCount).arg(r.rtsw.toHtmlEscaped());
        html += rackFailuresHtml(rack_);
        html += lemonsHtml_.isEmpty()
                    ? tr("<p><b>Lemons:</b> none here</p>")
                    : tr("<p><b>Lemon strikes</b> (the suspect or a failure in several jobs)</p><ul>%1</ul>").arg(lemonsHtml_);
        html += elevationHtml(rack_);
        for (const auto& host : r.hosts)
            html += QStringLiteral("<p><b>Backend links of %1</b></p>").arg(host.toHtmlEscaped()) + linksHtml(host);
    }
    html += historyHtml_;
    // Live values re-render every second: keep the reader's scroll position.
    const int scroll = detail_->verticalScrollBar()->value();
    detail_->setHtml(html);
    detail_->verticalScrollBar()->setValue(scroll);
}

}  // namespace loom::console
