// SummaryRouter: the summarised RoCE tables computed directly (zone routers + one routed
// representative per class of racks). Exact: expanding it gives, for every (switch, rack), the
// same next hops as a full Router, healthy and after random failures and repairs (one link, a
// batch, a switch), in one zone or in several; following the changes incrementally equals
// building it afresh on the changed fabric.
#include "loom/fabric/summary_router.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "loom/inventory/spec.hpp"
#include "roce_fixtures.hpp"

namespace loom::fabric {
namespace {

using fixtures::flipRandomSwitch;
using fixtures::roceTopology;

// Every (switch, rack): the summary's expand and lookup give the router's next hops (by
// content: the two number their groups independently).
void expectExact(const Router& r, const SummaryRouter& sum, const std::string& what) {
    ASSERT_EQ(sum.targetCount(), r.targetCount());
    std::vector<std::int32_t> row;
    int reported = 0;
    for (std::int32_t s = 0; s < r.topology().switchCount(); ++s) {
        sum.expand(s, row);
        for (std::int32_t t = 0; t < r.targetCount(); ++t) {
            auto want = r.groupOf(s, t);
            bool same = want < 0
                            ? row[t] == want
                            : row[t] >= 0 && std::ranges::equal(sum.group(row[t]), r.group(want));
            if (same && sum.lookup(s, t) == row[t]) continue;
            if (reported++ < 5)
                ADD_FAILURE() << what << ": " << r.topology().switchNames[s] << " -> "
                              << r.topology().switchNames[r.targetSwitch(t)] << ": summary group "
                              << row[t] << " (" << (row[t] >= 0 ? sum.group(row[t]).size() : 0)
                              << " hops), router " << want << " ("
                              << (want >= 0 ? r.group(want).size() : 0) << " hops)";
        }
    }
}

// The same cells, by content, as a SummaryRouter built afresh on the same fabric state.
void expectSameAsFresh(const SummaryRouter& a, const Topology& now, const std::string& what) {
    SummaryRouter b(now);
    ASSERT_EQ(a.entryCount(), b.entryCount()) << what;
    for (std::int32_t s = 0; s < now.switchCount(); ++s)
        for (std::int32_t z = 0; z <= a.zoneCount(); ++z) {
            auto ga = a.aggregate(s, z), gb = b.aggregate(s, z);
            ASSERT_TRUE(ga < 0 ? ga == gb : gb >= 0 && std::ranges::equal(a.group(ga), b.group(gb)))
                << what << " aggregate of switch " << now.switchNames[s] << " zone " << z;
            auto sa = a.specifics(s, z), sb = b.specifics(s, z);
            ASSERT_EQ(sa.size(), sb.size())
                << what << " switch " << now.switchNames[s] << " zone " << z;
            for (std::size_t i = 0; i < sa.size(); ++i) {
                ASSERT_EQ(sa[i].target, sb[i].target) << what;
                ASSERT_TRUE(sa[i].group < 0
                                ? sa[i].group == sb[i].group
                                : sb[i].group >= 0 && std::ranges::equal(a.group(sa[i].group),
                                                                         b.group(sb[i].group)))
                    << what;
            }
        }
}

TEST(SummaryRouter, HealthyFabricIsOneClassPerZoneAndHoldsWhatRouteSummaryHolds) {
    auto topo = roceTopology(testbed::makeRoce(fixtures::kFourZonesSixRacks));
    SummaryRouter sum(topo);
    Router r(topo);
    expectExact(r, sum, "healthy");
    EXPECT_EQ(sum.classCount(), 4);
    EXPECT_EQ(sum.representativeSlots(), 4);
    RouteSummary derived(r);
    EXPECT_EQ(sum.entryCount(), derived.entryCount());
    EXPECT_EQ(sum.entryCount(), (4 * 6 + 4 * 3) * 9 + 4 * 4);
    for (std::int32_t z = 0; z < 4; ++z) EXPECT_EQ(sum.zonePrefixes(z), derived.zonePrefixes(z));
}

// Random failures and repairs of links, batches and switches, anywhere: after every step the
// summary equals the full router (which follows the same steps) and a summary built afresh.
TEST(SummaryRouter, FollowsRandomFailuresAndRepairsExactly) {
    auto topo = roceTopology(testbed::makeRoce(fixtures::kThreeZonesFourRacks));
    for (unsigned seed = 1; seed <= 20; ++seed) {
        SummaryRouter sum(topo);
        Router r(topo);
        const auto& t = r.topology();
        std::mt19937 rng(seed);
        for (int step = 0; step < 12; ++step) {
            if (rng() % 5 == 0) {
                flipRandomSwitch(rng, t, r, sum);
            } else if (rng() % 7 == 0) {
                std::vector<std::pair<std::int32_t, LinkState>> batch;
                auto n = 1 + rng() % t.linkCount();
                for (std::uint32_t i = 0; i < n; ++i)
                    batch.emplace_back(static_cast<std::int32_t>(rng() % t.linkCount()),
                                       rng() % 2 ? LinkState::Down : LinkState::Up);
                r.setLinkStates(batch);
                sum.setLinkStates(batch);
            } else {
                auto l = static_cast<std::int32_t>(rng() % t.linkCount());
                auto st = rng() % 3 ? LinkState::Down : LinkState::Up;
                r.setLinkState(l, st);
                sum.setLinkState(l, st);
            }
            const std::string what =
                "seed " + std::to_string(seed) + " step " + std::to_string(step);
            expectExact(r, sum, what);
            expectSameAsFresh(sum, t, what);
            if (HasFatalFailure()) return;
        }
    }
}

// Batches of switches going down and coming back (racks' switches follow them out of and into
// service, a zone's CTSWs follow its last or first rack): setSwitchesUp on a Router equals the
// same switches one by one and a full recompute, and on a SummaryRouter the full router's
// tables and a summary built afresh — small batches (one pass) and large ones (the fallback).
TEST(SummaryRouter, BatchesOfSwitchesEqualOneByOneAndAFreshBuild) {
    auto topo = roceTopology(testbed::makeRoce(fixtures::kThreeZonesFourRacks));
    for (unsigned seed = 1; seed <= 12; ++seed) {
        SummaryRouter sum(topo);
        Router batched(topo), oneByOne(topo);
        const auto& t = batched.topology();
        std::mt19937 rng(seed);
        for (int step = 0; step < 8; ++step) {
            std::vector<std::pair<std::int32_t, bool>> batch;
            const auto n = 1 + rng() % (step == 5 ? t.switchCount() : 6);
            for (std::uint32_t i = 0; i < n; ++i)
                batch.emplace_back(static_cast<std::int32_t>(rng() % t.switchCount()),
                                   rng() % 3 == 0);
            // At most one entry per switch, as the holders give them (the last one wins).
            std::map<std::int32_t, bool> last(batch.begin(), batch.end());
            batch.assign(last.begin(), last.end());
            batched.setSwitchesUp(batch);
            sum.setSwitchesUp(batch);
            for (auto [sw, up] : batch) oneByOne.setSwitchUp(sw, up);
            const std::string what =
                "seed " + std::to_string(seed) + " step " + std::to_string(step);
            ASSERT_EQ(batched.firstDifference(oneByOne), "") << what;
            Router full = batched;
            full.recomputeAll();
            ASSERT_EQ(batched.firstDifference(full), "") << what;
            expectExact(batched, sum, what);
            expectSameAsFresh(sum, t, what);
            if (HasFatalFailure()) return;
        }
    }
}

// Failures in several zones at once (RTSW uplinks, CTSW uplinks, a CTSW, parallel links): each
// zone splits into its own classes, switches outside a zone get more-specifics only for that
// zone's broken racks, and repairing everything returns to one class per zone.
TEST(SummaryRouter, FailuresInSeveralZonesStayExactAndRepairBackToOneClassPerZone) {
    auto topo = roceTopology(testbed::makeRoce({.zones = 4,
                                                .racksPerZone = 5,
                                                .hostsPerRack = 1,
                                                .nicsPerHost = 2,
                                                .ctswPerZone = 3,
                                                .linksPerCtsw = 2,
                                                .atsws = 3,
                                                .ctswUplinks = 3}));
    SummaryRouter sum(topo);
    Router r(topo);
    const auto& t = r.topology();
    const auto healthy = sum.entryCount();
    std::vector<std::int32_t> downs;
    auto down = [&](std::int32_t l) {
        downs.push_back(l);
        r.setLinkState(l, LinkState::Down);
        sum.setLinkState(l, LinkState::Down);
    };
    // Zone 0: one of the two parallel links of its second rack to its first CTSW (weights).
    down(t.upLinks(t.tierSwitches[1][1])[0]);
    // Zone 1: both links of its fourth rack to one CTSW (a path lost).
    down(t.upLinks(t.tierSwitches[1][8])[2]);
    down(t.upLinks(t.tierSwitches[1][8])[3]);
    // Zone 2: a CTSW uplink (every rack of zone 2 alike: still one class).
    down(t.upLinks(t.tierSwitches[2][6])[0]);
    expectExact(r, sum, "three zones");
    // Zone 3: a CTSW down.
    r.setSwitchUp(t.tierSwitches[2][10], false);
    sum.setSwitchUp(t.tierSwitches[2][10], false);
    expectExact(r, sum, "and a CTSW of zone 3");
    expectSameAsFresh(sum, t, "four zones");
    EXPECT_GT(sum.classCount(), 4);
    // Switches outside zones 0 and 1 get more-specifics for racks 1 and 8, and for no other.
    std::int64_t broken = 0;
    for (std::int32_t s = 0; s < t.switchCount(); ++s)
        for (std::int32_t z : {0, 1}) {
            if (t.switchZone[s] == z) continue;
            for (const auto& e : sum.specifics(s, z)) {
                EXPECT_TRUE(e.target == 1 || e.target == 8) << t.switchNames[s] << " " << e.target;
                ++broken;
            }
        }
    EXPECT_GT(broken, 0);
    for (auto l : downs) {
        r.setLinkState(l, LinkState::Up);
        sum.setLinkState(l, LinkState::Up);
        expectExact(r, sum, "repairing");
    }
    r.setSwitchUp(t.tierSwitches[2][10], true);
    sum.setSwitchUp(t.tierSwitches[2][10], true);
    expectExact(r, sum, "repaired");
    EXPECT_EQ(sum.classCount(), 4);
    EXPECT_EQ(sum.entryCount(), healthy);
}

// A rollout, zone by zone and half a zone at a time (each rack's links from not in service to
// up): the cells end as a SummaryRouter built on the final fabric has them, in bytes too. A
// cell lists every rack of its zone while the zone is half in service and none once it is
// whole; it used to keep that room (clear() keeps capacity): at 98k, 377 MB of loomd's heap.
TEST(SummaryRouter, ARolloutLeavesNoRoomBehindInItsCells) {
    auto now = roceTopology(testbed::makeRoce({.zones = 4,
                                               .racksPerZone = 8,
                                               .hostsPerRack = 1,
                                               .nicsPerHost = 2,
                                               .ctswPerZone = 3,
                                               .linksPerCtsw = 1,
                                               .atsws = 3,
                                               .ctswUplinks = 3}));
    const auto rtsws = now.tierSwitches[1];
    auto rackLinks = [&](std::int32_t sw) {
        std::vector<std::int32_t> out;
        for (auto l : now.upLinks(sw)) out.push_back(l);
        for (auto l : now.downLinks(sw)) out.push_back(l);
        return out;
    };
    for (auto sw : rtsws)
        for (auto l : rackLinks(sw)) now.linkState[l] = LinkState::NotInService;
    SummaryRouter sum(now);
    for (std::int32_t z = 0; z < 4; ++z)
        for (int half = 0; half < 2; ++half) {
            std::vector<std::pair<std::int32_t, LinkState>> up;
            int k = 0;
            for (auto sw : rtsws) {
                if (now.switchZone[sw] != z || k++ % 2 != half) continue;
                for (auto l : rackLinks(sw)) {
                    up.emplace_back(l, LinkState::Up);
                    now.linkState[l] = LinkState::Up;
                }
            }
            ASSERT_FALSE(up.empty());
            sum.setLinkStates(up);
        }
    expectSameAsFresh(sum, now, "rolled out");
    SummaryRouter fresh(now);
    EXPECT_EQ(sum.cellBytes(), fresh.cellBytes());
    // Exactly the entries: no cell holds room for more.
    std::size_t used = 0;
    for (std::int32_t s = 0; s < now.switchCount(); ++s)
        for (std::int32_t z = 0; z <= sum.zoneCount(); ++z)
            used += sum.specifics(s, z).size() * sizeof(SummaryTable::Specific);
    EXPECT_LE(sum.cellBytes(),
              used + static_cast<std::size_t>(now.switchCount()) *
                         static_cast<std::size_t>(sum.zoneCount() + 1) *
                         (sizeof(std::int32_t) + sizeof(std::vector<SummaryTable::Specific>)));
}

// The reference cluster, healthy and with one RTSW uplink down: every (switch, rack) pair.
TEST(SummaryRouter, Meta24kRoceIsExactWithoutTheFullTables) {
    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) +
                                              "/configs/clusters/meta-24k-roce.yaml");
    ASSERT_TRUE(inv.has_value()) << inv.error().toString();
    auto topo = roceTopology(*inv);
    SummaryRouter sum(topo);
    EXPECT_EQ(sum.entryCount(), (1536 + 144) * (192 + 7) + 36 * 8);
    EXPECT_EQ(sum.classCount(), 8);
    Router r(topo);
    expectExact(r, sum, "meta-24k-roce");
    const auto& t = r.topology();
    auto l = t.upLinks(t.tierSwitches[1][700])[3];
    r.setLinkState(l, LinkState::Down);
    auto st = sum.setLinkState(l, LinkState::Down);
    EXPECT_FALSE(st.full);
    EXPECT_EQ(sum.classCount(), 9);
    expectExact(r, sum, "meta-24k-roce, one RTSW uplink down");
}

}  // namespace
}  // namespace loom::fabric
