// FRR convergence on Loom's configs: the dev-small backend fabric built from the inventory's
// cabling as one network namespace per switch and a veth pair per link (named swpN as in the
// configs), zebra + bgpd per namespace started on Loom's config. Asserted, by deadline: every
// BGP session Established, and every switch's kernel routes to the rack prefixes equal to
// Loom's ECMP groups (next-hop interfaces, and weights in Loom's proportions); then
// again after a link goes down, after it comes back, after a CTSW goes down (all its links)
// and after it comes back — the kernel FIB, not only zebra's RIB. Cleans up its namespaces
// and daemons. Skips, naming why, where network namespaces are not allowed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "daemon_util.hpp"
#include "loom/fabric/export.hpp"
#include "loom/inventory/spec.hpp"

namespace loom::fabric {
namespace {

namespace fs = std::filesystem;
using namespace daemons;
using Json = nlohmann::json;

int localPort(const Topology& t, std::int32_t l, std::int32_t node) {
    return t.linkA[l] == node ? t.linkAPort[l] : t.linkBPort[l];
}

class FrrFabric {
public:
    FrrFabric(const Router& r, fs::path dir) : r_(r), t_(r.topology()), dir_(std::move(dir)) {
        tag_ = std::to_string(::getpid() % 100000);
    }
    ~FrrFabric() {
        for (std::int32_t s = 0; s < t_.switchCount(); ++s)
            for (auto d : {"bgpd", "zebra"}) {
                auto pid = slurp(swDir(s) / (std::string(d) + ".pid"));
                if (!pid.empty()) sh("kill " + std::to_string(std::stol(pid)) + " 2>/dev/null");
            }
        for (std::int32_t s = 0; s < t_.switchCount(); ++s) sh("ip netns del " + ns(s) + " 2>/dev/null");
    }

    std::string ns(std::int32_t s) const { return "lf" + tag_ + "-" + std::to_string(s); }
    fs::path swDir(std::int32_t s) const { return dir_ / t_.switchNames[s]; }
    std::string ifname(std::int32_t l, std::int32_t s) const {
        return "swp" + std::to_string(localPort(t_, l, s));
    }
    ShellRun vtysh(std::int32_t s, const std::string& cmd) const {
        return sh("vtysh --vty_socket " + swDir(s).string() + " -c '" + cmd + "'");
    }

    // Namespaces, veth pairs, vlan100 on leaves; then zebra + bgpd on Loom's configs.
    ::testing::AssertionResult start(const std::vector<ExportFile>& configs) {
        for (std::int32_t s = 0; s < t_.switchCount(); ++s) {
            fs::create_directories(swDir(s));
            std::ofstream(swDir(s) / "frr.conf") << configs[s].content;
            auto r = sh("ip netns add " + ns(s) + " && ip -n " + ns(s) + " link set lo up && "
                        "ip netns exec " + ns(s) + " sysctl -qw net.ipv4.ip_forward=1 "
                        "net.ipv6.conf.all.forwarding=1");
            if (r.rc != 0) return ::testing::AssertionFailure() << "netns " << ns(s) << ": " << r.out;
            if (r_.targetOf(s) != kNone) {
                // The host subnet's interface: a veth pair inside the namespace (a kernel
                // without the dummy driver has veth, which the links need anyway).
                r = sh("ip -n " + ns(s) + " link add vlan100 type veth peer name vlan100h && ip -n " +
                       ns(s) + " link set vlan100h up && ip -n " + ns(s) + " link set vlan100 up");
                if (r.rc != 0) return ::testing::AssertionFailure() << r.out;
            }
        }
        for (std::int32_t l = 0; l < t_.linkCount(); ++l) {
            auto a = t_.linkA[l], b = t_.linkB[l];
            if (!t_.isSwitch(a)) continue;  // host links: no hosts here
            auto ta = "lv" + tag_ + "a" + std::to_string(l), tb = "lv" + tag_ + "b" + std::to_string(l);
            auto r = sh("ip link add " + ta + " type veth peer name " + tb + " && ip link set " + ta +
                        " netns " + ns(a) + " && ip link set " + tb + " netns " + ns(b) + " && ip -n " +
                        ns(a) + " link set " + ta + " name " + ifname(l, a) + " up && ip -n " + ns(b) +
                        " link set " + tb + " name " + ifname(l, b) + " up");
            if (r.rc != 0) return ::testing::AssertionFailure() << t_.linkNames[l] << ": " << r.out;
        }
        sh("chown -R frr:frr " + dir_.string());
        for (std::int32_t s = 0; s < t_.switchCount(); ++s) {
            auto d = swDir(s).string();
            auto common = " -d -u frr -g frr -f " + d + "/frr.conf --vty_socket " + d + " -z " + d +
                          "/zserv.api";
            auto r = sh("ip netns exec " + ns(s) + " /usr/lib/frr/zebra" + common + " -i " + d +
                        "/zebra.pid --log file:" + d + "/zebra.log");
            if (r.rc != 0) return ::testing::AssertionFailure() << "zebra " << t_.switchNames[s] << ": " << r.out;
            if (!waitFor([&] { return fs::exists(swDir(s) / "zserv.api"); }, std::chrono::seconds(20)))
                return ::testing::AssertionFailure() << "zebra " << t_.switchNames[s] << " did not start";
            r = sh("ip netns exec " + ns(s) + " /usr/lib/frr/bgpd" + common + " -i " + d +
                   "/bgpd.pid --log file:" + d + "/bgpd.log");
            if (r.rc != 0) return ::testing::AssertionFailure() << "bgpd " << t_.switchNames[s] << ": " << r.out;
        }
        return ::testing::AssertionSuccess();
    }

