// The straggler finder on live telemetry (issue 15 item 3's held-back scenarios): the simulator
// runs its jobs on a 256-GPU synthetic cluster with its healthy noise, its text goes through the
// hub, and StragglerFinder (what loomd ticks) must name each injected cause's GPU, NIC cable or
// uplink first within 10 s, close it after the cause ends, and open nothing elsewhere.
#include "loom/jobs/straggler_finder.hpp"

#include <gtest/gtest.h>

#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "synthetic_inventory.hpp"

namespace loom::jobs {
namespace {

using Sim = telemetry::Simulator;
using Cause = Sim::StragglerCause;

class StragglerFinderScenarios : public ::testing::TestWithParam<Cause> {};

TEST_P(StragglerFinderScenarios, TheInjectedCauseIsNamedFirstAndNothingElseOpens) {
    const Cause cause = GetParam();
    auto inv = loom::testing::syntheticCluster({.zones = 1, .racksPerZone = 16});
    auto L = std::make_shared<const telemetry::HallLayout>(telemetry::HallLayout::build(inv));
    telemetry::SimulatorConfig sc;
    sc.seed = 11 + static_cast<std::uint64_t>(cause);
    sc.xidPerGpuHour = sc.eccDbePerGpuHour = sc.overheatPerGpuHour = 0;
    sc.flapPerLinkHour = sc.rtswDownPerSwitchHour = 0;
    sc.jobMeanMinutes = 1e6;
    Sim sim(L, sc);
    telemetry::TelemetryHub hub(L);
    StragglerFinder finder;
    std::int64_t now = 1'700'000'000'000;
    std::string body;
    std::vector<StragglerTransition> events;
    std::vector<std::int64_t> at;  // when each event came
    auto tick = [&] {
        sim.step(now, body);
        ASSERT_TRUE(hub.ingestText(body, now));
        hub.tick(now);
        for (auto& t : finder.tick(hub, now)) {
            events.push_back(std::move(t));
            at.push_back(now);
        }
        now += 1000;
    };
    for (int i = 0; i < 5; ++i) tick();
    auto running = sim.runningJobs();
    ASSERT_GE(running.size(), 2u);
    std::vector<FinderJob> list;
    for (const auto& rj : running) {
        FinderJob j{"sim-" + std::to_string(rj.serial), {}};
        for (auto r : rj.racks)
            j.hosts.insert(j.hosts.end(), L->racks()[r].hosts.begin(), L->racks()[r].hosts.end());
        list.push_back(std::move(j));
    }
    finder.setJobs(list);
    for (int i = 0; i < 60; ++i) tick();
    ASSERT_TRUE(events.empty()) << "healthy jobs: " << events.front().message;
    ASSERT_EQ(finder.current().size(), running.size());

    // The biggest job's second rack: GPU 5 of its second host, or that rack's 7th uplink.
    const auto& job = *std::max_element(running.begin(), running.end(), [](auto& a, auto& b) {
        return a.racks.size() < b.racks.size();
    });
    const auto rack = job.racks[job.racks.size() > 1 ? 1 : 0];
    const auto gpu = L->racks()[rack].gpuOffset + 13;
    std::uint32_t target = gpu;
    std::string expect = L->gpuNames()[gpu];
    std::vector<std::uint32_t> uplinks;
    for (std::uint32_t l = 0; l < L->linkCount(); ++l) {
        if (L->links()[l].gpu == gpu && cause == Cause::SlowNic) expect = L->links()[l].name;
        if (L->links()[l].tier == 1 && L->links()[l].rackIndex == rack) uplinks.push_back(l);
    }
    ASSERT_EQ(uplinks.size(), 18u);
    if (Sim::isLinkCause(cause)) {
        target = uplinks[6];
        expect = L->links()[target].name;
    }
    const auto startMs = now;
    sim.injectStraggler(cause, target, now, 20);
    for (int i = 0; i < 60; ++i) tick();

    const std::string name = "sim-" + std::to_string(job.serial);
    ASSERT_FALSE(events.empty()) << "no event for " << Sim::causeName(cause);
    const auto& opened = events.front();
    EXPECT_TRUE(opened.opened);
    EXPECT_EQ(opened.job, name);
    EXPECT_EQ(opened.suspect.location, expect) << opened.message;
    EXPECT_LE(at.front() - startMs, 10'000) << opened.message;
    std::size_t n = 0;
    for (const auto& e : events) n += e.opened;
    EXPECT_EQ(n, 1u) << "one event for one cause";
    ASSERT_EQ(events.size(), 2u) << "opened, then closed after the cause ended";
    EXPECT_FALSE(events[1].opened);
    EXPECT_EQ(events[1].suspect.location, expect);
    EXPECT_GE(at[1] - startMs, 20'000) << "open while the cause lasts";
}

INSTANTIATE_TEST_SUITE_P(EveryCause, StragglerFinderScenarios,
                         ::testing::Values(Cause::ThermalThrottle, Cause::EccPressure,
                                           Cause::SlowNic, Cause::PfcStorm, Cause::FlappingOptic,
                                           Cause::NoisyNeighbour),
                         [](const auto& info) {
                             std::string n(Sim::causeName(info.param));
                             std::erase(n, '_');
                             return n;
                         });

}  // namespace
}  // namespace loom::jobs
