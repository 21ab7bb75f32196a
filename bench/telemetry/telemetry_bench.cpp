// Telemetry benchmarks on the 24k reference shape (8 zones x 192 racks, 24,576 GPUs, 1,716
// backend switches, 55,680 backend links), one core:
//   ParseOnly      the Prometheus parser alone over a full scrape (20 DCGM fields per GPU,
//                  12 counters per switch port)
//   ParseIngest    parse + store + detection (TelemetryHub::ingestText): goal >= 2 M samples/s
//   SimStep        simulator step writing a live-mode scrape (what loomd --simulate does at 1 Hz)
//   SimLoop        simulator step + ingest + tick: the whole 1 Hz simulated loop
//   Packed         all five packed arrays (what the stream tick reads)
//   Page/<kind>    one exporter page as loomd's scraper ingests it (the target's identity
//                  given), on the recorded pages of bench/telemetry/pages/: a dcgm-exporter host
//                  (8 H100s), a node_exporter InfiniBand page, an snmp_exporter if_mib walk of a
//                  128-port RTSW; CPU per page (the scrape farm's cost per target and second)
//   PageParse/<kind> the parser alone on the same page
//   Tick           the 1 Hz tick alone (time rules, rack/switch rollups, the per-GPU and
//                  per-link last hour), a minute completing every 60 iterations
// Counters: samples/s (items_per_second), samples per scrape, body MB, hub bytes.
//
//   build-*/bin/loom_telemetry_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "loom/telemetry/prom_text.hpp"
#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "loom/inventory/spec.hpp"
#include "synthetic_inventory.hpp"

namespace loom::telemetry {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000;

// The real reference spec (configs/clusters/meta-24k-roce.yaml), or the synthetic shape of the
// same size when it cannot be loaded.
const std::shared_ptr<const HallLayout>& layout24k() {
    static auto L = [] {
        auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) +
                                                  "/configs/clusters/meta-24k-roce.yaml");
        if (!inv) {
            std::fprintf(stderr, "meta-24k-roce.yaml: %s; using the synthetic 24k shape\n",
                         inv.error().toString().c_str());
            inv = testing::syntheticCluster({.zones = 8, .racksPerZone = 192});
        }
        auto l = std::make_shared<const HallLayout>(HallLayout::build(*inv));
        std::fprintf(stderr, "layout: %zu GPUs, %zu switch port slots, %zu backend links\n",
                     l->gpuCount(), l->portCount(), l->linkCount());
        return l;
    }();
    return L;
}

// Two consecutive full scrapes, so the ingest benchmark exercises counter rates.
const std::vector<std::string>& fullScrapes() {
    static std::vector<std::string> bodies = [] {
        SimulatorConfig c;
        c.fullFidelity = true;
        Simulator sim(layout24k(), c);
        std::vector<std::string> v(2);
        sim.step(kT0, v[0]);
        sim.step(kT0 + 1000, v[1]);
        return v;
    }();
    return bodies;
}

void ParseOnly(benchmark::State& state) {
    const auto& body = fullScrapes()[0];
    std::uint64_t n = 0;
    double sum = 0;
    for (auto _ : state) {
        auto r = parsePromText(body, [&](const PromSample& s) { sum += s.value; });
        if (!r) state.SkipWithError(r.error().message.c_str());
        n += r->samples;
    }
    benchmark::DoNotOptimize(sum);
    state.SetItemsProcessed(static_cast<std::int64_t>(n));
    state.SetBytesProcessed(static_cast<std::int64_t>(body.size() * state.iterations()));
    state.counters["samples_per_scrape"] = static_cast<double>(n) / state.iterations();
    state.counters["body_MB"] = body.size() / 1e6;
}
BENCHMARK(ParseOnly)->Unit(benchmark::kMillisecond)->MinTime(3);

void ParseIngest(benchmark::State& state) {
    const auto& bodies = fullScrapes();
    TelemetryHub hub(layout24k());
    std::uint64_t n = 0, unknown = 0;
    std::int64_t t = kT0;
    for (auto _ : state) {
        auto r = hub.ingestText(bodies[n % 2 == 0 ? 0 : 1], t += 1000);
        if (!r) state.SkipWithError(r.error().message.c_str());
        n += r->samples;
        unknown += r->unknownTotal();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(n));
    state.SetBytesProcessed(static_cast<std::int64_t>(bodies[0].size() * state.iterations()));
    state.counters["samples_per_scrape"] = static_cast<double>(n) / state.iterations();
    state.counters["unknown"] = static_cast<double>(unknown);
    state.counters["hub_MB"] = hub.memoryBytes() / 1e6;
}
BENCHMARK(ParseIngest)->Unit(benchmark::kMillisecond)->MinTime(3);

