// Overrides for the real world: a rack with fewer hosts, a different switch model, miscabled
// ports, extra labels.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "loom/inventory/spec.hpp"
#include "spec_test_support.hpp"

namespace loom::inventory {
namespace {

using testing::byName;
using testing::configPath;
using testing::expectConsistent;
using testing::linkAt;

std::string devSmallWith(const std::string& overrides) {
    std::ifstream in(configPath("dev-small.yaml"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str() + overrides;
}

std::string label(const Labels& labels, const std::string& key) {
    for (const auto& [k, v] : labels)
        if (k == key) return v;
    return "<none>";
}

constexpr const char* kOverrides = R"(  overrides:
    racks:
      - name: z1-r004
        hosts: 1
        labels: {note: half-populated}
      - name: z1-r002
        model: ORv3-HPR
    switches:
      - name: z1-ctsw02
        model: minipack2
        labels: {vendor-case: "12345"}
    labels:
      - name: z1-r001-h0
        labels: {owner: team-a, canary: "true"}
      - name: dev-lab
        labels: {region: eu}
    cabling:
      - swap: [z1-ctsw01/p1, z1-ctsw01/p2]
      - move: {from: z1-r002-rtsw/p18, to: z1-r002-rtsw/p40}
)";

TEST(SpecOverrides, AllKinds) {
    auto plain = loadClusterSpecFile(configPath("dev-small.yaml"));
    ASSERT_TRUE(plain) << plain.error().toString();
    auto inv = loadClusterSpec(devSmallWith(kOverrides));
    ASSERT_TRUE(inv) << inv.error().toString();

    // A rack with one host: one host, 8 GPUs, 8 backend links and 1 frontend link fewer.
    EXPECT_EQ(inv->hosts.size(), 7u);
    EXPECT_EQ(inv->gpus.size(), 56u);
    EXPECT_FALSE(byName(inv->hosts, "z1-r004-h1"));
    EXPECT_TRUE(byName(inv->hosts, "z1-r004-h0"));
    EXPECT_EQ(inv->links.size(), plain->links.size() - 9);
    EXPECT_FALSE(byName(inv->ports, "z1-r004-rtsw/p9"));
    // Its uplinks keep their planned ports: the RTSW layout does not shift.
    EXPECT_EQ(linkAt(*inv, "z1-r004-rtsw/p17")->bPort, "z1-ctsw01/p13");
    EXPECT_EQ(label(byName(inv->racks, "z1-r004")->labels, "note"), "half-populated");
    EXPECT_EQ(byName(inv->racks, "z1-r002")->model, "ORv3-HPR");

    // A different switch model for one named switch.
    const Switch* c2 = byName(inv->switches, "z1-ctsw02");
    EXPECT_EQ(c2->model, "minipack2");
    EXPECT_EQ(c2->portCount, 128);
    EXPECT_EQ(label(c2->labels, "vendor-case"), "12345");
    EXPECT_EQ(byName(inv->switches, "z1-ctsw01")->model, "arista-7800r3");

    // Labels on any named entity, kept sorted by key.
    const Host* h = byName(inv->hosts, "z1-r001-h0");
    ASSERT_EQ(h->labels.size(), 2u);
    EXPECT_EQ(h->labels[0].first, "canary");
    EXPECT_EQ(h->labels[1].first, "owner");
    EXPECT_EQ(label(inv->sites[0].labels, "region"), "eu");

    // Swapped: the cables of r001 (planned on ctsw01/p1) and r001's second uplink to ctsw01
    // (planned on p2) are exchanged at the CTSW end.
    EXPECT_EQ(linkAt(*inv, "z1-r001-rtsw/p17")->bPort, "z1-ctsw01/p2");
    EXPECT_EQ(linkAt(*inv, "z1-r001-rtsw/p21")->bPort, "z1-ctsw01/p1");
    EXPECT_EQ(linkAt(*inv, "z1-r001-rtsw/p17")->name, "z1-r001-rtsw/p17--z1-ctsw01/p2");
    // Moved: the cable planned on r002-rtsw/p18 is on p40; p18 stays as an uncabled port.
    const Link* moved = linkAt(*inv, "z1-r002-rtsw/p40");
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->bPort, "z1-ctsw02/p5");
    EXPECT_FALSE(linkAt(*inv, "z1-r002-rtsw/p18"));
    EXPECT_TRUE(byName(inv->ports, "z1-r002-rtsw/p18"));
    expectConsistent(*inv);
}

TEST(SpecOverrides, SwapThenSwapBackIsIdentity) {
    auto plain = loadClusterSpecFile(configPath("dev-small.yaml"));
    auto twice = loadClusterSpec(devSmallWith(R"(  overrides:
    cabling:
      - swap: [z1-ctsw01/p1, z1-ctsw03/p7]
      - swap: [z1-ctsw03/p7, z1-ctsw01/p1]
)"));
    ASSERT_TRUE(plain);
    ASSERT_TRUE(twice) << twice.error().toString();
    ASSERT_EQ(plain->links.size(), twice->links.size());
    for (std::size_t i = 0; i < plain->links.size(); ++i)
        EXPECT_EQ(plain->links[i].name, twice->links[i].name);
}

TEST(SpecOverrides, EmptyRackKeepsItsSwitch) {
    auto inv = loadClusterSpec(
        devSmallWith("  overrides:\n    racks:\n      - name: z1-r001\n        hosts: 0\n"));
    ASSERT_TRUE(inv) << inv.error().toString();
    EXPECT_EQ(inv->hosts.size(), 6u);
    EXPECT_TRUE(byName(inv->switches, "z1-r001-rtsw"));
    EXPECT_TRUE(linkAt(*inv, "z1-r001-rtsw/p17"));
    expectConsistent(*inv);
}

TEST(SpecOverrides, DuplicateOverrideIsRejected) {
    auto inv =
        loadClusterSpec(devSmallWith("  overrides:\n    racks:\n      - name: z1-r001\n        "
                                     "hosts: 1\n      - name: z1-r001\n        hosts: 0\n"));
    ASSERT_FALSE(inv);
    EXPECT_EQ(inv.error().path, "spec.overrides.racks[1]");
    EXPECT_EQ(inv.error().message,
              "rack \"z1-r001\" is overridden twice (also spec.overrides.racks[0])");
}

TEST(SpecOverrides, SwapOfOneCablesEndsIsRejected) {
    auto inv = loadClusterSpec(devSmallWith(
        "  overrides:\n    cabling:\n      - swap: [z1-r001-rtsw/p17, z1-ctsw01/p1]\n"));
    ASSERT_FALSE(inv);
    EXPECT_EQ(inv.error().message, "both ports are ends of the same cable");
    EXPECT_EQ(inv.error().path, "spec.overrides.cabling[0]");
}

}  // namespace
}  // namespace loom::inventory