    // Sessions Established over usable links; "" when all are, else the first one missing.
    std::string sessionsMissing(const Router& now) const {
        const auto& t = now.topology();
        for (std::int32_t s = 0; s < t.switchCount(); ++s) {
            auto r = vtysh(s, "show bgp ipv4 unicast summary json");
            Json j = Json::parse(r.out, nullptr, false);
            if (j.is_discarded() || !j.contains("peers")) return t.switchNames[s] + ": no summary: " + r.out;
            for (auto i = t.adjOffset[s]; i < t.adjOffset[s + 1]; ++i) {
                auto l = t.adjLink[i];
                if (!t.isSwitch(t.peer(l, s)) || !t.usable(l)) continue;
                auto p = j["peers"].find(ifname(l, s));
                if (p == j["peers"].end() || p->value("state", "") != "Established")
                    return t.switchNames[s] + " " + ifname(l, s) + ": " +
                           (p == j["peers"].end() ? "no peer" : p->value("state", "?"));
            }
        }
        return "";
    }

    // Kernel routes to rack prefixes vs Loom's groups; "" when equal, else the first difference.
    std::string fibDifference(const Router& now, bool checkWeights) const {
        const auto& t = now.topology();
        for (std::int32_t s = 0; s < t.switchCount(); ++s) {
            auto r = sh("ip -n " + ns(s) + " -j route show proto bgp");
            Json routes = Json::parse(r.out, nullptr, false);
            if (routes.is_discarded()) return t.switchNames[s] + ": ip route: " + r.out;
            std::map<std::string, std::map<std::string, int>> kernel;  // prefix -> dev -> weight
            for (const auto& rt : routes) {
                auto dst = rt.value("dst", "");
                if (dst.rfind("10.128.", 0) != 0) continue;
                auto& hops = kernel[dst];
                if (rt.contains("nexthops"))
                    for (const auto& nh : rt["nexthops"]) hops[nh.value("dev", "?")] = nh.value("weight", 1);
                else
                    hops[rt.value("dev", "?")] = 1;
            }
            for (std::int32_t ti = 0; ti < now.targetCount(); ++ti) {
                auto prefix = AddressPlan::rackPrefix(t.switchOrdinal[now.targetSwitch(ti)]);
                auto g = now.groupOf(s, ti);
                if (g == kLocal) continue;
                std::map<std::string, int> want;
                if (g != kNoRoute)
                    for (const auto& nh : now.group(g)) want[ifname(nh.link, s)] = static_cast<int>(nh.weight);
                auto it = kernel.find(prefix);
                std::map<std::string, int> got = it == kernel.end() ? std::map<std::string, int>{} : it->second;
                std::set<std::string> wantDevs, gotDevs;
                for (auto& [d, w] : want) wantDevs.insert(d);
                for (auto& [d, w] : got) gotDevs.insert(d);
                auto describe = [&] {
                    std::string o = t.switchNames[s] + " " + prefix + ": kernel " + std::to_string(got.size()) +
                                    " next hops, Loom " + std::to_string(want.size()) + " (kernel:";
                    for (auto& [d, w] : got) o += " " + d + "/" + std::to_string(w);
                    o += "; Loom:";
                    for (auto& [d, w] : want) o += " " + d + "/" + std::to_string(w);
                    return o + ")";
                };
                if (wantDevs != gotDevs) return describe();
                // Weights: FRR scales the link-bandwidth community into integer kernel weights
                // (percent of the total, rounded down: 16 equal next hops get 6 each), so
                // compare proportions: Loom's w_i / w_j must lie in [k_i / (k_j + 1),
                // (k_i + 1) / k_j] of the kernel's weights k.
                if (checkWeights && got.size() > 1) {
                    for (auto& [di, ki] : got)
                        for (auto& [dj, kj] : got) {
                            double loomRatio = double(want[di]) / want[dj];
                            double lo = double(ki) / (kj + 1), hi = double(ki + 1) / std::max(1, kj);
                            if (loomRatio < lo - 1e-9 || loomRatio > hi + 1e-9)
                                return describe() + " weights not in Loom's proportions";
                        }
                }
            }
        }
        return "";
    }

