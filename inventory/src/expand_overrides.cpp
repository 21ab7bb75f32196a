// What runs on the expanded inventory, after the Expander's one pass (expand.cpp): the spec's
// overrides by name (every rack and switch override used, label overrides merged into
// whatever they name, cables moved and swapped), then the checks on the result (switch ports
// within their models, every name used once) and the links' names from their final ends.
// Cold next to the pass itself: each runs once over the inventory.
#include <charconv>
#include <unordered_map>

#include "expand_internal.hpp"

namespace loom::inventory::detail {
namespace {

struct DeviceRef {
    DeviceKind kind;
    std::uint32_t index;
};

std::pair<DeviceRef, int> checkPortName(
    const Inventory& inv, const std::string& name,
    const std::unordered_map<std::string_view, DeviceRef>& devices, const SpecSource& src) {
    auto slash = name.rfind("/p");
    int index = 0;
    if (slash != std::string::npos) {
        auto r = std::from_chars(name.data() + slash + 2, name.data() + name.size(), index);
        if (r.ec != std::errc() || r.ptr != name.data() + name.size()) slash = std::string::npos;
    }
    if (slash == std::string::npos)
        failAt("\"" + name + "\" is not a port name (expected <device>/p<N>)", src);
    auto it = devices.find(std::string_view(name).substr(0, slash));
    if (it == devices.end())
        failAt("no switch or NIC named \"" + name.substr(0, slash) + "\"", src);
    int ports =
        it->second.kind == DeviceKind::Switch ? inv.switches[it->second.index].portCount : 1;
    if (index < 1 || index > ports)
        failAt("port \"" + name + "\" does not exist (the device has " + std::to_string(ports) +
                   (ports == 1 ? " port)" : " ports)"),
               src);
    return {it->second, index};
}

}  // namespace

void indexOverrides(const ClusterSpec& spec, OverrideIndex& racks, OverrideIndex& switches) {
    for (std::size_t i = 0; i < spec.rackOverrides.size(); ++i) {
        auto [it, fresh] = racks.emplace(spec.rackOverrides[i].name, i);
        if (!fresh)
            failAt("rack \"" + spec.rackOverrides[i].name + "\" is overridden twice (also " +
                       spec.rackOverrides[it->second].source.path + ")",
                   spec.rackOverrides[i].source);
    }
    for (std::size_t i = 0; i < spec.switchOverrides.size(); ++i) {
        auto [it, fresh] = switches.emplace(spec.switchOverrides[i].name, i);
        if (!fresh)
            failAt("switch \"" + spec.switchOverrides[i].name + "\" is overridden twice (also " +
                       spec.switchOverrides[it->second].source.path + ")",
                   spec.switchOverrides[i].source);
    }
}

void checkOverridesUsed(const ClusterSpec& spec, const std::vector<bool>& rackUsed,
                        const std::vector<bool>& switchUsed) {
    for (std::size_t i = 0; i < rackUsed.size(); ++i)
        if (!rackUsed[i])
            failAt("no rack named \"" + spec.rackOverrides[i].name + "\"",
                   SpecSource{spec.rackOverrides[i].source.path + ".name",
                              spec.rackOverrides[i].source.line});
    for (std::size_t i = 0; i < switchUsed.size(); ++i)
        if (!switchUsed[i])
            failAt("no switch named \"" + spec.switchOverrides[i].name + "\"",
                   SpecSource{spec.switchOverrides[i].source.path + ".name",
                              spec.switchOverrides[i].source.line});
}

void applyLabelOverrides(Inventory& inv, const ClusterSpec& spec) {
    if (spec.labelOverrides.empty()) return;
    std::unordered_map<std::string_view, Labels*> byName;
    byName.reserve(inv.zones.size() + inv.rows.size() + inv.racks.size() + inv.hosts.size() +
                   inv.switches.size() + inv.storageNodes.size() + 1);
    for (auto& e : inv.sites) byName.emplace(e.name, &e.labels);
    for (auto& e : inv.zones) byName.emplace(e.name, &e.labels);
    for (auto& e : inv.rows) byName.emplace(e.name, &e.labels);
    for (auto& e : inv.racks) byName.emplace(e.name, &e.labels);
    for (auto& e : inv.hosts) byName.emplace(e.name, &e.labels);
    for (auto& e : inv.switches) byName.emplace(e.name, &e.labels);
    for (auto& e : inv.storageNodes) byName.emplace(e.name, &e.labels);
    for (const auto& o : spec.labelOverrides) {
        auto it = byName.find(o.name);
        if (it == byName.end())
            failAt(
                "no site, zone, row, rack, host, switch or storage node named \"" + o.name + "\"",
                SpecSource{o.source.path + ".name", o.source.line});
        mergeLabels(*it->second, o.labels);
    }
}

void applyCablingOverrides(Inventory& inv, const ClusterSpec& spec, LinkEnds& linkEnds,
                           const SwitchPortFn& switchPort) {
    if (spec.cablingOverrides.empty()) return;
    // A move may create its target port; reserve first so the name views below stay valid.
    inv.ports.reserve(inv.ports.size() + spec.cablingOverrides.size());
    // port index -> link index * 2 + end (0 = a, 1 = b)
    std::unordered_map<std::string_view, std::uint32_t> portIndex;
    portIndex.reserve(inv.ports.size());
    for (std::uint32_t i = 0; i < inv.ports.size(); ++i) portIndex.emplace(inv.ports[i].name, i);
    std::vector<std::uint32_t> cableAt(inv.ports.size(), kNoPort);
    for (std::uint32_t l = 0; l < linkEnds.size(); ++l) {
        cableAt[linkEnds[l][0]] = l * 2;
        cableAt[linkEnds[l][1]] = l * 2 + 1;
    }
    std::unordered_map<std::string_view, DeviceRef> devices;
    devices.reserve(inv.switches.size() + inv.nics.size());
    for (std::uint32_t i = 0; i < inv.switches.size(); ++i)
        devices.emplace(inv.switches[i].name, DeviceRef{DeviceKind::Switch, i});
    for (std::uint32_t i = 0; i < inv.nics.size(); ++i)
        devices.emplace(inv.nics[i].name, DeviceRef{DeviceKind::Nic, i});
    std::vector<std::pair<std::uint32_t, std::string>> created;  // ports added below

    auto cabled = [&](const std::string& name, const SpecSource& src) {
        auto it = portIndex.find(name);
        if (it == portIndex.end() || cableAt[it->second] == kNoPort) {
            checkPortName(inv, name, devices, src);
            failAt("port \"" + name + "\" has no cable to move", src);
        }
        return it->second;
    };
    for (std::size_t oi = 0; oi < spec.cablingOverrides.size(); ++oi) {
        const CablingOverride& o = spec.cablingOverrides[oi];
        bool swap = o.op == CablingOverride::Op::Swap;
        SpecSource srcA{o.source.path + (swap ? ".swap[0]" : ".move.from"), o.source.line};
        SpecSource srcB{o.source.path + (swap ? ".swap[1]" : ".move.to"), o.source.line};
        std::uint32_t pa = cabled(o.a, srcA);
        std::uint32_t ca = cableAt[pa];
        if (swap) {
            std::uint32_t pb = cabled(o.b, srcB);
            std::uint32_t cb = cableAt[pb];
            if (ca / 2 == cb / 2) failAt("both ports are ends of the same cable", o.source);
            linkEnds[ca / 2][ca % 2] = pb;
            linkEnds[cb / 2][cb % 2] = pa;
            cableAt[pa] = cb;
            cableAt[pb] = ca;
        } else {
            std::uint32_t pb;
            auto it = portIndex.find(o.b);
            if (it != portIndex.end()) {
                pb = it->second;
                if (cableAt[pb] != kNoPort)
                    failAt("port \"" + o.b + "\" already has a cable", srcB);
            } else {
                auto [dev, index] = checkPortName(inv, o.b, devices, srcB);
                if (dev.kind != DeviceKind::Switch)
                    failAt("port \"" + o.b + "\" does not exist", srcB);
                pb = switchPort(dev.index, index);
                portIndex.emplace(inv.ports[pb].name, pb);  // reserved: no reallocation below
                cableAt.push_back(kNoPort);
            }
            linkEnds[ca / 2][ca % 2] = pb;
            cableAt[pa] = kNoPort;
            cableAt[pb] = ca;
        }
    }
}

void checkPortCapacity(const Inventory& inv, const std::vector<int>& maxPort,
                       const std::vector<const SpecSource*>& source) {
    for (std::size_t i = 0; i < inv.switches.size(); ++i) {
        const Switch& s = inv.switches[i];
        if (maxPort[i] > s.portCount)
            failAt("switch " + s.name + " needs port " + std::to_string(maxPort[i]) +
                       " but its model \"" + s.model + "\" has " + std::to_string(s.portCount) +
                       " ports",
                   *source[i]);
    }
}

void finishLinks(Inventory& inv, const LinkEnds& linkEnds) {
    for (std::size_t l = 0; l < inv.links.size(); ++l) {
        Link& link = inv.links[l];
        const Text& a = inv.ports[linkEnds[l][0]].name;
        const Text& b = inv.ports[linkEnds[l][1]].name;
        link.aPort = a;
        link.bPort = b;
        link.name = a + "--" + b;
    }
}

void checkUniqueNames(const Inventory& inv, const ClusterSpec& spec) {
    std::unordered_map<std::string_view, Kind> seen;
    seen.reserve(inv.zones.size() + inv.rows.size() + inv.racks.size() + inv.hosts.size() +
                 inv.switches.size() + inv.nics.size() + inv.storageNodes.size());
    auto add = [&](std::string_view name, Kind k) {
        auto [it, fresh] = seen.emplace(name, k);
        if (!fresh)
            failAt("generated name \"" + std::string(name) + "\" is used twice (" +
                       std::string(kindName(it->second)) + " and " + std::string(kindName(k)) +
                       "); make the naming patterns distinct",
                   spec.naming.source.path.empty() ? SpecSource{"spec.naming", 0}
                                                   : spec.naming.source);
    };
    for (auto& e : inv.zones) add(e.name, Kind::Zone);
    for (auto& e : inv.rows) add(e.name, Kind::Row);
    for (auto& e : inv.racks) add(e.name, Kind::Rack);
    for (auto& e : inv.hosts) add(e.name, Kind::Host);
    for (auto& e : inv.switches) add(e.name, Kind::Switch);
    for (auto& e : inv.storageNodes) add(e.name, Kind::StorageNode);
    for (auto& e : inv.nics) add(e.name, Kind::Nic);
}

}  // namespace loom::inventory::detail
