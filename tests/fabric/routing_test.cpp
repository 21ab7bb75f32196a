// Hand-checkable routing on tiny fabrics built in code (fabric/testbed.hpp).
#include <gtest/gtest.h>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/fabric/verify.hpp"

namespace loom::fabric {
namespace {

Router roceRouter(const testbed::RoceShape& shape) {
    auto topo = buildTopology(testbed::makeRoce(shape));
    EXPECT_TRUE(topo.has_value()) << (topo ? "" : topo.error().toString());
    return Router(std::move(*topo));
}

// 2 racks × 2 hosts × 2 NICs; RTSWs have two parallel links to each of two CTSWs.
testbed::RoceShape twoRacks() {
    return {.zones = 1, .racksPerZone = 2, .hostsPerRack = 2, .nicsPerHost = 2,
            .ctswPerZone = 2, .linksPerCtsw = 2};
}

TEST(FabricRouting, TwoRackRoceTablesByHand) {
    Router r = roceRouter(twoRacks());
    const auto& t = r.topology();
    ASSERT_EQ(t.switchCount(), 4);
    ASSERT_EQ(t.nicCount(), 8);
    ASSERT_EQ(t.linkCount(), 8 + 8);
    ASSERT_EQ(r.targetCount(), 2);
    auto r1 = t.findSwitch("z1-r001-rtsw"), r2 = t.findSwitch("z1-r002-rtsw");
    auto c1 = t.findSwitch("z1-ctsw01");
    auto t2 = r.targetOf(r2);
    EXPECT_EQ(r.groupOf(r2, t2), kLocal);
    auto g = r.group(r.groupOf(r1, t2));
    ASSERT_EQ(g.size(), 4u);  // all four uplinks, equal weight
    for (const auto& nh : g) EXPECT_EQ(nh.weight, 1u);
    EXPECT_EQ(r.dist(r1, t2), 2);
    EXPECT_FLOAT_EQ(r.bandwidth(r1, t2), 1600.0f);
    auto gc = r.group(r.groupOf(c1, t2));
    ASSERT_EQ(gc.size(), 2u);  // the two parallel downlinks to rack 2
    EXPECT_EQ(t.linkB[gc[0].link], c1);
    EXPECT_EQ(t.linkA[gc[0].link], r2);
    auto rep = verify(r);
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    EXPECT_EQ(rep.rackPairs, 2);
    EXPECT_EQ(rep.hostPairs, 12);
}

TEST(FabricRouting, OneUplinkDownShiftsWeights) {
    Router r = roceRouter(twoRacks());
    const auto& t = r.topology();
    auto r1 = t.findSwitch("z1-r001-rtsw"), r2 = t.findSwitch("z1-r002-rtsw");
    auto c1 = t.findSwitch("z1-ctsw01");
    auto l = t.findLink("z1-r002-rtsw/p5--z1-ctsw01/p3");
    ASSERT_NE(l, kNone);
    r.setLinkState(l, LinkState::Down);
    auto t2 = r.targetOf(r2);
    // CTSW1 has 400 G left toward rack 2, CTSW2 800 G: rack 1 weights its links 1:1:2:2.
    EXPECT_FLOAT_EQ(r.bandwidth(c1, t2), 400.0f);
    auto g = r.group(r.groupOf(r1, t2));
    ASSERT_EQ(g.size(), 4u);
    for (const auto& nh : g) {
        auto n = t.linkB[nh.link];
        EXPECT_EQ(nh.weight, n == c1 ? 1u : 2u) << t.linkNames[nh.link];
    }
    EXPECT_FLOAT_EQ(r.bandwidth(r1, t2), 1200.0f);
    Router full = r;
    full.recomputeAll();
    EXPECT_EQ(r.firstDifference(full), "");
    EXPECT_TRUE(verify(r).ok());
}

TEST(FabricRouting, RackWithAllUplinksDownIsReportedUnreachable) {
    Router r = roceRouter(twoRacks());
    const auto& t = r.topology();
    auto r2 = t.findSwitch("z1-r002-rtsw");
    for (auto l : t.upLinks(r2)) r.setLinkState(l, LinkState::Down);
    auto rep = verify(r);
    EXPECT_FALSE(rep.ok());
    EXPECT_EQ(rep.rackPairsUnreachable, 2);  // both directions, reported, not dropped
    EXPECT_EQ(rep.loops, 0);
    ASSERT_FALSE(rep.problems.empty());
    EXPECT_NE(rep.problems[0].find("z1-r002"), std::string::npos);
    Router full = r;
    full.recomputeAll();
    EXPECT_EQ(r.firstDifference(full), "");
}

}  // namespace
}  // namespace loom::fabric
