// InfiniBand: LIDs, LFTs, up/down (no down-then-up turn), even spread over uplinks.
#include <gtest/gtest.h>

#include <map>

#include "loom/fabric/export.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/fabric/verify.hpp"

namespace loom::fabric {
namespace {

// 2 pods × 1 SU × 4 hosts × 2 rails; 2 leaves and 2 spines per pod; 2 cores.
testbed::IbShape tiny() {
    return {.pods = 2, .susPerPod = 1, .hostsPerSu = 4, .leavesPerSu = 2, .spinesPerPod = 2,
            .cores = 2, .ports = 8};
}

Router ibRouter(const testbed::IbShape& sh) {
    auto topo = buildTopology(testbed::makeIb(sh));
    EXPECT_TRUE(topo.has_value()) << (topo ? "" : topo.error().toString());
    return Router(std::move(*topo));
}

TEST(FabricInfiniband, TinyFatTreeByHand) {
    Router r = ibRouter(tiny());
    const auto& t = r.topology();
    EXPECT_EQ(t.switchCount(), 4 + 4 + 2);
    EXPECT_EQ(t.nicCount(), 16);
    EXPECT_EQ(r.maxLid(), 16 + 10);
    EXPECT_EQ(r.targetCount(), 10);  // every switch has a LID
    // HCA LIDs are leaf-major: su001-leaf1 carries rail 0 of the SU's four hosts, LIDs 1..4.
    auto leaf1 = t.findSwitch("su001-leaf1");
    for (std::uint16_t lid = 1; lid <= 4; ++lid) {
        auto node = r.lidNode(lid);
        ASSERT_FALSE(t.isSwitch(node));
        EXPECT_EQ(t.nicSwitch(node - t.switchCount()), leaf1);
        EXPECT_EQ(r.lftPort(leaf1, lid), lid);  // host h on leaf port h+1
    }
    EXPECT_EQ(r.lftPort(leaf1, r.switchLid(leaf1)), 0);
    // A remote leaf spreads the four destinations of leaf1 over its two uplinks evenly.
    auto remote = t.findSwitch("su002-leaf1");
    std::map<int, int> perPort;
    for (std::uint16_t lid = 1; lid <= 4; ++lid) ++perPort[r.lftPort(remote, lid)];
    ASSERT_EQ(perPort.size(), 2u);
    for (auto [port, n] : perPort) EXPECT_EQ(n, 2) << "port " << port;
    auto rep = verify(r);
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    EXPECT_EQ(rep.hostPairs, 8 * 7);
}

TEST(FabricInfiniband, SpineDownStaysDeadlockFreeAndReachable) {
    Router r = ibRouter(tiny());
    const auto& t = r.topology();
    r.setSwitchUp(t.findSwitch("pod01-spine01"), false);
    auto rep = verify(r);
    EXPECT_EQ(rep.downUpTurns, 0);
    EXPECT_EQ(rep.loops, 0);
    EXPECT_EQ(rep.rackPairsUnreachable, 0) << (rep.problems.empty() ? "" : rep.problems[0]);
    Router full = r;
    full.recomputeAll();
    EXPECT_EQ(r.firstDifference(full), "");
}

TEST(FabricInfiniband, OpensmDumpFormat) {
    Router r = ibRouter(tiny());
    auto files = exportFabric(r, ExportFormat::Opensm);
    ASSERT_TRUE(files.has_value());
    ASSERT_EQ(files->size(), 2u);
    const auto& dump = (*files)[0].content;
    EXPECT_EQ((*files)[0].name, "opensm-lfts.dump");
    EXPECT_EQ(dump.rfind("Unicast lids [0x0-0x1a] of switch Lid 17 guid 0x0002c90300000001 ('", 0), 0u)
        << dump.substr(0, 120);
    EXPECT_NE(dump.find("\n0x0001 001 # Channel Adapter portguid 0x0002c90400000001: '"), std::string::npos);
    EXPECT_NE(dump.find(" lids dumped\n"), std::string::npos);
    auto bad = exportFabric(r, ExportFormat::Frr);
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().code, Errc::InvalidArgument);
}

}  // namespace
}  // namespace loom::fabric
