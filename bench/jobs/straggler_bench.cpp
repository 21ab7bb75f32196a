// The straggler finder (issue 15 item 3) on the simulated 24k cluster, seeded scenarios of every
// cause. Per seed: a new world (the simulator's jobs, power-law sizes 64..4,096 GPUs, 85 % of
// 24,576 GPUs busy, 1 Hz; background failures off so that every event is either an injected
// straggler or a false one; the simulator's healthy noise on: boost-clock wobble and dips,
// sporadic correctable ECC errors, PFC pause bursts and bit errors). Its text goes through the
// hub's ingest and loomd's own StragglerFinder (jobs/straggler_finder.hpp) ticks each second.
// Rounds of `--concurrent` scenarios: each injects one cause (the six in turn) into a different
// running job — a random GPU, its NIC, or an uplink of one of its racks — for 25 s, then 15 s
// of quiet.
//
//   loom_straggler_bench [--seeds N] [--scenarios-per-seed N] [--concurrent N] [--seed S]
//   loom_straggler_bench --healthy-job-hours H [--seed S]
//   loom_straggler_bench --farm-zones Z [--minutes M] [--seed S] [--node-exporter]
//                                                                   (issue 34: see farmRun)
//
// The farm runs on a simulated clock (1 s per tick, as fast as the machine allows). SIGINT or
// SIGTERM ends a long run early with the figures of the simulated time it ran; every 10
// simulated minutes it prints the running false-event count and steady job-hours.
//
// --healthy-job-hours: the false-event rate alone. One world with nothing injected, its jobs
// starting and ending as the simulator runs them (mean 45 min: every start is a cold job the
// finder must not flag), driven on a virtual clock as fast as the machine allows (1 simulated
// second per tick) until H job-hours have been watched; every event opened is a false one.
//
// Reports per cause: recall (the first event of the job names the injected GPU, NIC cable or
// link), time from injection to event (median, p90), and false events per 24 job-hours of
// jobs with nothing injected; the finder's CPU per tick (goal <= 0.2 core).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lib/measure.hpp"
#include "loom/jobs/straggler_finder.hpp"
#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "straggler_farm.hpp"
#include "synthetic_inventory.hpp"

