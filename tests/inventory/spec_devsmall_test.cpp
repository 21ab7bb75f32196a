// dev-small and dev-small-ib checked by hand: names, which port goes where, media, lengths.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/inventory/spec.hpp"
#include "spec_test_support.hpp"

namespace loom::inventory {
namespace {

using testing::byName;
using testing::linkAt;
using testing::loadConfig;

TEST(SpecDevSmall, Names) {
    Inventory inv = loadConfig("dev-small.yaml");
    EXPECT_EQ(inv.cluster, "dev-small");
    ASSERT_EQ(inv.sites.size(), 1u);
    EXPECT_EQ(inv.sites[0].name, "dev-lab");
    EXPECT_EQ(inv.zones[0].name, "z1");
    EXPECT_EQ(inv.zones[0].site, "dev-lab");
    EXPECT_EQ(inv.rows[0].name, "z1-row01");
    EXPECT_EQ(inv.rows[1].name, "z1-row02");
    EXPECT_EQ(inv.rows[2].name, "z1-srow01");

    const Rack* r3 = byName(inv.racks, "z1-r003");
    ASSERT_TRUE(r3);
    EXPECT_EQ(r3->row, "z1-row02");  // 2 racks per row: r003 opens row 2
    EXPECT_EQ(r3->position, 0);
    EXPECT_EQ(r3->zone, "z1");

    const Host* h = byName(inv.hosts, "z1-r001-h1");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->rack, "z1-r001");
    EXPECT_EQ(h->slot, 1);
    EXPECT_EQ(h->model, "grand-teton");

    const Gpu* g = byName(inv.gpus, "z1-r001-h0-gpu3");
    ASSERT_TRUE(g);
    EXPECT_EQ(g->host, "z1-r001-h0");
    EXPECT_EQ(g->index, 3);
    EXPECT_EQ(g->model, "H100-SXM5-80GB");

    const Nic* n = byName(inv.nics, "z1-r001-h0-nic3");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->index, 3);  // rail 3, serving gpu3
    EXPECT_EQ(n->network, Network::Backend);
    EXPECT_EQ(n->speedGbps, 400);
    const Nic* fe = byName(inv.nics, "z1-r001-h0-fe0");
    ASSERT_TRUE(fe);
    EXPECT_EQ(fe->network, Network::Frontend);
    EXPECT_EQ(fe->speedGbps, 100);

    const Switch* rtsw = byName(inv.switches, "z1-r002-rtsw");
    ASSERT_TRUE(rtsw);
    EXPECT_EQ(rtsw->role, SwitchRole::Rtsw);
    EXPECT_EQ(rtsw->rack, "z1-r002");
    EXPECT_EQ(rtsw->zone, "z1");
    EXPECT_EQ(rtsw->model, "minipack2");
    EXPECT_EQ(rtsw->portCount, 128);
    const Switch* ctsw = byName(inv.switches, "z1-ctsw04");
    ASSERT_TRUE(ctsw);
    EXPECT_EQ(ctsw->zone, "z1");
    EXPECT_TRUE(ctsw->rack.empty());
    const Switch* atsw = byName(inv.switches, "atsw02");
    ASSERT_TRUE(atsw);
    EXPECT_TRUE(atsw->zone.empty());
    EXPECT_TRUE(byName(inv.switches, "z1-r004-fsw"));
    EXPECT_TRUE(byName(inv.switches, "fcsw02"));
    EXPECT_TRUE(byName(inv.switches, "z1-s01-ssw"));
    const StorageNode* sn = byName(inv.storageNodes, "z1-s01-n1");
    ASSERT_TRUE(sn);
    EXPECT_EQ(sn->rack, "z1-s01");
    EXPECT_EQ(sn->capacityTb, 368);
    EXPECT_TRUE(byName(inv.nics, "z1-s01-n1-nic1"));
}

