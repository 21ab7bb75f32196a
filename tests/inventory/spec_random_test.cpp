// Property test: random valid specs (RoCE and InfiniBand, with and without third tier,
// frontend and storage) expand to the counts their parameters imply, and every expansion is
// structurally consistent (see expectConsistent).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "loom/inventory/spec.hpp"
#include "spec_test_support.hpp"

namespace loom::inventory {
namespace {

using testing::expectConsistent;

struct Params {
    bool ib = false;
    int zones = 1, rows = 1, racksPerRow = 1, hpr = 2, gpus = 8, fe = 1;
    int t2 = 2, u1 = 2, t3 = 0, u2 = 0, hostsPerSu = 2;
    bool frontend = false, perRow = false;
    int fcsw = 0, fswUplinks = 0;
    bool storage = false;
    int storageRacks = 1, nodes = 1;
};

std::string render(const Params& p) {
    std::ostringstream y;
    y << "apiVersion: loom/v1\nkind: Cluster\nmetadata: {name: rnd}\nspec:\n  site: {name: s}\n"
      << "  models:\n    hosts: [{name: h, gpus: " << p.gpus << ", frontendNics: " << p.fe << "}]\n"
      << "    switches: [{name: sw, ports: 4096}]\n"
      << "    storage: [{name: st, nics: 2}]\n"
      << "  zones: [{count: " << p.zones << ", rows: " << p.rows
      << ", racks: " << p.rows * p.racksPerRow << ", hostsPerRack: " << p.hpr << "}]\n";
    if (!p.ib) {
        y << "  fabric:\n    type: roce\n    rtsw: {model: sw, uplinks: " << p.u1 << "}\n"
          << "    ctsw: {model: sw, perZone: " << p.t2 << ", uplinks: " << p.u2 << "}\n";
        if (p.t3) y << "    atsw: {model: sw, count: " << p.t3 << "}\n";
    } else {
        y << "  fabric:\n    type: infiniband\n    hostsPerSu: " << p.hostsPerSu << "\n"
          << "    leaf: {model: sw, uplinks: " << p.u1 << "}\n"
          << "    spine: {model: sw, perPod: " << p.t2 << ", uplinks: " << p.u2 << "}\n";
        if (p.t3) y << "    core: {model: sw, count: " << p.t3 << "}\n";
    }
    if (p.frontend) {
        y << "  frontend:\n    fsw: {model: sw, per: " << (p.perRow ? "row" : "rack")
          << ", uplinks: " << (p.fcsw ? p.fswUplinks : 0) << "}\n";
        if (p.fcsw) y << "    fcsw: {model: sw, count: " << p.fcsw << "}\n";
    }
    if (p.storage)
        y << "  storage: {racks: " << p.storageRacks << ", nodesPerRack: " << p.nodes
          << ", model: st, ssw: {model: sw, uplinks: " << (p.frontend && p.fcsw ? 1 : 0) << "}}\n";
    return y.str();
}

TEST(SpecRandom, CountsAndConsistency) {
    std::mt19937 rng(20261122);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    for (int iter = 0; iter < 150; ++iter) {
        Params p;
        p.ib = iter % 2 == 1;
        p.zones = pick(1, 3);
        p.rows = pick(1, 3);
        p.racksPerRow = pick(1, 4);
        p.hpr = pick(p.ib ? 1 : 0, 3);
        p.gpus = pick(1, 8);
        p.fe = pick(0, 2);
        p.t2 = pick(1, 4);
        p.u1 = p.t2 * pick(1, 3);
        p.t3 = pick(0, 1) ? pick(1, 6) : 0;
        p.u2 = p.t3 ? pick(1, 4) : 0;
        p.hostsPerSu = p.hpr * p.racksPerRow;  // one row per scalable unit
        p.frontend = pick(0, 1);
        p.perRow = pick(0, 1);
        p.fcsw = pick(0, 3);
        p.fswUplinks = pick(0, 2);
        p.storage = pick(0, 1);
        p.storageRacks = pick(1, 2);
        p.nodes = pick(1, 3);
        std::string doc = render(p);
        SCOPED_TRACE(doc);
        auto inv = loadClusterSpec(doc);
        ASSERT_TRUE(inv) << inv.error().toString();

        const std::size_t racks = std::size_t(p.zones) * p.rows * p.racksPerRow;
        const std::size_t hosts = racks * p.hpr;
        EXPECT_EQ(inv->hosts.size(), hosts);
        EXPECT_EQ(inv->gpus.size(), hosts * p.gpus);
        std::size_t tier1 = p.ib ? hosts / p.hostsPerSu * p.gpus : racks;
        std::size_t backend = hosts * p.gpus + tier1 * p.u1 + std::size_t(p.zones) * p.t2 * p.u2;
        std::size_t backendLinks = 0;
        for (const auto& l : inv->links) backendLinks += l.network == Network::Backend;
        EXPECT_EQ(backendLinks, backend);
        std::size_t switches = tier1 + std::size_t(p.zones) * p.t2 + p.t3;
        if (p.frontend) switches += (p.perRow ? std::size_t(p.zones) * p.rows : racks) + p.fcsw;
        if (p.storage) switches += p.storageRacks;
        EXPECT_EQ(inv->switches.size(), switches);
        if (p.storage) {
            EXPECT_EQ(inv->storageNodes.size(), std::size_t(p.storageRacks) * p.nodes);
        }
        expectConsistent(*inv);
    }
}

}  // namespace
}  // namespace loom::inventory
