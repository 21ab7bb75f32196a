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
        if (gpu_ >= 0 && liveTicks_ % 20 == 0)
            fetchHistory();
        render();
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

namespace {
const char* const kLinkStates[] = {"up", "degraded", "down", "drained", "not in service"};
const char* const kGpuHealth[] = {"ok", "warning", "failed", "quarantined"};

QString cell(const QString& text, const QString& style = {})
{
    return style.isEmpty() ? QStringLiteral("<td>%1</td>").arg(text)
                           : QStringLiteral("<td style='%1'>%2</td>").arg(style, text);
}

QString swatch(QRgb c, const QString& text = QStringLiteral("&nbsp;&nbsp;"))
{
    return QStringLiteral("<span style='background:%1;color:#111'>%2</span>").arg(QColor(c).name(), text);
}

QString linkStateText(std::uint8_t s)
{
    return s < 5 ? QLatin1String(kLinkStates[s]) : QStringLiteral("no data");
}

QString linkStateStyle(std::uint8_t s)
{
    return s == 2 ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name())
           : s == 1 ? QStringLiteral("color:%1").arg(QColor(degradedColor()).name())
                    : QString();
}
}  // namespace

QString HallView::linksHtml(const QString& host) const
{
    // A host's backend links are its NICs' ("<host>-nicN/p1--<rtsw>/pM"): found through the
    // layout's parsed link ends, not by name prefix.
    const HallLayout& h = state_->layout();
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    QString out;
    int n = 0;
    for (size_t j = 0; j < h.linkEnds.size(); ++j) {
        if (h.linkEnds[j].host != host)
            continue;
        const auto u = j < util.size() ? util[j] : kNoData;
        const auto st = j < health.size() ? health[j] : kNoData;
        const QString name = h.links[static_cast<qsizetype>(j)];
        out += QStringLiteral("<tr>%1%2%3</tr>")
                   .arg(cell(name.section(QStringLiteral("--"), 0, 0).toHtmlEscaped() + QStringLiteral(" → ") +
                             name.section(QStringLiteral("--"), 1).toHtmlEscaped()),
                        cell(u == kNoData || st >= 3 ? QStringLiteral("–") : QStringLiteral("%1%").arg(u)),
                        cell(linkStateText(st), linkStateStyle(st)));
        ++n;
    }
    if (n == 0)
        return tr("<p><i>No backend links listed for %1.</i></p>").arg(host.toHtmlEscaped());
    return QStringLiteral("<table cellspacing=3><tr><th align=left>NIC → switch port</th><th>util</th><th>state</th></tr>%1</table>")
        .arg(out);
}

QString HallView::gpuLiveHtml(int gpu) const
{
    const HallLayout& h = state_->layout();
    auto byte = [&](Topic t) {
        const auto& v = state_->values(t);
        return gpu < static_cast<int>(v.size()) ? v[static_cast<size_t>(gpu)] : kNoData;
    };
    const auto util = byte(Topic::GpuUtil), temp = byte(Topic::GpuTemp), health = byte(Topic::GpuHealth);
    const auto& shown = state_->gpuUtilShown();
    const auto mean = gpu < static_cast<int>(shown.size()) ? shown[static_cast<size_t>(gpu)] : kNoData;
    QString rows;
    rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("utilization")),
        cell(util == kNoData ? tr("no data") : QStringLiteral("%1 %").arg(util) +
             (state_->utilWindow() > 1 && mean != kNoData ? tr(" (mean %1 %)").arg(mean) : QString())));
    rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("temperature")),
        cell(temp == kNoData ? tr("no data") : QStringLiteral("%1 °C").arg(temp)));
    rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("health")),
        cell(health < 4 ? QLatin1String(kGpuHealth[health]) : tr("unknown"),
             health == 2 ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name()) : QString()));
    // Power, memory, clocks and error counters: GET /api/v1/telemetry/gpus/<name>.
    const QJsonObject& t = gpuTelemetry_;
    auto num = [&](const char* k, const QString& fmt, double scale = 1.0) {
        const QJsonValue v = t.value(QLatin1String(k));
        return v.isDouble() ? fmt.arg(v.toDouble() * scale, 0, 'f', 0) : QStringLiteral("–");
    };
    if (!t.isEmpty()) {
        rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("power")), cell(num("power", QStringLiteral("%1 W"))));
        const QJsonValue used = t.value(u"fbUsedMiB"), free = t.value(u"fbFreeMiB");
        rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("memory")),
            cell(used.isDouble() && free.isDouble()
                     ? tr("%1 / %2 GiB").arg(used.toDouble() / 1024, 0, 'f', 1).arg((used.toDouble() + free.toDouble()) / 1024, 0, 'f', 0)
                     : QStringLiteral("–")));
        rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("SM clock")), cell(num("smClock", QStringLiteral("%1 MHz"))));
        rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("ECC corrected / uncorrected")),
            cell(num("eccSbe", QStringLiteral("%1")) + QStringLiteral(" / ") + num("eccDbe", QStringLiteral("%1"))));
    } else if (!gpuTelemetryError_.isEmpty()) {
        rows += QStringLiteral("<tr>%1%2</tr>").arg(cell(tr("power, memory")), cell(gpuTelemetryError_.toHtmlEscaped()));
    }
    Q_UNUSED(h);
    return QStringLiteral("<p><b>Live</b></p><table cellspacing=3>%1</table>").arg(rows);
}

