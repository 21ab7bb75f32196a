// The straggler finder (issue 15 item 3) on the simulated 24k cluster: the simulator runs its
// jobs (85 % of 24,576 GPUs, 1 Hz, background failures off so every event is either the
// injected straggler or a false one), its text goes through the hub's ingest, and each second
// the finder ranks every running job's ranks from the hub's values (SM clock, temperature,
// power, correctable ECC rate) and the detector opens events. Scenarios run one after another
// on the same timeline: a random GPU of a random running job gets an injected cause (thermal
// throttle, then ECC pressure, alternating) for 25 s, then 15 s of quiet.
//
//   loom_straggler_bench [--scenarios N] [--seed S]
//
// Reports per cause: recall (an event naming the injected GPU first), time from injection to
// event (median, p90), and false events (on any other rank or job) per 24 job-hours; the
// finder's CPU time per tick (goal ≤ 0.2 core).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/measure.hpp"
#include "loom/jobs/straggler.hpp"
#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "synthetic_inventory.hpp"

namespace {

using namespace loom;
using bench::Clock;
using bench::msSince;
using Cause = telemetry::Simulator::StragglerCause;

}  // namespace

int main(int argc, char** argv) {
    int scenarios = 20;
    std::uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--scenarios") && i + 1 < argc)
            scenarios = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: loom_straggler_bench [--scenarios N] [--seed S]\n");
            return 2;
        }
    }
    const double cpu0 = bench::cpuMs();
    const auto t0 = Clock::now();
    auto inv = testing::syntheticCluster({.zones = 8, .racksPerZone = 192});
    auto L = std::make_shared<const telemetry::HallLayout>(telemetry::HallLayout::build(inv));
    telemetry::SimulatorConfig sc;
    sc.seed = seed;
    sc.xidPerGpuHour = sc.eccDbePerGpuHour = sc.overheatPerGpuHour = 0;
    sc.flapPerLinkHour = sc.rtswDownPerSwitchHour = 0;
    sc.jobMeanMinutes = 1e6;  // jobs outlive the run: each scenario sees the same world
    telemetry::Simulator sim(L, sc);
    telemetry::TelemetryHub hub(L);
    std::mt19937_64 rng(seed);
    std::int64_t now = 1'700'000'000'000;
    std::string body;
    jobs::StragglerDetector detector;
    std::vector<double> prevSbe(L->gpuCount(), 0);
    double finderMs = 0, stepMs = 0;
    std::size_t ticks = 0;
    double jobSeconds = 0;

    struct Injected {
        std::string job, gpu;
        Cause cause;
        std::int64_t atMs = 0;
        bool found = false, right = false;
        double seconds = NAN;
    };
    Injected cur;
    std::vector<Injected> done;
    std::size_t falseEvents = 0;

    auto tick = [&] {
        auto a = Clock::now();
        sim.step(now, body);
        auto r = hub.ingestText(body, now);
        if (!r) std::fprintf(stderr, "ingest: %s\n", r.error().toString().c_str());
        hub.tick(now);
        stepMs += msSince(a);
        a = Clock::now();
        for (const auto& rj : sim.runningJobs()) {
            const std::string job = "sim-" + std::to_string(rj.serial);
            std::vector<std::string> names, nics;
            std::vector<jobs::RankSample> samples;
            for (auto rack : rj.racks) {
                const auto& rk = L->racks()[rack];
                for (auto g = rk.gpuOffset; g < rk.gpuOffset + rk.gpuCount; ++g) {
                    jobs::RankSample s;
                    s.smClockMhz =
                        static_cast<float>(hub.gpuValue(g, telemetry::GpuField::SmClock));
                    s.tempC = static_cast<float>(hub.gpuValue(g, telemetry::GpuField::Temp));
                    s.powerW = static_cast<float>(hub.gpuValue(g, telemetry::GpuField::Power));
                    double sbe = hub.gpuValue(g, telemetry::GpuField::EccSbe);
                    if (std::isfinite(sbe)) {
                        s.eccSbePerSecond = static_cast<float>(std::max(0.0, sbe - prevSbe[g]));
                        prevSbe[g] = sbe;
                    }
                    names.push_back(L->gpuNames()[g]);
                    nics.emplace_back();
                    samples.push_back(s);
                }
            }
            jobSeconds += 1;
            auto suspects = jobs::rankStragglers(names, nics, samples);
            for (auto& t : detector.update(job, suspects, now)) {
                if (!t.opened) continue;
                if (!cur.job.empty() && t.job == cur.job && !cur.found) {
                    cur.found = true;
                    cur.right = t.suspect.location == cur.gpu;
                    cur.seconds = static_cast<double>(now - cur.atMs) / 1000.0;
                    if (!cur.right) ++falseEvents;
                    if (done.size() < 4)
                        std::printf("  event after %.0f s: %s\n", cur.seconds, t.message.c_str());
                } else {
                    ++falseEvents;
                    std::printf("  false event: %s\n", t.message.c_str());
                }
            }
        }
        finderMs += msSince(a);
        ++ticks;
        now += 1000;
    };

    for (int i = 0; i < 10; ++i) tick();  // jobs start, counters settle
    std::printf("warm: %u jobs running, %u GPUs busy\n", sim.stats().jobsRunning,
                sim.stats().gpusBusy);
    for (int s = 0; s < scenarios; ++s) {
        auto running = sim.runningJobs();
        if (running.empty()) break;
        const auto& rj = running[rng() % running.size()];
        const auto& rk = L->racks()[rj.racks[rng() % rj.racks.size()]];
        const auto g = rk.gpuOffset + static_cast<std::uint32_t>(rng() % rk.gpuCount);
        cur = {"sim-" + std::to_string(rj.serial), L->gpuNames()[g],
               s % 2 == 0 ? Cause::ThermalThrottle : Cause::EccPressure, now};
        sim.injectStraggler(cur.cause, g, now, 25);
        for (int t = 0; t < 40; ++t) tick();
        done.push_back(cur);
        cur = {};
    }
    std::printf("\n%zu scenarios at 24k (%zu ticks, %.0f job-hours observed):\n", done.size(),
                ticks, jobSeconds / 3600);
    for (auto cause : {Cause::ThermalThrottle, Cause::EccPressure}) {
        std::vector<double> t;
        std::size_t n = 0, right = 0;
        for (const auto& d : done) {
            if (d.cause != cause) continue;
            ++n;
            if (d.found && d.right) {
                ++right;
                t.push_back(d.seconds);
            }
        }
        std::printf("  %-16s recall %zu/%zu (%.0f %%), time to event median %.0f s p90 %.0f s\n",
                    cause == Cause::ThermalThrottle ? "thermal throttle" : "ECC pressure", right, n,
                    n ? 100.0 * static_cast<double>(right) / static_cast<double>(n) : 0.0,
                    bench::percentile(t, 0.5), bench::percentile(t, 0.9));
    }
    std::printf("  false events: %zu in %.0f job-hours = %.2f per 24 job-hours (goal <= 1)\n",
                falseEvents, jobSeconds / 3600,
                static_cast<double>(falseEvents) / (jobSeconds / 3600) * 24);
    std::printf(
        "  finder: %.1f ms per tick for every job = %.3f core (goal <= 0.2); simulator "
        "step + ingest %.0f ms per tick\n",
        finderMs / static_cast<double>(ticks), finderMs / static_cast<double>(ticks) / 1000,
        stepMs / static_cast<double>(ticks));
    std::printf("  cpu %.0f ms, wall %.0f ms, peak RSS %ld MB, load average %s\n",
                bench::cpuMs() - cpu0, msSince(t0), bench::peakRssMb(),
                bench::loadAverage().c_str());
    return 0;
}
