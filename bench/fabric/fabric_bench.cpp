// Fabric engine on the 24k reference clusters (configs/clusters/meta-24k-{roce,ib}.yaml):
// full routing, verification, one-link incremental reroute, impact of a 4,096-GPU ring
// AllReduce, and peak RSS (VmHWM, reported as a counter).
//
//   loom_fabric_bench [--benchmark_filter=...]
//   loom_fabric_bench --write-ib-json=FILE [--ib-pods=N]   topology for opensm-compare
//   loom_fabric_bench --write-ibsim=FILE [--ib-pods=N]     ibsim net file (fabric::ibsimNet)
#include "lib/measure.hpp"

#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "loom/fabric/export.hpp"
#include "loom/fabric/impact.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/fabric/verify.hpp"
#include "loom/inventory/spec.hpp"

namespace {

using namespace loom::fabric;

using loom::bench::peakRssMb;

loom::inventory::Inventory load(bool roce) {
    std::string path = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" +
                       (roce ? "meta-24k-roce.yaml" : "meta-24k-ib.yaml");
    auto inv = loom::inventory::loadClusterSpecFile(path);
    if (inv) return std::move(*inv);
    std::cerr << path << ": " << inv.error().toString() << " -- using the built-in shape\n";
    return roce ? testbed::makeRoce(testbed::meta24kRoce()) : testbed::makeIb(testbed::meta24kIb());
}

Topology& topo(bool roce) {
    static std::unique_ptr<Topology> t[2];
    auto& slot = t[roce ? 0 : 1];
    if (!slot) {
        auto built = buildTopology(load(roce));
        if (!built) {
            std::cerr << built.error().toString() << '\n';
            std::exit(1);
        }
        slot = std::make_unique<Topology>(std::move(*built));
    }
    return *slot;
}

Router& router(bool roce) {
    static std::unique_ptr<Router> r[2];
    auto& slot = r[roce ? 0 : 1];
    if (!slot) slot = std::make_unique<Router>(topo(roce));
    return *slot;
}

void counters(benchmark::State& st, const Router& r) {
    st.counters["peak_rss_mb"] = peakRssMb();
    st.counters["tables_mb"] = static_cast<double>(r.memoryBytes()) / (1 << 20);
}

void BM_FullRouting(benchmark::State& st, bool roce) {
    Router& r = router(roce);
    for (auto _ : st) r.recomputeAll();
    counters(st, r);
    st.counters["switches"] = r.topology().switchCount();
    st.counters["links"] = r.topology().linkCount();
}

// The topology `--write-ib-json --ib-pods=N` writes for opensm-compare, routed by Loom.
void BM_FullRoutingIbPods(benchmark::State& st, int pods) {
    auto shape = testbed::meta24kIb();
    shape.pods = pods;
    auto built = buildTopology(testbed::makeIb(shape));
    Router r(std::move(*built));
    for (auto _ : st) r.recomputeAll();
    st.counters["hca_ports"] = r.topology().nicCount();
    st.counters["switches"] = r.topology().switchCount();
    counters(st, r);
}

void BM_Verify(benchmark::State& st, bool roce) {
    Router& r = router(roce);
    VerifyReport rep;
    for (auto _ : st) rep = verify(r);
    st.counters["violations"] = static_cast<double>(rep.loops + rep.downUpTurns + rep.rackPairsUnreachable);
    st.counters["max_link_routes"] = rep.maxLinkRoutes;
    st.counters["avg_link_routes"] = rep.avgLinkRoutes;
    counters(st, r);
}

// One link fails, then (next iteration) comes back: each iteration is one incremental reroute.
// tier 1: a rack/leaf uplink (the common failure); tier 2: a CTSW/spine uplink.
void BM_RerouteOneLink(benchmark::State& st, bool roce, int tier) {
    Router& r = router(roce);
    const auto& t = r.topology();
    auto sw = t.tierSwitches[tier][t.tierSwitches[tier].size() / 2];
    auto link = t.upLinks(sw)[0];
    bool down = true;
    UpdateStats last;
    for (auto _ : st) {
        last = r.setLinkState(link, down ? LinkState::Down : LinkState::Up);
        down = !down;
    }
    if (!down) r.setLinkState(link, LinkState::Up);
    st.counters["targets_recomputed"] = last.targetsRecomputed;
    st.counters["entries_recomputed"] = static_cast<double>(last.entriesRecomputed);
    counters(st, r);
}

// A rack goes out of / into service: all links of one RTSW/leaf in one batch.
void BM_RackBatch(benchmark::State& st, bool roce) {
    Router& r = router(roce);
    const auto& t = r.topology();
    auto sw = t.tierSwitches[1][t.tierSwitches[1].size() / 3];
    std::vector<std::pair<std::int32_t, LinkState>> down, up;
    for (auto i = t.adjOffset[sw]; i < t.adjOffset[sw + 1]; ++i) {
        down.emplace_back(t.adjLink[i], LinkState::NotInService);
        up.emplace_back(t.adjLink[i], LinkState::Up);
    }
    bool goDown = true;
    for (auto _ : st) {
        r.setLinkStates(goDown ? down : up);
        goDown = !goDown;
    }
    if (!goDown) r.setLinkStates(up);
    st.counters["links"] = static_cast<double>(down.size());
    counters(st, r);
}

// 4,096 GPUs = 512 hosts, contiguous (as a scheduler packs a job), ring AllReduce over 8 rails.
void BM_Impact4096(benchmark::State& st, bool roce) {
    Router& r = router(roce);
    std::vector<std::int32_t> hosts(512);
    for (int i = 0; i < 512; ++i) hosts[i] = i;
    double bw = 0;
    for (auto _ : st) {
        auto res = impact(r, hosts, Collective::AllReduce);
        bw = res ? res->busBwNormalized : -1;
    }
    st.counters["busbw_normalized"] = bw;
    counters(st, r);
}

void BM_DegradationMap(benchmark::State& st, bool roce) {
    Router& r = router(roce);
    for (auto _ : st) benchmark::DoNotOptimize(degradationMap(r));
    counters(st, r);
}

// The opensm LFT dump at 24k (3.9 GB, 2.0 GB without names) into a sink that only counts
// bytes: formatting cost without the disk (bench/fabric/export.sh measures the whole command).
void BM_OpensmDump(benchmark::State& st, bool names, int threads) {
    Router& r = router(false);
    struct CountingSink : ExportSink {
        std::size_t bytes = 0;
        loom::Result<void> open(const std::string&) override { return {}; }
        loom::Result<void> write(std::string_view c) override {
            bytes += c.size();
            return {};
        }
        loom::Result<void> close() override { return {}; }
    } sink;
    for (auto _ : st) {
        sink.bytes = 0;
        auto ok = writeExport(r, ExportFormat::Opensm, sink, {.threads = threads, .opensmNames = names});
        if (!ok) st.SkipWithError(ok.error().message.c_str());
    }
    st.counters["bytes"] = static_cast<double>(sink.bytes);
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * sink.bytes));
    counters(st, r);
}