// The recorded exporter pages, and the target each was scraped as.
struct RecordedPage {
    const char* file;
    IngestIdentity id;
};
const RecordedPage kPages[] = {
    {"dcgm_exporter_h100.txt", {.host = "z1-r001-h0"}},
    {"node_exporter_infiniband.txt", {.host = "z1-r001-h0"}},
    {"snmp_exporter_if_mib_128.txt", {.switchName = "z1-r001-rtsw"}},
};
std::string readPage(const char* file) {
    std::ifstream f(std::string(LOOM_SOURCE_DIR) + "/bench/telemetry/pages/" + file);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void Page(benchmark::State& state) {
    const auto& pg = kPages[state.range(0)];
    const std::string body = readPage(pg.file);
    TelemetryHub hub(layout24k());
    std::int64_t t = kT0;
    IngestReport last;
    for (auto _ : state) {
        auto r = hub.ingestText(body, t += 1000, pg.id);
        if (!r) {
            state.SkipWithError(r.error().message.c_str());
            break;
        }
        last = *r;
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(body.size() * state.iterations()));
    state.SetItemsProcessed(static_cast<std::int64_t>(last.samples * state.iterations()));
    state.counters["samples"] = static_cast<double>(last.samples);
    state.counters["applied"] = static_cast<double>(last.applied);
    state.counters["ignored"] = static_cast<double>(last.ignored);
    state.counters["unknown"] = static_cast<double>(last.unknownTotal());
    state.SetLabel(pg.file);
}
BENCHMARK(Page)->DenseRange(0, 2)->ArgNames({"page"})->Unit(benchmark::kMicrosecond)->MinTime(2);

void PageParse(benchmark::State& state) {
    const auto& pg = kPages[state.range(0)];
    const std::string body = readPage(pg.file);
    double sum = 0;
    for (auto _ : state) {
        auto r = parsePromText(body, [&](const PromSample& s) { sum += s.value; });
        if (!r) {
            state.SkipWithError(r.error().message.c_str());
            break;
        }
    }
    benchmark::DoNotOptimize(sum);
    state.SetBytesProcessed(static_cast<std::int64_t>(body.size() * state.iterations()));
    state.SetLabel(pg.file);
}
BENCHMARK(PageParse)->DenseRange(0, 2)->ArgNames({"page"})->Unit(benchmark::kMicrosecond)->MinTime(2);

void SimStep(benchmark::State& state) {
    SimulatorConfig c;
    c.fullFidelity = state.range(0) != 0;
    Simulator sim(layout24k(), c);
    std::string body;
    std::int64_t t = kT0;
    for (auto _ : state) sim.step(t += 1000, body);
    state.SetItemsProcessed(static_cast<std::int64_t>(sim.stats().samplesLastStep * state.iterations()));
    state.counters["samples_per_step"] = static_cast<double>(sim.stats().samplesLastStep);
    state.counters["body_MB"] = body.size() / 1e6;
    state.counters["jobs"] = sim.stats().jobsRunning;
}
BENCHMARK(SimStep)->Arg(0)->Arg(1)->ArgNames({"full"})->Unit(benchmark::kMillisecond)->MinTime(3);

void SimLoop(benchmark::State& state) {
    Simulator sim(layout24k());
    TelemetryHub hub(layout24k());
    std::string body;
    std::int64_t t = kT0;
    std::uint64_t events = 0;
    hub.addEventListener([&](const FailureEvent&) { ++events; });
    for (auto _ : state) {
        t += 1000;
        sim.step(t, body);
        auto r = hub.ingestText(body, t);
        if (!r) state.SkipWithError(r.error().message.c_str());
        hub.tick(t);
    }
    // One iteration = one simulated second: its time in ms / 1000 is the fraction of a core.
    state.counters["samples_per_step"] = static_cast<double>(sim.stats().samplesLastStep);
    state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(SimLoop)->Unit(benchmark::kMillisecond)->MinTime(5);

void Tick(benchmark::State& state) {
    Simulator sim(layout24k());
    TelemetryHub hub(layout24k());
    std::string body;
    sim.step(kT0, body);
    (void)hub.ingestText(body, kT0);
    std::int64_t t = kT0;
    for (auto _ : state) {
        // Samples stay fresh for 30 s: re-ingest (untimed) so every tick samples live values.
        if ((t - kT0) % 20000 == 0) {
            state.PauseTiming();
            sim.step(t, body);
            (void)hub.ingestText(body, t);
            state.ResumeTiming();
        }
        hub.tick(t += 1000);
    }
    state.counters["hub_MB"] = static_cast<double>(hub.memoryBytes()) / 1e6;
    state.counters["history_points"] =
        static_cast<double>(hub.gpuHistory(0, t).size());
}
BENCHMARK(Tick)->Unit(benchmark::kMillisecond)->MinTime(3);

void Packed(benchmark::State& state) {
    Simulator sim(layout24k());
    TelemetryHub hub(layout24k());
    std::string body;
    for (int i = 0; i < 2; ++i) {
        sim.step(kT0 + i * 1000, body);
        (void)hub.ingestText(body, kT0 + i * 1000);
    }
    std::vector<std::uint8_t> buf;
    for (auto _ : state)
        for (int t = 0; t < kTopicCount; ++t) {
            hub.packedInto(static_cast<Topic>(t), buf, kT0 + 1000);
            benchmark::DoNotOptimize(buf.data());
        }
    state.counters["hub_MB"] = hub.memoryBytes() / 1e6;
}
BENCHMARK(Packed)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace loom::telemetry

BENCHMARK_MAIN();