namespace {

using namespace loom;
using bench::Clock;
using bench::msSince;
using Sim = telemetry::Simulator;
using Cause = Sim::StragglerCause;

struct Scenario {
    std::string job, expect;  // the job and the location the event must name
    Cause cause;
    std::int64_t atMs = 0;
    bool found = false, right = false;
    double seconds = NAN;
    std::string got;
};

// --healthy-job-hours: nothing injected, jobs come and go; every event is a false one.
int healthyRun(double jobHours, std::uint64_t seed) {
    const double cpu0 = bench::cpuMs();
    const auto t0 = Clock::now();
    auto inv = testing::syntheticCluster({.zones = 8, .racksPerZone = 192});
    auto L = std::make_shared<const telemetry::HallLayout>(telemetry::HallLayout::build(inv));
    telemetry::SimulatorConfig sc;
    sc.seed = seed;
    // Background failures off: an XID or a link down is a real fault, not a false event.
    sc.xidPerGpuHour = sc.eccDbePerGpuHour = sc.overheatPerGpuHour = 0;
    sc.flapPerLinkHour = sc.rtswDownPerSwitchHour = 0;
    Sim sim(L, sc);
    telemetry::TelemetryHub hub(L);
    jobs::StragglerFinder finder;
    std::int64_t now = 1'700'000'000'000;
    std::string body;
    std::vector<std::uint64_t> serials;
    std::size_t ticks = 0, falseEvents = 0, minJobs = 1u << 30, maxJobs = 0, jobStarts = 0;
    double jobSeconds = 0, finderMs = 0, stepMs = 0;
    std::set<std::uint64_t> seen;
    std::map<std::string, std::size_t> perCause;
    std::vector<std::string> examples;
    double nextReport = 0.5;
    std::printf("healthy run, seed %llu: until %.0f job-hours are watched\n",
                static_cast<unsigned long long>(seed), jobHours);
    while (jobSeconds / 3600 < jobHours) {
        auto a = Clock::now();
        sim.step(now, body);
        if (auto r = hub.ingestText(body, now); !r)
            std::fprintf(stderr, "ingest: %s\n", r.error().toString().c_str());
        hub.tick(now);
        stepMs += msSince(a);
        // The job list follows the simulator as loomd's does (it reloads on every change).
        auto running = sim.runningJobs();
        std::vector<std::uint64_t> now_serials;
        for (const auto& rj : running) now_serials.push_back(rj.serial);
        if (now_serials != serials) {
            std::vector<jobs::FinderJob> list;
            for (const auto& rj : running) {
                jobs::FinderJob j{"sim-" + std::to_string(rj.serial), {}};
                for (auto r : rj.racks)
                    j.hosts.insert(j.hosts.end(), L->racks()[r].hosts.begin(),
                                   L->racks()[r].hosts.end());
                list.push_back(std::move(j));
                if (seen.insert(rj.serial).second && ticks > 0) ++jobStarts;
            }
            finder.setJobs(std::move(list));
            serials = std::move(now_serials);
        }
        minJobs = std::min(minJobs, running.size());
        maxJobs = std::max(maxJobs, running.size());
        a = Clock::now();
        auto transitions = finder.tick(hub, now);
        finderMs += msSince(a);
        ++ticks;
        // The first 60 s: every job starts at once, counters and averages settle (not counted).
        if (ticks > 60) {
            jobSeconds += static_cast<double>(finder.current().size());
            for (const auto& t : transitions) {
                if (!t.opened) continue;
                ++falseEvents;
                ++perCause[t.suspect.cause];
                if (examples.size() < 8) examples.push_back(t.message);
            }
        }
        if (jobSeconds / 3600 >= nextReport * jobHours) {
            std::printf(
                "  %5.0f job-hours (%.2f h simulated, %zu ticks, %.0f s wall): %zu false "
                "events, load average %s\n",
                jobSeconds / 3600, static_cast<double>(ticks) / 3600, ticks, msSince(t0) / 1000,
                falseEvents, bench::loadAverage().c_str());
            std::fflush(stdout);
            nextReport += 0.5;
        }
        now += 1000;
    }
    const double hours = jobSeconds / 3600;
    // Poisson: with k events in T job-hours, the rate's one-sided 95 % upper bound; for k = 0
    // it is 3.0 / T (-ln 0.05), for k > 0 the chi-square bound approximated by Wilson-Hilferty.
    double upper = 0;
    if (falseEvents == 0) {
        upper = 2.9957 / hours * 24;
    } else {
        const double k1 = static_cast<double>(falseEvents) + 1, z = 1.6449;
        upper = k1 * std::pow(1 - 1 / (9 * k1) + z / (3 * std::sqrt(k1)), 3) / hours * 24;
    }
    std::printf(
        "\nhealthy 24k run: %.1f job-hours watched over %.2f simulated hours (%zu ticks), "
        "%zu-%zu jobs running, %zu jobs started during the run\n",
        hours, static_cast<double>(ticks) / 3600, ticks, minJobs, maxJobs, jobStarts);
    std::printf("  false events: %zu = %.3f per 24 job-hours (95 %% upper bound %.3f; goal <= 1)\n",
                falseEvents, static_cast<double>(falseEvents) / hours * 24, upper);
    for (const auto& [cause, n] : perCause) std::printf("    %s: %zu\n", cause.c_str(), n);
    for (const auto& e : examples) std::printf("    false: %s\n", e.c_str());
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

// --farm: the scenario farm of issue 34 (tests/jobs/straggler_farm.hpp): exporter pages per host
// and rack switch, each on a clock jittered ±30 %, counter resets, jobs of 1 to 32 racks (a job
// of one rack is a job of 2 hosts) starting and ending all along (mean 8 min), healthy traps on
// them (a hot GPU without throttle reasons on 20 % of jobs, a power cap on a whole job on 20 %,
// a checkpoint every 5 min where every rank idles 20 s, one-sample clock dips), and every 20 s a
// fault of the next cause in turn on a job older than a minute, for 30 s. Per cause: plays, the
// right suspect first (the job's first suspect after the fault, and its first event), the time
// from the fault to the event (median, p90), the cause label; false events (any event of a job
// without a fault) per 24 job-hours in steady state and within a job's first minute; the
// finder's CPU per tick. --node-exporter: per host a node_exporter InfiniBand page too (the host
// ends of its NIC links, FarmOptions::nodeExporter), as a cluster running it would send.
double threadCpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::atomic<bool> gFarmStop{false};
extern "C" void farmStopHandler(int) { gFarmStop.store(true); }

int farmRun(int zones, double minutes, std::uint64_t seed, bool nodeExporter) {
    std::signal(SIGINT, farmStopHandler);
    std::signal(SIGTERM, farmStopHandler);
    using loom::testing::FarmCause;
    using loom::testing::FarmTarget;
    using loom::testing::FarmTrap;
    const double cpu0 = bench::cpuMs();
    const auto t0 = Clock::now();
    auto inv = testing::syntheticCluster({.zones = zones, .racksPerZone = 192});
    auto L = std::make_shared<const telemetry::HallLayout>(telemetry::HallLayout::build(inv));
    telemetry::TelemetryHub hub(L);
    loom::testing::StragglerFarm farm(L, {.seed = seed, .nodeExporter = nodeExporter});
    jobs::StragglerFinder finder;
    std::mt19937_64 rng(seed * 104729);
    auto uni = [&] { return std::uniform_real_distribution<double>(0, 1)(rng); };
    std::int64_t now = 1'700'000'000'000;
    const std::size_t nR = L->racks().size();
    std::vector<int> rackJob(nR, -1);
    struct Live {
        int id;
        std::int64_t startMs, endMs;
        std::int64_t busyUntil = 0;     // a play on it until then
        std::int64_t checkpointMs = 0;  // its next checkpoint
    };
    std::vector<Live> live;
    std::size_t started = 0;
    // Place a job of `racks` racks on free racks of one zone where possible.
    auto startJob = [&](std::size_t want) {
        std::vector<std::uint32_t> free;
        for (std::uint32_t r = 0; r < nR; ++r)
            if (rackJob[r] < 0) free.push_back(r);
        if (free.size() < want) return;
        const auto at =
            static_cast<std::size_t>(uni() * static_cast<double>(free.size() - want + 1));
        std::vector<std::uint32_t> racks(free.begin() + static_cast<std::ptrdiff_t>(at),
                                         free.begin() + static_cast<std::ptrdiff_t>(at + want));
        const int id = farm.startJob("job-" + std::to_string(++started), racks, now);
        for (auto r : racks) rackJob[r] = id;
        const auto life = static_cast<std::int64_t>(-std::log(1 - uni()) * 8 * 60'000);
        live.push_back({id, now, now + std::max<std::int64_t>(life, 120'000)});
        const auto& L0 = *L;
        const auto gpu0 = L0.racks()[racks[0]].gpuOffset;
        if (uni() < 0.2)
            farm.trap(FarmTrap::HotGpu, id, gpu0 + static_cast<std::uint32_t>(uni() * 16), now,
                      now + 3'600'000 * 24);
        if (uni() < 0.2)
            farm.trap(FarmTrap::PowerCapJob, id, telemetry::kNoIndex, now, now + 3'600'000 * 24);
        // A checkpoint every 5 minutes, each handed to the farm a second before it starts (the
        // farm scans its traps on every sample: a long run must not hold them all at once).
        live.back().checkpointMs = now + 5 * 60'000;
    };
    auto sizeDraw = [&] {
        const std::size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 16, 32};
        return sizes[static_cast<std::size_t>(uni() * 9)];
    };
    auto syncJobs = [&] {
        std::vector<jobs::FinderJob> list;
        for (const auto& j : live)
            list.push_back(
                {farm.jobs()[static_cast<std::size_t>(j.id)].name, farm.hostNames(j.id)});
        finder.setJobs(std::move(list));
    };
    auto busy = [&] {
        std::size_t n = 0;
        for (auto r : rackJob) n += r >= 0;
        return static_cast<double>(n) / static_cast<double>(nR);
    };
    while (busy() < 0.85) startJob(sizeDraw());
    syncJobs();

    struct Play {
        int job;
        FarmCause cause;
        std::string expect;
        std::int64_t startMs, endMs;
        bool suspected = false, suspectRight = false, found = false, right = false,
             labelRight = false;
        double seconds = NAN;
        // When the cause could first be seen: its start, or the end of a checkpoint of its job
        // that hid it (a host's contention while every rank idles for a checkpoint).
        std::int64_t visibleMs = 0;
        double secondsVisible = NAN;
        std::string got, firstSuspect;  // the event's suspect; the job's first suspect
    };
    std::vector<Play> plays;
    std::map<int, std::size_t> playOf;  // job -> its current play
    std::size_t falseSteady = 0, falseFirstMinute = 0, startsWatched = 0, ticks = 0;
    double steadySeconds = 0, firstMinuteSeconds = 0, finderMs = 0, farmMs = 0;
    std::map<std::string, std::size_t> falseByCause;
    std::vector<std::string> falseExamples;
    int nextCause = 0;
    std::int64_t nextFaultMs = now + 60'000;
    const std::int64_t endMs = now + static_cast<std::int64_t>(minutes * 60'000);
    std::printf(
        "farm: %d zone(s), %zu GPUs, %zu jobs running, %.0f simulated minutes, seed %llu%s\n",
        zones, L->gpuCount(), live.size(), minutes, static_cast<unsigned long long>(seed),
        nodeExporter ? ", node_exporter pages" : "");
    std::fflush(stdout);
    while (now < endMs && !gFarmStop.load()) {
        now += 1000;
        // Jobs end and others start on the racks they free.
        bool changed = false;
        for (std::size_t i = 0; i < live.size();) {
            if (live[i].endMs > now || live[i].busyUntil > now) {
                ++i;
                continue;
            }
            farm.endJob(live[i].id, now);
            for (auto& r : rackJob)
                if (r == live[i].id) r = -1;
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
            changed = true;
        }
        if (changed)
            for (int k = 0; k < 10 && busy() < 0.85; ++k) {
                startJob(sizeDraw());
                ++startsWatched;
            }
        if (changed) syncJobs();
        // A fault of the next cause on a job older than a minute, not in a play.
        if (now >= nextFaultMs) {
            const auto cause = static_cast<FarmCause>(nextCause % loom::testing::kFarmCauseCount);
            std::vector<std::size_t> ok;
            for (std::size_t i = 0; i < live.size(); ++i) {
                const auto& j = farm.jobs()[static_cast<std::size_t>(live[i].id)];
                if (now - live[i].startMs < 60'000 || live[i].busyUntil > now ||
                    live[i].endMs < now + 60'000)
                    continue;
                if (loom::testing::farmTargetOf(cause) == FarmTarget::Uplink && j.racks.size() < 2)
                    continue;
                ok.push_back(i);
            }
            if (!ok.empty()) {
                auto& lj =
                    live[ok[static_cast<std::size_t>(uni() * static_cast<double>(ok.size()))]];
                const auto& j = farm.jobs()[static_cast<std::size_t>(lj.id)];
                const auto rack =
                    j.racks[static_cast<std::size_t>(uni() * static_cast<double>(j.racks.size()))];
                const auto& rk = L->racks()[rack];
                std::uint32_t target =
                    rk.gpuOffset + static_cast<std::uint32_t>(uni() * rk.gpuCount);
                if (loom::testing::farmTargetOf(cause) == FarmTarget::Uplink) {
                    std::vector<std::uint32_t> ups;
                    for (std::uint32_t l = 0; l < L->linkCount(); ++l)
                        if (L->links()[l].tier == 1 && L->links()[l].rackIndex == rack)
                            ups.push_back(l);
                    target = ups[static_cast<std::size_t>(uni() * static_cast<double>(ups.size()))];
                } else if (loom::testing::farmTargetOf(cause) == FarmTarget::Host) {
                    target = L->hostByName(rk.hosts[uni() < 0.5 ? 0 : 1]);
                }
                if (cause == FarmCause::HbmHot)
                    farm.trap(FarmTrap::PowerCapJob, lj.id, telemetry::kNoIndex, now, now + 30'000);
                farm.fault(cause, target, now, now + 30'000);
                Play pl{lj.id, cause, farm.expectedLocation({cause, target, now, now + 30'000}),
                        now, now + 30'000};
                playOf[lj.id] = plays.size();
                plays.push_back(std::move(pl));
                lj.busyUntil = now + 30'000 + 20'000;
                ++nextCause;
            }
            nextFaultMs = now + 20'000;
        }
        for (auto& j : live)
            if (j.checkpointMs <= now + 1000) {
                farm.trap(FarmTrap::Checkpoint, j.id, telemetry::kNoIndex, j.checkpointMs,
                          j.checkpointMs + 20'000);
                j.checkpointMs += 5 * 60'000;
            }
        // One clock dip on a random busy GPU each second (a healthy trap).
        if (!live.empty()) {
            const auto& lj =
                live[static_cast<std::size_t>(uni() * static_cast<double>(live.size()))];
            const auto& j = farm.jobs()[static_cast<std::size_t>(lj.id)];
            const auto g =
                L->racks()[j.racks[0]].gpuOffset + static_cast<std::uint32_t>(uni() * 16);
            farm.trap(FarmTrap::ClockDip, lj.id, g, now, now + 1000);
        }
        auto a = Clock::now();
        farm.advance(now, hub);
        hub.tick(now);
        farmMs += msSince(a);
        // The finder's own CPU (this thread's), not wall time: the machine is shared.
        const double c0 = threadCpuMs();
        auto transitions = finder.tick(hub, now);
        finderMs += threadCpuMs() - c0;
        ++ticks;
        std::map<std::string, const Live*> byName;
        for (const auto& j : live) byName[farm.jobs()[static_cast<std::size_t>(j.id)].name] = &j;
        // The first suspect of each job under a play.
        for (const auto& js : finder.current()) {
            auto it = byName.find(js.job);
            if (it == byName.end()) continue;
            const auto* lj = it->second;
            auto p = playOf.find(lj->id);
            const bool inPlay = p != playOf.end() && now >= plays[p->second].startMs &&
                                now <= plays[p->second].endMs + 15'000;
            if (inPlay) {
                auto& pl = plays[p->second];
                if (pl.visibleMs == 0 && now <= pl.endMs &&
                    (pl.cause != FarmCause::HostContention || !farm.checkpointing(pl.job, now)))
                    pl.visibleMs = now - 1000;
                if (!pl.suspected && !js.suspects.empty() && now <= pl.endMs) {
                    pl.suspected = true;
                    pl.suspectRight = js.suspects.front().location == pl.expect;
                    pl.firstSuspect = js.suspects.front().location + " (" +
                                      js.suspects.front().cause + ", score " +
                                      std::to_string(js.suspects.front().score) + ")";
                }
            } else if (now - lj->startMs < 60'000) {
                firstMinuteSeconds += 1;
            } else {
                steadySeconds += 1;
            }
        }
        for (const auto& t : transitions) {
            if (!t.opened) continue;
            auto it = byName.find(t.job);
            const Live* lj = it == byName.end() ? nullptr : it->second;
            auto p = lj ? playOf.find(lj->id) : playOf.end();
            if (lj && p != playOf.end() && now >= plays[p->second].startMs &&
                now <= plays[p->second].endMs + 15'000) {
                auto& pl = plays[p->second];
                if (pl.found) continue;
                pl.found = true;
                pl.got = t.suspect.location + " (" + t.suspect.cause + ")";
                pl.right = t.suspect.location == pl.expect;
                pl.labelRight =
                    pl.right && t.suspect.cause == loom::testing::farmExpectedLabel(pl.cause);
                pl.seconds = static_cast<double>(now - pl.startMs) / 1000.0;
                if (pl.visibleMs != 0)
                    pl.secondsVisible =
                        static_cast<double>(now - std::max(pl.startMs, pl.visibleMs)) / 1000.0;
                continue;
            }
            const bool young = lj && now - lj->startMs < 60'000;
            ++(young ? falseFirstMinute : falseSteady);
            // As it happens (a long run's examples are read before it ends).
            std::printf(
                "  false at %.0f s%s: %s\n",
                static_cast<double>(now - (endMs - static_cast<std::int64_t>(minutes * 60'000))) /
                    1000,
                young ? " [first minute]" : "", t.message.c_str());
            std::fflush(stdout);
            ++falseByCause[t.suspect.cause];
            if (falseExamples.size() < 8)
                falseExamples.push_back(std::string(young ? "[first minute] " : "") + t.message);
        }
        if (ticks % 600 == 0) {
            std::printf(
                "  %4.0f min: %zu plays, false events %zu in %.1f steady job-hours and %zu in "
                "%.2f job-hours of first minutes, %.1f ms finder/tick, %.0f ms farm+ingest/tick, "
                "load %s\n",
                static_cast<double>(ticks) / 60, plays.size(), falseSteady, steadySeconds / 3600,
                falseFirstMinute, firstMinuteSeconds / 3600, finderMs / static_cast<double>(ticks),
                farmMs / static_cast<double>(ticks), bench::loadAverage().c_str());
            std::fflush(stdout);
        }
    }
    std::printf(
        "\nfarm, %d zone(s) (%zu GPUs), %.1f simulated minutes%s, %zu job starts watched, "
        "%zu switch counter resets:\n",
        zones, L->gpuCount(), static_cast<double>(ticks) / 60,
        gFarmStop.load() ? " (stopped early)" : "", startsWatched, farm.resets_);
    std::printf("  %-16s %5s %14s %14s %16s %14s %18s\n", "cause", "plays", "first suspect",
                "first event", "event med/p90 s", "label right", "from visible m/p90");
    std::size_t aN = 0, aS = 0, aR = 0, aL = 0;
    std::vector<double> aT;
    for (int c = 0; c < loom::testing::kFarmCauseCount; ++c) {
        std::size_t n = 0, sr = 0, r = 0, lr = 0;
        std::vector<double> t, tv;
        std::string miss;
        for (const auto& pl : plays) {
            if (static_cast<int>(pl.cause) != c) continue;
            if (pl.startMs + 45'000 > now) continue;  // not over yet
            ++n;
            sr += pl.suspectRight;
            r += pl.right;
            lr += pl.labelRight;
            if (pl.right) t.push_back(pl.seconds);
            if (pl.right && std::isfinite(pl.secondsVisible)) tv.push_back(pl.secondsVisible);
            if (!pl.labelRight && miss.empty())
                miss = pl.found ? "named " + pl.got + " for " + pl.expect
                                : "no event for " + pl.expect;
        }
        aN += n;
        aS += sr;
        aR += r;
        aL += lr;
        aT.insert(aT.end(), t.begin(), t.end());
        auto pct = [&](std::size_t k) {
            return n ? 100.0 * static_cast<double>(k) / static_cast<double>(n) : 0.0;
        };
        std::printf("  %-16s %5zu %13.0f%% %13.0f%% %7.1f / %-6.1f %13.0f%% %8.1f / %-6.1f%s%s\n",
                    std::string(loom::testing::farmCauseName(static_cast<FarmCause>(c))).c_str(), n,
                    pct(sr), pct(r), bench::percentile(t, 0.5), bench::percentile(t, 0.9), pct(lr),
                    bench::percentile(tv, 0.5), bench::percentile(tv, 0.9),
                    miss.empty() ? "" : "  first miss: ", miss.c_str());
        for (const auto& pl : plays)
            if (static_cast<int>(pl.cause) == c && pl.suspected && !pl.suspectRight &&
                pl.startMs + 45'000 <= now)
                std::printf("      first suspect %s for %s\n", pl.firstSuspect.c_str(),
                            pl.expect.c_str());
        for (const auto& pl : plays)
            if (static_cast<int>(pl.cause) == c && pl.right && pl.seconds > 6)
                std::printf("      slow: %.0f s (%.0f s from visible) %s\n", pl.seconds,
                            pl.secondsVisible, pl.got.c_str());
    }
    auto pctA = [&](std::size_t k) {
        return aN ? 100.0 * static_cast<double>(k) / static_cast<double>(aN) : 0.0;
    };
    std::printf(
        "  %-16s %5zu %13.0f%% %13.0f%% %7.1f / %-6.1f %13.0f%%   (goals: 95 %%, 3 s / 6 s, 95 "
        "%%)\n",
        "all", aN, pctA(aS), pctA(aR), bench::percentile(aT, 0.5), bench::percentile(aT, 0.9),
        pctA(aL));
    const double steadyH = steadySeconds / 3600, firstH = firstMinuteSeconds / 3600;
    // The one-sided 95 % upper bound of a Poisson rate with k events seen: the mean at which
    // seeing k or fewer has probability 5 % (3.0 for k = 0).
    auto poissonUpper95 = [](std::size_t k) {
        auto cdf = [&](double mu) {
            double term = std::exp(-mu), sum = term;
            for (std::size_t i = 1; i <= k; ++i) sum += term *= mu / static_cast<double>(i);
            return sum;
        };
        double lo = 0, hi = 10 + 5 * static_cast<double>(k);
        for (int i = 0; i < 100; ++i) (cdf((lo + hi) / 2) > 0.05 ? lo : hi) = (lo + hi) / 2;
        return hi;
    };
    std::printf(
        "  false events, steady state: %zu in %.1f job-hours = %.2f per 24 job-hours, 95 %% upper "
        "bound %.2f (goal <= 1)\n",
        falseSteady, steadyH, steadyH > 0 ? static_cast<double>(falseSteady) / steadyH * 24 : 0.0,
        steadyH > 0 ? poissonUpper95(falseSteady) / steadyH * 24 : NAN);
    std::printf(
        "  false events within a job's first minute: %zu in %.2f job-hours of first minutes "
        "(goal 0)\n",
        falseFirstMinute, firstH);
    for (const auto& [c, k] : falseByCause) std::printf("    %s: %zu\n", c.c_str(), k);
    for (const auto& e : falseExamples) std::printf("    false: %s\n", e.c_str());
    std::printf(
        "  finder: %.2f ms CPU per tick = %.1f %% of a core (goal <= 5 %% at 24k); farm + "
        "ingest %.0f ms wall per tick\n",
        finderMs / static_cast<double>(ticks), finderMs / static_cast<double>(ticks) / 10,
        farmMs / static_cast<double>(ticks));
    std::printf("  cpu %.0f ms, wall %.0f ms, peak RSS %ld MB, load average %s\n",
                bench::cpuMs() - cpu0, msSince(t0), bench::peakRssMb(),
                bench::loadAverage().c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int seeds = 4, perSeed = 60, concurrent = 6, zones = 0;
    double healthyHours = 0, minutes = 30;
    bool nodeExporter = false;
    std::uint64_t seed0 = 1;
    for (int i = 1; i < argc; ++i) {
        auto arg = [&](const char* name) { return !std::strcmp(argv[i], name) && i + 1 < argc; };
        if (arg("--seeds"))
            seeds = std::atoi(argv[++i]);
        else if (arg("--scenarios-per-seed"))
            perSeed = std::atoi(argv[++i]);
        else if (arg("--concurrent"))
            concurrent = std::atoi(argv[++i]);
        else if (arg("--seed"))
            seed0 = std::strtoull(argv[++i], nullptr, 10);
        else if (arg("--healthy-job-hours"))
            healthyHours = std::atof(argv[++i]);
        else if (arg("--farm-zones"))
            zones = std::atoi(argv[++i]);
        else if (arg("--minutes"))
            minutes = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--node-exporter"))
            nodeExporter = true;
        else {
            std::fprintf(stderr,
                         "usage: loom_straggler_bench [--seeds N] [--scenarios-per-seed N] "
                         "[--concurrent N] [--seed S] | --healthy-job-hours H [--seed S] | "
                         "--farm-zones Z [--minutes M] [--seed S] [--node-exporter]\n");
            return 2;
        }
    }
    if (healthyHours > 0) return healthyRun(healthyHours, seed0);
    if (zones > 0) return farmRun(zones, minutes, seed0, nodeExporter);
    const double cpu0 = bench::cpuMs();
    const auto t0 = Clock::now();
    auto inv = testing::syntheticCluster({.zones = 8, .racksPerZone = 192});
    auto L = std::make_shared<const telemetry::HallLayout>(telemetry::HallLayout::build(inv));

    std::vector<Scenario> done;
    std::size_t falseEvents = 0, ticks = 0;
    double healthyJobSeconds = 0, finderMs = 0, stepMs = 0;
    std::size_t minJobs = 1u << 30, maxJobs = 0;
    std::vector<std::string> falseExamples;

    for (int sd = 0; sd < seeds; ++sd) {
        const std::uint64_t seed = seed0 + static_cast<std::uint64_t>(sd);
        telemetry::SimulatorConfig sc;
        sc.seed = seed;
        sc.xidPerGpuHour = sc.eccDbePerGpuHour = sc.overheatPerGpuHour = 0;
        sc.flapPerLinkHour = sc.rtswDownPerSwitchHour = 0;
        sc.jobMeanMinutes = 1e6;  // jobs outlive the run: a scenario's job is still there
        Sim sim(L, sc);
        telemetry::TelemetryHub hub(L);
        jobs::StragglerFinder finder;
        std::mt19937_64 rng(seed * 7919);
        std::int64_t now = 1'700'000'000'000;
        std::string body;
        std::map<std::string, std::size_t> active;  // job -> index in `round`
        std::vector<Scenario> round;

        auto syncJobs = [&] {
            std::vector<jobs::FinderJob> list;
            for (const auto& rj : sim.runningJobs()) {
                jobs::FinderJob j{"sim-" + std::to_string(rj.serial), {}};
                for (auto r : rj.racks)
                    j.hosts.insert(j.hosts.end(), L->racks()[r].hosts.begin(),
                                   L->racks()[r].hosts.end());
                list.push_back(std::move(j));
            }
            minJobs = std::min(minJobs, list.size());
            maxJobs = std::max(maxJobs, list.size());
            finder.setJobs(std::move(list));
        };
        auto tick = [&](bool measure) {
            auto a = Clock::now();
            sim.step(now, body);
            if (auto r = hub.ingestText(body, now); !r)
                std::fprintf(stderr, "ingest: %s\n", r.error().toString().c_str());
            hub.tick(now);
            stepMs += msSince(a);
            a = Clock::now();
            auto transitions = finder.tick(hub, now);
            finderMs += msSince(a);
            ++ticks;
            if (measure)
                for (const auto& j : finder.current())
                    if (!active.contains(j.job)) healthyJobSeconds += 1;
            for (const auto& t : transitions) {
                if (!t.opened || !measure) continue;
                auto it = active.find(t.job);
                if (it != active.end()) {
                    auto& sc = round[it->second];
                    if (sc.found) continue;  // its first event is the one that counts
                    sc.found = true;
                    sc.got = t.suspect.location + " (" + t.suspect.cause + ")";
                    sc.right = t.suspect.location == sc.expect;
                    sc.seconds = static_cast<double>(now - sc.atMs) / 1000.0;
                    if (done.size() + round.size() <= static_cast<std::size_t>(concurrent) + 6)
                        std::printf("  %-16s after %2.0f s: %s\n",
                                    std::string(Sim::causeName(sc.cause)).c_str(), sc.seconds,
                                    t.message.c_str());
                } else {
                    ++falseEvents;
                    if (falseExamples.size() < 5) falseExamples.push_back(t.message);
                }
            }
            now += 1000;
        };

        for (int i = 0; i < 30; ++i) tick(false);  // jobs start, counters and averages settle
        syncJobs();
        for (int i = 0; i < 10; ++i) tick(false);
        std::printf("seed %llu: %u jobs running, %u GPUs busy\n",
                    static_cast<unsigned long long>(seed), sim.stats().jobsRunning,
                    sim.stats().gpusBusy);
        int injected = 0;
        while (injected < perSeed) {
            auto running = sim.runningJobs();
            std::shuffle(running.begin(), running.end(), rng);
            round.clear();
            active.clear();
            for (const auto& rj : running) {
                if (static_cast<int>(round.size()) >= concurrent || injected >= perSeed) break;
                const auto cause =
                    static_cast<Cause>((done.size() + round.size()) % Sim::kStragglerCauseCount);
                const auto rack = rj.racks[rng() % rj.racks.size()];
                const auto& rk = L->racks()[rack];
                const auto gpu = rk.gpuOffset + static_cast<std::uint32_t>(rng() % rk.gpuCount);
                Scenario sc{"sim-" + std::to_string(rj.serial), "", cause, now};
                std::uint32_t target = gpu;
                if (Sim::isLinkCause(cause)) {
                    std::vector<std::uint32_t> ups;
                    for (std::uint32_t l = 0; l < L->linkCount(); ++l)
                        if (L->links()[l].tier == 1 && L->links()[l].rackIndex == rack)
                            ups.push_back(l);
                    target = ups[rng() % ups.size()];
                    sc.expect = L->links()[target].name;
                } else if (cause == Cause::SlowNic) {
                    for (std::uint32_t l = 0; l < L->linkCount(); ++l)
                        if (L->links()[l].gpu == gpu) sc.expect = L->links()[l].name;
                } else {
                    sc.expect = L->gpuNames()[gpu];
                }
                sim.injectStraggler(cause, target, now, 25);
                active[sc.job] = round.size();
                round.push_back(std::move(sc));
                ++injected;
            }
            for (int t = 0; t < 40; ++t) tick(true);
            for (auto& sc : round) done.push_back(std::move(sc));
        }
    }

    std::printf(
        "\n%zu scenarios at 24k over %d seeds (%zu ticks, %zu-%zu jobs running, %.0f "
        "healthy job-hours observed):\n",
        done.size(), seeds, ticks, minJobs, maxJobs, healthyJobSeconds / 3600);
    std::printf("  %-16s %-18s %s\n", "cause", "recall", "time to event median / p90");
    std::size_t allN = 0, allRight = 0;
    std::vector<double> allT;
    for (int c = 0; c < Sim::kStragglerCauseCount; ++c) {
        std::vector<double> t;
        std::size_t n = 0, right = 0;
        std::string miss;
        for (const auto& d : done) {
            if (static_cast<int>(d.cause) != c) continue;
            ++n;
            if (d.found && d.right) {
                ++right;
                t.push_back(d.seconds);
            } else if (miss.empty()) {
                miss = d.found ? "named " + d.got + " instead of " + d.expect
                               : "no event for " + d.expect;
            }
        }
        allN += n;
        allRight += right;
        allT.insert(allT.end(), t.begin(), t.end());
        std::printf("  %-16s %3zu/%-3zu (%5.1f %%)  %.0f s / %.0f s%s%s\n",
                    std::string(Sim::causeName(static_cast<Cause>(c))).c_str(), right, n,
                    n ? 100.0 * static_cast<double>(right) / static_cast<double>(n) : 0.0,
                    bench::percentile(t, 0.5), bench::percentile(t, 0.9),
                    miss.empty() ? "" : "; first miss: ", miss.c_str());
    }
    std::printf("  %-16s %3zu/%-3zu (%5.1f %%)  %.0f s / %.0f s (goal: 95 %%, 5 s / 10 s)\n", "all",
                allRight, allN,
                allN ? 100.0 * static_cast<double>(allRight) / static_cast<double>(allN) : 0.0,
                bench::percentile(allT, 0.5), bench::percentile(allT, 0.9));
    std::printf(
        "  false events: %zu in %.0f healthy job-hours = %.2f per 24 job-hours (goal <= 1)\n",
        falseEvents, healthyJobSeconds / 3600,
        healthyJobSeconds > 0 ? static_cast<double>(falseEvents) / (healthyJobSeconds / 3600) * 24
                              : 0.0);
    for (const auto& f : falseExamples) std::printf("    false: %s\n", f.c_str());
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
