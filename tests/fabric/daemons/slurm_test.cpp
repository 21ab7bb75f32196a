// Slurm on Loom's topology.conf: a real slurmctld (auth/none, cred/none, topology/tree, no
// slurmd) reads the export for the 24k RoCE reference; `scontrol show topology` must be the
// inventory's tree: every leaf (RTSW) with exactly the hosts cabled to it, one switch per
// zone over its leaves, one root over the zones.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "daemon_util.hpp"
#include "loom/fabric/export.hpp"
#include "loom/inventory/spec.hpp"

namespace loom::fabric {
namespace {

namespace fs = std::filesystem;
using namespace daemons;

int freePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    int port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

// Expands a Slurm hostlist as scontrol prints it: comma-separated items, each
// "prefix[ranges]rest" with ranges "a-b" or "a" (zero-padded to the width of a), brackets
// possibly repeated in rest.
void expandItem(const std::string& item, std::set<std::string>& out) {
    auto open = item.find('[');
    if (open == std::string::npos) {
        if (!item.empty()) out.insert(item);
        return;
    }
    auto close = item.find(']', open);
    auto prefix = item.substr(0, open), rest = item.substr(close + 1);
    std::istringstream ranges(item.substr(open + 1, close - open - 1));
    std::string range;
    while (std::getline(ranges, range, ',')) {
        auto dash = range.find('-');
        auto lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
        for (long v = std::stol(lo); v <= std::stol(hi); ++v) {
            auto num = std::to_string(v);
            if (num.size() < lo.size()) num.insert(0, lo.size() - num.size(), '0');
            expandItem(prefix + num + rest, out);
        }
    }
}

std::set<std::string> hostnames(const std::string& list) {
    std::set<std::string> out;
    std::string item;
    int depth = 0;
    for (char c : list) {
        if (c == ',' && depth == 0) {
            expandItem(item, out);
            item.clear();
            continue;
        }
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        item += c;
    }
    expandItem(item, out);
    return out;
}

// slurmctld runs as whoever runs the test (root in CI, an engineer elsewhere).
std::string userName() {
    const passwd* pw = ::getpwuid(::geteuid());
    return pw ? pw->pw_name : "root";
}

struct SwitchLine {
    int level = -1;
    std::string nodes, switches;
};

TEST(FabricSlurm, SlurmctldReadsTheTreeOf24kRoce) {
    if (::access("/usr/sbin/slurmctld", X_OK) != 0 || ::access("/usr/bin/scontrol", X_OK) != 0)
        GTEST_SKIP() << "needs slurmctld and scontrol (scripts/bootstrap installs slurmctld, slurm-client)";
    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/meta-24k-roce.yaml");
    ASSERT_TRUE(inv.has_value());
    auto topo = buildTopology(*inv);
    ASSERT_TRUE(topo.has_value());
    Router r(std::move(*topo));
    const auto& t = r.topology();
    auto files = exportFabric(r, ExportFormat::Slurm);
    ASSERT_TRUE(files.has_value());

    auto dir = fs::temp_directory_path() / ("loom-slurm-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "state");
    std::ofstream(dir / "topology.conf") << (*files)[0].content;
    const auto conf = (dir / "slurm.conf").string();
    {
        std::ofstream c(conf);
        c << "ClusterName=loomtest\nSlurmctldHost=localhost\n"
          << "SlurmctldPort=" << freePort() << "\nSlurmdPort=" << freePort() << "\n"
          << "AuthType=auth/none\nCredType=cred/none\nSlurmUser=" << userName() << "\n"
          << "StateSaveLocation=" << (dir / "state").string() << "\n"
          << "SlurmctldPidFile=" << (dir / "slurmctld.pid").string() << "\n"
          << "SlurmctldLogFile=" << (dir / "slurmctld.log").string() << "\n"
          << "TopologyPlugin=topology/tree\nSchedulerType=sched/builtin\nSelectType=select/linear\n"
          << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n"
          << "ReturnToService=1\n"
          << "NodeName=DEFAULT CPUs=1 State=UNKNOWN\n";
        // No slurmd: the nodes stay down; NodeAddr keeps slurmctld from resolving the names.
        for (const auto& h : t.hostNames) c << "NodeName=" << h << " NodeAddr=127.0.0.1\n";
        c << "PartitionName=all Nodes=ALL Default=YES\n";
    }
    auto start = sh("SLURM_CONF=" + conf + " /usr/sbin/slurmctld -c -i");
    ASSERT_EQ(start.rc, 0) << start.out << slurp(dir / "slurmctld.log");
    // slurmctld forks into the background: its PID from the pid file stops it at the end.
    ASSERT_TRUE(waitFor([&] { return !slurp(dir / "slurmctld.pid").empty(); }, std::chrono::seconds(30)))
        << slurp(dir / "slurmctld.log");
    struct Stop {
        std::string pid;
        ~Stop() {
            sh("kill " + pid);
            waitFor([&] { return sh("kill -0 " + pid).rc != 0; }, std::chrono::seconds(20));
            sh("kill -9 " + pid + " 2>/dev/null");
        }
    } stop{std::to_string(std::stol(slurp(dir / "slurmctld.pid")))};

    ShellRun shown;
    ASSERT_TRUE(waitFor(
        [&] {
            shown = sh("SLURM_CONF=" + conf + " scontrol show topology");
            return shown.rc == 0 && shown.out.find("SwitchName=") != std::string::npos;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(250)))
        << shown.out << slurp(dir / "slurmctld.log");

    std::map<std::string, SwitchLine> sw;
    std::istringstream in(shown.out);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string w, name;
        SwitchLine s;
        while (words >> w) {
            auto eq = w.find('=');
            if (eq == std::string::npos) continue;
            auto k = w.substr(0, eq), v = w.substr(eq + 1);
            if (k == "SwitchName") name = v;
            if (k == "Level") s.level = std::stoi(v);
            if (k == "Nodes") s.nodes = v;
            if (k == "Switches") s.switches = v;
        }
        if (!name.empty()) sw[name] = s;
    }

    // The expander agrees with Slurm's own (`scontrol show hostnames`) on the root's list and
    // on a leaf's.
    for (const auto& [name, s] : sw) {
        auto list = s.nodes.empty() ? s.switches : s.nodes;
        if (s.level != 0 && s.level != 2) continue;
        auto r = sh("SLURM_CONF=" + conf + " scontrol show hostnames '" + list + "'");
        std::set<std::string> theirs;
        std::istringstream words(r.out);
        std::string h;
        while (words >> h) theirs.insert(h);
        EXPECT_EQ(hostnames(list), theirs) << list;
        if (s.level == 0) break;
    }

    // The inventory's tree: the leaf of each host's first backend NIC.
    std::map<std::string, std::set<std::string>> hostsOfLeaf;
    std::map<std::string, std::set<std::string>> leavesOfZone;
    for (std::size_t h = 0; h < t.hostNames.size(); ++h) {
        if (t.hostNicCount[h] == 0) continue;
        auto leaf = t.nicSwitch(t.hostFirstNic[h]);
        ASSERT_NE(leaf, kNone);
        hostsOfLeaf[t.switchNames[leaf]].insert(t.hostNames[h]);
        leavesOfZone[t.zoneNames[t.switchZone[leaf]]].insert(t.switchNames[leaf]);
    }
    ASSERT_EQ(hostsOfLeaf.size(), 1536u);
    ASSERT_EQ(leavesOfZone.size(), 8u);
    int leaves = 0, zones = 0, roots = 0;
    for (const auto& [name, s] : sw) {
        if (s.level == 0) {
            ++leaves;
            auto it = hostsOfLeaf.find(name);
            ASSERT_NE(it, hostsOfLeaf.end()) << name << " is no leaf of the inventory";
            EXPECT_EQ(hostnames(s.nodes), it->second) << name;
        } else if (s.level == 1) {
            ++zones;
            auto it = leavesOfZone.find(name);
            ASSERT_NE(it, leavesOfZone.end()) << name << " is no zone of the inventory";
            EXPECT_EQ(hostnames(s.switches), it->second) << name;
        } else if (s.level == 2) {
            ++roots;
            std::set<std::string> zoneNames;
            for (const auto& [z, l] : leavesOfZone) zoneNames.insert(z);
            EXPECT_EQ(hostnames(s.switches), zoneNames) << name;
        }
    }
    EXPECT_EQ(leaves, 1536);
    EXPECT_EQ(zones, 8);
    EXPECT_EQ(roots, 1);
    if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace loom::fabric
