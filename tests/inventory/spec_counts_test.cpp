// Exact entity and cable counts of the reference clusters (DESIGN.md), and the structural
// invariants of every expanded config.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "loom/inventory/spec.hpp"
#include "spec_test_support.hpp"

namespace loom::inventory {
namespace {

using testing::expectConsistent;
using testing::linksByTier;
using testing::loadConfig;
using testing::switchesByRole;

TEST(SpecCounts, Meta24kRoce) {
    Inventory inv = loadConfig("meta-24k-roce.yaml");
    EXPECT_EQ(inv.cluster, "meta-24k-roce");
    EXPECT_EQ(inv.fabric, FabricType::Roce);
    EXPECT_EQ(inv.sites.size(), 1u);
    EXPECT_EQ(inv.zones.size(), 8u);
    EXPECT_EQ(inv.rows.size(), 8u * 8 + 1);   // + the storage row
    EXPECT_EQ(inv.racks.size(), 1536u + 16);  // + 16 storage racks
    EXPECT_EQ(inv.hosts.size(), 3072u);
    EXPECT_EQ(inv.gpus.size(), 24576u);
    EXPECT_EQ(inv.nics.size(), 24576u + 3072 + 128 * 2);
    EXPECT_EQ(inv.storageNodes.size(), 128u);

    auto roles = switchesByRole(inv);
    EXPECT_EQ(roles["rtsw"], 1536u);
    EXPECT_EQ(roles["ctsw"], 144u);
    EXPECT_EQ(roles["atsw"], 36u);
    EXPECT_EQ(roles["rtsw"] + roles["ctsw"] + roles["atsw"], 1716u);
    EXPECT_EQ(roles["fsw"], 1536u);
    EXPECT_EQ(roles["fcsw"], 16u);
    EXPECT_EQ(roles["ssw"], 16u);
    EXPECT_EQ(inv.switches.size(), 1716u + 1536 + 16 + 16);

    auto tiers = linksByTier(inv);
    EXPECT_EQ(tiers["nic-rtsw"], 24576u);
    EXPECT_EQ(tiers["rtsw-ctsw"], 27648u);
    EXPECT_EQ(tiers["ctsw-atsw"], 3456u);
    std::size_t backend = 0;
    for (const auto& l : inv.links) backend += l.network == Network::Backend;
    EXPECT_EQ(backend, 55680u);
    EXPECT_EQ(tiers["nic-fsw"], 3072u);
    EXPECT_EQ(tiers["fsw-fcsw"], 1536u * 2);
    EXPECT_EQ(tiers["nic-ssw"], 256u);
    EXPECT_EQ(tiers["ssw-fcsw"], 64u);
    EXPECT_EQ(inv.links.size(), 55680u + 3072 + 3072 + 256 + 64);
    // Every link end is a port; NIC ports exist also when uncabled.
    EXPECT_EQ(inv.ports.size(), inv.links.size() * 2);

    // Port usage per tier: RTSW 16 + 18, CTSW 192 + 24, ATSW 96.
    std::unordered_map<std::string_view, int> maxPort;
    for (const auto& p : inv.ports) maxPort[p.device] = std::max(maxPort[p.device], p.index);
    for (const auto& s : inv.switches) {
        if (s.role == SwitchRole::Rtsw) {
            EXPECT_EQ(maxPort[s.name], 34) << s.name;
        }
        if (s.role == SwitchRole::Ctsw) {
            EXPECT_EQ(maxPort[s.name], 216) << s.name;
        }
        if (s.role == SwitchRole::Atsw) {
            EXPECT_EQ(maxPort[s.name], 96) << s.name;
        }
    }
    expectConsistent(inv);
}

// The 98,304-GPU reference cluster: the 24k design in 32 zones, the same 36 ATSWs (384 of 576
// ports each), 64 fcsws, 64 storage racks (configs/clusters/meta-98k-roce.yaml).
TEST(SpecCounts, Meta98kRoce) {
    Inventory inv = loadConfig("meta-98k-roce.yaml");
    EXPECT_EQ(inv.cluster, "meta-98k-roce");
    EXPECT_EQ(inv.fabric, FabricType::Roce);
    EXPECT_EQ(inv.zones.size(), 32u);
    EXPECT_EQ(inv.rows.size(), 32u * 8 + 1);
    EXPECT_EQ(inv.racks.size(), 6144u + 64);
    EXPECT_EQ(inv.hosts.size(), 12288u);
    EXPECT_EQ(inv.gpus.size(), 98304u);
    EXPECT_EQ(inv.storageNodes.size(), 512u);
    EXPECT_EQ(inv.nics.size(), 98304u + 12288 + 512 * 2);

    auto roles = switchesByRole(inv);
    EXPECT_EQ(roles["rtsw"], 6144u);
    EXPECT_EQ(roles["ctsw"], 576u);
    EXPECT_EQ(roles["atsw"], 36u);
    EXPECT_EQ(roles["fsw"], 6144u);
    EXPECT_EQ(roles["fcsw"], 64u);
    EXPECT_EQ(roles["ssw"], 64u);
    EXPECT_EQ(inv.switches.size(), 6756u + 6144 + 64 + 64);

    auto tiers = linksByTier(inv);
    EXPECT_EQ(tiers["nic-rtsw"], 98304u);
    EXPECT_EQ(tiers["rtsw-ctsw"], 110592u);
    EXPECT_EQ(tiers["ctsw-atsw"], 13824u);
    EXPECT_EQ(tiers["nic-fsw"], 12288u);
    EXPECT_EQ(tiers["fsw-fcsw"], 12288u);
    EXPECT_EQ(tiers["nic-ssw"], 1024u);
    EXPECT_EQ(tiers["ssw-fcsw"], 256u);
    EXPECT_EQ(inv.links.size(), 222720u + 12288 + 12288 + 1024 + 256);
    EXPECT_EQ(inv.ports.size(), inv.links.size() * 2);
    EXPECT_EQ(inv.totalEntities(), 987974u);

    // Port budget: every ATSW uses ports 1..384 of 576, every fcsw 1..196 of 576.
    std::unordered_map<std::string_view, int> maxPort, used;
    for (const auto& p : inv.ports) {
        maxPort[p.device] = std::max(maxPort[p.device], p.index);
        ++used[p.device];
    }
    for (const auto& s : inv.switches) {
        if (s.role == SwitchRole::Atsw) {
            EXPECT_EQ(maxPort[s.name], 384) << s.name;
            EXPECT_EQ(used[s.name], 384) << s.name;
            EXPECT_EQ(s.portCount, 576) << s.name;
        }
        if (s.role == SwitchRole::Fcsw) {
            EXPECT_EQ(maxPort[s.name], 196) << s.name;
        }
        if (s.role == SwitchRole::Ctsw) {
            EXPECT_EQ(maxPort[s.name], 216) << s.name;
        }
        if (s.role == SwitchRole::Rtsw) {
            EXPECT_EQ(maxPort[s.name], 34) << s.name;
        }
    }
    expectConsistent(inv);

    // The ATSW plan is the 24k one: growing meta-24k-roce into this cluster keeps every backend
    // cable of the 24k cluster (only the frontend uplinks are recabled, k mod 64 fcsws).
    Inventory small = loadConfig("meta-24k-roce.yaml");
    std::unordered_set<std::string_view> names;
    for (const auto& l : inv.links) names.insert(l.name);
    std::size_t backend = 0, kept = 0;
    for (const auto& l : small.links) {
        if (l.network != Network::Backend) continue;
        ++backend;
        kept += names.contains(l.name);
    }
    EXPECT_EQ(kept, backend);
}

// The 196k reference (issue 37 item 5): 64 zones of the same design, 72 ATSWs (18 planes of 4:
// 64 x 24 = 1,536 uplinks a plane, 384 per ATSW as at 98k), 128 fcsws (196 ports each as at
// 98k), 128 storage racks (configs/clusters/meta-196k-roce.yaml). Under the spec's entity
// limit, which counts it before expanding.
TEST(SpecCounts, Meta196kRoce) {
    Inventory inv = loadConfig("meta-196k-roce.yaml");
    EXPECT_EQ(inv.cluster, "meta-196k-roce");
    EXPECT_EQ(inv.zones.size(), 64u);
    EXPECT_EQ(inv.racks.size(), 12288u + 128);
    EXPECT_EQ(inv.hosts.size(), 24576u);
    EXPECT_EQ(inv.gpus.size(), 196608u);
    EXPECT_EQ(inv.storageNodes.size(), 1024u);

    auto roles = switchesByRole(inv);
    EXPECT_EQ(roles["rtsw"], 12288u);
    EXPECT_EQ(roles["ctsw"], 1152u);
    EXPECT_EQ(roles["atsw"], 72u);
    EXPECT_EQ(roles["fcsw"], 128u);
    EXPECT_EQ(roles["ssw"], 128u);

    auto tiers = linksByTier(inv);
    EXPECT_EQ(tiers["nic-rtsw"], 196608u);
    EXPECT_EQ(tiers["rtsw-ctsw"], 221184u);
    EXPECT_EQ(tiers["ctsw-atsw"], 27648u);
    EXPECT_EQ(tiers["fsw-fcsw"], 24576u);
    EXPECT_EQ(tiers["ssw-fcsw"], 512u);
    EXPECT_EQ(inv.totalEntities(), 1975946u);
    EXPECT_LE(inv.totalEntities(), SpecLimits{}.maxEntities);

    // Port budget: every ATSW cabled on ports 1..384 of 576, every fcsw on 1..196.
    std::unordered_map<std::string_view, int> maxPort, used;
    for (const auto& p : inv.ports) {
        if (p.deviceKind != DeviceKind::Switch) continue;
        auto d = std::string_view(p.device);
        if (!d.starts_with("atsw") && !d.starts_with("fcsw")) continue;
        maxPort[d] = std::max(maxPort[d], p.index);
        ++used[d];
    }
    for (const auto& s : inv.switches) {
        if (s.role == SwitchRole::Atsw) {
            EXPECT_EQ(maxPort[s.name], 384) << s.name;
            EXPECT_EQ(used[s.name], 384) << s.name;
        }
        if (s.role == SwitchRole::Fcsw) EXPECT_EQ(maxPort[s.name], 196) << s.name;
    }
}

// SpecLimits::maxEntities is checked on a count made before expanding: it must count what the
// spec expands to, within 2 % (it left out every NIC's switch-side port, 11 % under at 196k, so
// a limit of 2 M let ~2.2 M entities through).
TEST(SpecCounts, TheEntityLimitCountsWhatTheSpecExpandsTo) {
    for (const auto* name : {"dev-small.yaml", "meta-24k-roce.yaml", "meta-24k-ib.yaml"}) {
        const auto real = loadConfig(name).totalEntities();
        SpecLimits below, above;
        below.maxEntities = real - real / 50;
        above.maxEntities = real + real / 50;
        auto refused = loadClusterSpecFile(testing::configPath(name), below);
        ASSERT_FALSE(refused.has_value()) << name << ": " << real << " entities";
        EXPECT_EQ(refused.error().path, "spec.zones") << name;
        EXPECT_NE(refused.error().message.find("above the limit"), std::string::npos) << name;
        EXPECT_TRUE(loadClusterSpecFile(testing::configPath(name), above).has_value())
            << name << ": " << real << " entities";
    }
}

TEST(SpecCounts, Meta24kRoceMedia) {
    Inventory inv = loadConfig("meta-24k-roce.yaml");
    std::size_t dac = 0, aoc = 0, optic = 0;
    for (const auto& l : inv.links) {
        if (l.medium == Medium::Dac) {
            ++dac;
            EXPECT_EQ(l.lengthM, 2.0) << l.name;
        } else {
            // Between racks: Manhattan distance + 3 m slack, whole metres, AOC up to 30 m.
            EXPECT_GE(l.lengthM, 3.0) << l.name;
            EXPECT_EQ(l.lengthM, std::ceil(l.lengthM)) << l.name;
            EXPECT_EQ(l.medium == Medium::Aoc, l.lengthM <= 30.0) << l.name;
            (l.medium == Medium::Aoc ? aoc : optic)++;
        }
    }
    // In-rack: every NIC-RTSW and NIC-fsw cable, and the storage nodes' cables to their ssw.
    EXPECT_EQ(dac, 24576u + 3072 + 256);
    EXPECT_EQ(aoc + optic, inv.links.size() - dac);
    EXPECT_GT(optic, 0u);
}

TEST(SpecCounts, Meta24kInfiniband) {
    Inventory inv = loadConfig("meta-24k-ib.yaml");
    EXPECT_EQ(inv.fabric, FabricType::Infiniband);
    EXPECT_EQ(inv.zones.size(), 24u);
    EXPECT_EQ(inv.racks.size(), 1536u + 16);
    EXPECT_EQ(inv.hosts.size(), 3072u);
    EXPECT_EQ(inv.gpus.size(), 24576u);
    std::size_t hca = 0;
    for (const auto& n : inv.nics) hca += n.network == Network::Backend;
    EXPECT_EQ(hca, 24576u);

    auto roles = switchesByRole(inv);
    EXPECT_EQ(roles["leaf"], 768u);
    EXPECT_EQ(roles["spine"], 768u);
    EXPECT_EQ(roles["core"], 512u);  // a uniform fat tree: 2 links per spine-core pair
    EXPECT_EQ(roles["leaf"] + roles["spine"] + roles["core"], 2048u);

    auto tiers = linksByTier(inv);
    // Non-blocking: the same capacity at every tier.
    EXPECT_EQ(tiers["nic-leaf"], 24576u);
    EXPECT_EQ(tiers["leaf-spine"], 24576u);
    EXPECT_EQ(tiers["spine-core"], 24576u);

    // Every port of every 64-port NDR leaf and spine is used: 32 down + 32 up; a core uses 48
    // (2 links to each of the 24 pods; 16 ports left for 8 more pods).
    std::unordered_map<std::string_view, int> used;
    for (const auto& p : inv.ports) used[p.device]++;
    for (const auto& s : inv.switches) {
        if (s.role == SwitchRole::Leaf || s.role == SwitchRole::Spine ||
            s.role == SwitchRole::Core) {
            EXPECT_EQ(s.portCount, 64) << s.name;
            EXPECT_EQ(used[s.name], s.role == SwitchRole::Core ? 48 : 64) << s.name;
        }
    }
    expectConsistent(inv);
}

TEST(SpecCounts, DevSmallCounts) {
    Inventory inv = loadConfig("dev-small.yaml");
    EXPECT_EQ(inv.zones.size(), 1u);
    EXPECT_EQ(inv.hosts.size(), 8u);
    EXPECT_EQ(inv.gpus.size(), 64u);
    std::size_t computeRacks = 0;
    for (const auto& r : inv.racks) computeRacks += r.model != "storage";
    EXPECT_EQ(computeRacks, 4u);
    auto roles = switchesByRole(inv);
    EXPECT_EQ(roles["rtsw"], 4u);
    EXPECT_EQ(roles["ctsw"], 4u);
    EXPECT_EQ(roles["atsw"], 2u);
    EXPECT_EQ(roles["fsw"], 4u);
    EXPECT_EQ(roles["fcsw"], 2u);
    EXPECT_EQ(roles["ssw"], 1u);
    EXPECT_EQ(inv.storageNodes.size(), 2u);
    auto tiers = linksByTier(inv);
    EXPECT_EQ(tiers["nic-rtsw"], 64u);
    EXPECT_EQ(tiers["rtsw-ctsw"], 64u);
    EXPECT_EQ(tiers["ctsw-atsw"], 16u);
    expectConsistent(inv);
}

TEST(SpecCounts, DevSmallIbCounts) {
    Inventory inv = loadConfig("dev-small-ib.yaml");
    EXPECT_EQ(inv.fabric, FabricType::Infiniband);
    EXPECT_EQ(inv.hosts.size(), 16u);
    EXPECT_EQ(inv.gpus.size(), 128u);
    auto roles = switchesByRole(inv);
    EXPECT_EQ(roles["leaf"], 32u);
    EXPECT_EQ(roles["spine"], 8u);
    EXPECT_EQ(roles["core"], 8u);
    EXPECT_EQ(roles["fsw"], 4u);  // one per row
    auto tiers = linksByTier(inv);
    EXPECT_EQ(tiers["nic-leaf"], 128u);
    EXPECT_EQ(tiers["leaf-spine"], 128u);
    EXPECT_EQ(tiers["spine-core"], 128u);
    expectConsistent(inv);
}

TEST(SpecCounts, ExpansionIsDeterministic) {
    for (const char* name : {"dev-small.yaml", "dev-small-ib.yaml", "meta-24k-roce.yaml"}) {
        Inventory a = loadConfig(name);
        Inventory b = loadConfig(name);
        ASSERT_EQ(a.links.size(), b.links.size()) << name;
        ASSERT_EQ(a.ports.size(), b.ports.size()) << name;
        for (std::size_t i = 0; i < a.links.size(); ++i) {
            ASSERT_EQ(a.links[i].name, b.links[i].name) << name;
            ASSERT_EQ(a.links[i].medium, b.links[i].medium) << name;
            ASSERT_EQ(a.links[i].lengthM, b.links[i].lengthM) << name;
        }
        for (std::size_t i = 0; i < a.ports.size(); ++i)
            ASSERT_EQ(a.ports[i].name, b.ports[i].name);
        for (std::size_t i = 0; i < a.switches.size(); ++i)
            ASSERT_EQ(a.switches[i].name, b.switches[i].name);
        for (std::size_t i = 0; i < a.gpus.size(); ++i) ASSERT_EQ(a.gpus[i].name, b.gpus[i].name);
    }
}

}  // namespace
}  // namespace loom::inventory

namespace loom::inventory {
namespace {

// Every spec shipped in configs/clusters/ loads and is consistent, including ones added later.
TEST(SpecCounts, EveryShippedConfigLoads) {
    std::size_t n = 0;
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(LOOM_SOURCE_DIR) + "/configs/clusters")) {
        if (e.path().extension() != ".yaml") continue;
        ++n;
        SCOPED_TRACE(e.path().string());
        auto inv = loadClusterSpecFile(e.path().string());
        ASSERT_TRUE(inv) << inv.error().toString();
        EXPECT_FALSE(inv->hosts.empty());
        testing::expectConsistent(*inv);
    }
    EXPECT_GE(n, 4u);
}

}  // namespace
}  // namespace loom::inventory
