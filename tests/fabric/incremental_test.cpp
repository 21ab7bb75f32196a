// Incremental reroute must equal a full recompute, over random failure (and repair) sets.
#include <gtest/gtest.h>

#include <random>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/fabric/verify.hpp"

namespace loom::fabric {
namespace {

void randomFailures(const inventory::Inventory& inv, unsigned seed, int rounds, int stepsPerRound) {
    auto topo = buildTopology(inv);
    ASSERT_TRUE(topo.has_value()) << topo.error().toString();
    Router r(std::move(*topo));
    const auto& t = r.topology();
    std::mt19937 rng(seed);
    for (int round = 0; round < rounds; ++round) {
        for (int step = 0; step < stepsPerRound; ++step) {
            if (rng() % 4 == 0) {
                auto s = static_cast<std::int32_t>(rng() % t.switchCount());
                r.setSwitchUp(s, rng() % 3 == 0);  // mostly down, sometimes back up
            } else {
                auto l = static_cast<std::int32_t>(rng() % t.linkCount());
                static constexpr LinkState kStates[] = {LinkState::Down, LinkState::Drained,
                                                        LinkState::Up, LinkState::NotInService};
                r.setLinkState(l, kStates[rng() % 4]);
            }
        }
        Router full = r;
        full.recomputeAll();
        auto diff = r.firstDifference(full);
        ASSERT_EQ(diff, "") << "seed " << seed << " round " << round;
        auto rep = verify(r);
        EXPECT_EQ(rep.loops, 0) << (rep.problems.empty() ? "" : rep.problems[0]);
        EXPECT_EQ(rep.downUpTurns, 0);
    }
}

TEST(FabricIncremental, RoceEqualsFullRecompute) {
    testbed::RoceShape sh{.zones = 3, .racksPerZone = 4, .hostsPerRack = 2, .nicsPerHost = 2,
                          .ctswPerZone = 3, .linksPerCtsw = 1, .atsws = 4, .ctswUplinks = 3};
    auto inv = testbed::makeRoce(sh);
    for (unsigned seed = 1; seed <= 60; ++seed) randomFailures(inv, seed, 8, 3);
}

TEST(FabricIncremental, RoceParallelLinksEqualsFullRecompute) {
    testbed::RoceShape sh{.zones = 2, .racksPerZone = 3, .hostsPerRack = 2, .nicsPerHost = 2,
                          .ctswPerZone = 2, .linksPerCtsw = 2, .atsws = 2, .ctswUplinks = 4};
    auto inv = testbed::makeRoce(sh);
    for (unsigned seed = 100; seed < 160; ++seed) randomFailures(inv, seed, 6, 4);
}

TEST(FabricIncremental, InfinibandEqualsFullRecompute) {
    testbed::IbShape sh{.pods = 2, .susPerPod = 2, .hostsPerSu = 4, .leavesPerSu = 2,
                        .spinesPerPod = 4, .cores = 4, .ports = 16};
    auto inv = testbed::makeIb(sh);
    for (unsigned seed = 200; seed < 260; ++seed) randomFailures(inv, seed, 6, 3);
}

// A batch of link changes (as when a rack goes into service) equals a full recompute too.
TEST(FabricIncremental, BatchedLinkChangesEqualFullRecompute) {
    for (bool roce : {true, false}) {
        auto inv = roce ? testbed::makeRoce({.zones = 3, .racksPerZone = 4, .hostsPerRack = 2,
                                             .nicsPerHost = 2, .ctswPerZone = 3, .linksPerCtsw = 1,
                                             .atsws = 4, .ctswUplinks = 3})
                        : testbed::makeIb({.pods = 2, .susPerPod = 2, .hostsPerSu = 4,
                                           .leavesPerSu = 2, .spinesPerPod = 4, .cores = 4,
                                           .ports = 16});
        for (unsigned seed = 300; seed < 340; ++seed) {
            auto topo = buildTopology(inv);
            ASSERT_TRUE(topo.has_value());
            Router r(std::move(*topo));
            const auto& t = r.topology();
            std::mt19937 rng(seed);
            for (int round = 0; round < 4; ++round) {
                std::vector<std::pair<std::int32_t, LinkState>> batch;
                auto n = 1 + rng() % (round == 3 ? t.linkCount() : 8);
                for (std::uint32_t i = 0; i < n; ++i)
                    batch.emplace_back(static_cast<std::int32_t>(rng() % t.linkCount()),
                                       rng() % 3 ? LinkState::Down : LinkState::Up);
                r.setLinkStates(batch);
                Router full = r;
                full.recomputeAll();
                ASSERT_EQ(r.firstDifference(full), "") << (roce ? "roce" : "ib") << " seed " << seed;
            }
        }
    }
}

}  // namespace
}  // namespace loom::fabric
