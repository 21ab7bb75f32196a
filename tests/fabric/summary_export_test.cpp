// The summarised exports: each switch's routes/<switch>.json, looked up by longest prefix for
// every rack, gives the Router's next hops (healthy and with failures); the ATSWs' FRR configs
// originate the zone aggregates and keep announcing exactly the racks that need it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "loom/fabric/export.hpp"
#include "loom/fabric/testbed.hpp"

namespace loom::fabric {
namespace {

using Json = nlohmann::json;

std::uint32_t parseIp(const std::string& s) {
    unsigned a, b, c, d;
    EXPECT_EQ(std::sscanf(s.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d), 4) << s;
    return (a << 24) | (b << 16) | (c << 8) | d;
}

// Longest-prefix match of the rack's gateway address over the JSON routes; the matched value.
Json lookup(const Json& routes, std::uint32_t addr) {
    int bestLen = -1;
    Json best;
    for (auto it = routes.begin(); it != routes.end(); ++it) {
        auto slash = it.key().find('/');
        std::uint32_t net = parseIp(it.key().substr(0, slash));
        int len = std::stoi(it.key().substr(slash + 1));
        std::uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
        if ((addr & mask) == net && len > bestLen) {
            bestLen = len;
            best = it.value();
        }
    }
    return bestLen < 0 ? Json() : best;  // no match: unreachable, like an explicit null
}

// The next hops a JSON group names, as "swpN=weight" strings, sorted.
std::vector<std::string> hopsOf(const Json& doc, const Json& value) {
    std::vector<std::string> out;
    if (!value.is_number_integer()) return out;
    for (const auto& nh : doc["groups"][value.get<int>()])
        out.push_back(nh["interface"].get<std::string>() + "=" +
                      std::to_string(nh["weight"].get<int>()));
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> hopsOf(const Router& r, std::int32_t sw, std::int32_t ti) {
    std::vector<std::string> out;
    const auto& t = r.topology();
    auto g = r.groupOf(sw, ti);
    if (g < 0) return out;
    for (const auto& nh : r.group(g)) {
        auto port = t.linkA[nh.link] == sw ? t.linkAPort[nh.link] : t.linkBPort[nh.link];
        out.push_back("swp" + std::to_string(port) + "=" + std::to_string(nh.weight));
    }
    std::sort(out.begin(), out.end());
    return out;
}

void expectJsonExact(const Router& r, const std::string& what) {
    auto files = exportFabric(r, ExportFormat::Json);
    ASSERT_TRUE(files.has_value()) << files.error().toString();
    const auto& t = r.topology();
    std::size_t full = 0, summarised = 0;
    for (std::int32_t s = 0; s < t.switchCount(); ++s) {
        const auto& f = (*files)[s];
        ASSERT_EQ(f.name, "routes/" + t.switchNames[s] + ".json");
        auto doc = Json::parse(f.content);
        ASSERT_TRUE(doc["summarised"].get<bool>());
        summarised += doc["routes"].size();
        for (std::int32_t ti = 0; ti < r.targetCount(); ++ti) {
            ++full;
            auto ord = t.switchOrdinal[r.targetSwitch(ti)];
            auto v = lookup(doc["routes"], parseIp("10.128.0.0") + 64u * ord + 1);
            auto g = r.groupOf(s, ti);
            if (g == kLocal) {
                EXPECT_EQ(v, Json("local")) << what << " " << t.switchNames[s];
            } else if (g == kNoRoute) {
                EXPECT_TRUE(v.is_null()) << what << " " << t.switchNames[s] << " rack " << ord;
            } else {
                EXPECT_EQ(hopsOf(doc, v), hopsOf(r, s, ti))
                    << what << " " << t.switchNames[s] << " rack " << ord;
            }
        }
    }
    EXPECT_LT(summarised, full) << what;
}

inventory::Inventory fourZones() {
    return testbed::makeRoce({.zones = 4,
                              .racksPerZone = 6,
                              .hostsPerRack = 2,
                              .nicsPerHost = 2,
                              .ctswPerZone = 3,
                              .linksPerCtsw = 1,
                              .atsws = 3,
                              .ctswUplinks = 3});
}

TEST(SummaryExport, JsonLongestPrefixMatchGivesTheRoutersNextHops) {
    auto topo = buildTopology(fourZones());
    ASSERT_TRUE(topo.has_value());
    Router r(std::move(*topo));
    expectJsonExact(r, "healthy");
    std::mt19937 rng(7);
    for (int round = 0; round < 6; ++round) {
        for (int i = 0; i < 3; ++i)
            r.setLinkState(static_cast<std::int32_t>(rng() % r.topology().linkCount()),
                           LinkState::Down);
        if (round == 3) r.setSwitchUp(r.topology().tierSwitches[2][1], false);
        expectJsonExact(r, "round " + std::to_string(round));
        if (HasFailure()) return;
    }
}

TEST(SummaryExport, FrrAtswsAggregateZonesAndUnsuppressBrokenRacks) {
    auto topo = buildTopology(fourZones());
    ASSERT_TRUE(topo.has_value());
    Router r(std::move(*topo));
    const auto& t = r.topology();
    auto files = exportFabric(r, ExportFormat::Frr);
    ASSERT_TRUE(files.has_value());
    auto config = [&](const std::vector<ExportFile>& fs, const std::string& name) {
        for (const auto& f : fs)
            if (f.name == name + ".conf") return f.content;
        ADD_FAILURE() << name;
        return std::string();
    };
    // 24 racks: zone 1 = ordinals 0..5 = 10.128.0.0/24 (racks 0..3) + 10.128.1.0/25 (4, 5).
    auto atsw = config(*files, "atsw01");
    EXPECT_NE(atsw.find("  aggregate-address 10.128.0.0/24 as-set summary-only\n"),
              std::string::npos)
        << atsw;
    EXPECT_NE(atsw.find("  aggregate-address 10.128.1.0/25 as-set summary-only\n"),
              std::string::npos);
    EXPECT_EQ(atsw.find("unsuppress-map"), std::string::npos);  // healthy: nothing breaks symmetry
    EXPECT_EQ(config(*files, "z1-ctsw01").find("aggregate-address"), std::string::npos);
    EXPECT_EQ(config(*files, "z1-r001-rtsw").find("aggregate-address"), std::string::npos);
    auto plain = exportFabric(r, ExportFormat::Frr, {.summarise = false});
    ASSERT_TRUE(plain.has_value());
    EXPECT_EQ(config(*plain, "atsw01").find("aggregate-address"), std::string::npos);

    // z2-r002's first uplink down: that rack's routes differ outside its zone, so the ATSWs
    // keep announcing its /26 (and only it) under the aggregate.
    auto rtsw = t.findSwitch("z2-r002-rtsw");
    ASSERT_NE(rtsw, kNone);
    r.setLinkState(t.upLinks(rtsw)[0], LinkState::Down);
    files = exportFabric(r, ExportFormat::Frr);
    ASSERT_TRUE(files.has_value());
    atsw = config(*files, "atsw01");
    const std::string rack = AddressPlan::rackPrefix(t.switchOrdinal[rtsw]);
    EXPECT_NE(atsw.find("ip prefix-list LOOM-MORE-SPECIFIC seq 5 permit " + rack + "\n"),
              std::string::npos)
        << atsw;
    EXPECT_EQ(atsw.find("seq 10"), std::string::npos) << atsw;
    EXPECT_NE(atsw.find("  neighbor fabric unsuppress-map LOOM-UNSUPPRESS\n"), std::string::npos);
    // Defined before use (bgpd warns about a reference to an unknown route-map).
    EXPECT_LT(atsw.find("route-map LOOM-UNSUPPRESS permit 10"), atsw.find("router bgp"));

    // FRR's own parser accepts the aggregating config (where FRR is installed).
    if (::access("/usr/bin/vtysh", X_OK) != 0) return;
    auto path = std::filesystem::temp_directory_path() /
                ("loom-frr-agg-" + std::to_string(::getpid()) + ".conf");
    std::ofstream(path) << atsw;
    int rc = std::system(
        ("/usr/bin/vtysh -C -f " + path.string() + " >" + path.string() + ".out 2>&1").c_str());
    std::ifstream outFile(path.string() + ".out");
    std::string out((std::istreambuf_iterator<char>(outFile)), {});
    EXPECT_EQ(rc, 0) << out;
    std::filesystem::remove(path);
    std::filesystem::remove(path.string() + ".out");
}

}  // namespace
}  // namespace loom::fabric
