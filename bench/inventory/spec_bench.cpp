// Cluster spec benchmark: parse + validate + expand of the 24k reference clusters.
//
// Goal (issue 2 / task): <= 150 ms and <= 150 MB for the 24k spec on the 2-core machine.
// Peak RSS is measured per config in a forked child (VmHWM of a process that did nothing but
// load that spec), so one config's peak does not hide another's; the Google Benchmark
// counters add the process-wide VmHWM as seen after each benchmark.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "loom/inventory/spec.hpp"

namespace {

using namespace loom::inventory;

std::string readConfig(const char* name) {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

long statusKb(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    std::size_t n = std::strlen(field);
    while (std::getline(in, line))
        if (line.compare(0, n, field) == 0) return std::stol(line.substr(n + 1));
    return -1;
}

void BM_ParseExpand(benchmark::State& state, const char* name) {
    std::string text = readConfig(name);
    std::size_t entities = 0;
    for (auto _ : state) {
        auto inv = loadClusterSpec(text);
        if (!inv) {
            state.SkipWithError(inv.error().toString().c_str());
            return;
        }
        entities = inv->totalEntities();
        benchmark::DoNotOptimize(inv->links.data());
    }
    state.counters["entities"] = double(entities);
    state.counters["process_peak_rss_MB"] = double(statusKb("VmHWM:")) / 1024.0;
}

void BM_ParseOnly(benchmark::State& state, const char* name) {
    std::string text = readConfig(name);
    for (auto _ : state) {
        auto spec = parseClusterSpec(text);
        if (!spec) {
            state.SkipWithError(spec.error().toString().c_str());
            return;
        }
        benchmark::DoNotOptimize(spec->zones.data());
    }
}

void BM_ExpandOnly(benchmark::State& state, const char* name) {
    auto spec = parseClusterSpec(readConfig(name));
    if (!spec) {
        state.SkipWithError(spec.error().toString().c_str());
        return;
    }
    for (auto _ : state) {
        auto inv = expandClusterSpec(*spec);
        benchmark::DoNotOptimize(inv->links.data());
    }
}

BENCHMARK_CAPTURE(BM_ParseExpand, meta_24k_roce, "meta-24k-roce.yaml")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ParseExpand, meta_24k_ib, "meta-24k-ib.yaml")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ParseExpand, dev_small, "dev-small.yaml")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ParseOnly, meta_24k_roce, "meta-24k-roce.yaml")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpandOnly, meta_24k_roce, "meta-24k-roce.yaml")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ExpandOnly, meta_24k_ib, "meta-24k-ib.yaml")->Unit(benchmark::kMillisecond);

// One cold load (fresh process, first touch of every page, as in `loomd apply`) with its
// wall and CPU time and peak RSS, in a forked child. Printed as one machine-readable line:
// "cold_load config=<name> wall_ms=.. cpu_ms=.. baseline_kb=<VmHWM before> peak_kb=<VmHWM> ..".
void reportPeakRss(const char* name) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        std::string text = readConfig(name);
        long before = statusKb("VmHWM:");
        auto t0 = std::chrono::steady_clock::now();
        std::clock_t c0 = std::clock();
        auto inv = loadClusterSpec(text);
        std::clock_t c1 = std::clock();
        auto t1 = std::chrono::steady_clock::now();
        long peak = statusKb("VmHWM:");
        std::printf(
            "cold_load config=%s wall_ms=%.1f cpu_ms=%.1f baseline_kb=%ld peak_kb=%ld entities=%zu "
            "ok=%d\n",
            name, std::chrono::duration<double, std::milli>(t1 - t0).count(),
            1000.0 * double(c1 - c0) / CLOCKS_PER_SEC, before, peak, inv ? inv->totalEntities() : 0,
            inv ? 1 : 0);
        std::fflush(stdout);
        _exit(inv ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
}

}  // namespace

int main(int argc, char** argv) {
    reportPeakRss("meta-24k-roce.yaml");
    reportPeakRss("meta-24k-ib.yaml");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