    void setLink(std::int32_t l, bool up) const {
        for (auto end : {t_.linkA[l], t_.linkB[l]})
            sh("ip -n " + ns(end) + " link set " + ifname(l, end) + (up ? " up" : " down"));
    }

private:
    const Router& r_;
    const Topology& t_;
    fs::path dir_;
    std::string tag_;
};

TEST(FabricFrrDaemon, DevSmallConvergesToLoomsRoutesThroughFlaps) {
    if (::access("/usr/lib/frr/bgpd", X_OK) != 0 || ::access("/usr/lib/frr/zebra", X_OK) != 0)
        GTEST_SKIP() << "needs FRR (zebra, bgpd, vtysh): scripts/bootstrap installs frr";
    if (auto why = netnsUnavailable(); !why.empty()) GTEST_SKIP() << why;
    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml");
    ASSERT_TRUE(inv.has_value());
    auto topo = buildTopology(*inv);
    ASSERT_TRUE(topo.has_value());
    Router loom(std::move(*topo));
    const auto& t = loom.topology();
    // LOOM_TEST_FRR_VERSION: the configs for another FRR version (ExportOptions::frrVersion),
    // e.g. 7.2 to see the FIB without `no zebra nexthop kernel enable`.
    const char* version = std::getenv("LOOM_TEST_FRR_VERSION");
    auto configs = exportFabric(loom, ExportFormat::Frr, {.frrVersion = version ? version : "8.4"});
    ASSERT_TRUE(configs.has_value());

    auto dir = fs::temp_directory_path() / ("loom-frr-fabric-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    bool passed = false;
    {
        FrrFabric fabric(loom, dir);
        ASSERT_TRUE(fabric.start(*configs));
        auto converge = [&](const Router& want, const std::string& phase, bool weights) {
            std::string missing, diff;
            bool ok = waitFor(
                [&] {
                    missing = fabric.sessionsMissing(want);
                    if (!missing.empty()) return false;
                    diff = fabric.fibDifference(want, weights);
                    return diff.empty();
                },
                std::chrono::seconds(90), std::chrono::milliseconds(500));
            EXPECT_TRUE(ok) << phase << ": " << (missing.empty() ? diff : "session " + missing);
            return ok;
        };
        ASSERT_TRUE(converge(loom, "healthy fabric", true));

        // A CTSW uplink of the first rack flaps.
        auto rtsw = t.tierSwitches[1][0];
        auto link = t.upLinks(rtsw)[0];
        Router failed = loom;
        failed.setLinkState(link, LinkState::Down);
        // The weights matter here: some of Loom's groups are now unequal (the next hops behind
        // the failed link carry less bandwidth), and the kernel must follow them.
        int unequal = 0;
        for (std::int32_t s = 0; s < t.switchCount(); ++s)
            for (std::int32_t ti = 0; ti < failed.targetCount(); ++ti) {
                auto g = failed.groupOf(s, ti);
                if (g == kNoRoute || g == kLocal) continue;
                std::set<std::uint32_t> w;
                for (const auto& nh : failed.group(g)) w.insert(nh.weight);
                unequal += w.size() > 1;
            }
        EXPECT_GT(unequal, 0);
        fabric.setLink(link, false);
        converge(failed, "link " + t.linkNames[link] + " down", true);
        fabric.setLink(link, true);
        converge(loom, "link " + t.linkNames[link] + " back up", true);

        // A CTSW goes down (every link of it) and comes back.
        auto ctsw = t.tierSwitches[2][0];
        Router ctswDown = loom;
        ctswDown.setSwitchUp(ctsw, false);
        for (auto i = t.adjOffset[ctsw]; i < t.adjOffset[ctsw + 1]; ++i) fabric.setLink(t.adjLink[i], false);
        converge(ctswDown, t.switchNames[ctsw] + " down", true);
        for (auto i = t.adjOffset[ctsw]; i < t.adjOffset[ctsw + 1]; ++i) fabric.setLink(t.adjLink[i], true);
        converge(loom, t.switchNames[ctsw] + " back up", true);
        passed = !::testing::Test::HasFailure();
    }
    if (passed) fs::remove_all(dir);
}

}  // namespace
}  // namespace loom::fabric
