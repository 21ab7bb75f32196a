// The colour scales of the hall map's metric legends (utilization, temperature), computed once
// in loomd for every client (GET /api/v1/legends): the ramp's ends, the labelled ticks and the
// detection thresholds marked on it, so the console and the web dashboard colour a GPU at 88 °C
// alike and both mark where gpu_temp warns and goes critical (DetectionConfig, loomd.yaml's
// `detection.temperature`), instead of each carrying its own numbers.
//
//   for (const auto& s : legendScales(config.detection)) s.metric, s.min, s.max, s.thresholds
//
// The colours too (legendColours): the ramp's stops, the health, link-health and rack-state
// swatches and the failure marks, so neither client keeps a table of its own that could drift.
#pragma once

#include <string>
#include <vector>

#include "loom/telemetry/detection.hpp"

namespace loom::telemetry {

struct LegendThreshold {
    std::string name;      // what happens there: "gpu_temp warning", "gpu_temp critical"
    double value = 0;      // in the scale's unit
    std::string severity;  // "warning", "critical"
};

struct LegendScale {
    std::string metric;         // "utilization", "temperature" (the stream's gpu.util, gpu.temp)
    std::string unit;           // "%", "°C"
    double min = 0;             // the ramp's first colour (values below it take it too)
    double max = 0;             // the ramp's last colour
    std::vector<double> ticks;  // values labelled on the legend, min..max
    std::vector<LegendThreshold> thresholds;  // marked on the legend, inside min..max
};

// Utilization 0..100 % in quarters; temperature from 20 °C to 95 °C (or 5 °C past a critical
// threshold set higher) every 15 °C, with the gpu_temp warning and critical thresholds.
std::vector<LegendScale> legendScales(const DetectionConfig& detection);

// One colour of a discrete legend: the wire value (health byte, or the rack state's position
// in the lifecycle), its word and "#rrggbb".
struct LegendSwatch {
    int value = 0;
    std::string name;
    std::string colour;
    bool reportsData = true;  // rack states only: powered equipment that sends telemetry
};

struct LegendColours {
    std::vector<std::string> ramp;         // the metric ramp's stops, first (min) to last (max)
    std::vector<LegendSwatch> health;      // gpu.health: 0 ok, 1 warning, 2 failed, 3 quarantined
    std::vector<LegendSwatch> linkHealth;  // link.health: 0 up .. 4 not in service
    std::vector<LegendSwatch> rackStates;  // every rack lifecycle state, in lifecycle order
    // Drawn over every mode (in none of the ramps or swatches, and each with a shape cue).
    std::string failed, degraded, quarantined, noData, floor, background, jobHighlight;
};
LegendColours legendColours();

}  // namespace loom::telemetry
