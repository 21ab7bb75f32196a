// Failure detection: the rule settings (the `detection:` section of configs/loomd.yaml) and
// the failure events the rules open and close.
//
// The rules run inside TelemetryHub as samples arrive (and on its once-a-second tick for rules
// that depend on time passing). There is at most one open event per (kind, location); it is
// closed when its condition clears, with hysteresis for thresholds so a value hovering at the
// threshold does not open and close an event every second.
//
//   detection:
//     xid: {critical: [48, 63, 64, 74, 79, 94, 95], ignore: [13, 31, 43, 45]}
//     temperature: {warningC: 85, criticalC: 92, hysteresisC: 5}
//     eccDoubleBit: true
//     rowRemapFailure: true
//     nvlinkCrcPerSecond: 100
//     linkDown: true
//     flapping: {transitions: 3, windowSeconds: 60, quietIntervals: 3, intervalSeconds: 10}
//     linkErrorsPerSecond: 10
//     pfcPausePerSecond: 100000
//     staleAfterSeconds: 30
//     throttledIntervals: 3
//     thresholdHoldDownSeconds: 60
//
// Kinds (location): gpu_xid, gpu_ecc_dbe, gpu_row_remap_failure, gpu_temp, gpu_nvlink_errors,
// gpu_throttled, gpu_missing (GPU name); link_down, link_flapping, link_errors, link_pfc_storm,
// link_speed (backend link name, or
// "<switch>/p<N>" for a port without a backend link).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/inventory/error.hpp"

namespace loom::telemetry {

enum class Severity : std::uint8_t { Info, Warning, Critical };
std::string_view severityName(Severity s);  // "info", "warning", "critical"
std::optional<Severity> parseSeverity(std::string_view s);

struct DetectionConfig {
    std::vector<int> criticalXids = {48, 63, 64, 74, 79, 94, 95};
    std::vector<int> ignoredXids = {13, 31, 43, 45};  // application faults, not the GPU's
    double tempWarningC = 85;
    double tempCriticalC = 92;
    double tempHysteresisC = 5;
    bool eccDoubleBit = true;
    bool rowRemapFailure = true;
    double nvlinkCrcPerSecond = 100;  // 0 disables
    bool linkDown = true;
    int flapTransitions = 3;  // within flapWindowSeconds; 0 disables
    double flapWindowSeconds = 60;
    // Hold-down: an open link_flapping event closes after this many quiet intervals (no state
    // change on either end of the link): 3 x 10 s by default.
    int flapQuietIntervals = 3;
    double flapIntervalSeconds = 10;
    double linkErrorsPerSecond = 10;    // in+out errors; 0 disables
    double pfcPausePerSecond = 100000;  // in+out PFC pause frames; 0 disables
    double staleAfterSeconds = 30;      // no sample for this long: "no data" in packed arrays
    // gpu_throttled opens when a thermal, power-brake or hw-slowdown clock event reason holds
    // for this many consecutive samples of DCGM_FI_DEV_CLOCKS_EVENT_REASONS; 0 disables.
    int throttledIntervals = 3;
    // Hold-down of the threshold events (gpu_temp, gpu_throttled, gpu_nvlink_errors): an open
    // one closes only after its condition has stayed clear (below the hysteresis) for this
    // long; a gpu_temp event keeps the highest severity it reached until then. One hot GPU is
    // one event until it has recovered. 0: close on the first clear sample.
    double thresholdHoldDownSeconds = 60;
    // Read from loomd.yaml's `detection:` section by backend/loomd_config.hpp.
};

struct FailureEvent {
    std::int64_t id = 0;  // assigned when stored (EventRepo); 0 before
    std::string kind;
    Severity severity = Severity::Warning;
    std::string location;  // GPU, link or port name
    std::string rack;      // empty when the location is not in a compute rack
    std::string zone;
    std::string message;
    std::int64_t openedAtMs = 0;                              // Unix epoch milliseconds
    std::int64_t closedAtMs = 0;                              // 0 while open
    std::vector<std::pair<std::string, std::string>> labels;  // e.g. {"xid","79"}
    // The hub's own key for this event ("<instance uuid>:<sequence>"): the writer stores it, so
    // a retried write is idempotent and the close finds exactly the row its open created.
    std::string key;
    // Who raised it, when not the hub's rules (empty: "telemetry"); the straggler finder's
    // events are "jobs" (they are not the hub's to restore after a restart).
    std::string source;
    // What reported the condition (issue 39): "push" (POST /api/v1/telemetry), "simulator", or
    // "scrape <target>"; empty for events stored before it was recorded. Only a sample of the
    // same kind of origin closes the event (docs/telemetry.md, "Evidence").
    std::string origin;
    // link_down: the ends that reported down, "nic" (the host end) and/or "<switch>/p<N>"; the
    // event closes only when every one of them says up, and a restored event holds them down
    // until they do.
    std::vector<std::string> downEnds;
    // Why the rules closed it ("recovered: ..."), for closes; empty while open.
    std::string closeReason;

    bool open() const { return closedAtMs == 0; }
};

// Every event kind the rules raise, plus `rack_transition` (provisioning); the API rejects any
// other `kind` filter naming these.
inline constexpr std::string_view kEventKinds[] = {
    "gpu_xid",           "gpu_ecc_dbe",   "gpu_row_remap_failure", "gpu_temp",
    "gpu_nvlink_errors", "gpu_throttled", "gpu_missing",           "link_down",
    "link_flapping",     "link_errors",   "link_pfc_storm",        "link_speed",
    "rack_transition"};

}  // namespace loom::telemetry
