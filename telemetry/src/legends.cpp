#include "loom/telemetry/legends.hpp"

#include <algorithm>
#include <cmath>

namespace loom::telemetry {

std::vector<LegendScale> legendScales(const DetectionConfig& d) {
    LegendScale util{
        .metric = "utilization", .unit = "%", .min = 0, .max = 100, .ticks = {}, .thresholds = {}};
    for (int v = 0; v <= 100; v += 25) util.ticks.push_back(v);

    // The ramp reaches its last colour at 95 °C, past the default critical threshold (92 °C),
    // so a GPU about to be critical is already near the end of the ramp; a site that sets a
    // higher threshold gets a ramp that still shows it.
    LegendScale temp{
        .metric = "temperature", .unit = "°C", .min = 20, .max = 95, .ticks = {}, .thresholds = {}};
    if (std::isfinite(d.tempCriticalC) && d.tempCriticalC + 3 > temp.max)
        temp.max = std::ceil((d.tempCriticalC + 5) / 5) * 5;
    for (double v = temp.min; v <= temp.max + 1e-9; v += 15) temp.ticks.push_back(v);
    if (temp.ticks.back() < temp.max) temp.ticks.push_back(temp.max);
    auto mark = [&temp](const char* name, double v, const char* severity) {
        if (std::isfinite(v) && v >= temp.min && v <= temp.max)
            temp.thresholds.push_back({name, v, severity});
    };
    mark("gpu_temp warning", d.tempWarningC, "warning");
    mark("gpu_temp critical", d.tempCriticalC, "critical");
    return {std::move(util), std::move(temp)};
}

}  // namespace loom::telemetry
