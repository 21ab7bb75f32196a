// Helpers shared by the spec_*_test.cpp files: loading reference configs and checking the
// structural invariants every expanded Inventory must satisfy.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "loom/inventory/spec.hpp"

namespace loom::inventory::testing {

inline std::string configPath(const std::string& name) {
    return std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + name;
}

inline Inventory loadConfig(const std::string& name) {
    auto inv = loadClusterSpecFile(configPath(name));
    if (!inv) ADD_FAILURE() << name << ": " << inv.error().toString();
    return inv ? std::move(*inv) : Inventory{};
}

// Which tier pair a backend link joins, e.g. "nic-rtsw", "rtsw-ctsw", "leaf-spine".
inline std::map<std::string, std::size_t> linksByTier(const Inventory& inv) {
    std::unordered_map<std::string_view, std::string_view> role;
    for (const auto& s : inv.switches) role.emplace(s.name, switchRoleName(s.role));
    std::unordered_map<std::string_view, std::string_view> portDevice;
    for (const auto& p : inv.ports) portDevice.emplace(p.name, p.device);
    auto roleOf = [&](std::string_view port) -> std::string {
        auto dev = portDevice.at(port);
        auto it = role.find(dev);
        return it == role.end() ? "nic" : std::string(it->second);
    };
    std::map<std::string, std::size_t> out;
    for (const auto& l : inv.links) out[roleOf(l.aPort) + "-" + roleOf(l.bPort)]++;
    return out;
}

inline std::map<std::string, std::size_t> switchesByRole(const Inventory& inv) {
    std::map<std::string, std::size_t> out;
    for (const auto& s : inv.switches) out[std::string(switchRoleName(s.role))]++;
    return out;
}

// Every reference resolves, names are unique per kind, every port is used by at most one link,
// no link names a missing port, port indices are within the device's port count, and link
// names follow "<aPort>--<bPort>".
inline void expectConsistent(const Inventory& inv) {
    auto names = [](const auto& v) {
        std::unordered_set<std::string_view> s;
        for (const auto& e : v) EXPECT_TRUE(s.insert(e.name).second) << "duplicate name " << e.name;
        return s;
    };
    auto sites = names(inv.sites);
    auto zones = names(inv.zones);
    auto rows = names(inv.rows);
    auto racks = names(inv.racks);
    auto hosts = names(inv.hosts);
    auto gpus = names(inv.gpus);
    auto nics = names(inv.nics);
    auto switches = names(inv.switches);
    auto ports = names(inv.ports);
    auto links = names(inv.links);
    auto storage = names(inv.storageNodes);
    for (const auto& z : inv.zones) EXPECT_TRUE(sites.count(z.site)) << z.name;
    for (const auto& r : inv.rows) EXPECT_TRUE(zones.count(r.zone)) << r.name;
    for (const auto& r : inv.racks) {
        EXPECT_TRUE(rows.count(r.row)) << r.name;
        EXPECT_TRUE(zones.count(r.zone)) << r.name;
    }
    for (const auto& h : inv.hosts) EXPECT_TRUE(racks.count(h.rack)) << h.name;
    for (const auto& g : inv.gpus) EXPECT_TRUE(hosts.count(g.host)) << g.name;
    for (const auto& n : inv.nics)
        EXPECT_TRUE(hosts.count(n.host) || storage.count(n.host)) << n.name;
    for (const auto& s : inv.storageNodes) EXPECT_TRUE(racks.count(s.rack)) << s.name;
    std::unordered_map<std::string_view, int> portCount;
    for (const auto& s : inv.switches) {
        portCount[s.name] = s.portCount;
        if (!s.zone.empty()) {
            EXPECT_TRUE(zones.count(s.zone)) << s.name;
        }
        if (!s.rack.empty()) {
            EXPECT_TRUE(racks.count(s.rack)) << s.name;
        }
    }
    for (const auto& n : inv.nics) portCount[n.name] = 1;
    for (const auto& p : inv.ports) {
        auto it = portCount.find(p.device);
        ASSERT_NE(it, portCount.end()) << "port " << p.name << " on a missing device";
        EXPECT_GE(p.index, 1) << p.name;
        EXPECT_LE(p.index, it->second) << p.name;
        EXPECT_EQ(p.name, p.device + "/p" + std::to_string(p.index));
    }
    std::unordered_set<std::string_view> used;
    for (const auto& l : inv.links) {
        EXPECT_TRUE(ports.count(l.aPort)) << "link " << l.name << " names a missing port";
        EXPECT_TRUE(ports.count(l.bPort)) << "link " << l.name << " names a missing port";
        EXPECT_TRUE(used.insert(l.aPort).second) << "port " << l.aPort << " used twice";
        EXPECT_TRUE(used.insert(l.bPort).second) << "port " << l.bPort << " used twice";
        EXPECT_EQ(l.name, l.aPort + "--" + l.bPort);
        EXPECT_GT(l.lengthM, 0) << l.name;
    }
}

// The entity of `v` named `name`, or nullptr.
template <class V>
const auto* byName(const V& v, std::string_view name) {
    auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.name == name; });
    return it == v.end() ? nullptr : &*it;
}

// The link on `port` (either end), or nullptr.
inline const Link* linkAt(const Inventory& inv, std::string_view port) {
    for (const auto& l : inv.links)
        if (l.aPort == port || l.bPort == port) return &l;
    return nullptr;
}

}  // namespace loom::inventory::testing
