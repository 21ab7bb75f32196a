#include "loom/telemetry/legends.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "loom/provisioning/lifecycle.hpp"
#include "loom/telemetry/link_health_words.hpp"

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

namespace {

std::string legendHex(int r, int g, int b) {
    char s[8];
    std::snprintf(s, sizeof s, "#%02x%02x%02x", r, g, b);
    return s;
}

}  // namespace

LegendColours legendColours() {
    LegendColours c;
    // A perceptual ramp (viridis-like, dark to bright) so hot rows stand out on a dark floor.
    c.ramp = {legendHex(48, 18, 59),   legendHex(50, 101, 194), legendHex(33, 171, 168),
              legendHex(120, 209, 80), legendHex(250, 220, 40), legendHex(236, 90, 30)};
    c.health = {{0, "ok", legendHex(46, 160, 67)},
                {1, "warning", legendHex(230, 170, 20)},
                {2, "failed", legendHex(220, 40, 40)},
                {3, "quarantined", legendHex(160, 70, 200)}};
    // Named by the one link-health word list (link_health_words.hpp).
    const std::string linkRgb[] = {legendHex(46, 160, 67), legendHex(230, 170, 20),
                                   legendHex(220, 40, 40), legendHex(120, 120, 140),
                                   legendHex(70, 70, 80)};
    for (int v = 0; v < 5; ++v)
        c.linkHealth.push_back(
            {v, std::string(linkHealthWord(static_cast<std::uint8_t>(v))), linkRgb[v]});
    // By RackState (provisioning/lifecycle.hpp): blues while a rack is built up, amber burn-in,
    // green in service, red failed, orange repair, violets drained, near-black decommissioned.
    static constexpr std::array<std::array<int, 3>, provisioning::kRackStateCount> kRackRgb{
        {{70, 70, 90},
         {90, 90, 130},
         {100, 110, 170},
         {90, 130, 200},
         {80, 160, 220},
         {240, 190, 40},
         {150, 210, 90},
         {46, 160, 67},
         {220, 40, 40},
         {235, 110, 30},
         {170, 120, 200},
         {130, 90, 170},
         {110, 80, 140},
         {40, 40, 40}}};
    for (int i = 0; i < provisioning::kRackStateCount; ++i) {
        const auto s = static_cast<provisioning::RackState>(i);
        const auto& rgb = kRackRgb[static_cast<std::size_t>(i)];
        // Before power (and once decommissioned) nothing in the rack reports.
        const bool dark =
            s == provisioning::RackState::Planned || s == provisioning::RackState::Delivered ||
            s == provisioning::RackState::Racked || s == provisioning::RackState::Cabled ||
            s == provisioning::RackState::Decommissioned;
        c.rackStates.push_back(
            {i, std::string(provisioning::stateName(s)), legendHex(rgb[0], rgb[1], rgb[2]), !dark});
    }
    c.failed = legendHex(255, 23, 68);
    c.degraded = legendHex(255, 196, 0);
    c.quarantined = legendHex(213, 0, 249);
    c.noData = legendHex(58, 58, 64);
    c.floor = legendHex(32, 34, 40);
    c.background = legendHex(22, 23, 27);
    c.jobHighlight = legendHex(140, 200, 255);
    return c;
}

}  // namespace loom::telemetry
