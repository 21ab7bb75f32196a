// Placement (issue 15 item 4): the racks a new job gets — one zone when it fits, racks with
// lost uplinks avoided, unreachable hosts never used — against first fit by name.
#include "loom/jobs/placement.hpp"

#include <gtest/gtest.h>

#include "loom/fabric/testbed.hpp"
#include "loom/jobs/hostlist.hpp"

namespace loom::jobs {
namespace {

using fabric::LinkState;
using fabric::Router;

// 2 zones × 4 racks of one host (8 GPUs, 2 NICs), 2 CTSWs per zone with one link from each RTSW
// (as many uplinks as NICs: 1:1), 2 ATSWs.
Router fabric8() {
    fabric::testbed::RoceShape sh{.zones = 2,
                                  .racksPerZone = 4,
                                  .hostsPerRack = 1,
                                  .nicsPerHost = 2,
                                  .ctswPerZone = 2,
                                  .linksPerCtsw = 1,
                                  .atsws = 2,
                                  .ctswUplinks = 2};
    auto topo = fabric::buildTopology(fabric::testbed::makeRoce(sh));
    EXPECT_TRUE(topo.has_value()) << topo.error().toString();
    return Router(std::move(*topo));
}

std::vector<std::string> rackNames(const Router& r, const Placement& p) {
    std::vector<std::string> out;
    for (auto rack : p.racks) out.push_back(r.topology().rackNames[rack]);
    return out;
}

TEST(Placement, AJobThatFitsOneZoneStaysInIt) {
    Router r = fabric8();
    auto avail = availableRacks(r.topology());
    auto p = placeJob(r, {.gpus = 24}, avail);
    ASSERT_TRUE(p) << p.error().toString();
    EXPECT_EQ(rackNames(r, *p), (std::vector<std::string>{"z1-r001", "z1-r002", "z1-r003"}));
    EXPECT_EQ(p->zones, 1);
    EXPECT_EQ(p->gpus, 24);
    EXPECT_DOUBLE_EQ(p->busBw, 100.0);
    EXPECT_EQ(formatHostlist(p->hosts), "z1-r[001-003]-h0");

    auto big = placeJob(r, {.gpus = 48}, avail);
    ASSERT_TRUE(big);
    EXPECT_EQ(big->zones, 2);
    EXPECT_EQ(big->racks.size(), 6u);
}

TEST(Placement, RacksThatLostAnUplinkAreAvoidedWhereFirstFitTakesThem) {
    Router r = fabric8();
    const auto& t = r.topology();
    auto up = t.findLink("z1-r001-rtsw/p3--z1-ctsw01/p1");
    ASSERT_NE(up, fabric::kNone);
    r.setLinkState(up, LinkState::Down);
    auto avail = availableRacks(t);
    auto p = placeJob(r, {.gpus = 24}, avail);
    auto f = placeFirstFit(r, {.gpus = 24}, avail);
    ASSERT_TRUE(p && f);
    EXPECT_EQ(rackNames(r, *p), (std::vector<std::string>{"z1-r002", "z1-r003", "z1-r004"}));
    EXPECT_DOUBLE_EQ(p->busBw, 100.0);
    EXPECT_EQ(rackNames(r, *f), (std::vector<std::string>{"z1-r001", "z1-r002", "z1-r003"}));
    EXPECT_NEAR(f->busBw, 50.0, 1e-6);  // z1-r001 sends 2 rails over one uplink
}

TEST(Placement, UnreachableHostsBusyRacksAndBadRequests) {
    Router r = fabric8();
    const auto& t = r.topology();
    auto h = t.findHost("z1-r002-h0");
    r.setLinkState(t.nicLink[t.hostFirstNic[h]], LinkState::Down);
    std::vector<std::uint8_t> free(t.rackNames.size(), 1);
    for (std::size_t i = 0; i < t.rackNames.size(); ++i)
        if (t.rackNames[i] == "z1-r003") free[i] = 0;
    auto avail = availableRacks(t, free);
    auto p = placeJob(r, {.gpus = 16}, avail);
    ASSERT_TRUE(p);
    for (const auto& name : rackNames(r, *p)) {
        EXPECT_NE(name, "z1-r002") << "a host with a NIC cable down";
        EXPECT_NE(name, "z1-r003") << "busy";
    }
    // 6 racks are left: 48 GPUs.
    auto tooMany = placeJob(r, {.gpus = 49}, avail);
    ASSERT_FALSE(tooMany);
    EXPECT_EQ(tooMany.error().code, Errc::Conflict);
    EXPECT_NE(tooMany.error().message.find("only 48 GPUs"), std::string::npos)
        << tooMany.error().message;
    auto zero = placeJob(r, {.gpus = 0}, avail);
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().path, "gpus");
}

}  // namespace
}  // namespace loom::jobs
