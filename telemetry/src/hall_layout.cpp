#include "loom/telemetry/hall_layout.hpp"

#include <algorithm>
#include <charconv>
#include <tuple>

#include <nlohmann/json.hpp>

#include "loom/provisioning/link_service.hpp"

namespace loom::telemetry {
namespace {

using inventory::SwitchRole;

bool isBackendRole(SwitchRole r) {
    switch (r) {
        case SwitchRole::Rtsw:
        case SwitchRole::Ctsw:
        case SwitchRole::Atsw:
        case SwitchRole::Leaf:
        case SwitchRole::Spine:
        case SwitchRole::Core: return true;
        default: return false;
    }
}

std::uint32_t find(const NameIndex& m, std::string_view key) {
    auto it = m.find(key);
    return it == m.end() ? kNoIndex : it->second;
}

// The number at the end of a port label: "p17", "Ethernet17", "swp17", "z1-r001-rtsw/p17".
int trailingNumber(std::string_view s) {
    std::size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    if (i == s.size() || s.size() - i > 6) return -1;
    int n = 0;
    std::from_chars(s.data() + i, s.data() + s.size(), n);
    return n;
}

AdminState adminOf(provisioning::LinkService s) {
    switch (s) {
        case provisioning::LinkService::Active: return AdminState::InService;
        case provisioning::LinkService::Drained: return AdminState::Drained;
        case provisioning::LinkService::Down: return AdminState::Down;
        case provisioning::LinkService::NotInService: break;
    }
    return AdminState::NotInService;
}

AdminState linkAdminOf(std::string_view state) {
    return adminOf(provisioning::parseLinkService(state).value_or(provisioning::LinkService::Active));
}

// A GPU is in service exactly when its rack's cables are (link_service.hpp: in_service and
// draining), drained with a drained rack, down with a failed one.
AdminState rackAdminOf(std::string_view rackState) {
    auto s = provisioning::parseRackState(rackState);
    return adminOf(provisioning::linkServiceFor(s.value_or(provisioning::RackState::Planned)));
}

}  // namespace

HallLayout HallLayout::build(const inventory::Inventory& inv, std::int64_t layoutVersion) {
    HallLayout L;
    L.cluster_ = inv.cluster;
    L.fabric_ = inv.fabric;

    // Zones: declared ones plus any a rack names (a hand-built inventory may omit them).
    for (const auto& z : inv.zones) L.zones_.push_back(z.name);
    for (const auto& r : inv.racks)
        if (std::find(L.zones_.begin(), L.zones_.end(), r.zone) == L.zones_.end())
            L.zones_.push_back(r.zone);
    std::sort(L.zones_.begin(), L.zones_.end());
    NameIndex zoneIdx;
    for (std::uint32_t i = 0; i < L.zones_.size(); ++i) zoneIdx.emplace(L.zones_[i], i);

    NameIndex rowIdx;
    for (std::uint32_t i = 0; i < inv.rows.size(); ++i) rowIdx.emplace(inv.rows[i].name, i);
    auto rowIndexOf = [&](const std::string& row) {
        auto i = find(rowIdx, row);
        return i == kNoIndex ? 0 : inv.rows[i].index;
    };
    {
        std::vector<const inventory::Row*> rows;
        for (const auto& r : inv.rows) rows.push_back(&r);
        std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
            return std::tie(a->zone, a->index, a->name) < std::tie(b->zone, b->index, b->name);
        });
        for (auto* r : rows) {
            L.rows_.emplace_back(r->name, r->zone);
            L.rowIndex_.push_back(r->index);
        }
    }

    // Racks in floor order.
    std::vector<const inventory::Rack*> racks;
    for (const auto& r : inv.racks) racks.push_back(&r);
    std::sort(racks.begin(), racks.end(), [&](auto* a, auto* b) {
        return std::make_tuple(std::string_view(a->zone), rowIndexOf(a->row),
                               std::string_view(a->row), a->position, std::string_view(a->name)) <
               std::make_tuple(std::string_view(b->zone), rowIndexOf(b->row),
                               std::string_view(b->row), b->position, std::string_view(b->name));
    });
    for (std::uint32_t i = 0; i < racks.size(); ++i) L.rackByName_.emplace(racks[i]->name, i);

    // Hosts per rack by slot, GPUs per host by index.
    std::vector<std::vector<const inventory::Host*>> hostsOfRack(racks.size());
    NameIndex hostIdxInv;  // host name -> index into inv.hosts
    for (std::uint32_t i = 0; i < inv.hosts.size(); ++i) {
        const auto& h = inv.hosts[i];
        hostIdxInv.emplace(h.name, i);
        auto r = find(L.rackByName_, h.rack);
        if (r != kNoIndex) hostsOfRack[r].push_back(&h);
    }
    std::vector<std::vector<const inventory::Gpu*>> gpusOfHost(inv.hosts.size());
    for (const auto& g : inv.gpus) {
        auto h = find(hostIdxInv, g.host);
        if (h != kNoIndex) gpusOfHost[h].push_back(&g);
    }

    L.gpuNames_.reserve(inv.gpus.size());
    for (std::uint32_t ri = 0; ri < racks.size(); ++ri) {
        const auto& r = *racks[ri];
        HallRack hr;
        hr.name = r.name;
        hr.row = r.row;
        hr.zone = r.zone;
        hr.state = r.state;
        hr.position = r.position;
        hr.zoneIndex = find(zoneIdx, r.zone);
        hr.gpuOffset = static_cast<std::uint32_t>(L.gpuNames_.size());
        auto& hosts = hostsOfRack[ri];
        std::sort(hosts.begin(), hosts.end(), [](auto* a, auto* b) {
            return std::tie(a->slot, a->name) < std::tie(b->slot, b->name);
        });
        for (const auto* h : hosts) {
            hr.hosts.push_back(h->name);
            auto hi = static_cast<std::uint32_t>(L.hostGpuOffset_.size());
            L.hostByName_.emplace(h->name, hi);
            L.hostGpuOffset_.push_back(static_cast<std::uint32_t>(L.gpuNames_.size()));
            auto& gpus = gpusOfHost[find(hostIdxInv, h->name)];
            std::sort(gpus.begin(), gpus.end(), [](auto* a, auto* b) {
                return std::tie(a->index, a->name) < std::tie(b->index, b->name);
            });
            for (const auto* g : gpus) {
                auto gi = static_cast<std::uint32_t>(L.gpuNames_.size());
                L.gpuNames_.push_back(g->name);
                L.gpuHostName_.push_back(h->name);
                L.gpuRack_.push_back(ri);
                L.gpuLocal_.push_back(static_cast<std::int8_t>(g->index));
                bool quarantined = g->state == "quarantined" || h->state == "quarantined";
                L.gpuAdmin_.push_back(quarantined ? AdminState::Quarantined : rackAdminOf(r.state));
                L.gpuByName_.emplace(g->name, gi);
                if (!g->uuid.empty()) L.gpuByUuid_.emplace(g->uuid, gi);
            }
            L.hostGpuCount_.push_back(static_cast<std::uint32_t>(L.gpuNames_.size()) -
                                      L.hostGpuOffset_.back());
        }
        hr.gpuCount = static_cast<std::uint32_t>(L.gpuNames_.size()) - hr.gpuOffset;
        L.racks_.push_back(std::move(hr));
    }

    // Switches: backend first, by tier, zone, rack order, name.
    std::vector<const inventory::Switch*> sws;
    for (const auto& s : inv.switches) sws.push_back(&s);
    auto swKey = [&](const inventory::Switch* s) {
        auto r = find(L.rackByName_, s->rack);
        return std::make_tuple(isBackendRole(s->role) ? 0 : 1, inventory::switchTier(s->role),
                               std::string_view(s->zone), r, std::string_view(s->name));
    };
    std::sort(sws.begin(), sws.end(), [&](auto* a, auto* b) { return swKey(a) < swKey(b); });

    // Highest port number per switch (ports may exceed the declared portCount, or be absent).
    std::unordered_map<std::string_view, int, NameHash, std::equal_to<>> maxPort;
    for (const auto& p : inv.ports)
        if (p.deviceKind == inventory::DeviceKind::Switch) {
            int& m = maxPort[p.device];
            m = std::max(m, p.index);
        }
    for (std::uint32_t si = 0; si < sws.size(); ++si) {
        const auto& s = *sws[si];
        HallSwitch hs;
        hs.name = s.name;
        hs.zone = s.zone;
        hs.role = s.role;
        hs.rackIndex = find(L.rackByName_, s.rack);
        int slots = s.portCount;
        if (auto it = maxPort.find(std::string_view(s.name)); it != maxPort.end())
            slots = it->second;
        hs.portOffset = static_cast<std::uint32_t>(L.ports_.size());
        hs.portSlots = static_cast<std::uint32_t>(slots + 1);
        hs.declaredPorts = static_cast<std::uint32_t>(std::max(slots, s.portCount));
        for (int n = 0; n <= slots; ++n)
            L.ports_.push_back(HallPort{si, kNoIndex, n, static_cast<std::uint32_t>(s.speedGbps)});
        if (hs.rackIndex != kNoIndex && s.role == SwitchRole::Rtsw &&
            L.racks_[hs.rackIndex].rtsw.empty()) {
            L.racks_[hs.rackIndex].rtsw = s.name;
            L.racks_[hs.rackIndex].rtswIndex = si;
        }
        L.switchByName_.emplace(s.name, si);
        L.switches_.push_back(std::move(hs));
    }

    // Backend links: resolve both ends to a switch port slot or a GPU (through its NIC's rail).
    std::unordered_map<std::string_view, const inventory::Port*, NameHash, std::equal_to<>> portOf;
    for (const auto& p : inv.ports) portOf.emplace(p.name, &p);
    std::unordered_map<std::string_view, const inventory::Nic*, NameHash, std::equal_to<>> nicOf;
    for (const auto& n : inv.nics) nicOf.emplace(n.name, &n);

    struct End {
        std::uint32_t port = kNoIndex, gpu = kNoIndex, rack = kNoIndex;
        std::uint8_t tier = 0;
    };
    auto resolve = [&](std::string_view portName) {
        End e;
        const inventory::Port* p = nullptr;
        if (auto it = portOf.find(portName); it != portOf.end()) p = it->second;
        std::string_view device = p ? std::string_view(p->device)
                                    : portName.substr(0, portName.rfind('/'));
        int number = p ? p->index : trailingNumber(portName);
        if (auto s = L.switchByName(device); s != kNoIndex) {
            const auto& hs = L.switches_[s];
            if (number > 0 && static_cast<std::uint32_t>(number) < hs.portSlots)
                e.port = hs.portOffset + static_cast<std::uint32_t>(number);
            e.rack = hs.rackIndex;
            e.tier = static_cast<std::uint8_t>(inventory::switchTier(hs.role));
            return e;
        }
        if (auto it = nicOf.find(device); it != nicOf.end()) {
            const auto* nic = it->second;
            e.gpu = L.gpuByHost(nic->host, nic->index);
            auto h = L.hostByName(nic->host);
            if (h != kNoIndex && L.hostGpuCount_[h] > 0)
                e.rack = L.gpuRack_[L.hostGpuOffset_[h]];
            else if (auto hi = find(hostIdxInv, nic->host); hi != kNoIndex)
                e.rack = find(L.rackByName_, inv.hosts[hi].rack);
        }
        return e;
    };

    struct Pending {
        HallLink link;
        AdminState admin;
    };
    std::vector<Pending> links;
    for (const auto& l : inv.links) {
        if (l.network != inventory::Network::Backend) continue;
        End a = resolve(l.aPort), b = resolve(l.bPort);
        HallLink hl;
        hl.name = l.name;
        hl.aPort = a.port;
        hl.bPort = b.port;
        hl.gpu = a.gpu != kNoIndex ? a.gpu : b.gpu;
        hl.rackIndex = a.rack != kNoIndex ? a.rack : b.rack;
        hl.speedGbps = static_cast<std::uint32_t>(l.speedGbps);
        hl.tier = a.port == kNoIndex ? 0 : a.tier;
        links.push_back({std::move(hl), linkAdminOf(l.state)});
    }
    std::sort(links.begin(), links.end(), [](const Pending& x, const Pending& y) {
        return std::tie(x.link.tier, x.link.rackIndex, x.link.name) <
               std::tie(y.link.tier, y.link.rackIndex, y.link.name);
    });
    for (auto& p : links) {
        auto li = static_cast<std::uint32_t>(L.links_.size());
        if (p.link.aPort != kNoIndex) L.ports_[p.link.aPort].linkIndex = li;
        if (p.link.bPort != kNoIndex) L.ports_[p.link.bPort].linkIndex = li;
        L.linkByName_.emplace(p.link.name, li);
        L.links_.push_back(std::move(p.link));
        L.linkAdmin_.push_back(p.admin);
    }

    if (layoutVersion == 0) {
        // A digest of the structure: the same inventory always gets the same version, so two
        // loomd instances agree, and any added/removed/renamed entity changes it. 53 bits so
        // that JSON clients holding it as a double see it exactly.
        std::uint64_t h = NameHash::mix(NameHash::kBasis, L.cluster_);
        for (const auto& r : L.racks_) h = NameHash::mix(h, r.name);
        for (const auto& g : L.gpuNames_) h = NameHash::mix(h, g);
        for (const auto& s : L.switches_) h = NameHash::mix(h, s.name);
        for (const auto& l : L.links_) h = NameHash::mix(h, l.name);
        layoutVersion = static_cast<std::int64_t>(h & ((1ull << 53) - 1));
        if (layoutVersion == 0) layoutVersion = 1;
    }
    L.layoutVersion_ = layoutVersion;
    // The states drawn over that structure: any rack, GPU or link state change gives a new
    // stateVersion (the packed telemetry arrays keep their order; clients refetch /hall).
    std::uint64_t h = NameHash::mix(NameHash::kBasis, std::to_string(layoutVersion));
    for (const auto& r : L.racks_) h = NameHash::mix(h, r.state);
    h = NameHash::mix(h, std::string_view(reinterpret_cast<const char*>(L.gpuAdmin_.data()),
                                          L.gpuAdmin_.size()));
    h = NameHash::mix(h, std::string_view(reinterpret_cast<const char*>(L.linkAdmin_.data()),
                                          L.linkAdmin_.size()));
    L.stateVersion_ = static_cast<std::int64_t>(h & ((1ull << 53) - 1));
    return L;
}