TEST(SpecDevSmall, Cabling) {
    Inventory inv = loadConfig("dev-small.yaml");
    // Host slot s, NIC i -> RTSW port 8s+i+1, DAC inside the rack.
    const Link* l = linkAt(inv, "z1-r002-h1-nic5/p1");
    ASSERT_TRUE(l);
    EXPECT_EQ(l->name, "z1-r002-h1-nic5/p1--z1-r002-rtsw/p14");
    EXPECT_EQ(l->aPort, "z1-r002-h1-nic5/p1");
    EXPECT_EQ(l->network, Network::Backend);
    EXPECT_EQ(l->medium, Medium::Dac);
    EXPECT_EQ(l->lengthM, 2.0);
    EXPECT_EQ(l->speedGbps, 400);

    // RTSW uplink u (port 17+u) -> CTSW (u mod 4)+1, port 4*rack + u/4 + 1 (rack 0-based).
    l = linkAt(inv, "z1-r003-rtsw/p23");  // rack index 2, u = 6 -> ctsw03, port 4*2+1+1 = 10
    ASSERT_TRUE(l);
    EXPECT_EQ(l->bPort, "z1-ctsw03/p10");
    // The CTSWs sit in the zone's network row (floor row 0, x = 0); r003 is in floor row 2 at
    // position 0: 2 rows * 3 m + 0 m along the row + 3 m slack = 9 m, AOC.
    EXPECT_EQ(l->medium, Medium::Aoc);
    EXPECT_EQ(l->lengthM, 9.0);
    EXPECT_EQ(linkAt(inv, "z1-r004-rtsw/p32")->bPort, "z1-ctsw04/p16");

    // CTSW uplinks p17..p20: ctsw01/03 -> atsw01, ctsw02/04 -> atsw02 (planes = gcd(4, 2) = 2).
    EXPECT_EQ(linkAt(inv, "z1-ctsw01/p17")->bPort, "atsw01/p1");
    EXPECT_EQ(linkAt(inv, "z1-ctsw01/p20")->bPort, "atsw01/p4");
    EXPECT_EQ(linkAt(inv, "z1-ctsw03/p17")->bPort, "atsw01/p5");
    EXPECT_EQ(linkAt(inv, "z1-ctsw02/p18")->bPort, "atsw02/p2");
    EXPECT_EQ(linkAt(inv, "z1-ctsw04/p20")->bPort, "atsw02/p8");

    // Frontend: fe0 of slot s on fsw port s+1; fsw uplinks p3, p4 round-robin over fcsws.
    EXPECT_EQ(linkAt(inv, "z1-r003-h1-fe0/p1")->bPort, "z1-r003-fsw/p2");
    EXPECT_EQ(linkAt(inv, "z1-r001-fsw/p3")->bPort, "fcsw01/p1");
    EXPECT_EQ(linkAt(inv, "z1-r001-fsw/p4")->bPort, "fcsw02/p1");
    EXPECT_EQ(linkAt(inv, "z1-r002-fsw/p3")->bPort, "fcsw01/p2");
    EXPECT_EQ(linkAt(inv, "z1-r001-fsw/p3")->network, Network::Frontend);

    // Storage: node n NIC k on ssw port 2n+k+1; ssw uplinks continue the fcsw round-robin.
    EXPECT_EQ(linkAt(inv, "z1-s01-n1-nic0/p1")->bPort, "z1-s01-ssw/p3");
    EXPECT_EQ(linkAt(inv, "z1-s01-n1-nic0/p1")->network, Network::Storage);
    EXPECT_EQ(linkAt(inv, "z1-s01-ssw/p5")->bPort, "fcsw01/p5");
    EXPECT_EQ(linkAt(inv, "z1-s01-ssw/p6")->bPort, "fcsw02/p5");

    // Unused ports are not created; used ones carry the model's speed.
    const Port* p = byName(inv.ports, "z1-ctsw01/p17");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->device, "z1-ctsw01");
    EXPECT_EQ(p->deviceKind, DeviceKind::Switch);
    EXPECT_EQ(p->index, 17);
    EXPECT_FALSE(byName(inv.ports, "z1-ctsw01/p21"));
    const Port* np = byName(inv.ports, "z1-r001-h0-nic0/p1");
    ASSERT_TRUE(np);
    EXPECT_EQ(np->deviceKind, DeviceKind::Nic);
}

TEST(SpecDevSmall, InfinibandRailOptimized) {
    Inventory inv = loadConfig("dev-small-ib.yaml");
    EXPECT_EQ(inv.zones[1].name, "pod02");
    // SU = 4 hosts = 2 racks. pod01-r003 starts su002; its host h1 is host 1 of the SU.
    EXPECT_EQ(linkAt(inv, "pod01-r003-h1-nic5/p1")->bPort, "su002-leaf6/p2");
    EXPECT_EQ(linkAt(inv, "pod02-r001-h0-nic0/p1")->bPort, "su003-leaf1/p1");
    // Leaf uplink u (p5+u) -> spine u+1 of the pod, on port l+1 (l = leaf index in the pod).
    EXPECT_EQ(linkAt(inv, "su002-leaf6/p7")->bPort, "pod01-spine03/p14");
    // Spine j uplinks (p17..p32) -> cores of plane j: 2j-1, 2j; pod02's links follow pod01's.
    EXPECT_EQ(linkAt(inv, "pod01-spine01/p17")->bPort, "core001/p1");
    EXPECT_EQ(linkAt(inv, "pod01-spine01/p18")->bPort, "core002/p1");
    EXPECT_EQ(linkAt(inv, "pod02-spine01/p17")->bPort, "core001/p9");
    EXPECT_EQ(linkAt(inv, "pod02-spine04/p32")->bPort, "core008/p16");
    // Frontend per row: the fsw of a row takes (position*2 + slot) + 1.
    EXPECT_EQ(linkAt(inv, "pod01-r002-h1-fe0/p1")->bPort, "pod01-row01-fsw/p4");
    const Switch* fsw = byName(inv.switches, "pod01-row01-fsw");
    ASSERT_TRUE(fsw);
    EXPECT_TRUE(fsw->rack.empty());
}

}  // namespace
}  // namespace loom::inventory
