// Colours of the maps: one 256-entry lookup table per metric, indexed by the wire byte, so
// colouring 24,576 GPUs is one table load per GPU.
#pragma once

#include <QColor>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace loom::console {

enum class Metric { Utilization, Temperature, Health, Provisioning };
QString metricName(Metric m);

using Lut = std::array<QRgb, 256>;
const Lut& utilizationLut();  // the utilization scale's ramp (0..100 %), 255 = no data
const Lut&
temperatureLut();  // the temperature scale's ramp (20..95 degC by default), 255 = no data

// The ramps' scales are loomd's (GET /api/v1/legends, telemetry/legends.hpp): ends, labelled
// ticks and the detection thresholds marked on the legend, so the console and the web colour
// and mark alike. Until loomd answers, the scales loomd serves for its default configuration.
struct ScaleMark {
    double value = 0;
    QString name;      // "gpu_temp warning"
    QString severity;  // "warning", "critical"
};
struct MetricScale {
    QString unit;
    double min = 0;
    double max = 100;
    std::vector<double> ticks;
    std::vector<ScaleMark> thresholds;
};
const MetricScale& metricScale(Metric m);  // Utilization or Temperature (others: utilization's)
// Applies loomd's answer — the scales and the colours (ramp stops, health, link-health and
// rack-state swatches, failure marks: telemetry/legends.cpp, the one place they are defined) —
// rebuilding the lookup tables; true when anything changed (maps recolour, legends repaint).
// Before the first answer the tables hold the values loomd serves.
bool applyLegendScales(const QJsonObject& answer);
const Lut& healthLut();      // 0 ok, 1 warning, 2 failed, 3 quarantined, 255 unknown
const Lut& linkHealthLut();  // 0 up, 1 degraded, 2 down, 3 drained, 4 not in service
// A link.health byte's word as loomd says it (the legends' linkHealth names: the words REST,
// the stream and loomctl use), never a copy of its own; before the legends arrive, "no data"
// for 255 and the number otherwise, as the web does.
QString linkHealthWord(std::uint8_t v);

// Rack lifecycle states (issue 5) to a small code and a colour.
std::uint8_t provisioningCode(const QString& state);
const Lut& provisioningLut();
const QStringList& provisioningStates();

QRgb noDataColor();
// Failure overlay colours: picked to be in none of the metric ramps or swatches, so a marker
// is never mistaken for a metric value.
QRgb failedColor();        // failed GPU / link down / failed rack or switch
QRgb degradedColor();      // warning, degraded
QRgb quarantinedColor();   // quarantined host
QRgb jobHighlightColor();  // the selected job's racks, switches and links on the maps
// A switch tile's colour, by the rule the web dashboard draws with (backend/web/palette.js
// switchTileColour; docs/api.md, "A switch on the maps"): loomd's word for the switch first
// (GET /api/v1/fabric/topology `state`, its rack's state read as its cables are): "down" red,
// "drained" and "not in service" their link-health swatches (states, never red); an up switch
// (or one loomd has not named yet) is red when loomd's failure list has it (`failed`), amber when
// any of its links is down or degraded (`linksBad`, loomd's link.health words), else "up" green.
QRgb switchTileColor(const QString& word, bool failed, int linksBad);
// Whether a rack in this lifecycle state has powered equipment that reports telemetry.
// Racks before "powered" (and decommissioned ones) draw as no data whatever the stream says.
bool rackReportsData(const QString& state);
QRgb floorColor();
QRgb backgroundColor();

// Legend entries for a metric: discrete swatches, or a ramp (first/last label).
struct LegendEntry {
    QColor color;
    QString label;
};
std::vector<LegendEntry> legendFor(Metric m);
bool legendIsRamp(Metric m);

}  // namespace loom::console
