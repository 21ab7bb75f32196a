#include "loom/console/palette.hpp"

#include <QJsonArray>
#include <QJsonValue>
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

namespace loom::console {

namespace {

QRgb lerp(QRgb a, QRgb b, double t) {
    auto mix = [t](int x, int y) { return static_cast<int>(x + (y - x) * t + 0.5); };
    return qRgb(mix(qRed(a), qRed(b)), mix(qGreen(a), qGreen(b)), mix(qBlue(a), qBlue(b)));
}

// The colours are loomd's (GET /api/v1/legends "colours", telemetry/legends.cpp), applied by
// applyLegendScales; what is below is only what the console draws before its first answer
// (and in tests without a loomd): the same values loomd serves.
std::vector<QRgb>& rampStops() {
    static std::vector<QRgb> stops = {qRgb(48, 18, 59),   qRgb(50, 101, 194), qRgb(33, 171, 168),
                                      qRgb(120, 209, 80), qRgb(250, 220, 40), qRgb(236, 90, 30)};
    return stops;
}

struct MarkColours {
    QRgb noData = qRgb(58, 58, 64);
    QRgb failed = qRgb(255, 23, 68);
    QRgb degraded = qRgb(255, 196, 0);
    QRgb quarantined = qRgb(213, 0, 249);
    QRgb jobHighlight = qRgb(140, 200, 255);
    QRgb floor = qRgb(32, 34, 40);
    QRgb background = qRgb(22, 23, 27);
};
MarkColours& marks() {
    static MarkColours m;
    return m;
}

QRgb ramp(double t) {
    const auto& stops = rampStops();
    const int n = static_cast<int>(stops.size()) - 1;
    t = std::clamp(t, 0.0, 1.0) * n;
    const int i = std::min(static_cast<int>(t), n - 1);
    return lerp(stops[static_cast<size_t>(i)], stops[static_cast<size_t>(i + 1)], t - i);
}

MetricScale defaultScale(Metric m) {
    // What loomd serves for its default detection config (telemetry/legends.cpp).
    if (m == Metric::Temperature)
        return {QStringLiteral("°C"),
                20,
                95,
                {20, 35, 50, 65, 80, 95},
                {{85, QStringLiteral("gpu_temp warning"), QStringLiteral("warning")},
                 {92, QStringLiteral("gpu_temp critical"), QStringLiteral("critical")}}};
    return {QStringLiteral("%"), 0, 100, {0, 25, 50, 75, 100}, {}};
}

MetricScale& scaleOf(Metric m) {
    static MetricScale util = defaultScale(Metric::Utilization);
    static MetricScale temp = defaultScale(Metric::Temperature);
    return m == Metric::Temperature ? temp : util;
}

// The wire byte is the value (% or °C; 255 no data): the ramp runs from the scale's min to max.
void fillRamp(Lut& l, const MetricScale& s, int lastValue) {
    l.fill(noDataColor());
    const double span = std::max(1e-9, s.max - s.min);
    for (int v = 0; v <= lastValue; ++v) l[static_cast<size_t>(v)] = ramp((v - s.min) / span);
}

Lut& utilLut() {
    static Lut l = [] {
        Lut x;
        fillRamp(x, scaleOf(Metric::Utilization), 100);
        return x;
    }();
    return l;
}

Lut& tempLut() {
    static Lut l = [] {
        Lut x;
        fillRamp(x, scaleOf(Metric::Temperature), 254);
        return x;
    }();
    return l;
}

Lut makeHealth() {
    Lut l;
    l.fill(noDataColor());
    l[0] = qRgb(46, 160, 67);
    l[1] = qRgb(230, 170, 20);
    l[2] = qRgb(220, 40, 40);
    l[3] = qRgb(160, 70, 200);
    return l;
}

Lut makeLinkHealth() {
    Lut l;
    l.fill(noDataColor());
    l[0] = qRgb(46, 160, 67);
    l[1] = qRgb(230, 170, 20);
    l[2] = qRgb(220, 40, 40);
    l[3] = qRgb(120, 120, 140);
    l[4] = qRgb(70, 70, 80);
    return l;
}

const QStringList kStates = {
    QStringLiteral("planned"),     QStringLiteral("delivered"),     QStringLiteral("racked"),
    QStringLiteral("cabled"),      QStringLiteral("powered"),       QStringLiteral("burn_in"),
    QStringLiteral("validated"),   QStringLiteral("in_service"),    QStringLiteral("failed"),
    QStringLiteral("repair"),      QStringLiteral("draining"),      QStringLiteral("drained"),
    QStringLiteral("maintenance"), QStringLiteral("decommissioned")};

Lut makeProvisioning() {
    Lut l;
    l.fill(noDataColor());
    const QRgb colors[] = {qRgb(70, 70, 90),   qRgb(90, 90, 130),   qRgb(100, 110, 170),
                           qRgb(90, 130, 200), qRgb(80, 160, 220),  qRgb(240, 190, 40),
                           qRgb(150, 210, 90), qRgb(46, 160, 67),   qRgb(220, 40, 40),
                           qRgb(235, 110, 30), qRgb(170, 120, 200), qRgb(130, 90, 170),
                           qRgb(110, 80, 140), qRgb(40, 40, 40)};
    for (size_t i = 0; i < std::size(colors); ++i) l[i] = colors[i];
    return l;
}

Lut& healthTable() {
    static Lut l = makeHealth();
    return l;
}

Lut& linkHealthTable() {
    static Lut l = makeLinkHealth();
    return l;
}

std::array<QString, 256>& linkHealthNames() {
    static std::array<QString, 256> names = [] {
        std::array<QString, 256> n;
        n[255] = QStringLiteral("no data");
        return n;
    }();
    return names;
}

Lut& provisioningTable() {
    static Lut l = makeProvisioning();
    return l;
}

QStringList& darkStates() {
    static QStringList dark = {QStringLiteral("planned"), QStringLiteral("delivered"),
                               QStringLiteral("racked"), QStringLiteral("cabled"),
                               QStringLiteral("decommissioned")};
    return dark;
}

std::optional<QRgb> hexColour(const QJsonValue& v) {
    const QString s = v.toString();
    if (s.size() != 7 || !s.startsWith(u'#')) return std::nullopt;
    bool ok = false;
    const uint x = QStringView(s).mid(1).toUInt(&ok, 16);
    if (!ok) return std::nullopt;
    return qRgb(static_cast<int>((x >> 16) & 255), static_cast<int>((x >> 8) & 255),
                static_cast<int>(x & 255));
}

// loomd's colours (GET /api/v1/legends "colours"); true when any changed.
bool applyLegendColours(const QJsonObject& c) {
    if (c.isEmpty()) return false;  // an older loomd: keep what is drawn
    bool changed = false;
    auto set = [&changed](QRgb& slot, const QJsonValue& v) {
        if (auto rgb = hexColour(v); rgb && *rgb != slot) {
            slot = *rgb;
            changed = true;
        }
    };
    std::vector<QRgb> stops;
    for (const auto& v : c.value(u"ramp").toArray())
        if (auto rgb = hexColour(v)) stops.push_back(*rgb);
    if (stops.size() >= 2 && stops != rampStops()) {
        rampStops() = std::move(stops);
        changed = true;
    }
    const QJsonObject m = c.value(u"marks").toObject();
    MarkColours& mk = marks();
    set(mk.noData, m.value(u"noData"));
    set(mk.failed, m.value(u"failed"));
    set(mk.degraded, m.value(u"degraded"));
    set(mk.quarantined, m.value(u"quarantined"));
    set(mk.jobHighlight, m.value(u"jobHighlight"));
    set(mk.floor, m.value(u"floor"));
    set(mk.background, m.value(u"background"));
    auto table = [&](Lut& lut, const QJsonArray& swatches) {
        for (const auto& w : swatches) {
            const QJsonObject o = w.toObject();
            const int v = o.value(u"value").toInt(-1);
            if (v >= 0 && v < 255) set(lut[static_cast<size_t>(v)], o.value(u"colour"));
        }
    };
    table(healthTable(), c.value(u"health").toArray());
    table(linkHealthTable(), c.value(u"linkHealth").toArray());
    for (const auto& w : c.value(u"linkHealth").toArray()) {
        const QJsonObject o = w.toObject();
        const int v = o.value(u"value").toInt(-1);
        const QString name = o.value(u"name").toString();
        if (v >= 0 && v <= 255 && !name.isEmpty() &&
            linkHealthNames()[static_cast<size_t>(v)] != name) {
            linkHealthNames()[static_cast<size_t>(v)] = name;
            changed = true;
        }
    }
    // Rack states by name: the console's codes are its own order of the same names.
    const QJsonArray states = c.value(u"rackStates").toArray();
    QStringList dark;
    for (const auto& w : states) {
        const QJsonObject o = w.toObject();
        const QString name = o.value(u"name").toString();
        const auto code = kStates.indexOf(name);
        if (code >= 0) set(provisioningTable()[static_cast<size_t>(code)], o.value(u"colour"));
        if (!o.value(u"reportsData").toBool(true)) dark.push_back(name);
    }
    if (!states.isEmpty() && dark != darkStates()) {
        darkStates() = dark;
        changed = true;
    }
    for (Lut* l : {&healthTable(), &linkHealthTable(), &provisioningTable()}) (*l)[255] = mk.noData;
    return changed;
}

}  // namespace

QString metricName(Metric m) {
    switch (m) {
        case Metric::Utilization:
            return QStringLiteral("Utilization");
        case Metric::Temperature:
            return QStringLiteral("Temperature");
        case Metric::Health:
            return QStringLiteral("Health");
        case Metric::Provisioning:
            return QStringLiteral("Provisioning state");
    }
    return {};
}

QRgb noDataColor() { return marks().noData; }
QRgb failedColor() { return marks().failed; }
QRgb degradedColor() { return marks().degraded; }
QRgb quarantinedColor() { return marks().quarantined; }
// Near-white blue: apart from the failure colours, the metric ramps and the cyan selection.
QRgb jobHighlightColor() { return marks().jobHighlight; }

QRgb switchTileColor(const QString& word, bool failed, int linksBad) {
    if (word == u"down") return failedColor();
    // Drained, not in service: the swatch of the link-health byte loomd names with the same word
    // (GET /api/v1/legends words."link.health"), so a switch reads as its cables do — found by
    // loomd's word, not by a copy of its list here (ConsoleLegends.TheLinkWordsAreLoomds).
    if (!word.isEmpty() && word != u"up") {
        const auto& names = linkHealthNames();
        for (std::size_t v = 0; v < names.size(); ++v)
            if (names[v] == word) return linkHealthLut()[v];
    }
    if (failed) return failedColor();
    if (linksBad > 0) return degradedColor();
    return linkHealthLut()[0];
}

bool rackReportsData(const QString& state) {
    return !state.isEmpty() && !darkStates().contains(state);
}
QRgb floorColor() { return marks().floor; }
QRgb backgroundColor() { return marks().background; }

const Lut& utilizationLut() { return utilLut(); }
const Lut& temperatureLut() { return tempLut(); }

const MetricScale& metricScale(Metric m) { return scaleOf(m); }

bool applyLegendScales(const QJsonObject& answer) {
    const QJsonObject scales = answer.value(u"scales").toObject();
    bool changed = applyLegendColours(answer.value(u"colours").toObject());
    // The words of every link.health byte, "no data" included (words."link.health").
    const QJsonObject words = answer.value(u"words").toObject().value(u"link.health").toObject();
    for (auto it = words.begin(); it != words.end(); ++it) {
        bool ok = false;
        const int v = it.key().toInt(&ok);
        const QString name = it.value().toString();
        if (ok && v >= 0 && v <= 255 && !name.isEmpty() &&
            linkHealthNames()[static_cast<size_t>(v)] != name) {
            linkHealthNames()[static_cast<size_t>(v)] = name;
            changed = true;
        }
    }
    if (changed) {  // the ramp's stops may have moved: both ramps again
        fillRamp(tempLut(), scaleOf(Metric::Temperature), 254);
        fillRamp(utilLut(), scaleOf(Metric::Utilization), 100);
    }
    for (const Metric m : {Metric::Utilization, Metric::Temperature}) {
        const QJsonObject o = scales
                                  .value(m == Metric::Temperature ? QLatin1String("temperature")
                                                                  : QLatin1String("utilization"))
                                  .toObject();
        if (!o.value(u"min").isDouble() || !o.value(u"max").isDouble())
            continue;  // an older loomd: keep the defaults
        MetricScale next;
        next.unit = o.value(u"unit").toString();
        next.min = o.value(u"min").toDouble();
        next.max = o.value(u"max").toDouble();
        if (!(next.max > next.min) || next.min < 0 || next.max > 254)
            continue;  // not a ramp over the wire's byte values
        for (const auto& t : o.value(u"ticks").toArray()) next.ticks.push_back(t.toDouble());
        if (next.ticks.empty()) next.ticks = {next.min, next.max};
        for (const auto& t : o.value(u"thresholds").toArray()) {
            const QJsonObject x = t.toObject();
            next.thresholds.push_back({x.value(u"value").toDouble(), x.value(u"name").toString(),
                                       x.value(u"severity").toString()});
        }
        MetricScale& cur = scaleOf(m);
        const bool same =
            cur.unit == next.unit && cur.min == next.min && cur.max == next.max &&
            cur.ticks == next.ticks && cur.thresholds.size() == next.thresholds.size() &&
            std::equal(cur.thresholds.begin(), cur.thresholds.end(), next.thresholds.begin(),
                       [](const ScaleMark& a, const ScaleMark& b) {
                           return a.value == b.value && a.name == b.name &&
                                  a.severity == b.severity;
                       });
        if (same) continue;
        cur = std::move(next);
        if (m == Metric::Temperature)
            fillRamp(tempLut(), cur, 254);
        else
            fillRamp(utilLut(), cur, 100);
        changed = true;
    }
    return changed;
}
const Lut& healthLut() { return healthTable(); }
const Lut& linkHealthLut() { return linkHealthTable(); }
QString linkHealthWord(std::uint8_t v) {
    const QString& w = linkHealthNames()[v];
    return w.isEmpty() ? QString::number(v) : w;
}
const Lut& provisioningLut() { return provisioningTable(); }
const QStringList& provisioningStates() { return kStates; }

std::uint8_t provisioningCode(const QString& state) {
    const auto i = kStates.indexOf(state);
    return i < 0 ? 255 : static_cast<std::uint8_t>(i);
}

bool legendIsRamp(Metric m) { return m == Metric::Utilization || m == Metric::Temperature; }

std::vector<LegendEntry> legendFor(Metric m) {
    std::vector<LegendEntry> out;
    switch (m) {
        case Metric::Utilization:
        case Metric::Temperature: {
            const MetricScale& s = scaleOf(m);
            const Lut& lut = m == Metric::Temperature ? temperatureLut() : utilizationLut();
            for (const double v : s.ticks)
                out.push_back({QColor(lut[static_cast<size_t>(
                                   std::clamp(static_cast<int>(std::lround(v)), 0, 254))]),
                               QStringLiteral("%1%2").arg(v).arg(s.unit)});
            break;
        }
        case Metric::Health: {
            const char* names[] = {"ok", "warning", "failed", "quarantined"};
            for (int i = 0; i < 4; ++i)
                out.push_back(
                    {QColor(healthLut()[static_cast<size_t>(i)]), QLatin1String(names[i])});
            break;
        }
        case Metric::Provisioning:
            for (int i = 0; i < kStates.size(); ++i)
                out.push_back({QColor(provisioningLut()[static_cast<size_t>(i)]), kStates[i]});
            break;
    }
    out.push_back({QColor(noDataColor()), QStringLiteral("no data")});
    return out;
}

}  // namespace loom::console
