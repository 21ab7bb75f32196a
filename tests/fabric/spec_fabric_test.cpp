// The reference clusters from configs/clusters: exact table sizes, zero verification
// violations, and FRR's own parser (vtysh -C) on every exported dev-small config.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <fstream>

#include "loom/fabric/export.hpp"
#include "loom/fabric/impact.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/verify.hpp"
#include "loom/inventory/spec.hpp"

namespace loom::fabric {
namespace {

namespace fs = std::filesystem;

Router routerFromSpec(const std::string& file) {
    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + file);
    if (!inv) ADD_FAILURE() << file << ": " << inv.error().toString();
    auto topo = buildTopology(inv ? *inv : inventory::Inventory{});
    if (!topo) ADD_FAILURE() << file << ": " << topo.error().toString();
    return Router(topo ? std::move(*topo) : Topology{});
}

TEST(FabricSpec, DevSmallRoutesAndVerifies) {
    Router r = routerFromSpec("dev-small.yaml");
    const auto& t = r.topology();
    EXPECT_EQ(t.tierSwitches[1].size(), 4u);
    EXPECT_EQ(t.nicCount(), 64);
    EXPECT_EQ(r.targetCount(), 4);
    auto rep = verify(r);
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    EXPECT_EQ(rep.hostPairs, 8 * 7);
}

TEST(FabricSpec, DevSmallIbRoutesAndVerifies) {
    Router r = routerFromSpec("dev-small-ib.yaml");
    auto rep = verify(r);
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    EXPECT_GT(rep.hostPairs, 0);
}

TEST(FabricSpec, Meta24kRoceExactSizesAndZeroViolations) {
    Router r = routerFromSpec("meta-24k-roce.yaml");
    const auto& t = r.topology();
    EXPECT_EQ(t.switchCount(), 1716);
    EXPECT_EQ(t.tierSwitches[1].size(), 1536u);
    EXPECT_EQ(t.tierSwitches[2].size(), 144u);
    EXPECT_EQ(t.tierSwitches[3].size(), 36u);
    EXPECT_EQ(t.linkCount(), 55680);
    EXPECT_EQ(t.nicCount(), 24576);
    EXPECT_EQ(r.targetCount(), 1536);  // one prefix per rack
    auto rep = verify(r);
    EXPECT_EQ(rep.entriesChecked, 1716LL * 1536);
    EXPECT_EQ(rep.rackPairs, 1536LL * 1535);
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    // Every RTSW reaches a remote rack over its 18 uplinks, with equal weights.
    auto rtsw = t.tierSwitches[1][0];
    auto far = r.targetCount() - 1;
    auto g = r.group(r.groupOf(rtsw, far));
    EXPECT_EQ(g.size(), 18u);
    for (const auto& nh : g) EXPECT_EQ(nh.weight, 1u);
    auto frr = exportFabric(r, ExportFormat::Frr);
    ASSERT_TRUE(frr.has_value());
    EXPECT_EQ(frr->size(), 1716u);
    // FRR's parser on one switch of each tier (all dev-small configs are checked below).
    if (::access("/usr/bin/vtysh", X_OK) == 0) {
        auto dir = fs::temp_directory_path() / ("loom-frr24k-" + std::to_string(::getpid()));
        fs::create_directories(dir);
        for (auto sw : {t.tierSwitches[1][0], t.tierSwitches[2][0], t.tierSwitches[3][0]}) {
            auto path = dir / (*frr)[sw].name;
            std::ofstream(path) << (*frr)[sw].content;
            auto cmd = "/usr/bin/vtysh -C -f " + path.string() + " > /dev/null 2>&1";
            EXPECT_EQ(std::system(cmd.c_str()), 0) << (*frr)[sw].name << " rejected by FRR";
        }
        fs::remove_all(dir);
    }
    // At scale (the full recompute runs on several threads here): one RTSW uplink and one
    // CTSW uplink fail; incremental equals full, and the failed rack's weights shift.
    r.setLinkState(t.upLinks(rtsw)[3], LinkState::Down);
    r.setLinkState(t.upLinks(t.tierSwitches[2][7])[0], LinkState::Down);
    Router full = r;
    full.recomputeAll();
    EXPECT_EQ(r.firstDifference(full), "");
    EXPECT_EQ(r.group(r.groupOf(rtsw, far)).size(), 17u);
    EXPECT_TRUE(verify(r).ok());
}

TEST(FabricSpec, Meta24kIbExactSizesAndZeroViolations) {
    Router r = routerFromSpec("meta-24k-ib.yaml");
    const auto& t = r.topology();
    EXPECT_EQ(t.switchCount(), 2048);
    EXPECT_EQ(t.tierSwitches[1].size(), 768u);
    EXPECT_EQ(t.tierSwitches[2].size(), 768u);
    EXPECT_EQ(t.tierSwitches[3].size(), 512u);
    EXPECT_EQ(t.nicCount(), 24576);
    EXPECT_EQ(r.maxLid(), 24576 + 2048);
    auto rep = verify(r);
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    // A uniform fat tree: every spine has 2 links to each of the 16 cores of its plane.
    EXPECT_EQ(rep.nonUniformUpGroups, 0) << (rep.warnings.empty() ? "" : rep.warnings[0]);
    auto spine = t.tierSwitches[2][0];
    std::map<std::int32_t, int> perCore;
    for (auto l : t.upLinks(spine)) ++perCore[t.peer(l, spine)];
    EXPECT_EQ(perCore.size(), 16u);
    for (auto [core, n] : perCore) EXPECT_EQ(n, 2) << t.switchNames[core];
    // Even spread: on a non-blocking fat tree every leaf uplink carries the same LID count.
    EXPECT_LE(rep.maxLinkRoutes, rep.avgLinkRoutes * 1.5);
    r.setSwitchUp(t.tierSwitches[2][5], false);  // a spine fails
    Router full = r;
    full.recomputeAll();
    EXPECT_EQ(r.firstDifference(full), "");
    auto after = verify(r);
    EXPECT_EQ(after.loops + after.downUpTurns + after.rackPairsUnreachable, 0);
}

TEST(FabricSpec, FrrParserAcceptsEveryDevSmallConfig) {
    const char* vtysh = "/usr/bin/vtysh";
    if (::access(vtysh, X_OK) != 0)
        GTEST_SKIP() << "vtysh not installed (apt-get install frr; see scripts/bootstrap)";
    Router r = routerFromSpec("dev-small.yaml");
    auto files = exportFabric(r, ExportFormat::Frr);
    ASSERT_TRUE(files.has_value());
    ASSERT_EQ(files->size(), static_cast<std::size_t>(r.topology().switchCount()));
    auto dir = fs::temp_directory_path() / ("loom-frr-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const auto& f : *files) {
        auto path = dir / f.name;
        std::ofstream(path) << f.content;
        auto cmd = std::string(vtysh) + " -C -f " + path.string() + " > " + path.string() + ".out 2>&1";
        int rc = std::system(cmd.c_str());
        std::ifstream outFile(path.string() + ".out");
        std::string out((std::istreambuf_iterator<char>(outFile)), {});
        EXPECT_EQ(rc, 0) << f.name << " rejected by FRR:\n" << out;
        // Definitions before use (bgpd warns about a route-map named before it exists; the
        // daemon test loads the configs into bgpd).
        auto def = f.content.find("route-map LOOM-LINK-BW permit 10");
        auto use = f.content.find("route-map LOOM-LINK-BW out");
        EXPECT_LT(def, use) << f.name;
        EXPECT_NE(use, std::string::npos) << f.name;
    }
    // The check is real: FRR rejects a config with a broken line.
    auto bad = dir / "broken.conf";
    std::ofstream(bad) << (*files)[0].content << "router bgp 1\n neighbor swp1 bogus-keyword\n";
    EXPECT_NE(std::system((std::string(vtysh) + " -C -f " + bad.string() + " >/dev/null 2>&1").c_str()), 0);
    fs::remove_all(dir);
}

// The FRR version knob (ExportOptions::frrVersion): kernel nexthop groups off from 7.3 on.
TEST(FabricSpec, FrrVersionProfile) {
    auto p84 = frrProfile("8.4");
    ASSERT_TRUE(p84.has_value());
    EXPECT_TRUE(p84->disableKernelNexthopGroups);
    EXPECT_TRUE(frrProfile("10.1")->disableKernelNexthopGroups);
    EXPECT_TRUE(frrProfile("7.3")->disableKernelNexthopGroups);
    EXPECT_FALSE(frrProfile("7.2")->disableKernelNexthopGroups);
    for (auto bad : {"", "8", "8.", ".4", "8.x", "eight.4", "8.4.4", "-8.4", "12345.67890"}) {
        auto e = frrProfile(bad);
        ASSERT_FALSE(e.has_value()) << bad;
        EXPECT_EQ(e.error().code, Errc::InvalidArgument);
        EXPECT_EQ(e.error().path, "frr_version");
    }
    Router r = routerFromSpec("dev-small.yaml");
    auto now = exportFabric(r, ExportFormat::Frr);
    ASSERT_TRUE(now.has_value());
    EXPECT_NE((*now)[0].content.find("\nno zebra nexthop kernel enable\n"), std::string::npos);
    auto old = exportFabric(r, ExportFormat::Frr, {.frrVersion = "7.2"});
    ASSERT_TRUE(old.has_value());
    EXPECT_EQ((*old)[0].content.find("nexthop kernel"), std::string::npos);
    EXPECT_FALSE(exportFabric(r, ExportFormat::Frr, {.frrVersion = "latest"}).has_value());
}

TEST(FabricSpec, SlurmAndJsonExports) {
    Router r = routerFromSpec("dev-small.yaml");
    auto slurm = exportFabric(r, ExportFormat::Slurm);
    ASSERT_TRUE(slurm.has_value());
    ASSERT_EQ(slurm->size(), 1u);
    const auto& conf = (*slurm)[0].content;
    EXPECT_NE(conf.find("SwitchName="), std::string::npos);
    EXPECT_NE(conf.find(" Nodes="), std::string::npos);
    auto json = exportFabric(r, ExportFormat::Json);
    ASSERT_TRUE(json.has_value());
    EXPECT_EQ(json->size(), static_cast<std::size_t>(r.topology().switchCount()));
    EXPECT_NE((*json)[0].content.find("\"routes\":{"), std::string::npos);
}

}  // namespace
}  // namespace loom::fabric
