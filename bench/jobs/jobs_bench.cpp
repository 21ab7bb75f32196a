// Per-job impact on the 24k RoCE reference cluster (issue 15 item 2; goal: every job updated
// ≤ 100 ms after a link failure). Jobs are placed as the simulator places them: power-law
// sizes of 64..4,096 GPUs (whole racks, P(size) ~ size^-0.8, at least one 4,096-GPU job) on
// consecutive free racks up to 85 % of the GPUs. Then, for each of N failures of a link some
// job crosses (NIC cable, RTSW uplink or CTSW-ATSW link, drawn at random), it times the
// incremental reroute (Router::setLinkState) plus the tracker's update of every job the
// change can move (JobImpactTracker::linksChanged), and the same for the repair.
//
//   loom_jobs_bench [--seeds N] [--failures N]
//
// Prints one line per seed and a summary (p50/p90/max in ms); load average and CPU time too.
//
// Placement (issue 15 item 4): `loom_jobs_bench --placement [--seeds 100] [--gpus 4096]
// [--busy 0.3]` fails 2 % of the links at random (every kind, NIC cables included) per seed,
// marks a fraction of the racks busy, and places one job with placeJob and with first fit by
// name over the same available racks (in service, hosts reachable, not busy); prints the
// expected busbw of both, per seed and summarised. `--fabric-failure-rate F` fails the
// switch-to-switch links at F instead (NIC cables stay at 2 %: a rack with one down is not a
// candidate, so failing them more only shrinks the pool): where the fabric starts to matter.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "lib/measure.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/jobs/job_impact.hpp"
#include "loom/jobs/placement.hpp"

namespace {

using namespace loom;
using bench::Clock;
using bench::msSince;

std::vector<jobs::JobImpactInput> placeJobs(const fabric::Topology& t, std::mt19937_64& rng,
                                            double fill) {
    // Racks in name order, their hosts; whole racks only.
    std::vector<std::vector<std::string>> rackHosts(t.rackNames.size());
    for (std::size_t h = 0; h < t.hostNames.size(); ++h)
        if (t.hostRack[h] != fabric::kNone) rackHosts[t.hostRack[h]].push_back(t.hostNames[h]);
    std::vector<double> w;
    std::vector<int> sizes;
    for (int s = 64; s <= 4096; s *= 2) {
        sizes.push_back(s);
        w.push_back(std::pow(s, -0.8));
    }
    std::discrete_distribution<int> pick(w.begin(), w.end());
    std::vector<jobs::JobImpactInput> out;
    std::size_t next = 0, busyGpus = 0;
    const std::size_t totalGpus = t.hostNames.size() * 8;
    bool big = false;
    while (busyGpus < fill * static_cast<double>(totalGpus)) {
        int gpus = big ? sizes[pick(rng)] : 4096;
        big = true;
        std::size_t racks = static_cast<std::size_t>(gpus) / 16;
        if (next + racks > rackHosts.size()) break;
        jobs::JobImpactInput j{
            "job-" + std::to_string(out.size()), {}, fabric::Collective::AllReduce};
        for (std::size_t r = next; r < next + racks; ++r)
            j.hosts.insert(j.hosts.end(), rackHosts[r].begin(), rackHosts[r].end());
        next += racks;
        busyGpus += static_cast<std::size_t>(gpus);
        out.push_back(std::move(j));
    }
    return out;
}

const char* linkKind(const fabric::Topology& t, std::int32_t l) {
    if (!t.isSwitch(t.linkA[l])) return "nic";
    return t.tierOf(t.linkA[l]) == 1 ? "rtsw-ctsw" : "ctsw-atsw";
}

}  // namespace