std::uint32_t HallLayout::gpuByName(std::string_view name) const { return find(gpuByName_, name); }
std::uint32_t HallLayout::gpuByUuid(std::string_view uuid) const { return find(gpuByUuid_, uuid); }
std::uint32_t HallLayout::switchByName(std::string_view n) const { return find(switchByName_, n); }
std::uint32_t HallLayout::rackByName(std::string_view n) const { return find(rackByName_, n); }
std::uint32_t HallLayout::linkByName(std::string_view n) const { return find(linkByName_, n); }

std::uint32_t HallLayout::hostByName(std::string_view host) const {
    auto h = find(hostByName_, host);
    if (h == kNoIndex) {
        // DCGM reports the node's hostname, often fully qualified.
        auto dot = host.find('.');
        if (dot != std::string_view::npos && dot > 0) h = find(hostByName_, host.substr(0, dot));
    }
    return h;
}

std::uint32_t HallLayout::gpuByHost(std::string_view host, int gpuIndex) const {
    return gpuOfHost(hostByName(host), gpuIndex);
}

std::uint32_t HallLayout::gpuOfHost(std::uint32_t h, int gpuIndex) const {
    if (h >= hostGpuOffset_.size()) return kNoIndex;
    auto off = hostGpuOffset_[h], n = hostGpuCount_[h];
    // Fast path: GPUs 0..n-1 are in place.
    if (gpuIndex >= 0 && static_cast<std::uint32_t>(gpuIndex) < n &&
        gpuLocal_[off + gpuIndex] == gpuIndex)
        return off + static_cast<std::uint32_t>(gpuIndex);
    for (std::uint32_t i = 0; i < n; ++i)
        if (gpuLocal_[off + i] == gpuIndex) return off + i;
    return kNoIndex;
}