int writeIbJson(const std::string& path, int pods, bool ibsim) {
    auto shape = testbed::meta24kIb();
    shape.pods = pods;
    auto built = buildTopology(pods == 24 ? load(false) : testbed::makeIb(shape));
    if (!built) {
        std::cerr << built.error().toString() << '\n';
        return 1;
    }
    const auto& t = *built;
    std::ofstream out(path);
    out << (ibsim ? ibsimNet(t) : opensmCompareJson(t));
    std::cerr << "wrote " << path << ": " << t.switchCount() << " switches, " << t.nicCount()
              << " HCA ports, " << t.linkCount() << " links\n";
    return out ? 0 : 1;
}

}  // namespace

BENCHMARK_CAPTURE(BM_FullRouting, roce24k, true)->Unit(benchmark::kMillisecond)->MinTime(2.0)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_FullRouting, ib24k, false)->Unit(benchmark::kMillisecond)->MinTime(2.0)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_FullRoutingIbPods, ib_pods4_4096hca, 4)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_FullRoutingIbPods, ib_pods8_8192hca, 8)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_Verify, roce24k, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Verify, ib24k, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RerouteOneLink, roce24k_rtsw_uplink, true, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RerouteOneLink, roce24k_ctsw_uplink, true, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RerouteOneLink, ib24k_leaf_uplink, false, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RerouteOneLink, ib24k_spine_uplink, false, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RackBatch, roce24k, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RackBatch, ib24k, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Impact4096, roce24k, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Impact4096, ib24k, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DegradationMap, roce24k, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DegradationMap, ib24k, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpensmDump, ib24k_names_1thread, true, 1)->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_OpensmDump, ib24k_names_2threads, true, 2)->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_OpensmDump, ib24k_nonames_2threads, false, 2)->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime()->UseRealTime();

int main(int argc, char** argv) {
    std::string ibJson, ibsimFile;
    int pods = 24;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--write-ib-json=", 16) == 0) ibJson = argv[i] + 16;
        if (std::strncmp(argv[i], "--write-ibsim=", 14) == 0) ibsimFile = argv[i] + 14;
        if (std::strncmp(argv[i], "--ib-pods=", 10) == 0) pods = std::atoi(argv[i] + 10);
    }
    if (!ibJson.empty()) return writeIbJson(ibJson, pods, false);
    if (!ibsimFile.empty()) return writeIbJson(ibsimFile, pods, true);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
