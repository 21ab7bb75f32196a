// RouteSummary: zone aggregates + own-zone racks + more-specifics where failures break the
// symmetry. Exact: expanding it gives the Router's group for every (switch, rack), healthy and
// under random failures, and following incremental reroutes equals summarising afresh.
#include "loom/fabric/summary.hpp"

#include <gtest/gtest.h>

#include <random>

#include "loom/inventory/spec.hpp"
#include "roce_fixtures.hpp"

namespace loom::fabric {
namespace {

// Every (switch, rack) pair: the summary's lookup and expand equal the unsummarised router.
void expectExact(const Router& r, const RouteSummary& sum, const std::string& what) {
    std::vector<std::int32_t> row;
    int reported = 0;
    for (std::int32_t s = 0; s < r.topology().switchCount(); ++s) {
        sum.expand(s, row);
        ASSERT_EQ(row.size(), static_cast<std::size_t>(r.targetCount()));
        for (std::int32_t t = 0; t < r.targetCount(); ++t) {
            if (row[t] == r.groupOf(s, t) && sum.lookup(s, t) == row[t]) continue;
            if (reported++ < 5)
                ADD_FAILURE() << what << ": " << r.topology().switchNames[s] << " -> "
                              << r.topology().switchNames[r.targetSwitch(t)] << ": summary "
                              << row[t] << "/" << sum.lookup(s, t) << ", router "
                              << r.groupOf(s, t);
        }
    }
}

// Same cells as a summary built afresh from the same router (same group ids).
void expectSameCells(const RouteSummary& a, const RouteSummary& b, std::int32_t switches,
                     const std::string& what) {
    for (std::int32_t s = 0; s < switches; ++s)
        for (std::int32_t z = 0; z <= a.zoneCount(); ++z) {
            ASSERT_EQ(a.aggregate(s, z), b.aggregate(s, z))
                << what << " switch " << s << " zone " << z;
            ASSERT_TRUE(std::ranges::equal(a.specifics(s, z), b.specifics(s, z)))
                << what << " switch " << s << " zone " << z;
        }
}

using fixtures::roceRouter;

TEST(RouteSummary, ZonePrefixesCoverTheRacksExactly) {
    EXPECT_EQ(AddressPlan::rackRangePrefixes(0, 191),
              (std::vector<std::string>{"10.128.0.0/19", "10.128.32.0/20"}));
    EXPECT_EQ(AddressPlan::rackRangePrefixes(192, 383),
              (std::vector<std::string>{"10.128.48.0/20", "10.128.64.0/19"}));
    EXPECT_EQ(AddressPlan::rackRangePrefixes(0, 3), (std::vector<std::string>{"10.128.0.0/24"}));
    EXPECT_EQ(AddressPlan::rackRangePrefixes(5, 5), (std::vector<std::string>{"10.128.1.64/26"}));
    EXPECT_EQ(AddressPlan::rackRangePrefixes(1, 6),
              (std::vector<std::string>{"10.128.0.64/26", "10.128.0.128/25", "10.128.1.0/25",
                                        "10.128.1.128/26"}));
}

TEST(RouteSummary, HealthyFabricHoldsOwnZoneRacksAndOneAggregatePerRemoteZone) {
    auto r = roceRouter(testbed::makeRoce(fixtures::kFourZonesSixRacks));
    RouteSummary sum(r);
    expectExact(r, sum, "healthy");
    const auto& t = r.topology();
    ASSERT_EQ(sum.zoneCount(), 4);
    for (std::int32_t s = 0; s < t.switchCount(); ++s) {
        std::int64_t aggs = 0, specifics = 0;
        for (std::int32_t z = 0; z <= sum.zoneCount(); ++z) {
            aggs += sum.aggregate(s, z) != kNoRoute;
            specifics += static_cast<std::int64_t>(sum.specifics(s, z).size());
        }
        if (t.switchTier[s] == 3) {
            EXPECT_EQ(aggs, 4) << t.switchNames[s];
            EXPECT_EQ(specifics, 0) << t.switchNames[s];
        } else {
            EXPECT_EQ(aggs, 3) << t.switchNames[s];
            EXPECT_EQ(specifics, 6) << t.switchNames[s];  // the racks of its own zone
        }
    }
    EXPECT_EQ(sum.entryCount(), (4 * 6 + 4 * 3) * 9 + 4 * 4);
    EXPECT_LT(sum.entryCount(), static_cast<std::int64_t>(t.switchCount()) * r.targetCount());
}

TEST(RouteSummary, FollowsIncrementalReroutesAndStaysExact) {
    auto inv = testbed::makeRoce(fixtures::kThreeZonesFourRacks);
    for (unsigned seed = 1; seed <= 25; ++seed) {
        Router r = roceRouter(inv);
        EntryChanges changes;
        r.recordChanges(&changes);
        RouteSummary sum(r);
        const auto& t = r.topology();
        std::mt19937 rng(seed);
        for (int step = 0; step < 12; ++step) {
            UpdateStats st;
            if (rng() % 5 == 0) {
                st = r.setSwitchUp(static_cast<std::int32_t>(rng() % t.switchCount()),
                                   rng() % 3 == 0);
            } else if (rng() % 7 == 0) {
                std::vector<std::pair<std::int32_t, LinkState>> batch;
                auto n = 1 + rng() % t.linkCount();
                for (std::uint32_t i = 0; i < n; ++i)
                    batch.emplace_back(static_cast<std::int32_t>(rng() % t.linkCount()),
                                       rng() % 2 ? LinkState::Down : LinkState::Up);
                st = r.setLinkStates(batch);
            } else {
                st = r.setLinkState(static_cast<std::int32_t>(rng() % t.linkCount()),
                                    rng() % 3 ? LinkState::Down : LinkState::Up);
            }
            sum.update(r, changes, st.full);
            EXPECT_TRUE(changes.empty());
            const std::string what =
                "seed " + std::to_string(seed) + " step " + std::to_string(step);
            expectExact(r, sum, what);
            RouteSummary fresh(r);
            expectSameCells(sum, fresh, t.switchCount(), what);
            if (HasFatalFailure()) return;
        }
    }
}

// One RTSW uplink down breaks the symmetry of one rack only: the switches that route to that
// rack differently get a more-specific for it, nothing else changes.
TEST(RouteSummary, OneLinkDownAddsMoreSpecificsForItsRackOnly) {
    auto inv = testbed::makeRoce({.zones = 3,
                                  .racksPerZone = 4,
                                  .hostsPerRack = 2,
                                  .nicsPerHost = 2,
                                  .ctswPerZone = 3,
                                  .linksPerCtsw = 1,
                                  .atsws = 3,
                                  .ctswUplinks = 3});
    Router r = roceRouter(inv);
    EntryChanges changes;
    r.recordChanges(&changes);
    RouteSummary sum(r);
    const auto healthy = sum.entryCount();
    const auto& t = r.topology();
    auto rtsw = t.tierSwitches[1][5];  // zone 1, second rack
    auto up = t.upLinks(rtsw)[0];
    auto st = r.setLinkState(up, LinkState::Down);
    sum.update(r, changes, st.full);
    expectExact(r, sum, "one uplink down");
    const auto rack = r.targetOf(rtsw);
    std::int64_t others = 0;
    for (std::int32_t s = 0; s < t.switchCount(); ++s)
        for (std::int32_t z = 0; z < sum.zoneCount(); ++z)
            if (z != t.switchZone[s])
                for (const auto& e : sum.specifics(s, z)) others += e.target != rack;
    EXPECT_EQ(others, 0);
    EXPECT_GT(sum.entryCount(), healthy);
    st = r.setLinkState(up, LinkState::Up);
    sum.update(r, changes, st.full);
    EXPECT_EQ(sum.entryCount(), healthy);
}

// The reference cluster: every (switch, rack) pair of meta-24k-roce, healthy.
TEST(RouteSummary, Meta24kRoceIsExactAndSmall) {
    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) +
                                              "/configs/clusters/meta-24k-roce.yaml");
    ASSERT_TRUE(inv.has_value()) << inv.error().toString();
    Router r = roceRouter(*inv);
    RouteSummary sum(r);
    expectExact(r, sum, "meta-24k-roce");
    // RTSW and CTSW: 192 own racks + 7 zone aggregates; ATSW: 8 aggregates.
    EXPECT_EQ(sum.entryCount(), (1536 + 144) * (192 + 7) + 36 * 8);
    EXPECT_EQ(sum.zonePrefixes(1), (std::vector<std::string>{"10.128.48.0/20", "10.128.64.0/19"}));
}

}  // namespace
}  // namespace loom::fabric
