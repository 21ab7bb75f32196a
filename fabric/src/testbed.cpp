#include "loom/fabric/testbed.hpp"

#include <cstdio>
#include <string>

namespace loom::fabric::testbed {

namespace inv = loom::inventory;

namespace {

std::string pad(int v, int width) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%0*d", width, v);
    return buf;
}

struct Builder {
    inv::Inventory in;

    void sw(const std::string& name, inv::SwitchRole role, const std::string& zone,
            const std::string& rack, int ports, int speed) {
        inv::Switch s;
        s.name = name;
        s.role = role;
        s.zone = zone;
        s.rack = rack;
        s.portCount = ports;
        s.speedGbps = speed;
        s.model = "synthetic";
        in.switches.push_back(std::move(s));
        for (int p = 1; p <= ports; ++p) {
            inv::Port port;
            port.name = name + "/p" + std::to_string(p);
            port.device = name;
            port.index = p;
            port.speedGbps = speed;
            in.ports.push_back(std::move(port));
        }
    }
    void host(const std::string& name, const std::string& rack, int slot, int nics, int speed) {
        inv::Host h;
        h.name = name;
        h.rack = rack;
        h.slot = slot;
        h.model = "grand-teton";
        in.hosts.push_back(std::move(h));
        for (int k = 0; k < nics; ++k) {
            inv::Nic n;
            n.name = name + "-nic" + std::to_string(k);
            n.host = name;
            n.index = k;
            n.speedGbps = speed;
            inv::Port p;
            p.name = n.name + "/p1";
            p.device = n.name;
            p.deviceKind = inv::DeviceKind::Nic;
            p.index = 1;
            p.speedGbps = speed;
            in.nics.push_back(std::move(n));
            in.ports.push_back(std::move(p));
        }
    }
    void link(const std::string& aPort, const std::string& bPort, int speed) {
        inv::Link l;
        l.aPort = aPort;
        l.bPort = bPort;
        l.name = aPort + "--" + bPort;
        l.speedGbps = speed;
        l.medium = inv::Medium::Optic;
        in.links.push_back(std::move(l));
    }
    void rack(const std::string& name, const std::string& zone, const std::string& row, int pos) {
        inv::Rack r;
        r.name = name;
        r.zone = zone;
        r.row = row;
        r.position = pos;
        in.racks.push_back(std::move(r));
    }
};

}  // namespace

RoceShape meta24kRoce() {
    return RoceShape{.zones = 8, .racksPerZone = 192, .hostsPerRack = 2, .nicsPerHost = 8,
                     .ctswPerZone = 18, .linksPerCtsw = 1, .atsws = 36, .ctswUplinks = 24};
}

inv::Inventory makeRoce(const RoceShape& sh) {
    Builder b;
    b.in.cluster = "synthetic-roce";
    b.in.fabric = inv::FabricType::Roce;
    b.in.sites.push_back({.name = "site1"});
    const int down = sh.hostsPerRack * sh.nicsPerHost;
    const int rtswPorts = down + sh.ctswPerZone * sh.linksPerCtsw;
    const int ctswPorts = sh.racksPerZone * sh.linksPerCtsw + sh.ctswUplinks;
    const int perAtsw = sh.atsws ? (sh.zones * sh.ctswPerZone * sh.ctswUplinks + sh.atsws - 1) / sh.atsws : 0;
    for (int a = 1; a <= sh.atsws; ++a)
        b.sw("atsw" + pad(a, 2), inv::SwitchRole::Atsw, "", "", perAtsw, sh.speedGbps);
    std::vector<int> atswNextPort(sh.atsws, 1);
    int ctswSerial = 0;
    for (int z = 1; z <= sh.zones; ++z) {
        std::string zone = "z" + std::to_string(z);
        b.in.zones.push_back({.name = zone, .site = "site1"});
        std::string row = zone + "-row01";
        b.in.rows.push_back({.name = row, .zone = zone});
        for (int c = 1; c <= sh.ctswPerZone; ++c) {
            std::string cname = zone + "-ctsw" + pad(c, 2);
            b.sw(cname, inv::SwitchRole::Ctsw, zone, "", ctswPorts, sh.speedGbps);
            for (int k = 0; k < sh.ctswUplinks; ++k) {
                int a = (ctswSerial * sh.ctswUplinks + k) % sh.atsws;
                b.link(cname + "/p" + std::to_string(sh.racksPerZone * sh.linksPerCtsw + k + 1),
                       "atsw" + pad(a + 1, 2) + "/p" + std::to_string(atswNextPort[a]++),
                       sh.speedGbps);
            }
            ++ctswSerial;
        }
        for (int r = 1; r <= sh.racksPerZone; ++r) {
            std::string rack = zone + "-r" + pad(r, 3);
            b.rack(rack, zone, row, r - 1);
            std::string rtsw = rack + "-rtsw";
            b.sw(rtsw, inv::SwitchRole::Rtsw, zone, rack, rtswPorts, sh.speedGbps);
            for (int h = 0; h < sh.hostsPerRack; ++h) {
                std::string host = rack + "-h" + std::to_string(h);
                b.host(host, rack, h, sh.nicsPerHost, sh.speedGbps);
                for (int k = 0; k < sh.nicsPerHost; ++k)
                    b.link(host + "-nic" + std::to_string(k) + "/p1",
                           rtsw + "/p" + std::to_string(h * sh.nicsPerHost + k + 1), sh.speedGbps);
            }
            for (int c = 1; c <= sh.ctswPerZone; ++c)
                for (int j = 0; j < sh.linksPerCtsw; ++j)
                    b.link(rtsw + "/p" + std::to_string(down + (c - 1) * sh.linksPerCtsw + j + 1),
                           zone + "-ctsw" + pad(c, 2) + "/p" +
                               std::to_string((r - 1) * sh.linksPerCtsw + j + 1),
                           sh.speedGbps);
        }
    }
    return std::move(b.in);
}

