// Topology graph: compact arrays from an inventory, and clear errors for bad cabling.
#include <gtest/gtest.h>

#include "loom/fabric/topology.hpp"
#include "loom/fabric/testbed.hpp"

namespace loom::fabric {
namespace {

testbed::RoceShape small() {
    return {.zones = 2, .racksPerZone = 2, .hostsPerRack = 2, .nicsPerHost = 2, .ctswPerZone = 2,
            .linksPerCtsw = 1, .atsws = 2, .ctswUplinks = 2};
}

TEST(FabricTopology, CompactGraphOfASmallClos) {
    auto topo = buildTopology(testbed::makeRoce(small()));
    ASSERT_TRUE(topo.has_value()) << topo.error().toString();
    const auto& t = *topo;
    EXPECT_EQ(t.tierSwitches[1].size(), 4u);
    EXPECT_EQ(t.tierSwitches[2].size(), 4u);
    EXPECT_EQ(t.tierSwitches[3].size(), 2u);
    EXPECT_EQ(t.nicCount(), 16);
    EXPECT_EQ(t.linkCount(), 16 + 8 + 8);
    // Tiers are contiguous id ranges, lowest first; down-links come before up-links.
    EXPECT_EQ(t.tierSwitches[1][0], 0);
    auto rtsw = t.findSwitch("z1-r001-rtsw");
    EXPECT_EQ(t.downLinks(rtsw).size(), 4u);
    EXPECT_EQ(t.upLinks(rtsw).size(), 2u);
    for (auto l : t.upLinks(rtsw)) EXPECT_EQ(t.linkA[l], rtsw);
    // NIC membership: host, rack, rail, and the switch it is cabled to.
    auto h = t.findHost("z2-r002-h1");
    ASSERT_NE(h, kNone);
    EXPECT_EQ(t.rackNames[t.hostRack[h]], "z2-r002");
    EXPECT_EQ(t.hostNicCount[h], 2);
    auto nic = t.hostFirstNic[h] + 1;
    EXPECT_EQ(t.nicRail[nic], 1);
    EXPECT_EQ(t.switchNames[t.nicSwitch(nic)], "z2-r002-rtsw");
    EXPECT_EQ(t.zoneNames[t.switchZone[t.nicSwitch(nic)]], "z2");
}

TEST(FabricTopology, PlannedCountsAsUpOnlyWhenAsked) {
    auto inv = testbed::makeRoce(small());
    inv.links[3].state = "drained";
    inv.links[4].state = "active";
    auto live = buildTopology(inv, {.plannedIsUp = false});
    ASSERT_TRUE(live.has_value());
    EXPECT_EQ(live->linkState[live->findLink(inv.links[0].name)], LinkState::NotInService);
    EXPECT_EQ(live->linkState[live->findLink(inv.links[3].name)], LinkState::Drained);
    EXPECT_EQ(live->linkState[live->findLink(inv.links[4].name)], LinkState::Up);
    auto offline = buildTopology(inv, {.plannedIsUp = true});
    EXPECT_EQ(offline->linkState[offline->findLink(inv.links[0].name)], LinkState::Up);
}

TEST(FabricTopology, BadCablingIsAnErrorNamingTheLink) {
    auto inv = testbed::makeRoce(small());
    inv.links[5].bPort = "z1-r001-rtsw/p999";
    auto r = buildTopology(inv);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_EQ(r.error().path, "links[5].bPort");
    EXPECT_NE(r.error().message.find("p999"), std::string::npos);

    inv = testbed::makeRoce(small());
    inv.links[6].bPort = inv.links[5].bPort;  // two cables on one port
    r = buildTopology(inv);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().path, "links[6]");

    inv = testbed::makeRoce(small());
    // Find an RTSW uplink and point it at another RTSW: a link inside one tier.
    for (std::size_t i = 0; i < inv.links.size(); ++i)
        if (inv.links[i].bPort.find("ctsw") != std::string::npos) {
            inv.links[i].bPort = "z1-r002-rtsw/p6";
            r = buildTopology(inv);
            ASSERT_FALSE(r.has_value());
            EXPECT_EQ(r.error().path, "links[" + std::to_string(i) + "]");
            EXPECT_NE(r.error().message.find("tier"), std::string::npos) << r.error().message;
            break;
        }
}

}  // namespace
}  // namespace loom::fabric
