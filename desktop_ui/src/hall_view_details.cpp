// The hall view's details panel as HTML (HallView, hall_view.hpp): a host's backend links, a
// GPU's live values and its link, a rack's failures and elevation, and the last hour's charts
// (sparklines under their figures). hall_view.cpp picks what to show and fetches it.
#include <QJsonArray>
#include <algorithm>

#include "loom/console/hall_view.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/sparkline.hpp"

namespace loom::console {

namespace {
const char* const kGpuHealth[] = {"ok", "warning", "failed", "quarantined"};

QString cell(const QString& text, const QString& style = {}) {
    return style.isEmpty() ? QStringLiteral("<td>%1</td>").arg(text)
                           : QStringLiteral("<td style='%1'>%2</td>").arg(style, text);
}

QString swatch(QRgb c, const QString& text = QStringLiteral("&nbsp;&nbsp;")) {
    return QStringLiteral("<span style='background:%1;color:#111'>%2</span>")
        .arg(QColor(c).name(), text);
}

QString linkStateText(std::uint8_t s) {
    return linkHealthWord(s);  // loomd's word (palette.hpp)
}

QString linkStateStyle(std::uint8_t s) {
    return s == 2   ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name())
           : s == 1 ? QStringLiteral("color:%1").arg(QColor(degradedColor()).name())
                    : QString();
}
}  // namespace

QString HallView::linksHtml(const QString& host) const {
    // A host's backend links are its NICs' ("<host>-nicN/p1--<rtsw>/pM"): found through the
    // layout's parsed link ends, not by name prefix.
    const HallLayout& h = state_->layout();
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    QString out;
    int n = 0;
    for (size_t j = 0; j < h.linkEnds.size(); ++j) {
        if (h.linkEnds[j].host != host) continue;
        const auto u = j < util.size() ? util[j] : kNoData;
        const auto st = j < health.size() ? health[j] : kNoData;
        const QString name = h.links[static_cast<qsizetype>(j)];
        out += QStringLiteral("<tr>%1%2%3</tr>")
                   .arg(cell(name.section(QStringLiteral("--"), 0, 0).toHtmlEscaped() +
                             QStringLiteral(" → ") +
                             name.section(QStringLiteral("--"), 1).toHtmlEscaped()),
                        cell(u == kNoData || st >= 3 ? QStringLiteral("–")
                                                     : QStringLiteral("%1%").arg(u)),
                        cell(linkStateText(st), linkStateStyle(st)));
        ++n;
    }
    if (n == 0)
        return tr("<p><i>No backend links listed for %1.</i></p>").arg(host.toHtmlEscaped());
    return QStringLiteral(
               "<table cellspacing=3><tr><th align=left>NIC → switch "
               "port</th><th>util</th><th>state</th></tr>%1</table>")
        .arg(out);
}