IbShape meta24kIb() {
    return IbShape{.pods = 24, .susPerPod = 4, .hostsPerSu = 32, .leavesPerSu = 8,
                   .spinesPerPod = 32, .cores = 512, .spineUplinks = 32, .ports = 64};
}

inv::Inventory makeIb(const IbShape& sh) {
    Builder b;
    b.in.cluster = "synthetic-ib";
    b.in.fabric = inv::FabricType::Infiniband;
    b.in.sites.push_back({.name = "site1"});
    const int g = sh.cores ? sh.cores / sh.spinesPerPod : 0;  // cores per spine index
    for (int c = 1; c <= sh.cores; ++c)
        b.sw("core" + pad(c, 3), inv::SwitchRole::Core, "", "", sh.ports, sh.speedGbps);
    int su = 0;
    for (int p = 1; p <= sh.pods; ++p) {
        std::string pod = "pod" + pad(p, 2);
        b.in.zones.push_back({.name = pod, .site = "site1"});
        std::string row = pod + "-row01";
        b.in.rows.push_back({.name = row, .zone = pod});
        const int leavesPerPod = sh.susPerPod * sh.leavesPerSu;
        for (int s = 1; s <= sh.spinesPerPod; ++s) {
            std::string spine = pod + "-spine" + pad(s, 2);
            b.sw(spine, inv::SwitchRole::Spine, pod, "", sh.ports, sh.speedGbps);
            if (sh.spineUplinks == 0) {
                for (int k = 0; k < g; ++k) {
                    int core = (s - 1) * g + k + 1;
                    b.link(spine + "/p" + std::to_string(leavesPerPod + k + 1),
                           "core" + pad(core, 3) + "/p" + std::to_string(p), sh.speedGbps);
                }
            } else {
                const int parallel = sh.spineUplinks / g;
                for (int u = 0; u < sh.spineUplinks; ++u) {
                    int core = (s - 1) * g + u % g + 1;
                    b.link(spine + "/p" + std::to_string(leavesPerPod + u + 1),
                           "core" + pad(core, 3) + "/p" + std::to_string((p - 1) * parallel + u / g + 1),
                           sh.speedGbps);
                }
            }
        }
        for (int u = 0; u < sh.susPerPod; ++u) {
            ++su;
            std::string suName = "su" + pad(su, 3);
            for (int l = 1; l <= sh.leavesPerSu; ++l) {
                std::string leaf = suName + "-leaf" + std::to_string(l);
                b.sw(leaf, inv::SwitchRole::Leaf, pod, "", sh.ports, sh.speedGbps);
                int leafInPod = u * sh.leavesPerSu + l;  // 1-based
                for (int s = 1; s <= sh.spinesPerPod; ++s)
                    b.link(leaf + "/p" + std::to_string(sh.hostsPerSu + s),
                           pod + "-spine" + pad(s, 2) + "/p" + std::to_string(leafInPod),
                           sh.speedGbps);
            }
            for (int h = 0; h < sh.hostsPerSu; ++h) {
                int rackNo = h / 2 + 1;
                std::string rack = suName + "-r" + pad(rackNo, 2);
                if (h % 2 == 0) b.rack(rack, pod, row, (su - 1) * 16 + rackNo - 1);
                std::string host = rack + "-h" + std::to_string(h % 2);
                b.host(host, rack, h % 2, sh.leavesPerSu, sh.speedGbps);
                for (int k = 0; k < sh.leavesPerSu; ++k)
                    b.link(host + "-nic" + std::to_string(k) + "/p1",
                           suName + "-leaf" + std::to_string(k + 1) + "/p" + std::to_string(h + 1),
                           sh.speedGbps);
            }
        }
    }
    return std::move(b.in);
}

}  // namespace loom::fabric::testbed
