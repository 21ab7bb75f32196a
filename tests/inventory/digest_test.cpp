// contentDigests(): per-kind hashes of names and spec fields, independent of entity order,
// blind to operational fields (state, serial, uuid, mac), changed by any spec field.
#include "loom/inventory/digest.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "loom/inventory/spec.hpp"

namespace {

using namespace loom::inventory;

Inventory devSmall() {
    auto inv =
        loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml");
    EXPECT_TRUE(inv) << inv.error().toString();
    return inv ? std::move(*inv) : Inventory{};
}

int changedKinds(const ContentDigests& a, const ContentDigests& b) {
    int n = 0;
    for (int k = 0; k < kKindCount; ++k) n += a.kinds[k] != b.kinds[k];
    return n;
}

TEST(ContentDigests, OrderDoesNotMatterOperationalFieldsDoNot) {
    Inventory inv = devSmall();
    const auto d = contentDigests(inv);
    for (const auto& k : d.kinds) EXPECT_EQ(k.size(), 32u);
    std::mt19937 rng(7);
    std::shuffle(inv.hosts.begin(), inv.hosts.end(), rng);
    std::shuffle(inv.links.begin(), inv.links.end(), rng);
    inv.racks[1].state = "in_service";
    inv.racks[1].serial = "SN-1";
    inv.gpus[3].uuid = "GPU-1234";
    inv.nics[2].mac = "aa:bb:cc:dd:ee:ff";
    inv.links[0].state = "active";
    EXPECT_EQ(contentDigests(inv), d);
}

TEST(ContentDigests, EverySpecFieldChangesItsKindOnly) {
    const Inventory base = devSmall();
    const auto d = contentDigests(base);
    struct Case {
        const char* what;
        Kind kind;
        void (*edit)(Inventory&);
    };
    const Case cases[] = {
        {"site description", Kind::Site,
         [](Inventory& i) { i.sites[0].description = i.sites[0].description + "x"; }},
        {"zone label", Kind::Zone,
         [](Inventory& i) {
             i.zones[0].labels.push_back({"a", "b"});
         }},
        {"row index", Kind::Row, [](Inventory& i) { i.rows[0].index += 1; }},
        {"rack model", Kind::Rack, [](Inventory& i) { i.racks[0].model = i.racks[0].model + "x"; }},
        {"rack position", Kind::Rack, [](Inventory& i) { i.racks[0].position += 1; }},
        {"host slot", Kind::Host, [](Inventory& i) { i.hosts[0].slot += 1; }},
        {"host rack", Kind::Host,
         [](Inventory& i) { std::swap(i.hosts[0].rack, i.hosts.back().rack); }},
        {"gpu index", Kind::Gpu, [](Inventory& i) { i.gpus[0].index += 1; }},
        {"nic speed", Kind::Nic, [](Inventory& i) { i.nics[0].speedGbps = 200; }},
        {"switch ports", Kind::Switch, [](Inventory& i) { i.switches[0].portCount += 1; }},
        {"port index", Kind::Port, [](Inventory& i) { i.ports[0].index += 1000; }},
        {"link length", Kind::Link, [](Inventory& i) { i.links[0].lengthM += 0.5; }},
        {"link ends swapped", Kind::Link,
         [](Inventory& i) { std::swap(i.links[0].aPort, i.links[0].bPort); }},
        {"a link renamed", Kind::Link,
         [](Inventory& i) { i.links[0].name = i.links[0].name + "x"; }},
        {"a link fewer", Kind::Link, [](Inventory& i) { i.links.pop_back(); }},
        {"storage capacity", Kind::StorageNode,
         [](Inventory& i) { i.storageNodes[0].capacityTb += 1; }},
    };
    for (const auto& c : cases) {
        Inventory inv = base;
        c.edit(inv);
        auto e = contentDigests(inv);
        EXPECT_NE(e.kinds[static_cast<int>(c.kind)], d.kinds[static_cast<int>(c.kind)]) << c.what;
        EXPECT_EQ(changedKinds(d, e), 1) << c.what;
        EXPECT_EQ(e.cluster, d.cluster) << c.what;
    }
    Inventory inv = base;
    inv.cluster += "-2";
    EXPECT_NE(contentDigests(inv).cluster, d.cluster);
    EXPECT_EQ(changedKinds(d, contentDigests(inv)), 0);
}

}  // namespace
