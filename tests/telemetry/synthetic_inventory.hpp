// A RoCE cluster built directly as inventory entities, shaped like configs/clusters/*.yaml
// (zones of racks, 2 Grand Teton hosts per rack, 8 GPUs + 8 backend NICs per host, one RTSW
// per rack with 16 downlinks and 18 uplinks to the zone's 18 CTSWs, CTSW uplinks to ATSWs).
// Telemetry tests and benchmarks use it so that they do not depend on the spec parser.
//
//   auto inv = loom::testing::syntheticCluster({.zones = 8, .racksPerZone = 192});  // 24k
#pragma once

#include <string>

#include "loom/inventory/model.hpp"

namespace loom::testing {

struct SyntheticShape {
    int zones = 1;
    int racksPerZone = 4;
    int racksPerRow = 16;
    int ctswPerZone = 18;
    int ctswUplinks = 24;  // per CTSW, spread over the ATSWs
    int atsw = 36;
    bool withFrontend = false;
};

inline std::string pad3(int i) {
    std::string s = std::to_string(i);
    return std::string(s.size() < 3 ? 3 - s.size() : 0, '0') + s;
}

inline inventory::Inventory syntheticCluster(const SyntheticShape& sh) {
    using namespace inventory;
    Inventory inv;
    inv.cluster = sh.zones * sh.racksPerZone * 16 >= 20000 ? "meta-24k-roce" : "synthetic";
    inv.fabric = FabricType::Roce;
    inv.sites.push_back({"dc1", "", {}, 0});
    auto addPort = [&](const Text& dev, DeviceKind k, int idx) {
        Port p;
        p.name = dev + "/p" + std::to_string(idx);
        p.device = dev;
        p.deviceKind = k;
        p.index = idx;
        p.state = "active";
        inv.ports.push_back(p);
        return p.name;
    };
    auto addLink = [&](const Text& a, const Text& b) {
        Link l;
        l.name = a + "--" + b;
        l.aPort = a;
        l.bPort = b;
        l.state = "active";
        inv.links.push_back(std::move(l));
    };
    std::vector<std::string> atsw;
    for (int a = 0; a < (sh.zones > 1 ? sh.atsw : 0); ++a) {
        Switch s;
        s.name = "atsw" + pad3(a + 1);
        s.role = SwitchRole::Atsw;
        s.portCount = sh.zones * sh.ctswPerZone * sh.ctswUplinks / sh.atsw + 1;
        s.state = "in_service";
        inv.switches.push_back(s);
        atsw.emplace_back(s.name);
    }
    std::vector<int> atswNext(atsw.size(), 1);
    int atswRr = 0;
    for (int z = 1; z <= sh.zones; ++z) {
        std::string zn = "z" + std::to_string(z);
        inv.zones.push_back({zn, "dc1", {}, 0});
        int rows = (sh.racksPerZone + sh.racksPerRow - 1) / sh.racksPerRow;
        for (int r = 0; r < rows; ++r) {
            std::string rn = zn + "-row" + (r + 1 < 10 ? "0" : "") + std::to_string(r + 1);
            inv.rows.push_back({rn, zn, r, {}, 0});
        }
        std::vector<std::string> ctsw;
        for (int c = 0; c < sh.ctswPerZone; ++c) {
            Switch s;
            s.name = zn + "-ctsw" + (c + 1 < 10 ? "0" : "") + std::to_string(c + 1);
            s.role = SwitchRole::Ctsw;
            s.zone = zn;
            s.portCount = sh.racksPerZone + sh.ctswUplinks;
            s.state = "in_service";
            inv.switches.push_back(s);
            ctsw.emplace_back(s.name);
            for (int u = 0; u < (atsw.empty() ? 0 : sh.ctswUplinks); ++u) {
                int a = atswRr++ % static_cast<int>(atsw.size());
                auto ap = addPort(s.name, DeviceKind::Switch, sh.racksPerZone + 1 + u);
                auto bp = addPort(atsw[a], DeviceKind::Switch, atswNext[a]++);
                addLink(ap, bp);
            }
        }
        for (int k = 0; k < sh.racksPerZone; ++k) {
            Rack rk;
            rk.name = zn + "-r" + pad3(k + 1);
            rk.row = zn + "-row" + (k / sh.racksPerRow + 1 < 10 ? "0" : "") +
                     std::to_string(k / sh.racksPerRow + 1);
            rk.zone = zn;
            rk.position = k % sh.racksPerRow;
            rk.model = "grand-teton-rack";
            rk.state = "in_service";
            inv.racks.push_back(rk);
            Switch rt;
            rt.name = rk.name + "-rtsw";
            rt.role = SwitchRole::Rtsw;
            rt.zone = zn;
            rt.rack = rk.name;
            rt.portCount = 16 + sh.ctswPerZone;
            rt.state = "in_service";
            inv.switches.push_back(rt);
            for (int h = 0; h < 2; ++h) {
                Host host;
                host.name = rk.name + "-h" + std::to_string(h);
                host.rack = rk.name;
                host.slot = h;
                host.model = "grand-teton";
                host.state = "in_service";
                inv.hosts.push_back(host);
                for (int g = 0; g < 8; ++g) {
                    Gpu gpu;
                    gpu.name = host.name + "-gpu" + std::to_string(g);
                    gpu.host = host.name;
                    gpu.index = g;
                    gpu.model = "H100";
                    gpu.uuid = "GPU-" + std::to_string(z) + "-" + std::to_string(k) + "-" +
                               std::to_string(h) + "-" + std::to_string(g);
                    inv.gpus.push_back(gpu);
                    Nic nic;
                    nic.name = host.name + "/nic" + std::to_string(g);
                    nic.host = host.name;
                    nic.index = g;
                    inv.nics.push_back(nic);
                    auto ap = addPort(nic.name, DeviceKind::Nic, 1);
                    auto bp = addPort(rt.name, DeviceKind::Switch, h * 8 + g + 1);
                    addLink(ap, bp);
                }
            }
            for (int c = 0; c < sh.ctswPerZone; ++c) {
                auto ap = addPort(rt.name, DeviceKind::Switch, 17 + c);
                auto bp = addPort(ctsw[c], DeviceKind::Switch, k + 1);
                addLink(ap, bp);
            }
        }
    }
    return inv;
}

}  // namespace loom::testing
