// The heap of the jobs view's own routing beside the fabric state's (issue 14, session 15).
//
// loomd holds the live fabric's routing twice on purpose: the API's fabric state follows the
// stored link states, the jobs view also forces down the links telemetry reports down. Each
// holder builds what backend/src/api/live_topology.cpp builds (buildTopology with the stored link
// states, its arrays shared through one fabric::TopologyArrays), a LinkNameIndex and, on RoCE, a
// SummaryRouter. This driver builds them in that order for a spec and prints the heap each holder
// adds (glibc's in-use bytes: mallinfo2 uordblks + hblkhd, so mmapped arrays count):
//   fabric_state - the first holder (api_fabric): nothing to share yet;
//   jobs_view    - the second holder, as the jobs view builds it now;
//   jobs_view_unshared - the same with arrays of its own and the index that copied every link
//                  name (unordered_map<string, id>: the LinkNameIndex before session 15), i.e.
//                  the jobs view before, measured in the same run.
// --whole-hall routes with every backend cable and switch in service (the rollout done): the tables
// are larger; the default takes the spec's stored states (planned: not in service).
//
//   loom_jobs_routing_memory configs/clusters/meta-98k-roce.yaml [--whole-hall]
#include <malloc.h>

#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>

#include "lib/measure.hpp"
#include "loom/fabric/link_sync.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/inventory/spec.hpp"

namespace {

using namespace loom::fabric;

long heapBytes() {
    const auto m = mallinfo2();
    return static_cast<long>(m.uordblks + m.hblkhd);
}

// What one holder keeps: its router (which owns its topology) and its link-name index.
struct Holder {
    std::unique_ptr<SummaryRouter> summary;
    LinkNameIndex ids;
    std::unordered_map<std::string, std::int32_t> copiedIds;  // the index before session 15
};

Holder build(const loom::inventory::Inventory& inv, TopologyArrays* arrays, bool copyNames) {
    Holder h;
    auto topo = buildTopology(inv, {.plannedIsUp = true, .storedLinkStates = true});
    if (!topo) {
        std::fprintf(stderr, "%s\n", topo.error().toString().c_str());
        std::exit(1);
    }
    if (arrays) arrays->share(*topo);
    if (copyNames) {
        h.copiedIds.reserve(static_cast<std::size_t>(topo->linkCount()));
        for (std::int32_t l = 0; l < topo->linkCount(); ++l)
            h.copiedIds.emplace(topo->linkNames[l], l);
    } else {
        h.ids = LinkNameIndex(*topo);
    }
    h.summary = std::make_unique<SummaryRouter>(std::move(*topo));
    return h;
}

void report(const char* step, long bytes, double cpu, const Holder& h) {
    std::printf(
        "{\"step\":\"%s\",\"heap_mb\":%.1f,\"tables_mb\":%.1f,\"cpu_ms\":%.0f,\"load\":\"%s\"}\n",
        step, static_cast<double>(bytes) / (1 << 20),
        static_cast<double>(h.summary->memoryBytes()) / (1 << 20), cpu,
        loom::bench::loadAverage().c_str());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: loom_jobs_routing_memory SPEC [--whole-hall]\n");
        return 2;
    }
    bool wholeHall = false;
    for (int i = 2; i < argc; ++i) {
        if (std::string(argv[i]) == "--whole-hall") {
            wholeHall = true;
        } else {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    auto inv = loom::inventory::loadClusterSpecFile(argv[1]);
    if (!inv) {
        std::fprintf(stderr, "%s: %s\n", argv[1], inv.error().toString().c_str());
        return 2;
    }
    // The rollout done: every backend cable active and every switch in service (switches follow
    // their racks, and the live fabric reads a planned one as not in service: liveSwitchState).
    if (wholeHall) {
        for (auto& l : inv->links)
            if (l.network == loom::inventory::Network::Backend)
                l.state = loom::inventory::Text::shared("active");
        for (auto& s : inv->switches) s.state = loom::inventory::Text::shared("in_service");
    }
    TopologyArrays arrays;
    auto step = [&](const char* name, bool share, bool copyNames) {
        malloc_trim(0);
        const long before = heapBytes();
        const double c = loom::bench::cpuMs();
        auto h = std::make_unique<Holder>(build(*inv, share ? &arrays : nullptr, copyNames));
        const double cpu = loom::bench::cpuMs() - c;
        report(name, heapBytes() - before, cpu, *h);
        return h;
    };
    auto fabricState = step("fabric_state", true, false);
    auto jobsView = step("jobs_view", true, false);
    auto unshared = step("jobs_view_unshared", false, true);
    std::printf("{\"step\":\"peak\",\"peak_rss_mb\":%ld}\n", loom::bench::peakRssMb());
    return 0;
}