int placement(const fabric::Router& healthy, int seeds, int gpus, double busy,
              fabric::Collective pattern, double fabricRate) {
    const auto& t0 = healthy.topology();
    std::vector<double> placed, firstFit, gain, placeMs;
    int better = 0, equal = 0, worse = 0;
    std::size_t zonesPlaced = 0, zonesFirst = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
        std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 7919);
        fabric::Router r = healthy;
        std::vector<std::pair<std::int32_t, fabric::LinkState>> down;
        for (std::int32_t l = 0; l < t0.linkCount(); ++l) {
            const bool nic = !t0.isSwitch(t0.linkA[l]) || !t0.isSwitch(t0.linkB[l]);
            if (std::uniform_real_distribution<double>(0, 1)(rng) < (nic ? 0.02 : fabricRate))
                down.emplace_back(l, fabric::LinkState::Down);
        }
        r.setLinkStates(down);
        std::vector<std::uint8_t> free(t0.rackNames.size(), 1);
        for (auto& f : free) f = std::uniform_real_distribution<double>(0, 1)(rng) >= busy;
        auto avail = jobs::availableRacks(r.topology(), free);
        auto a = Clock::now();
        auto p = jobs::placeJob(r, {.gpus = gpus, .pattern = pattern}, avail);
        placeMs.push_back(msSince(a));
        auto f = jobs::placeFirstFit(r, {.gpus = gpus, .pattern = pattern}, avail);
        if (!p || !f) {
            std::printf("seed %d: %s\n", seed, (!p ? p.error() : f.error()).toString().c_str());
            continue;
        }
        placed.push_back(p->busBw);
        firstFit.push_back(f->busBw);
        gain.push_back(p->busBw - f->busBw);
        zonesPlaced += static_cast<std::size_t>(p->zones);
        zonesFirst += static_cast<std::size_t>(f->zones);
        better += p->busBw > f->busBw + 1e-9;
        equal += std::abs(p->busBw - f->busBw) <= 1e-9;
        worse += p->busBw < f->busBw - 1e-9;
        if (seed <= 5 || seeds <= 10)
            std::printf(
                "seed %d: %zu links down, %zu racks available; placed %.2f%% (%d zones, "
                "%.0f ms) vs first fit %.2f%% (%d zones)\n",
                seed, down.size(),
                static_cast<std::size_t>(std::count(avail.begin(), avail.end(), 1)), p->busBw,
                p->zones, placeMs.back(), f->busBw, f->zones);
    }
    auto mean = [](const std::vector<double>& v) {
        double s = 0;
        for (double x : v) s += x;
        return v.empty() ? 0 : s / static_cast<double>(v.size());
    };
    const double n = static_cast<double>(placed.size());
    std::printf(
        "\nplacement of a %d-GPU %s job, %zu seeds, random link failures: 2%% of NIC cables, "
        "%.0f%% of switch links; %.0f%% racks busy:\n",
        gpus, std::string(fabric::collectiveName(pattern)).c_str(), placed.size(), fabricRate * 100,
        busy * 100);
    std::printf("  placed:    mean %.2f  min %.2f  p50 %.2f  (zones %.2f)\n", mean(placed),
                bench::percentile(placed, 0.0001), bench::percentile(placed, 0.5),
                static_cast<double>(zonesPlaced) / n);
    std::printf("  first fit: mean %.2f  min %.2f  p50 %.2f  (zones %.2f)\n", mean(firstFit),
                bench::percentile(firstFit, 0.0001), bench::percentile(firstFit, 0.5),
                static_cast<double>(zonesFirst) / n);
    std::printf(
        "  placed better in %d, equal in %d, worse in %d seeds; mean gain %.2f points; "
        "placement time p50 %.0f ms max %.0f ms\n",
        better, equal, worse, mean(gain), bench::percentile(placeMs, 0.5),
        bench::percentile(placeMs, 1.0));
    return 0;
}

