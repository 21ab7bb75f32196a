// Failure impact: bus bandwidth of collectives on healthy and degraded fabrics.
#include <gtest/gtest.h>

#include "loom/fabric/impact.hpp"
#include "loom/fabric/testbed.hpp"

namespace loom::fabric {
namespace {

// 4 racks in one zone; each RTSW: 2 hosts × 2 NICs down (1600 G), 2 CTSWs × 1 link up (800 G):
// 2:1 oversubscribed on purpose so the arithmetic is visible.
Router fabric4() {
    testbed::RoceShape sh{.zones = 1, .racksPerZone = 4, .hostsPerRack = 2, .nicsPerHost = 2,
                          .ctswPerZone = 2, .linksPerCtsw = 1};
    auto topo = buildTopology(testbed::makeRoce(sh));
    EXPECT_TRUE(topo.has_value());
    return Router(std::move(*topo));
}

std::vector<std::string> hosts(std::initializer_list<const char*> names) {
    return {names.begin(), names.end()};
}

TEST(FabricImpact, RingInsideOneRackRunsAtLineRate) {
    Router r = fabric4();
    auto res = impactByName(r, hosts({"z1-r001-h0", "z1-r001-h1"}), Collective::AllReduce);
    ASSERT_TRUE(res.has_value()) << res.error().toString();
    EXPECT_DOUBLE_EQ(res->busBwNormalized, 100.0);
    EXPECT_EQ(res->flows, 4);  // 2 rails × 2 ring hops
    EXPECT_TRUE(res->bottlenecks.empty());
}

TEST(FabricImpact, RingAcrossRacksOnHealthyFabric) {
    Router r = fabric4();
    // Ring h(r1,0) -> h(r2,0) -> h(r1,1) -> h(r2,1) -> back: on each rail 4 flows, every hop
    // crosses racks: each RTSW sends 4 flows (2 rails × 2 hosts) over 800 G of uplinks.
    auto res = impactByName(r, hosts({"z1-r001-h0", "z1-r002-h0", "z1-r001-h1", "z1-r002-h1"}),
                            Collective::AllReduce);
    ASSERT_TRUE(res.has_value());
    EXPECT_NEAR(res->busBwNormalized, 50.0, 1e-6);  // 800 G / 4 flows = 200 G of 400 G
    ASSERT_FALSE(res->bottlenecks.empty());
    EXPECT_NEAR(res->bottlenecks[0].gbpsPerFlow, 200.0, 1e-6);
}

TEST(FabricImpact, UplinkDownHalvesTheRing) {
    Router r = fabric4();
    const auto& t = r.topology();
    auto l = t.findLink("z1-r002-rtsw/p5--z1-ctsw01/p2");
    ASSERT_NE(l, kNone);
    r.setLinkState(l, LinkState::Down);
    auto res = impactByName(r, hosts({"z1-r001-h0", "z1-r002-h0"}), Collective::AllReduce);
    ASSERT_TRUE(res.has_value());
    // 4 flows (2 rails × 2 directions); rack 2 has one 400 G uplink left for its 2 outgoing
    // flows, and one downlink path for its 2 incoming flows: 200 G each = 50.
    EXPECT_NEAR(res->busBwNormalized, 50.0, 1e-6);
    ASSERT_FALSE(res->bottlenecks.empty());
    auto map = degradationMap(r);
    ASSERT_EQ(map.size(), 4u);
    EXPECT_NEAR(map[1], 25.0, 1e-3);  // 400 G left for 1600 G of hosts
    EXPECT_NEAR(map[0], 25.0, 1e-3);  // and nothing reaches rack 2 faster
    Router healthy = fabric4();
    EXPECT_NEAR(degradationMap(healthy)[1], 50.0, 1e-3);  // 800 G up for 1600 G down
}

TEST(FabricImpact, UnreachableRackGivesZeroAndBadInputIsAnError) {
    Router r = fabric4();
    const auto& t = r.topology();
    for (auto l : t.upLinks(t.findSwitch("z1-r003-rtsw"))) r.setLinkState(l, LinkState::Down);
    auto res = impactByName(r, hosts({"z1-r001-h0", "z1-r003-h0"}), Collective::AllGather);
    ASSERT_TRUE(res.has_value());
    EXPECT_EQ(res->busBwNormalized, 0.0);
    EXPECT_GT(res->unroutedFlows, 0);
    EXPECT_EQ(degradationMap(r)[2], 0.0f);

    auto bad = impactByName(r, hosts({"z1-r001-h0", "nope"}), Collective::AllReduce);
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().path, "hosts[1]");
    auto dup = impactByName(r, hosts({"z1-r001-h0", "z1-r001-h0"}), Collective::AllReduce);
    ASSERT_FALSE(dup.has_value());
    EXPECT_FALSE(parseCollective("broadcast").has_value());
    EXPECT_EQ(parseCollective("all_to_all"), Collective::AllToAll);
}

TEST(FabricImpact, AllToAllNormalizesPerPeer) {
    Router r = fabric4();
    auto res = impactByName(r, hosts({"z1-r001-h0", "z1-r001-h1"}), Collective::AllToAll);
    ASSERT_TRUE(res.has_value());
    EXPECT_NEAR(res->busBwNormalized, 100.0, 1e-6);
}

}  // namespace
}  // namespace loom::fabric
