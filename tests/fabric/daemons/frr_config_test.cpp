// Loom's FRR configs loaded into a running bgpd (in its own network namespace) through
// vtysh, as `vtysh -b` does at boot: bgpd prints nothing back — in particular no
// "The route-map 'LOOM-LINK-BW' does not exist." (a map used before it is defined), which
// FRR's offline parser (vtysh -C) does not report.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon_util.hpp"
#include "loom/fabric/export.hpp"
#include "loom/inventory/spec.hpp"

namespace loom::fabric {
namespace {

namespace fs = std::filesystem;
using namespace daemons;

TEST(FabricFrrDaemon, BgpdLoadsEveryDevSmallConfigWithoutWarnings) {
    if (::access("/usr/lib/frr/bgpd", X_OK) != 0 || ::access("/usr/bin/vtysh", X_OK) != 0)
        GTEST_SKIP() << "needs FRR (bgpd, vtysh): scripts/bootstrap installs frr";
    if (auto why = netnsUnavailable(); !why.empty()) GTEST_SKIP() << why;
    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml");
    ASSERT_TRUE(inv.has_value());
    auto topo = buildTopology(*inv);
    ASSERT_TRUE(topo.has_value());
    Router r(std::move(*topo));
    auto files = exportFabric(r, ExportFormat::Frr);
    ASSERT_TRUE(files.has_value());

    const auto tag = std::to_string(::getpid());
    const auto ns = "loomfrrload" + tag;
    auto dir = fs::temp_directory_path() / ("loom-frr-load-" + tag);
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_EQ(sh("ip netns add " + ns + " && ip netns exec " + ns + " ip link set lo up").rc, 0);
    // Stops the running bgpd (by the PID in its pid file), then removes the namespace and,
    // when the test passed, the directory.
    struct Cleanup {
        std::string ns;
        fs::path dir;
        bool removeDir = false;
        void stopBgpd() const {
            auto pid = slurp(dir / "bgpd.pid");
            if (pid.empty()) return;
            pid = std::to_string(std::stol(pid));
            sh("kill " + pid);
            waitFor([&] { return sh("kill -0 " + pid).rc != 0; }, std::chrono::seconds(10));
            sh("kill -9 " + pid + " 2>/dev/null; rm -f " + (dir / "bgpd.pid").string() + " " +
               (dir / "bgpd.vty").string());
        }
        ~Cleanup() {
            stopBgpd();
            sh("ip netns del " + ns);
            if (removeDir) fs::remove_all(dir);
        }
    } cleanup{ns, dir};

    int loaded = 0;
    for (const auto& f : *files) {
        // A fresh bgpd per config: one bgpd runs one `router bgp <asn>`.
        cleanup.stopBgpd();
        ASSERT_TRUE(waitFor([&] { return !fs::exists(dir / "bgpd.vty"); }, std::chrono::seconds(10)));
        std::ofstream(dir / "empty.conf") << "hostname loom-test\n";
        ASSERT_EQ(sh("chown -R frr:frr " + dir.string()).rc, 0);
        auto start = sh("ip netns exec " + ns + " /usr/lib/frr/bgpd -d -u frr -g frr -f " +
                        (dir / "empty.conf").string() + " --vty_socket " + dir.string() + " -i " +
                        (dir / "bgpd.pid").string() + " --log file:" + (dir / "bgpd.log").string());
        ASSERT_EQ(start.rc, 0) << start.out;
        ASSERT_TRUE(waitFor([&] { return fs::exists(dir / "bgpd.vty"); }, std::chrono::seconds(20)))
            << slurp(dir / "bgpd.log");
        auto path = dir / f.name;
        std::ofstream(path) << f.content;
        auto load = sh("vtysh --vty_socket " + dir.string() + " -f " + path.string());
        EXPECT_EQ(load.rc, 0) << f.name << ":\n" << load.out;
        EXPECT_EQ(load.out, "") << f.name << ": bgpd answered while loading it";
        // The config took: bgpd runs the switch's ASN with the map Loom defined.
        auto shown = sh("vtysh --vty_socket " + dir.string() + " -c 'show running-config'");
        EXPECT_NE(shown.out.find("route-map LOOM-LINK-BW permit 10"), std::string::npos) << shown.out;
        EXPECT_NE(shown.out.find("neighbor fabric route-map LOOM-LINK-BW out"), std::string::npos) << shown.out;
        ++loaded;
    }
    EXPECT_EQ(loaded, r.topology().switchCount());
    cleanup.removeDir = !::testing::Test::HasFailure();
}

}  // namespace
}  // namespace loom::fabric
