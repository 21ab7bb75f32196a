#include "loom/telemetry/hall_layout.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "synthetic_inventory.hpp"

namespace loom::telemetry {
namespace {

TEST(HallLayout, OrdersRacksHostsGpusContiguously) {
    auto inv = testing::syntheticCluster({.zones = 2, .racksPerZone = 3, .ctswPerZone = 2,
                                          .ctswUplinks = 2, .atsw = 2});
    // Shuffle the input: the order must come from the entities, not from the input order.
    std::reverse(inv.racks.begin(), inv.racks.end());
    std::reverse(inv.gpus.begin(), inv.gpus.end());
    std::reverse(inv.links.begin(), inv.links.end());
    auto L = HallLayout::build(inv);
    ASSERT_EQ(L.gpuCount(), 2u * 3 * 16);
    ASSERT_EQ(L.racks().size(), 6u);
    EXPECT_EQ(L.racks()[0].name, "z1-r001");
    EXPECT_EQ(L.racks()[3].name, "z2-r001");
    for (std::uint32_t r = 0; r < 6; ++r) {
        EXPECT_EQ(L.racks()[r].gpuOffset, r * 16);
        EXPECT_EQ(L.racks()[r].gpuCount, 16u);
        EXPECT_EQ(L.racks()[r].rtsw, L.racks()[r].name + "-rtsw");
    }
    EXPECT_EQ(L.gpuNames()[0], "z1-r001-h0-gpu0");
    EXPECT_EQ(L.gpuNames()[9], "z1-r001-h1-gpu1");
    EXPECT_EQ(L.gpuByName("z1-r002-h1-gpu7"), 16u + 15u);
    EXPECT_EQ(L.gpuByHost("z1-r002-h1", 7), 31u);
    EXPECT_EQ(L.gpuByHost("z1-r002-h1.dc1.example.com", 7), 31u);  // DCGM FQDN
    EXPECT_EQ(L.gpuByHost("z1-r002-h1", 8), kNoIndex);
    EXPECT_EQ(L.gpuByHost("nope", 0), kNoIndex);
    EXPECT_EQ(L.gpuByUuid("GPU-1-1-1-7"), 31u);
    EXPECT_EQ(L.gpuRack()[31], 1u);
}

TEST(HallLayout, LinksAndPorts) {
    auto inv = testing::syntheticCluster({.zones = 2, .racksPerZone = 3, .ctswPerZone = 2,
                                          .ctswUplinks = 2, .atsw = 2});
    auto L = HallLayout::build(inv);
    // 16 NIC links + 2 uplinks per rack, 2 CTSW x 2 uplinks per zone.
    ASSERT_EQ(L.linkCount(), 6u * 18 + 2 * 2 * 2);
    // NIC links first, in rack order, then rack uplinks, then CTSW uplinks.
    const auto& l0 = L.links()[0];
    EXPECT_EQ(l0.tier, 0);
    EXPECT_EQ(l0.rackIndex, 0u);
    EXPECT_NE(l0.gpu, kNoIndex);
    EXPECT_EQ(l0.aPort, kNoIndex);
    EXPECT_NE(l0.bPort, kNoIndex);
    EXPECT_EQ(L.links()[6 * 16].tier, 1);
    EXPECT_EQ(L.links().back().tier, 2);
    auto p = L.portByName("z1-r001-rtsw", "Ethernet17");
    ASSERT_NE(p, kNoIndex);
    EXPECT_EQ(L.ports()[p].number, 17);
    EXPECT_EQ(L.portName(p), "z1-r001-rtsw/p17");
    auto li = L.ports()[p].linkIndex;
    ASSERT_NE(li, kNoIndex);
    EXPECT_EQ(L.links()[li].name, "z1-r001-rtsw/p17--z1-ctsw01/p1");
    EXPECT_EQ(L.portByName("z1-r001-rtsw", "p99"), kNoIndex);
    EXPECT_EQ(L.portByName("z1-r001-rtsw", "mgmt"), kNoIndex);
    EXPECT_EQ(L.portByName("nope", "p1"), kNoIndex);
    // A 128-port model with 18 cabled ports: slots only up to the last cabled one.
    for (auto& s : inv.switches)
        if (s.name == "z1-r001-rtsw") s.portCount = 128;
    auto L2 = HallLayout::build(inv);
    auto s = L2.switchByName("z1-r001-rtsw");
    EXPECT_EQ(L2.switches()[s].portSlots, 19u);
    EXPECT_EQ(L2.switches()[s].declaredPorts, 128u);
    bool exists = false;
    EXPECT_EQ(L2.portBySwitch(s, "p100", &exists), kNoIndex);
    EXPECT_TRUE(exists);
    EXPECT_EQ(L2.portBySwitch(s, "p129", &exists), kNoIndex);
    EXPECT_FALSE(exists);
    EXPECT_EQ(L.portByName("z1-r001-rtsw", "z1-r001-rtsw/p1"), L.portByName("z1-r001-rtsw", "swp1"));
}

TEST(HallLayout, VersionIsStableAndJsonMatchesApi) {
    auto inv = testing::syntheticCluster({.zones = 1, .racksPerZone = 4});
    auto a = HallLayout::build(inv), b = HallLayout::build(inv);
    EXPECT_EQ(a.layoutVersion(), b.layoutVersion());
    inv.racks.pop_back();
    EXPECT_NE(HallLayout::build(inv).layoutVersion(), a.layoutVersion());
    EXPECT_EQ(HallLayout::build(inv, 7).layoutVersion(), 7);
    auto j = a.toJson();
    EXPECT_EQ(j["gpus"].size(), 64u);
    EXPECT_EQ(j["racks"][1]["gpuOffset"], 16);
    EXPECT_EQ(j["racks"][1]["hosts"][1], "z1-r002-h1");
    EXPECT_EQ(j["racks"][1]["rtsw"], "z1-r002-rtsw");
    EXPECT_EQ(j["links"].size(), a.linkCount());
    EXPECT_EQ(j["switches"][0]["role"], "rtsw");
    EXPECT_EQ(j["fabric"], "roce");
}

TEST(HallLayout, WithStatesEqualsARebuildAndSharesTheStructure) {
    auto inv = testing::syntheticCluster({.zones = 2, .racksPerZone = 3, .ctswPerZone = 2,
                                          .ctswUplinks = 2, .atsw = 2});
    std::reverse(inv.gpus.begin(), inv.gpus.end());  // inventory order != layout order
    for (auto& r : inv.racks) r.state = "in_service";
    for (auto& l : inv.links) l.state = "active";
    const auto before = HallLayout::build(inv);
    // A drained rack, a failed one, a quarantined GPU and host, one link down.
    auto changed = inv;
    changed.racks[1].state = "drained";
    changed.racks[4].state = "failed";
    changed.gpus[3].state = "quarantined";
    changed.hosts[6].state = "quarantined";
    changed.links[10].state = "down";
    const auto rebuilt = HallLayout::build(changed);
    const auto patched = before.withStates(changed);
    ASSERT_TRUE(patched);
    EXPECT_EQ(patched->layoutVersion(), rebuilt.layoutVersion());
    EXPECT_EQ(patched->stateVersion(), rebuilt.stateVersion());
    EXPECT_NE(patched->stateVersion(), before.stateVersion());
    EXPECT_EQ(patched->gpuAdmin(), rebuilt.gpuAdmin());
    EXPECT_EQ(patched->linkAdmin(), rebuilt.linkAdmin());
    EXPECT_EQ(patched->toJson(), rebuilt.toJson());
    EXPECT_EQ(patched->gpuNames().data(), before.gpuNames().data());  // shared, not copied
    EXPECT_EQ(before.withStates(inv)->stateVersion(), before.stateVersion());
    // Not a state refresh of the inventory it was built from: refused.
    auto smaller = inv;
    smaller.links.pop_back();
    EXPECT_FALSE(before.withStates(smaller));
}

TEST(HallLayout, EmptyInventory) {
    inventory::Inventory inv;
    auto L = HallLayout::build(inv);
    EXPECT_EQ(L.gpuCount(), 0u);
    EXPECT_EQ(L.gpuByHost("x", 0), kNoIndex);
    EXPECT_TRUE(L.toJson()["gpus"].is_array());
}

}  // namespace
}  // namespace loom::telemetry
