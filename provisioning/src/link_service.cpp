#include "loom/provisioning/link_service.hpp"

#include "loom/provisioning/follow_rack.hpp"

#include <string>
#include <unordered_map>

namespace loom::provisioning {

namespace {
using NameMap = std::unordered_map<std::string_view, std::int32_t>;

std::int32_t lookup(const NameMap& m, std::string_view k) {
    auto it = m.find(k);
    return it == m.end() ? -1 : it->second;
}
}  // namespace

std::string_view linkStateName(LinkService s) {
    switch (s) {
        case LinkService::Active: return "active";
        case LinkService::Drained: return "drained";
        case LinkService::Down: return "down";
        case LinkService::NotInService: break;
    }
    return "planned";
}

std::optional<LinkService> parseLinkService(std::string_view s) {
    if (s == "planned") return LinkService::NotInService;
    if (s == "active") return LinkService::Active;
    if (s == "drained") return LinkService::Drained;
    if (s == "down") return LinkService::Down;
    return std::nullopt;
}

LinkService linkServiceFor(RackState s) {
    switch (s) {
        case RackState::InService:
        case RackState::Draining: return LinkService::Active;
        case RackState::Drained:
        case RackState::Maintenance: return LinkService::Drained;
        case RackState::Failed:
        case RackState::Repair: return LinkService::Down;
        default: return LinkService::NotInService;
    }
}

LinkOwners LinkOwners::of(const inventory::Inventory& inv) {
    LinkOwners o;
    NameMap zoneIdx, rackIdx, hostRack, deviceRack, deviceZone;
    for (std::size_t i = 0; i < inv.zones.size(); ++i)
        zoneIdx.emplace(inv.zones[i].name, static_cast<std::int32_t>(i));
    o.zoneCount = inv.zones.size();
    o.rackZone.reserve(inv.racks.size());
    for (std::size_t i = 0; i < inv.racks.size(); ++i) {
        rackIdx.emplace(inv.racks[i].name, static_cast<std::int32_t>(i));
        o.rackZone.push_back(lookup(zoneIdx, inv.racks[i].zone));
    }
    for (const auto& h : inv.hosts) hostRack.emplace(h.name, lookup(rackIdx, h.rack));
    for (const auto& s : inv.storageNodes) hostRack.emplace(s.name, lookup(rackIdx, s.rack));
    o.switchRack.reserve(inv.switches.size());
    o.switchZone.reserve(inv.switches.size());
    for (const auto& s : inv.switches) {
        const auto r = s.rack.empty() ? -1 : lookup(rackIdx, s.rack);
        const auto z = s.zone.empty() ? -1 : lookup(zoneIdx, s.zone);
        deviceRack.emplace(s.name, r);
        deviceZone.emplace(s.name, z);
        o.switchRack.push_back(r);
        o.switchZone.push_back(r >= 0 ? o.rackZone[r] : z);
    }
    for (const auto& n : inv.nics) deviceRack.emplace(n.name, lookup(hostRack, n.host));
    for (const auto& [name, rack] : hostRack) deviceRack.emplace(name, rack);
    NameMap portRack, portZone;
    portRack.reserve(inv.ports.size());
    for (const auto& p : inv.ports) {
        const auto r = lookup(deviceRack, p.device);
        portRack.emplace(p.name, r);
        const auto z = lookup(deviceZone, p.device);
        portZone.emplace(p.name, z >= 0 ? z : (r >= 0 ? o.rackZone[r] : -1));
    }
    o.rack.reserve(inv.links.size());
    o.zone.reserve(inv.links.size());
    for (const auto& l : inv.links) {
        // The lower end decides (aPort is the lower tier); an uplink from a rack's switch
        // belongs to that rack.
        auto r = lookup(portRack, l.aPort);
        if (r < 0) r = lookup(portRack, l.bPort);
        o.rack.push_back(r);
        auto z = lookup(portZone, l.aPort);
        if (z < 0) z = lookup(portZone, l.bPort);
        o.zone.push_back(r >= 0 ? o.rackZone[r] : z);
    }
    return o;
}

std::vector<char> zonesServing(const LinkOwners& o, std::span<const RackState> racks) {
    std::vector<char> active(o.zoneCount + 1, 0);
    for (std::size_t r = 0; r < racks.size() && r < o.rackZone.size(); ++r) {
        if (linkServiceFor(racks[r]) != LinkService::Active) continue;
        active[o.zoneCount] = 1;
        if (o.rackZone[r] >= 0) active[static_cast<std::size_t>(o.rackZone[r])] = 1;
    }
    return active;
}

std::vector<LinkService> desiredLinkStates(const LinkOwners& o, std::span<const RackState> racks) {
    const auto serving = zonesServing(o, racks);
    const bool anyActive = serving[o.zoneCount] != 0;
    auto zoneActive = [&](std::int32_t z) { return serving[static_cast<std::size_t>(z)] != 0; };
    std::vector<LinkService> out(o.rack.size(), LinkService::NotInService);
    for (std::size_t i = 0; i < o.rack.size(); ++i) {
        const auto r = o.rack[i];
        if (r >= 0) {
            out[i] = static_cast<std::size_t>(r) < racks.size() ? linkServiceFor(racks[r])
                                                                : LinkService::NotInService;
            continue;
        }
        const auto z = o.zone[i];
        const bool active = z >= 0 ? zoneActive(z) : anyActive;
        out[i] = active ? LinkService::Active : LinkService::NotInService;
    }
    return out;
}

std::string_view switchStateFor(RackState rack) { return stateName(rack); }

std::vector<std::string_view> desiredSwitchStates(const LinkOwners& o,
                                                  std::span<const RackState> racks) {
    const auto serving = zonesServing(o, racks);
    std::vector<std::string_view> out;
    out.reserve(o.switchRack.size());
    for (std::size_t i = 0; i < o.switchRack.size(); ++i) {
        const auto r = o.switchRack[i];
        if (r >= 0) {
            out.push_back(static_cast<std::size_t>(r) < racks.size()
                              ? switchStateFor(racks[static_cast<std::size_t>(r)])
                              : stateName(RackState::Planned));
            continue;
        }
        const auto z = o.switchZone[i];
        const bool active = serving[z >= 0 ? static_cast<std::size_t>(z) : o.zoneCount] != 0;
        out.push_back(stateName(active ? RackState::InService : RackState::Planned));
    }
    return out;
}

std::vector<RackState> rackStatesOf(const inventory::Inventory& inv) {
    std::vector<RackState> out;
    out.reserve(inv.racks.size());
    for (const auto& r : inv.racks) out.push_back(parseRackState(r.state).value_or(RackState::Planned));
    return out;
}

}  // namespace loom::provisioning