QString HallView::gpuLiveHtml(int gpu) const {
    const HallLayout& h = state_->layout();
    auto byte = [&](Topic t) {
        const auto& v = state_->values(t);
        return gpu < static_cast<int>(v.size()) ? v[static_cast<size_t>(gpu)] : kNoData;
    };
    const auto util = byte(Topic::GpuUtil), temp = byte(Topic::GpuTemp),
               health = byte(Topic::GpuHealth);
    const auto& shown = state_->gpuUtilShown();
    const auto mean =
        gpu < static_cast<int>(shown.size()) ? shown[static_cast<size_t>(gpu)] : kNoData;
    QString rows;
    rows += QStringLiteral("<tr>%1%2</tr>")
                .arg(cell(tr("utilization")),
                     cell(util == kNoData ? tr("no data")
                                          : QStringLiteral("%1 %").arg(util) +
                                                (state_->utilWindow() > 1 && mean != kNoData
                                                     ? tr(" (mean %1 %)").arg(mean)
                                                     : QString())));
    rows += QStringLiteral("<tr>%1%2</tr>")
                .arg(cell(tr("temperature")),
                     cell(temp == kNoData ? tr("no data") : QStringLiteral("%1 °C").arg(temp)));
    rows += QStringLiteral("<tr>%1%2</tr>")
                .arg(cell(tr("health")),
                     cell(health < 4 ? QLatin1String(kGpuHealth[health]) : tr("unknown"),
                          health == 2 ? QStringLiteral("color:%1;font-weight:bold")
                                            .arg(QColor(failedColor()).name())
                                      : QString()));
    // Power, memory, clocks and error counters: GET /api/v1/telemetry/gpus/<name>.
    const QJsonObject& t = gpuTelemetry_;
    auto num = [&](const char* k, const QString& fmt, double scale = 1.0) {
        const QJsonValue v = t.value(QLatin1String(k));
        return v.isDouble() ? fmt.arg(v.toDouble() * scale, 0, 'f', 0) : QStringLiteral("–");
    };
    if (!t.isEmpty()) {
        rows += QStringLiteral("<tr>%1%2</tr>")
                    .arg(cell(tr("power")), cell(num("power", QStringLiteral("%1 W"))));
        const QJsonValue used = t.value(u"fbUsedMiB"), free = t.value(u"fbFreeMiB");
        rows += QStringLiteral("<tr>%1%2</tr>")
                    .arg(cell(tr("memory")),
                         cell(used.isDouble() && free.isDouble()
                                  ? tr("%1 / %2 GiB")
                                        .arg(used.toDouble() / 1024, 0, 'f', 1)
                                        .arg((used.toDouble() + free.toDouble()) / 1024, 0, 'f', 0)
                                  : QStringLiteral("–")));
        rows += QStringLiteral("<tr>%1%2</tr>")
                    .arg(cell(tr("SM clock")), cell(num("smClock", QStringLiteral("%1 MHz"))));
        rows += QStringLiteral("<tr>%1%2</tr>")
                    .arg(cell(tr("ECC corrected / uncorrected")),
                         cell(num("eccSbe", QStringLiteral("%1")) + QStringLiteral(" / ") +
                              num("eccDbe", QStringLiteral("%1"))));
    } else if (!gpuTelemetryError_.isEmpty()) {
        rows += QStringLiteral("<tr>%1%2</tr>")
                    .arg(cell(tr("power, memory")), cell(gpuTelemetryError_.toHtmlEscaped()));
    }
    Q_UNUSED(h);
    return QStringLiteral("<p><b>Live</b></p><table cellspacing=3>%1</table>").arg(rows);
}

QString HallView::gpuLinkHtml(int gpu) const {
    // The GPU's own backend link: NIC i of its host is on rail i, the link of GPU i.
    const HallLayout& h = state_->layout();
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    for (size_t j = 0; j < h.linkEnds.size(); ++j) {
        if (h.linkEnds[j].gpu != gpu) continue;
        const QString name = h.links[static_cast<qsizetype>(j)];
        const auto u = j < util.size() ? util[j] : kNoData;
        const auto st = j < health.size() ? health[j] : kNoData;
        const QString peer = name.section(QStringLiteral("--"), 1);
        return QStringLiteral(
                   "<p><b>Backend link</b></p><table cellspacing=3>"
                   "<tr><td>NIC port</td><td>%1</td></tr>"
                   "<tr><td>peer switch / port</td><td>%2</td></tr>"
                   "<tr><td>state</td><td style='%3'>%4</td></tr>"
                   "<tr><td>utilization</td><td>%5</td></tr></table>")
            .arg(name.section(QStringLiteral("--"), 0, 0).toHtmlEscaped(), peer.toHtmlEscaped(),
                 linkStateStyle(st), linkStateText(st),
                 u == kNoData || st >= 3 ? QStringLiteral("–") : QStringLiteral("%1 %").arg(u));
    }
    return tr("<p><b>Backend link:</b> <i>none in the hall for this GPU</i></p>");
}

QString HallView::rackFailuresHtml(int rack) const {
    QString out;
    for (const Failure& f : state_->failures()->failures())
        if (f.rack == rack)
            out +=
                QStringLiteral("<li style='color:%1'>%2 <b>%3</b>: %4</li>")
                    .arg(QColor(f.failed ? failedColor() : degradedColor()).name(),
                         failureKindName(f.kind), f.name.toHtmlEscaped(), f.what.toHtmlEscaped());
    return out.isEmpty() ? QString() : tr("<p><b>Open failures here</b></p><ul>%1</ul>").arg(out);
}