std::uint32_t HallLayout::portBySwitch(std::uint32_t s, std::string_view port, bool* exists) const {
    if (exists) *exists = false;
    if (s >= switches_.size()) return kNoIndex;
    int n = trailingNumber(port);
    const auto& hs = switches_[s];
    if (exists) *exists = n > 0 && static_cast<std::uint32_t>(n) <= hs.declaredPorts;
    if (n <= 0 || static_cast<std::uint32_t>(n) >= hs.portSlots) return kNoIndex;
    return hs.portOffset + static_cast<std::uint32_t>(n);
}

std::string HallLayout::portName(std::uint32_t port) const {
    if (port >= ports_.size()) return {};
    const auto& p = ports_[port];
    return switches_[p.switchIndex].name + "/p" + std::to_string(p.number);
}

nlohmann::json HallLayout::toJson() const {
    using nlohmann::json;
    json j;
    j["cluster"] = cluster_;
    j["fabric"] = std::string(inventory::fabricTypeName(fabric_));
    j["layoutVersion"] = layoutVersion_;
    j["stateVersion"] = stateVersion_;
    auto zones = json::array();
    for (const auto& z : zones_) zones.push_back({{"name", z}});
    j["zones"] = std::move(zones);
    auto rows = json::array();
    for (std::size_t i = 0; i < rows_.size(); ++i)
        rows.push_back({{"name", rows_[i].first}, {"zone", rows_[i].second}, {"index", rowIndex_[i]}});
    j["rows"] = std::move(rows);
    auto racks = json::array();
    for (const auto& r : racks_)
        racks.push_back({{"name", r.name},
                         {"row", r.row},
                         {"zone", r.zone},
                         {"position", r.position},
                         {"state", r.state},
                         {"hosts", r.hosts},
                         {"rtsw", r.rtsw},
                         {"gpuOffset", r.gpuOffset},
                         {"gpuCount", r.gpuCount}});
    j["racks"] = std::move(racks);
    j["gpus"] = gpuNames_;
    auto links = json::array();
    for (const auto& l : links_) links.push_back(l.name);
    j["links"] = std::move(links);
    auto sws = json::array();
    for (const auto& s : switches_)
        sws.push_back({{"name", s.name},
                       {"role", std::string(inventory::switchRoleName(s.role))},
                       {"zone", s.zone}});
    j["switches"] = std::move(sws);
    return j;
}

}  // namespace loom::telemetry