QString HallView::gpuLinkHtml(int gpu) const
{
    // The GPU's own backend link: NIC i of its host is on rail i, the link of GPU i.
    const HallLayout& h = state_->layout();
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    for (size_t j = 0; j < h.linkEnds.size(); ++j) {
        if (h.linkEnds[j].gpu != gpu)
            continue;
        const QString name = h.links[static_cast<qsizetype>(j)];
        const auto u = j < util.size() ? util[j] : kNoData;
        const auto st = j < health.size() ? health[j] : kNoData;
        const QString peer = name.section(QStringLiteral("--"), 1);
        return QStringLiteral("<p><b>Backend link</b></p><table cellspacing=3>"
                              "<tr><td>NIC port</td><td>%1</td></tr>"
                              "<tr><td>peer switch / port</td><td>%2</td></tr>"
                              "<tr><td>state</td><td style='%3'>%4</td></tr>"
                              "<tr><td>utilization</td><td>%5</td></tr></table>")
            .arg(name.section(QStringLiteral("--"), 0, 0).toHtmlEscaped(), peer.toHtmlEscaped(), linkStateStyle(st),
                 linkStateText(st), u == kNoData || st >= 3 ? QStringLiteral("–") : QStringLiteral("%1 %").arg(u));
    }
    return tr("<p><b>Backend link:</b> <i>none in the hall for this GPU</i></p>");
}

QString HallView::rackFailuresHtml(int rack) const
{
    QString out;
    for (const Failure& f : state_->failures()->failures())
        if (f.rack == rack)
            out += QStringLiteral("<li style='color:%1'>%2 <b>%3</b>: %4</li>")
                       .arg(QColor(f.failed ? failedColor() : degradedColor()).name(), failureKindName(f.kind),
                            f.name.toHtmlEscaped(), f.what.toHtmlEscaped());
    return out.isEmpty() ? QString() : tr("<p><b>Open failures here</b></p><ul>%1</ul>").arg(out);
}

QString HallView::elevationHtml(int rack) const
{
    // Top to bottom as in the rack: switches (RTSW, frontend, storage), then hosts by slot,
    // highest first, each with its state and, for hosts, its GPUs' live health.
    const HallLayout& h = state_->layout();
    const auto& r = h.racks[static_cast<size_t>(rack)];
    const auto& gh = state_->values(Topic::GpuHealth);
    const auto& gu = state_->gpuUtilShown();
    const auto& lh = state_->values(Topic::LinkHealth);
    QString rows;
    auto stateCell = [](const QString& st) {
        const bool bad = st == u"failed" || st == u"quarantined" || st == u"down";
        return cell(st.toHtmlEscaped(), bad ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name())
                                            : QString());
    };
    QJsonArray switches = elevation_.value(u"switches").toArray();
    if (switches.isEmpty() && !r.rtsw.isEmpty())
        switches.append(QJsonObject{{u"name"_qs, r.rtsw}, {u"role"_qs, u"rtsw"_qs}});
    for (const auto& v : switches) {
        const QJsonObject sw = v.toObject();
        const QString name = sw.value(u"name").toString();
        QString links;
        if (const int si = h.switchIndex(name); si >= 0) {
            int up = 0, down = 0, other = 0;
            for (size_t j = 0; j < h.linkEnds.size(); ++j)
                if (h.linkEnds[j].aSwitch == si || h.linkEnds[j].bSwitch == si) {
                    const auto st = j < lh.size() ? lh[j] : kNoData;
                    (st == 0 || st == 1 ? up : st == 2 ? down : other) += 1;
                }
            links = tr("%1 links up, %2 down, %3 not in service").arg(up).arg(down).arg(other);
            if (down > 0)
                links = QStringLiteral("<span style='color:%1'>%2</span>").arg(QColor(failedColor()).name(), links);
        }
        // The rack's switches are in service through its cables: they are in the rack's state
        // (the stored switch state stays as applied, "planned").
        const QString stored = sw.value(u"state").toString();
        const QString role = sw.value(u"role").toString();
        const bool ofRack = (role == u"rtsw" || role == u"fsw") && !r.state.isEmpty();
        QString stateHtml = stateCell(ofRack ? r.state : stored);
        if (ofRack && stored != r.state)
            stateHtml = cell(QStringLiteral("%1 <span style='color:#888'>(with its rack; stored %2)</span>")
                                 .arg(r.state.toHtmlEscaped(), stored.isEmpty() ? QStringLiteral("–") : stored.toHtmlEscaped()),
                             r.state == u"failed" ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name())
                                                  : QString());
        rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                    .arg(cell(QStringLiteral("<b>%1</b>").arg(role.toUpper().toHtmlEscaped())), cell(name.toHtmlEscaped()),
                         stateHtml, cell(links));
    }
    // Hosts: from GET /hosts?rack= (slot, state) when it answered, else the hall's order.
    struct HostRow {
        QString name;
        int slot;
        QString state;
    };
    std::vector<HostRow> hosts;
    for (const auto& v : elevation_.value(u"hosts").toArray()) {
        const QJsonObject o = v.toObject();
        hosts.push_back({o.value(u"name").toString(), o.value(u"slot").toInt(), o.value(u"state").toString()});
    }
    if (hosts.empty())
        for (qsizetype i = 0; i < r.hosts.size(); ++i)
            hosts.push_back({r.hosts[i], static_cast<int>(i), QString()});
    std::sort(hosts.begin(), hosts.end(), [](const HostRow& a, const HostRow& b) { return a.slot > b.slot; });
    for (const auto& host : hosts) {
        QString gpus;
        for (int i = 0; i < 8; ++i) {
            const int g = h.gpuIndex(host.name + QStringLiteral("-gpu") + QString::number(i));
            if (g < 0)
                continue;
            const auto hv = g < static_cast<int>(gh.size()) ? gh[static_cast<size_t>(g)] : kNoData;
            const auto uv = g < static_cast<int>(gu.size()) ? gu[static_cast<size_t>(g)] : kNoData;
            const QRgb c = hv == 2 ? failedColor() : hv == 1 ? degradedColor() : hv == 3 ? quarantinedColor()
                           : rackReportsData(r.state) ? utilizationLut()[uv] : noDataColor();
            gpus += swatch(c, uv == kNoData || !rackReportsData(r.state) ? QStringLiteral("&nbsp;–&nbsp;")
                                                                         : QStringLiteral("%1").arg(uv, 3));
            gpus += QStringLiteral(" ");
        }
        rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                    .arg(cell(tr("slot %1").arg(host.slot)), cell(host.name.toHtmlEscaped()),
                         stateCell(host.state.isEmpty() ? QStringLiteral("–") : host.state),
                         cell(gpus.isEmpty() ? tr("no GPUs") : gpus));
    }
    for (const auto& v : elevation_.value(u"storage").toArray()) {
        const QJsonObject o = v.toObject();
        rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                    .arg(cell(tr("storage")), cell(o.value(u"name").toString().toHtmlEscaped()),
                         stateCell(o.value(u"state").toString()),
                         cell(tr("%1 TB").arg(o.value(u"capacityTb").toDouble(), 0, 'f', 0)));
    }
    if (rows.isEmpty())
        rows = tr("<tr><td><i>loading the rack's contents…</i></td></tr>");
    return tr("<p><b>Elevation</b> (top to bottom; GPU cells: utilization %, red failed)</p>"
              "<table cellspacing=4>%1</table>").arg(rows);
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
    if (rack_ >= 0)
        showRack(-2 - rack_);  // history of the GPU's rack, keeping the GPU view
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

