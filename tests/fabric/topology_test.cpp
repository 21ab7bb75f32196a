// Topology graph: compact arrays from an inventory, and clear errors for bad cabling.
#include "loom/fabric/topology.hpp"

#include <gtest/gtest.h>

#include "loom/fabric/testbed.hpp"
#include "roce_shapes.hpp"

namespace loom::fabric {
namespace {

constexpr auto kSmall = fixtures::twoCtswClos(2, 2);

TEST(FabricTopology, CompactGraphOfASmallClos) {
    auto topo = buildTopology(testbed::makeRoce(kSmall));
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
    auto inv = testbed::makeRoce(kSmall);
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
    auto inv = testbed::makeRoce(kSmall);
    inv.links[5].bPort = "z1-r001-rtsw/p999";
    auto r = buildTopology(inv);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_EQ(r.error().path, "links[5].bPort");
    EXPECT_NE(r.error().message.find("p999"), std::string::npos);

    inv = testbed::makeRoce(kSmall);
    inv.links[6].bPort = inv.links[5].bPort;  // two cables on one port
    r = buildTopology(inv);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().path, "links[6]");

    inv = testbed::makeRoce(kSmall);
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

// The name tables of buildTopology (open addressing since issue 37): a second switch or NIC of
// one name is an error naming it; a port name given twice keeps its first port.
TEST(FabricTopology, DuplicateNamesAreErrorsNamingTheEntity) {
    auto inv = testbed::makeRoce(kSmall);
    std::size_t rtsw = 0, ctsw = 0;
    for (std::size_t i = 0; i < inv.switches.size(); ++i) {
        if (inv.switches[i].name == "z1-r002-rtsw") rtsw = i;
        if (inv.switches[i].name == "z1-ctsw01") ctsw = i;
    }
    inv.switches[ctsw].name = inv.switches[rtsw].name;
    auto r = buildTopology(inv);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().path, "switches[" + std::to_string(ctsw) + "]");
    EXPECT_NE(r.error().message.find("duplicate switch name z1-r002-rtsw"), std::string::npos)
        << r.error().message;

    inv = testbed::makeRoce(kSmall);
    std::size_t first = inv.nics.size(), second = 0;
    for (std::size_t i = 0; i < inv.nics.size(); ++i)
        if (inv.nics[i].network == inventory::Network::Backend) {
            if (first == inv.nics.size())
                first = i;
            else
                second = i;
        }
    inv.nics[second].name = inv.nics[first].name;
    r = buildTopology(inv);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().path, "nics[" + std::to_string(second) + "]");
    EXPECT_NE(r.error().message.find("duplicate NIC name"), std::string::npos);

    // A port listed twice: the first entry's device and index stand, so the graph is the same.
    inv = testbed::makeRoce(kSmall);
    auto extra = inv.ports[0];
    extra.device = "z2-r002-rtsw";
    extra.index = 99;
    inv.ports.push_back(extra);
    auto t = buildTopology(inv);
    ASSERT_TRUE(t.has_value()) << t.error().toString();
    auto same = buildTopology(testbed::makeRoce(kSmall));
    EXPECT_EQ(t->linkA, same->linkA);
    EXPECT_EQ(t->linkAPort, same->linkAPort);
    EXPECT_EQ(t->linkB, same->linkB);
}

}  // namespace
}  // namespace loom::fabric
