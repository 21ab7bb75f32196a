// A small, consistent cluster built in code (no spec parser): for tests and benchmarks of
// plan/apply that need a realistic shape without YAML. Mirrors the RoCE reference layout at a
// reduced scale: per zone one row of racks, two 8-GPU hosts per rack (8 backend NICs each, one
// port per NIC), one RTSW per rack (16 downlinks, 2 uplinks), two CTSWs per zone, and a storage
// rack with one storage node (whose NIC names the storage node as its host).
#pragma once

#include "loom/inventory/model.hpp"

#include <cstdio>
#include <string>

namespace loom::testing {

inline inventory::Inventory sampleCluster(int zones = 2, int racksPerZone = 4) {
    using namespace loom::inventory;
    Inventory inv;
    inv.cluster = "sample";
    inv.fabric = FabricType::Roce;
    inv.sites.push_back({.name = "s1", .description = "test hall"});
    auto port = [&](const std::string& device, DeviceKind kind, int index) {
        std::string name = device + "/p" + std::to_string(index);
        inv.ports.push_back({.name = name, .device = device, .deviceKind = kind, .index = index});
        return name;
    };
    auto link = [&](const std::string& a, const std::string& b, double length) {
        inv.links.push_back({.name = a + "--" + b, .aPort = a, .bPort = b, .lengthM = length});
    };
    for (int z = 1; z <= zones; ++z) {
        std::string zone = "z" + std::to_string(z);
        inv.zones.push_back({.name = zone, .site = "s1"});
        std::string row = zone + "-row01";
        inv.rows.push_back({.name = row, .zone = zone, .index = 0});
        std::string ctsw[2];
        for (int c = 0; c < 2; ++c) {
            ctsw[c] = zone + "-ctsw" + std::to_string(c + 1);
            inv.switches.push_back({.name = ctsw[c], .role = SwitchRole::Ctsw, .model = "ctsw-64",
                                    .zone = zone, .portCount = racksPerZone});
            for (int p = 1; p <= racksPerZone; ++p) port(ctsw[c], DeviceKind::Switch, p);
        }
        for (int r = 0; r < racksPerZone; ++r) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%s-r%03d", zone.c_str(), r + 1);
            std::string rack = buf;
            inv.racks.push_back({.name = rack, .row = row, .zone = zone, .position = r,
                                 .model = "gt-rack", .labels = {{"tier", "gpu"}}});
            std::string rtsw = rack + "-rtsw";
            inv.switches.push_back({.name = rtsw, .role = SwitchRole::Rtsw, .model = "rtsw-34",
                                    .zone = zone, .rack = rack, .portCount = 18});
            for (int p = 1; p <= 18; ++p) port(rtsw, DeviceKind::Switch, p);
            for (int h = 0; h < 2; ++h) {
                std::string host = rack + "-h" + std::to_string(h);
                inv.hosts.push_back({.name = host, .rack = rack, .slot = h, .model = "grand-teton"});
                for (int g = 0; g < 8; ++g) {
                    inv.gpus.push_back({.name = host + "-gpu" + std::to_string(g), .host = host,
                                        .index = g, .model = "H100-SXM5-80GB"});
                    std::string nic = host + "-nic" + std::to_string(g);
                    inv.nics.push_back({.name = nic, .host = host, .index = g, .model = "CX7"});
                    std::string np = port(nic, DeviceKind::Nic, 1);
                    link(np, rtsw + "/p" + std::to_string(h * 8 + g + 1), 2.0);
                }
            }
            for (int c = 0; c < 2; ++c)
                link(rtsw + "/p" + std::to_string(17 + c), ctsw[c] + "/p" + std::to_string(r + 1),
                     30.0);
        }
        std::string srack = zone + "-stor";
        inv.racks.push_back({.name = srack, .row = row, .zone = zone, .position = racksPerZone,
                             .model = "storage-rack"});
        std::string node = srack + "-n0";
        inv.storageNodes.push_back({.name = node, .rack = srack, .model = "nvme-jbof",
                                    .capacityTb = 368.5});
        std::string snic = node + "-nic0";
        inv.nics.push_back({.name = snic, .host = node, .index = 0, .network = Network::Storage,
                            .model = "CX7"});
        port(snic, DeviceKind::Nic, 1);
        port(node, DeviceKind::StorageNode, 1);
    }
    return inv;
}

}  // namespace loom::testing
