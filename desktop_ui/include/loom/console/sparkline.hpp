// Sparklines for the detail panels: one series of the last hour (a value a minute, from
// GET /api/v1/telemetry/rollups?scope=gpu|link|rack|switch) drawn into a small QImage that the
// panels' HTML shows as an image resource (QTextDocument::addResource, <img src='spark:...'>).
//
//   auto util = seriesOf(items, "utilAvg");                 // 61 points, NaN where no value
//   QImage img = sparkline(util, 0, 100, 0xff4fc3f7, alarmsOf(items, "downSamples"));
#pragma once

#include <QImage>
#include <QJsonArray>
#include <QRgb>
#include <QSize>
#include <QString>
#include <vector>

namespace loom::console {

inline constexpr int kSparkPoints = 61;  // the last hour and the minute in progress
inline constexpr QSize kSparkSize{180, 30};

// `field` of each rollup item placed by its minute (the newest item is the last point), so a
// minute with no item stays a gap (NaN) instead of closing up the line.
std::vector<double> seriesOf(const QJsonArray& items, const char* field, int points = kSparkPoints);
// Points where `field` > 0 (minutes with the link down, with errors, ...).
std::vector<bool> alarmsOf(const QJsonArray& items, const char* field, int points = kSparkPoints);

// The series as a line from lo (bottom) to hi (top), values clamped, NaN gaps not bridged;
// alarm points as full-height bars in the failed colour behind the line. Transparent
// background, a faint baseline.
QImage sparkline(const std::vector<double>& values, double lo, double hi, QRgb colour,
                 const std::vector<bool>& alarms = {}, QSize size = kSparkSize);

// "now 77 % · max 98 % · min 12 %" over the series ("no data in the last hour" when empty).
QString sparkSummary(const std::vector<double>& values, const QString& unit, int decimals = 0);

}  // namespace loom::console