QString HallView::historyChartsHtml() const
{
    if (!gpuHistoryLoaded_)
        return tr("<p><i>loading the last hour…</i></p>");
    if (!gpuHistoryError_.isEmpty())
        return tr("<p><b>Last hour:</b> <span style='color:#d33'>%1</span></p>").arg(gpuHistoryError_.toHtmlEscaped());
    // Label and figures on one line, the chart under them: the panel is ~300 px wide, too
    // narrow for label, chart and figures side by side.
    auto row = [](const QString& what, const char* img, const QString& summary) {
        return QStringLiteral("<tr><td>%1: %2<br><img src='%3' width=%4 height=%5></td></tr>")
            .arg(what, summary.toHtmlEscaped(), QLatin1String(img))
            .arg(kSparkSize.width())
            .arg(kSparkSize.height());
    };
    QString rows;
    rows += row(tr("utilization"), "spark:gpu-util", sparkSummary(seriesOf(gpuHistory_, "utilAvg"), QStringLiteral(" %")));
    rows += row(tr("temperature (max)"), "spark:gpu-temp", sparkSummary(seriesOf(gpuHistory_, "tempMax"), QStringLiteral(" °C")));
    rows += row(tr("power"), "spark:gpu-power", sparkSummary(seriesOf(gpuHistory_, "powerAvgW"), QStringLiteral(" W")));
    rows += row(tr("memory used"), "spark:gpu-mem", sparkSummary(seriesOf(gpuHistory_, "fbUsedPct"), QStringLiteral(" %")));
    if (!linkHistory_.isEmpty()) {
        int downMinutes = 0;
        double errors = 0;
        for (const auto& v : linkHistory_) {
            const QJsonObject o = v.toObject();
            downMinutes += o.value(u"downSamples").toInt() > 0 ? 1 : 0;
            errors += o.value(u"errors").toDouble();
        }
        QString summary = sparkSummary(seriesOf(linkHistory_, "utilAvg"), QStringLiteral(" %"));
        summary += tr(" · down in %1 min · %2 errors").arg(downMinutes).arg(errors, 0, 'f', 0);
        rows += row(tr("backend link utilization (red: minutes down)"), "spark:link-util", summary);
    }
    return tr("<p><b>Last hour</b> (a point a minute, newest right)</p><table cellspacing=2>%1</table>").arg(rows);
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
