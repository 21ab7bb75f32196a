// Integration with the real OpenSM on the ibsim simulator (../shared/tools/opensm-compare):
// OpenSM first sweeps the fabric with ftree (which tells us the GUIDs ibsim gave every node),
// then loads Loom's LFT dump through its `file` routing engine (-R file -U); the LFTs OpenSM
// then reports must be Loom's, entry for entry (compared by switch and destination name,
// since OpenSM assigns its own LIDs and remaps ours by port GUID).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "loom/fabric/export.hpp"
#include "loom/fabric/testbed.hpp"

namespace loom::fabric {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct DumpEntry {
    int port;
};
// (switch name, destination name) -> port, and name -> GUID, from an OpenSM LFT dump.
struct ParsedDump {
    std::map<std::pair<std::string, std::string>, int> ports;
    std::map<std::string, std::uint64_t> guids;
};

ParsedDump parseDump(const std::string& text) {
    ParsedDump d;
    std::regex header(R"(^Unicast lids \[[^\]]*\] of switch Lid \d+ guid 0x([0-9a-f]+) \('([^']*)'\):)");
    std::regex entry(R"(^0x[0-9a-f]+ (\d+) # .*portguid 0x([0-9a-f]+): '([^']*)')");
    std::istringstream in(text);
    std::string line, sw;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, header)) {
            sw = m[2];
            d.guids[sw] = std::stoull(m[1], nullptr, 16);
        } else if (!sw.empty() && std::regex_search(line, m, entry)) {
            d.ports[{sw, m[3]}] = std::stoi(m[1]);
            d.guids[m[3]] = std::stoull(m[2], nullptr, 16);
        }
    }
    return d;
}

TEST(FabricOpensm, RealOpensmInstallsLoomLfts) {
    const std::string tools = std::string(LOOM_SOURCE_DIR) + "/../shared/tools/opensm-compare";
    if (::access((tools + "/run-opensm").c_str(), X_OK) != 0 || ::access("/usr/sbin/opensm", X_OK) != 0 ||
        ::access("/usr/bin/ibsim", X_OK) != 0)
        GTEST_SKIP() << "needs opensm, ibsim (apt-get install opensm ibsim-utils) and " << tools;
    testbed::IbShape sh{.pods = 2, .susPerPod = 1, .hostsPerSu = 4, .leavesPerSu = 2,
                        .spinesPerPod = 2, .cores = 2, .ports = 8};
    auto topo = buildTopology(testbed::makeIb(sh));
    ASSERT_TRUE(topo.has_value());
    Router r(std::move(*topo));
    const auto& t = r.topology();

    auto dir = fs::temp_directory_path() / ("loom-opensm-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "topo.json") << opensmCompareJson(t);
    auto sh1 = "python3 " + tools + "/topo2ibsim.py " + (dir / "topo.json").string() + " > " +
               (dir / "fabric.net").string() + " 2>/dev/null";
    ASSERT_EQ(std::system(sh1.c_str()), 0);

    // 1. OpenSM's own sweep: the GUIDs ibsim assigned, by node name.
    auto run = [&](const std::string& name, const std::string& args) {
        auto cmd = "OUT_DIR=" + (dir / name).string() + " " + tools + "/run-opensm " +
                   (dir / "fabric.net").string() + " " + args + " > " + (dir / (name + ".txt")).string() + " 2>&1";
        return std::system(cmd.c_str());
    };
    ASSERT_EQ(run("discover", "ftree"), 0) << slurp(dir / "discover.txt");
    auto discovered = parseDump(slurp(dir / "discover" / "opensm-lfts.dump"));
    ASSERT_FALSE(discovered.guids.empty()) << slurp(dir / "discover.txt");

    // 2. Loom's routes with those GUIDs, loaded by OpenSM's file engine.
    auto dump = opensmLftDump(r, [&](std::int32_t node) -> std::uint64_t {
        auto name = t.isSwitch(node) ? t.switchNames[node] : t.nicNames[node - t.switchCount()];
        auto it = discovered.guids.find(name);
        return it == discovered.guids.end() ? 0 : it->second;
    });
    std::ofstream(dir / "loom-lfts.dump") << dump;
    ASSERT_EQ(run("load", "file -U " + (dir / "loom-lfts.dump").string()), 0) << slurp(dir / "load.txt");
    auto report = slurp(dir / "load.txt");
    EXPECT_NE(report.find("engine_used file"), std::string::npos) << report;
    EXPECT_NE(report.find("fabric_errors 0"), std::string::npos) << report;

    // 3. What OpenSM installed equals what Loom computed.
    auto installed = parseDump(slurp(dir / "load" / "opensm-lfts.dump"));
    int compared = 0, mismatched = 0, hcaEntries = 0;
    for (std::int32_t s = 0; s < t.switchCount(); ++s)
        for (std::int32_t lid = 1; lid <= r.maxLid(); ++lid) {
            auto port = r.lftPort(s, static_cast<std::uint16_t>(lid));
            if (port == kNoPort) continue;
            auto node = r.lidNode(static_cast<std::uint16_t>(lid));
            auto dest = t.isSwitch(node) ? t.switchNames[node] : t.nicNames[node - t.switchCount()];
            auto it = installed.ports.find({t.switchNames[s], dest});
            ++compared;
            if (!t.isSwitch(node)) ++hcaEntries;
            if (it == installed.ports.end() || it->second != port) {
                if (++mismatched <= 5)
                    ADD_FAILURE() << t.switchNames[s] << " -> " << dest << ": Loom port " << int(port)
                                  << ", OpenSM " << (it == installed.ports.end() ? -1 : it->second);
            }
        }
    // Every switch routes every HCA; switch LIDs that strict up/down cannot reach (a core
    // toward another core, a spine toward a core not above it) stay unrouted.
    EXPECT_EQ(hcaEntries, t.switchCount() * t.nicCount());
    EXPECT_EQ(compared, 242);
    EXPECT_EQ(mismatched, 0);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace loom::fabric