int main(int argc, char** argv) {
    int seeds = 3, failures = 100, gpus = 4096;
    bool place = false;
    double busy = 0.3, fabricRate = 0.02;
    auto pattern = fabric::Collective::AllReduce;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--failures") && i + 1 < argc)
            failures = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--gpus") && i + 1 < argc)
            gpus = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--busy") && i + 1 < argc)
            busy = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--fabric-failure-rate") && i + 1 < argc)
            fabricRate = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--placement"))
            place = true;
        else if (!std::strcmp(argv[i], "--pattern") && i + 1 < argc)
            pattern = fabric::parseCollective(argv[++i]).value_or(pattern);
        else {
            std::fprintf(
                stderr,
                "usage: loom_jobs_bench [--seeds N] [--failures N] | --placement "
                "[--seeds N] [--gpus N] [--busy F] [--pattern P] [--fabric-failure-rate F]\n");
            return 2;
        }
    }
    const double cpu0 = bench::cpuMs();
    auto t0 = Clock::now();
    auto topo = fabric::buildTopology(fabric::testbed::makeRoce(fabric::testbed::meta24kRoce()));
    if (!topo) {
        std::fprintf(stderr, "%s\n", topo.error().toString().c_str());
        return 1;
    }
    fabric::Router router(std::move(*topo));
    const auto& t = router.topology();
    std::printf("cluster: %zu hosts, %d links, %d switches; routed in %.0f ms\n",
                t.hostNames.size(), t.linkCount(), t.switchCount(), msSince(t0));
    if (place) {
        int rc = placement(router, seeds, gpus, busy, pattern, fabricRate);
        std::printf("  cpu %.0f ms, wall %.0f ms, peak RSS %ld MB, load average %s\n",
                    bench::cpuMs() - cpu0, msSince(t0), bench::peakRssMb(),
                    bench::loadAverage().c_str());
        return rc;
    }

    std::vector<double> failAll, repairAll, failTrackAll, initAll;
    std::size_t recomputedFail = 0, failuresDone = 0, opened = 0, closed = 0;
    std::size_t byKindCount[3] = {}, byKindOpened[3] = {};
    const char* kinds[3] = {"nic", "rtsw-ctsw", "ctsw-atsw"};
    for (int seed = 1; seed <= seeds; ++seed) {
        std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
        auto jobsIn = placeJobs(t, rng, 0.85);
        std::size_t gpus = 0;
        for (const auto& j : jobsIn) gpus += j.hosts.size() * 8;
        jobs::JobImpactTracker tracker;
        auto ti = Clock::now();
        tracker.setJobs(router, jobsIn);
        const double initMs = msSince(ti);
        initAll.push_back(initMs);
        // Candidate links: crossed by some job.
        std::vector<std::int32_t> crossed;
        for (const auto& j : tracker.jobs())
            crossed.insert(crossed.end(), j.links.begin(), j.links.end());
        std::sort(crossed.begin(), crossed.end());
        crossed.erase(std::unique(crossed.begin(), crossed.end()), crossed.end());
        std::vector<double> fail, repair;
        for (int f = 0; f < failures; ++f) {
            // A third of each kind, so the rarer fabric links are measured too.
            std::int32_t l;
            do {
                l = crossed[rng() % crossed.size()];
            } while (std::strcmp(linkKind(t, l), kinds[f % 3]) != 0);
            const std::size_t k = static_cast<std::size_t>(f % 3);
            const auto before = tracker.recomputed();
            auto a = Clock::now();
            router.setLinkState(l, fabric::LinkState::Down);
            auto b = Clock::now();
            auto ch = tracker.linksChanged(router, std::array{l});
            const double ms = msSince(a);
            failTrackAll.push_back(msSince(b));
            fail.push_back(ms);
            recomputedFail += tracker.recomputed() - before;
            ++byKindCount[k];
            for (auto& c : ch)
                if (c.degradation == jobs::Degradation::Opened) {
                    ++opened;
                    ++byKindOpened[k];
                }
            a = Clock::now();
            router.setLinkState(l, fabric::LinkState::Up);
            ch = tracker.linksChanged(router, std::array{l});
            repair.push_back(msSince(a));
            for (auto& c : ch) closed += c.degradation == jobs::Degradation::Closed;
            ++failuresDone;
        }
        failAll.insert(failAll.end(), fail.begin(), fail.end());
        repairAll.insert(repairAll.end(), repair.begin(), repair.end());
        std::printf(
            "seed %d: %zu jobs, %zu GPUs in jobs, all jobs computed in %.1f ms; "
            "failure -> every job updated p50 %.2f p90 %.2f max %.2f ms; "
            "repair p50 %.2f max %.2f ms\n",
            seed, jobsIn.size(), gpus, initMs, bench::percentile(fail, 0.5),
            bench::percentile(fail, 0.9), bench::percentile(fail, 1.0),
            bench::percentile(repair, 0.5), bench::percentile(repair, 1.0));
    }
    std::printf("\nsummary over %d seeds, %zu failures (a third each nic, rtsw-ctsw, ctsw-atsw):\n",
                seeds, failuresDone);
    std::printf(
        "  failure -> all jobs updated (reroute + tracker): p50 %.2f  p90 %.2f  max %.2f ms"
        " (goal <= 100 ms)\n",
        bench::percentile(failAll, 0.5), bench::percentile(failAll, 0.9),
        bench::percentile(failAll, 1.0));
    std::printf("  of which the tracker: p50 %.2f  max %.2f ms; jobs recomputed per failure %.2f\n",
                bench::percentile(failTrackAll, 0.5), bench::percentile(failTrackAll, 1.0),
                static_cast<double>(recomputedFail) / static_cast<double>(failuresDone));
    std::printf("  repair -> all jobs updated (every job recomputed): p50 %.2f  max %.2f ms\n",
                bench::percentile(repairAll, 0.5), bench::percentile(repairAll, 1.0));
    std::printf("  every job from scratch: p50 %.1f  max %.1f ms\n",
                bench::percentile(initAll, 0.5), bench::percentile(initAll, 1.0));
    std::printf("  degradations opened %zu, closed %zu;", opened, closed);
    for (int k = 0; k < 3; ++k)
        std::printf(" %s %zu/%zu", kinds[k], byKindOpened[k], byKindCount[k]);
    std::printf("\n  cpu %.0f ms, wall %.0f ms, peak RSS %ld MB, load average %s\n",
                bench::cpuMs() - cpu0, msSince(t0), bench::peakRssMb(),
                bench::loadAverage().c_str());
    return 0;
}
