#include "loom/telemetry/failures.hpp"

#include <string>
#include <unordered_set>

namespace loom::telemetry {

namespace {
constexpr std::uint8_t kFailGpuWarning = 1, kFailGpuFailed = 2, kFailGpuQuarantined = 3;
constexpr std::uint8_t kFailLinkUp = 0, kFailLinkDegraded = 1, kFailLinkDown = 2;

std::uint8_t at(std::span<const std::uint8_t> a, std::size_t i) {
    return i < a.size() ? a[i] : 255;
}
}  // namespace

std::string_view failureKindName(FailureKind k) {
    switch (k) {
        case FailureKind::Gpu:
            return "gpu";
        case FailureKind::Host:
            return "host";
        case FailureKind::Link:
            return "link";
        case FailureKind::Switch:
            return "switch";
        case FailureKind::Rack:
            return "rack";
    }
    return "gpu";
}

FailureSummary summarizeFailures(const HallLayout& layout, std::span<const std::uint8_t> gpuHealth,
                                 std::span<const std::uint8_t> linkHealth,
                                 std::span<const FailureEvent> openEvents) {
    FailureSummary s;
    auto add = [&s](Failure f) {
        ++s.counts[static_cast<std::size_t>(f.kind)];
        s.items.push_back(std::move(f));
    };
    const auto& gpus = layout.gpuNames();
    const auto& gpuRack = layout.gpuRack();
    const auto& gpuHost = layout.gpuHost();
    std::vector<Failure> hosts;  // kept aside so that items stay ordered by kind
    std::string lastQuarantined;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
        const auto v = at(gpuHealth, g);
        if (v != kFailGpuWarning && v != kFailGpuFailed && v != kFailGpuQuarantined) continue;
        const auto rack = g < gpuRack.size() ? gpuRack[g] : kNoIndex;
        if (v == kFailGpuQuarantined) {
            const std::string& host = g < gpuHost.size() ? gpuHost[g] : gpus[g];
            if (host == lastQuarantined) continue;  // a host's GPUs are contiguous
            lastQuarantined = host;
            hosts.push_back({FailureKind::Host,
                             host,
                             "quarantined",
                             false,
                             rack,
                             static_cast<std::uint32_t>(g),
                             {}});
            continue;
        }
        add({FailureKind::Gpu,
             gpus[g],
             v == kFailGpuFailed ? "failed" : "warning",
             v == kFailGpuFailed,
             rack,
             static_cast<std::uint32_t>(g),
             {}});
    }
    std::unordered_set<std::string> named;  // copies: the items move as the vector grows
    for (auto& h : hosts) {
        named.insert(h.name);
        add(std::move(h));
    }
    // Open events on a host (its GPUs' health did not already count it).
    for (const auto& e : openEvents) {
        if (!e.open() || e.severity == Severity::Info || named.contains(e.location)) continue;
        const auto host = layout.hostByName(e.location);
        if (host == kNoIndex) continue;
        const auto g = layout.gpuByHost(e.location, 0);
        add({FailureKind::Host, e.location, e.kind, e.severity == Severity::Critical,
             g != kNoIndex && g < gpuRack.size() ? gpuRack[g] : kNoIndex, g, e.kind});
        named.insert(e.location);
    }

    const auto& links = layout.links();
    for (std::size_t l = 0; l < links.size(); ++l) {
        const auto v = at(linkHealth, l);
        if (v != kFailLinkDown && v != kFailLinkDegraded) continue;
        add({FailureKind::Link,
             links[l].name,
             v == kFailLinkDown ? "down" : "degraded",
             v == kFailLinkDown,
             links[l].rackIndex,
             links[l].gpu,
             {}});
    }

    // Switches: every link with data down, at least two of them (one link down is that link's
    // failure, not its switch's).
    const auto& switches = layout.switches();
    const auto& ports = layout.ports();
    std::unordered_set<std::string_view> downSwitches;
    for (std::size_t w = 0; w < switches.size(); ++w) {
        const auto& sw = switches[w];
        int live = 0, down = 0;
        for (std::uint32_t p = sw.portOffset; p < sw.portOffset + sw.portSlots && p < ports.size();
             ++p) {
            const auto l = ports[p].linkIndex;
            if (l == kNoIndex) continue;
            const auto v = at(linkHealth, l);
            if (v == kFailLinkUp || v == kFailLinkDegraded || v == kFailLinkDown) ++live;
            if (v == kFailLinkDown) ++down;
        }
        if (live >= 2 && down == live) {
            add({FailureKind::Switch,
                 sw.name,
                 "all " + std::to_string(live) + " links down",
                 true,
                 sw.rackIndex,
                 kNoIndex,
                 {}});
            downSwitches.insert(sw.name);
        }
    }
    for (const auto& e : openEvents) {
        if (!e.open() || e.severity == Severity::Info || downSwitches.contains(e.location))
            continue;
        const auto w = layout.switchByName(e.location);
        if (w == kNoIndex) continue;
        add({FailureKind::Switch, e.location, e.kind, e.severity == Severity::Critical,
             switches[w].rackIndex, kNoIndex, e.kind});
        downSwitches.insert(e.location);
    }

    const auto& racks = layout.racks();
    for (std::size_t r = 0; r < racks.size(); ++r)
        if (racks[r].state == "failed")
            add({FailureKind::Rack,
                 racks[r].name,
                 "failed",
                 true,
                 static_cast<std::uint32_t>(r),
                 kNoIndex,
                 {}});
    return s;
}

}  // namespace loom::telemetry
