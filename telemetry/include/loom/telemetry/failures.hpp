// Open failures by kind — GPUs, hosts, links, switches, racks — computed once, in loomd, from
// the live health arrays, the rack states and the open events: the one count that the console's
// and the web dashboard's failure counters show (GET /api/v1/failures), and the places their
// hall maps mark (a failure carries the rack and GPU it is drawn on, so a NIC cable down marks
// its GPU and rack, an RTSW uplink down its rack).
//
//   auto s = summarizeFailures(*hub.layout(), hub.packed(Topic::GpuHealth),
//                              hub.packed(Topic::LinkHealth), hub.openEvents());
//   s.counts[size_t(FailureKind::Link)]  // links down or degraded
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/telemetry/detection.hpp"
#include "loom/telemetry/hall_layout.hpp"

namespace loom::telemetry {

enum class FailureKind : std::uint8_t { Gpu, Host, Link, Switch, Rack };
inline constexpr std::size_t kFailureKindCount = 5;
std::string_view failureKindName(FailureKind k);  // "gpu", "host", "link", "switch", "rack"

struct Failure {
    FailureKind kind = FailureKind::Gpu;
    std::string name;     // the GPU, host, link, switch or rack
    std::string state;    // "failed", "warning", "quarantined", "down", "degraded", an event kind
    bool failed = false;  // red (failed, down) rather than amber (warning, degraded)
    std::uint32_t rack = kNoIndex;  // the rack it is drawn on (kNoIndex: none, e.g. a CTSW)
    std::uint32_t gpu = kNoIndex;   // the GPU it is drawn on (a GPU's own, a NIC link's GPU)
    std::string event;  // kind of the open event that made it a failure (hosts, switches)
};

struct FailureSummary {
    std::array<int, kFailureKindCount> counts{};
    std::vector<Failure> items;  // by kind, then in layout order
    int total() const {
        int n = 0;
        for (int c : counts) n += c;
        return n;
    }
};

// The rules (the console's failure counter used the same ones before it read this):
// - a GPU whose health is warning (1) or failed (2) is a GPU failure; quarantined GPUs (3) make
//   their host one host failure;
// - a link whose health is degraded (1) or down (2) is a link failure (drained and not in
//   service are states, not failures);
// - a switch all of whose links with data (at least two) are down is a switch failure;
// - a rack in lifecycle state `failed` is a rack failure (planned, not yet in service: never);
// - an open warning or critical event on a switch or a host not already counted adds it.
// `gpuHealth` / `linkHealth` are the packed arrays (docs/api.md), shorter ones read as no data.
FailureSummary summarizeFailures(const HallLayout& layout, std::span<const std::uint8_t> gpuHealth,
                                 std::span<const std::uint8_t> linkHealth,
                                 std::span<const FailureEvent> openEvents);

}  // namespace loom::telemetry
