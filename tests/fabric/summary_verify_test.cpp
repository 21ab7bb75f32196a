// verify(SummaryRouter): the check of the summarised RoCE tables (loomctl fabric verify's
// default). It agrees with the full per-rack check, count for count, on healthy fabrics and
// after random failures and repairs; and it is a real check: a wrong aggregate, a lost
// more-specific, a next hop that is not the switch's, a routing loop are each found.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "loom/fabric/summary_router.hpp"
#include "loom/fabric/verify.hpp"
#include "roce_fixtures.hpp"

namespace loom::fabric {
namespace {

using fixtures::flipRandomSwitch;
using fixtures::roceTopology;

void expectSameReport(const VerifyReport& full, const VerifyReport& sum, const std::string& what) {
    EXPECT_EQ(sum.rackPairs, full.rackPairs) << what;
    EXPECT_EQ(sum.rackPairsUnreachable, full.rackPairsUnreachable) << what;
    EXPECT_EQ(sum.hostPairs, full.hostPairs) << what;
    EXPECT_EQ(sum.hostPairsUnreachable, full.hostPairsUnreachable) << what;
    EXPECT_EQ(sum.loops, full.loops) << what << (sum.problems.empty() ? "" : sum.problems[0]);
    EXPECT_EQ(sum.downUpTurns, full.downUpTurns) << what;
    EXPECT_EQ(sum.linkRoutes, full.linkRoutes) << what;
    EXPECT_EQ(sum.maxLinkRoutes, full.maxLinkRoutes) << what;
    EXPECT_EQ(sum.nonUniformUpGroups, full.nonUniformUpGroups) << what;
    EXPECT_EQ(sum.ok(), full.ok()) << what;
}

TEST(SummaryVerify, AgreesWithTheFullCheckHealthyAndUnderRandomFailures) {
    auto topo = roceTopology(testbed::makeRoce(fixtures::kFourZonesSixRacks));
    {
        SummaryRouter sum(topo);
        Router r(topo);
        auto s = verify(sum);
        expectSameReport(verify(r), s, "healthy");
        EXPECT_TRUE(s.ok());
        EXPECT_EQ(s.rackPairs, 24 * 23);
        EXPECT_GT(s.hostPairs, 0);
        // Summarised entries walked: the zones' own racks, once per zone elsewhere.
        EXPECT_LT(s.entriesChecked, verify(r).entriesChecked / 2);
    }
    auto small = roceTopology(testbed::makeRoce(fixtures::kThreeZonesFourRacks));
    for (unsigned seed = 1; seed <= 12; ++seed) {
        SummaryRouter sum(small);
        Router r(small);
        const auto& t = r.topology();
        std::mt19937 rng(seed);
        for (int step = 0; step < 10; ++step) {
            if (rng() % 4 == 0) {
                flipRandomSwitch(rng, t, r, sum);
            } else {
                auto l = static_cast<std::int32_t>(rng() % t.linkCount());
                auto st = rng() % 3 ? LinkState::Down : LinkState::Up;
                r.setLinkState(l, st);
                sum.setLinkState(l, st);
            }
            expectSameReport(verify(r), verify(sum),
                             "seed " + std::to_string(seed) + " step " + std::to_string(step));
            if (HasFailure()) return;
        }
    }
}

// Zones are checked on several threads (one per core); the report is the same as one thread's:
// its problems in zone order (the racks cut off in z1 before those in z3), capped in that
// order, the same on every run.
TEST(SummaryVerify, ProblemsComeInZoneOrderWhateverTheThreads) {
    auto topo = roceTopology(testbed::makeRoce(fixtures::kThreeZonesFourRacks));
    SummaryRouter sum(topo);
    const auto& t = sum.topology();
    for (const auto* rack : {"z3-r002", "z1-r001"}) {  // z3 first: the order is the zones'
        auto sw = kNone;
        for (auto s : t.tierSwitches[1])
            if (t.rackNames[t.switchRack[s]] == rack) sw = s;
        ASSERT_NE(sw, kNone) << rack;
        for (auto l : t.upLinks(sw)) sum.setLinkState(l, LinkState::Down);
    }
    auto first = verify(sum, 1000);
    ASSERT_FALSE(first.ok());
    ASSERT_GE(first.problems.size(), 2u);
    EXPECT_NE(first.problems.front().find("-> z1-r001"), std::string::npos)
        << first.problems.front();
    EXPECT_NE(first.problems.back().find("z3-r002"), std::string::npos) << first.problems.back();
    for (int run = 0; run < 20; ++run) {
        auto again = verify(sum, 1000);
        EXPECT_EQ(again.problems, first.problems) << "run " << run;
        EXPECT_EQ(again.linkRoutes, first.linkRoutes) << "run " << run;
        EXPECT_EQ(again.rackPairsUnreachable, first.rackPairsUnreachable) << "run " << run;
        auto capped = verify(sum, 3);
        ASSERT_EQ(capped.problems.size(), 3u);
        EXPECT_TRUE(
            std::equal(capped.problems.begin(), capped.problems.end(), first.problems.begin()));
        if (HasFailure()) return;
    }
}

// The summarised cells, written to by hand (SummaryTable's members are protected).
class TamperedSummary : public SummaryRouter {
public:
    explicit TamperedSummary(Topology t) : SummaryRouter(std::move(t)) {}
    void setAggregate(std::int32_t sw, std::int32_t zone, std::int32_t group) {
        aggregate_[cell(sw, zone)] = group;
    }
    void setSpecific(std::int32_t sw, std::int32_t target, std::int32_t group) {
        auto& v = specifics_[cell(sw, zoneOfTarget(target))];
        auto it = std::lower_bound(v.begin(), v.end(), target,
                                   [](const Specific& e, std::int32_t t) { return e.target < t; });
        if (it != v.end() && it->target == target)
            it->group = group;
        else
            v.insert(it, Specific{target, group});
    }
};

bool mentions(const VerifyReport& rep, const std::string& what) {
    return std::ranges::any_of(rep.problems,
                               [&](const auto& p) { return p.find(what) != std::string::npos; });
}

TEST(SummaryVerify, FindsAWrongEntry) {
    const auto topo = roceTopology(testbed::makeRoce(fixtures::kFourZonesSixRacks));
    const auto& t = topo;
    ASSERT_GE(t.tierSwitches[3].size(), 1u);
    const auto atsw = t.tierSwitches[3][0];
    std::int32_t ctsw0 = kNone;  // a CTSW of zone 0
    for (auto s : t.tierSwitches[2])
        if (t.switchZone[s] == 0 && ctsw0 == kNone) ctsw0 = s;
    ASSERT_NE(ctsw0, kNone);
    {
        TamperedSummary sum(topo);
        ASSERT_TRUE(verify(sum).ok());
    }
    {  // An ATSW sends zone 0's racks down into zone 1, whose CTSWs send them back up.
        TamperedSummary sum(topo);
        sum.setAggregate(atsw, 0, sum.aggregate(atsw, 1));
        auto rep = verify(sum);
        EXPECT_FALSE(rep.ok());
        EXPECT_GT(rep.downUpTurns, 0);
        EXPECT_TRUE(mentions(rep, t.switchNames[atsw])) << rep.problems.front();
    }
    {  // A rack switch loses its more-specific for another rack of its zone: one pair lost.
        TamperedSummary sum(topo);
        const auto a = sum.targetSwitch(0);
        sum.setSpecific(a, 1, kNoRoute);
        auto rep = verify(sum);
        EXPECT_FALSE(rep.ok());
        EXPECT_EQ(rep.rackPairsUnreachable, 1);
        EXPECT_EQ(rep.loops, 0);
        EXPECT_GT(rep.hostPairsUnreachable, 0);
    }
    {  // A rack of zone 2 seen from a zone-0 rack switch through the next hops of another
       // switch (zone 1's rack switch): links that are not its own.
        TamperedSummary sum(topo);
        const auto a = sum.targetSwitch(0);
        const auto b = sum.targetSwitch(6);  // zone 1
        sum.setAggregate(a, 2, sum.aggregate(b, 2));
        auto rep = verify(sum);
        EXPECT_FALSE(rep.ok());
        EXPECT_EQ(rep.rackPairsUnreachable, 6) << "the zone's six racks, from one switch";
        EXPECT_GT(rep.loops, 0);
        EXPECT_TRUE(mentions(rep, "not a usable link of the switch")) << rep.problems.front();
    }
    {  // A CTSW climbs toward a rack of its own zone; the ATSWs bring it back down: a loop.
        TamperedSummary sum(topo);
        sum.setSpecific(ctsw0, 2, sum.aggregate(ctsw0, 1));
        auto rep = verify(sum);
        EXPECT_FALSE(rep.ok());
        EXPECT_GT(rep.loops + rep.downUpTurns, 0);
        EXPECT_TRUE(mentions(rep, t.switchNames[ctsw0])) << rep.problems.front();
    }
}

// The shipped 24k spec: the summarised check agrees with the full one.
TEST(SummaryVerify, Meta24kRoceAgreesWithTheFullCheck) {
    auto topo = roceTopology(fixtures::fromSpec("meta-24k-roce.yaml"));
    SummaryRouter sum(topo);
    auto s = verify(sum);
    EXPECT_TRUE(s.ok()) << (s.problems.empty() ? "" : s.problems[0]);
    EXPECT_EQ(s.rackPairs, 1536LL * 1535);
    Router r(std::move(topo));
    expectSameReport(verify(r), s, "24k");
}

}  // namespace
}  // namespace loom::fabric