QString HallView::elevationHtml(int rack) const {
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
        return cell(
            st.toHtmlEscaped(),
            bad ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name())
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
                links = QStringLiteral("<span style='color:%1'>%2</span>")
                            .arg(QColor(failedColor()).name(), links);
        }
        // loomd's words, never the rack's state read here: the switch's stored state (a rack's
        // switch has its rack's, docs/api.md "Hosts and switches follow their racks") and what the
        // fabric reads it as (GET /api/v1/fabric/topology `state`, as the fabric map says it).
        const QString stored = sw.value(u"state").toString();
        const QString role = sw.value(u"role").toString();
        QString stateHtml = stateCell(stored.isEmpty() ? QStringLiteral("–") : stored);
        if (const QString& word = state_->switchState(h.switchIndex(name)); !word.isEmpty())
            stateHtml = cell(
                QStringLiteral("%1 <span style='color:#888'>(fabric: %2)</span>")
                    .arg(stored.isEmpty() ? QStringLiteral("–") : stored.toHtmlEscaped(),
                         word.toHtmlEscaped()),
                stored == u"failed" || word == u"down"
                    ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name())
                    : QString());
        rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                    .arg(cell(QStringLiteral("<b>%1</b>").arg(role.toUpper().toHtmlEscaped())),
                         cell(name.toHtmlEscaped()), stateHtml, cell(links));
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
        hosts.push_back(
            {o.value(u"name").toString(), o.value(u"slot").toInt(), o.value(u"state").toString()});
    }
    if (hosts.empty())
        for (qsizetype i = 0; i < r.hosts.size(); ++i)
            hosts.push_back({r.hosts[i], static_cast<int>(i), QString()});
    std::sort(hosts.begin(), hosts.end(),
              [](const HostRow& a, const HostRow& b) { return a.slot > b.slot; });
    for (const auto& host : hosts) {
        QString gpus;
        for (int i = 0; i < 8; ++i) {
            const int g = h.gpuIndex(host.name + QStringLiteral("-gpu") + QString::number(i));
            if (g < 0) continue;
            const auto hv = g < static_cast<int>(gh.size()) ? gh[static_cast<size_t>(g)] : kNoData;
            const auto uv = g < static_cast<int>(gu.size()) ? gu[static_cast<size_t>(g)] : kNoData;
            const QRgb c = hv == 2                    ? failedColor()
                           : hv == 1                  ? degradedColor()
                           : hv == 3                  ? quarantinedColor()
                           : rackReportsData(r.state) ? utilizationLut()[uv]
                                                      : noDataColor();
            gpus += swatch(c, uv == kNoData || !rackReportsData(r.state)
                                  ? QStringLiteral("&nbsp;–&nbsp;")
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
    if (rows.isEmpty()) rows = tr("<tr><td><i>loading the rack's contents…</i></td></tr>");
    return tr("<p><b>Elevation</b> (top to bottom; GPU cells: utilization %, red failed)</p>"
              "<table cellspacing=4>%1</table>")
        .arg(rows);
}

QString HallView::historyChartsHtml() const {
    if (!gpuHistoryLoaded_) return tr("<p><i>loading the last hour…</i></p>");
    if (!gpuHistoryError_.isEmpty())
        return tr("<p><b>Last hour:</b> <span style='color:#d33'>%1</span></p>")
            .arg(gpuHistoryError_.toHtmlEscaped());
    // Label and figures on one line, the chart under them: the panel is ~300 px wide, too
    // narrow for label, chart and figures side by side.
    auto row = [](const QString& what, const char* img, const QString& summary) {
        return QStringLiteral("<tr><td>%1: %2<br><img src='%3' width=%4 height=%5></td></tr>")
            .arg(what, summary.toHtmlEscaped(), QLatin1String(img))
            .arg(kSparkSize.width())
            .arg(kSparkSize.height());
    };
    QString rows;
    rows += row(tr("utilization"), "spark:gpu-util",
                sparkSummary(seriesOf(gpuHistory_, "utilAvg"), QStringLiteral(" %")));
    rows += row(tr("temperature (max)"), "spark:gpu-temp",
                sparkSummary(seriesOf(gpuHistory_, "tempMax"), QStringLiteral(" °C")));
    rows += row(tr("power"), "spark:gpu-power",
                sparkSummary(seriesOf(gpuHistory_, "powerAvgW"), QStringLiteral(" W")));
    rows += row(tr("memory used"), "spark:gpu-mem",
                sparkSummary(seriesOf(gpuHistory_, "fbUsedPct"), QStringLiteral(" %")));
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
    return tr("<p><b>Last hour</b> (a point a minute, newest right)</p><table "
              "cellspacing=2>%1</table>")
        .arg(rows);
}

}  // namespace loom::console
