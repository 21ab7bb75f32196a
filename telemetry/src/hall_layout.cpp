#include "loom/telemetry/hall_layout.hpp"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <tuple>

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
        case SwitchRole::Core:
            return true;
        default:
            return false;
    }
}

template <class Index>
std::uint32_t find(const Index& m, std::string_view key) {
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
        case provisioning::LinkService::Active:
            return AdminState::InService;
        case provisioning::LinkService::Drained:
            return AdminState::Drained;
        case provisioning::LinkService::Down:
            return AdminState::Down;
        case provisioning::LinkService::NotInService:
            break;
    }
    return AdminState::NotInService;
}

AdminState linkAdminOf(std::string_view state) {
    return adminOf(
        provisioning::parseLinkService(state).value_or(provisioning::LinkService::Active));
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
    auto shape = std::make_shared<Shape>();
    Shape& S = *shape;
    L.shape_ = shape;  // the lookups below (switchByName, gpuByHost) read it while it grows
    S.invRacks_ = inv.racks.size();
    S.invHosts_ = inv.hosts.size();
    S.invGpus_ = inv.gpus.size();
    S.invLinks_ = inv.links.size();
    S.cluster_ = inv.cluster;
    S.fabric_ = inv.fabric;

    // Zones: declared ones plus any a rack names (a hand-built inventory may omit them).
    for (const auto& z : inv.zones) S.zones_.emplace_back(z.name);
    for (const auto& r : inv.racks)
        if (std::find(S.zones_.begin(), S.zones_.end(), r.zone) == S.zones_.end())
            S.zones_.emplace_back(r.zone);
    std::sort(S.zones_.begin(), S.zones_.end());
    NameIndex zoneIdx;
    for (std::uint32_t i = 0; i < S.zones_.size(); ++i) zoneIdx.emplace(S.zones_[i], i);

    NameIndex rowIdx;
    for (std::uint32_t i = 0; i < inv.rows.size(); ++i) rowIdx.emplace(inv.rows[i].name, i);
    auto rowIndexOf = [&](std::string_view row) {
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
            S.rows_.emplace_back(r->name, r->zone);
            S.rowIndex_.push_back(r->index);
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
    for (std::uint32_t i = 0; i < racks.size(); ++i) S.rackByName_.emplace(racks[i]->name, i);

    // Hosts per rack by slot, GPUs per host by index.
    std::vector<std::vector<const inventory::Host*>> hostsOfRack(racks.size());
    NameIndex hostIdxInv;  // host name -> index into inv.hosts
    for (std::uint32_t i = 0; i < inv.hosts.size(); ++i) {
        const auto& h = inv.hosts[i];
        hostIdxInv.emplace(h.name, i);
        auto r = find(S.rackByName_, h.rack);
        if (r != kNoIndex) hostsOfRack[r].push_back(&h);
    }
    std::vector<std::vector<const inventory::Gpu*>> gpusOfHost(inv.hosts.size());
    for (const auto& g : inv.gpus) {
        auto h = find(hostIdxInv, g.host);
        if (h != kNoIndex) gpusOfHost[h].push_back(&g);
    }

    S.gpuNames_.reserve(inv.gpus.size());
    for (std::uint32_t ri = 0; ri < racks.size(); ++ri) {
        const auto& r = *racks[ri];
        HallRack hr;
        hr.name = r.name;
        hr.row = r.row;
        hr.zone = r.zone;
        S.rackInv_.push_back(static_cast<std::uint32_t>(&r - inv.racks.data()));
        hr.position = r.position;
        hr.zoneIndex = find(zoneIdx, r.zone);
        hr.gpuOffset = static_cast<std::uint32_t>(S.gpuNames_.size());
        auto& hosts = hostsOfRack[ri];
        std::sort(hosts.begin(), hosts.end(), [](auto* a, auto* b) {
            return std::tie(a->slot, a->name) < std::tie(b->slot, b->name);
        });
        for (const auto* h : hosts) {
            hr.hosts.emplace_back(h->name);
            auto hi = static_cast<std::uint32_t>(S.hostGpuOffset_.size());
            S.hostByName_.emplace(h->name, hi);
            S.hostNames_.emplace_back(h->name);
            S.hostGpuOffset_.push_back(static_cast<std::uint32_t>(S.gpuNames_.size()));
            auto& gpus = gpusOfHost[find(hostIdxInv, h->name)];
            std::sort(gpus.begin(), gpus.end(), [](auto* a, auto* b) {
                return std::tie(a->index, a->name) < std::tie(b->index, b->name);
            });
            for (const auto* g : gpus) {
                auto gi = static_cast<std::uint32_t>(S.gpuNames_.size());
                S.gpuNames_.emplace_back(g->name);
                S.gpuHostName_.emplace_back(h->name);
                S.gpuRack_.push_back(ri);
                S.gpuLocal_.push_back(static_cast<std::int8_t>(g->index));
                S.gpuInv_.push_back(static_cast<std::uint32_t>(g - inv.gpus.data()));
                S.gpuHostInv_.push_back(static_cast<std::uint32_t>(h - inv.hosts.data()));
                if (!g->uuid.empty()) S.gpuByUuid_.emplace(g->uuid, gi);
            }
            S.hostGpuCount_.push_back(static_cast<std::uint32_t>(S.gpuNames_.size()) -
                                      S.hostGpuOffset_.back());
        }
        hr.gpuCount = static_cast<std::uint32_t>(S.gpuNames_.size()) - hr.gpuOffset;
        L.racks_.push_back(std::move(hr));
    }

    // Each host's NIC identity, by NIC index, shared between hosts whose NICs say the same.
    {
        std::vector<inventory::HostNicIdentity> ofHost(S.hostNames_.size());
        for (const auto& n : inv.nics) {
            if (n.network == inventory::Network::Storage || n.index < 0 || n.index > 255) continue;
            const auto h = find(S.hostByName_, n.host);
            if (h == kNoIndex) continue;
            auto& list =
                n.network == inventory::Network::Backend ? ofHost[h].backend : ofHost[h].frontend;
            if (list.size() <= static_cast<std::size_t>(n.index))
                list.resize(static_cast<std::size_t>(n.index) + 1);
            list[static_cast<std::size_t>(n.index)] = {std::string(n.hcaType), std::string(n.pci)};
        }
        std::unordered_map<std::string, std::uint32_t> seen;
        std::string key;
        S.hostNics_.reserve(ofHost.size());
        for (auto& id : ofHost) {
            key.clear();
            for (const auto* list : {&id.backend, &id.frontend}) {
                for (const auto& n : *list) key.append(n.hcaType).append("@").append(n.pci) += ';';
                key += '|';
            }
            auto [it, fresh] =
                seen.try_emplace(key, static_cast<std::uint32_t>(S.nicIdentities_.size()));
            if (fresh) S.nicIdentities_.push_back(std::move(id));
            S.hostNics_.push_back(it->second);
        }
        if (S.nicIdentities_.empty()) S.nicIdentities_.emplace_back();
    }

    // Switches: backend first, by tier, zone, rack order, name.
    std::vector<const inventory::Switch*> sws;
    for (const auto& s : inv.switches) sws.push_back(&s);
    auto swKey = [&](const inventory::Switch* s) {
        auto r = find(S.rackByName_, s->rack);
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
    std::unordered_map<std::string_view, std::shared_ptr<const inventory::PortNaming>, NameHash,
                       std::equal_to<>>
        namings;
    for (std::uint32_t si = 0; si < sws.size(); ++si) {
        const auto& s = *sws[si];
        HallSwitch hs;
        hs.name = s.name;
        hs.zone = s.zone;
        hs.role = s.role;
        hs.rackIndex = find(S.rackByName_, s.rack);
        int slots = s.portCount;
        if (auto it = maxPort.find(std::string_view(s.name)); it != maxPort.end())
            slots = it->second;
        hs.portOffset = static_cast<std::uint32_t>(S.ports_.size());
        hs.portSlots = static_cast<std::uint32_t>(slots + 1);
        hs.declaredPorts = static_cast<std::uint32_t>(std::max(slots, s.portCount));
        {
            auto& naming = namings[std::string_view(s.portNaming)];
            if (!naming) {
                auto parsed = inventory::parsePortNaming(s.portNaming);
                // apply validated it; a row edited by hand falls back to Loom's own names.
                naming = std::make_shared<const inventory::PortNaming>(
                    parsed ? std::move(*parsed) : inventory::PortNaming{});
            }
            hs.naming = naming;
        }
        for (int n = 0; n <= slots; ++n)
            S.ports_.push_back(HallPort{si, kNoIndex, n, static_cast<std::uint32_t>(s.speedGbps)});
        if (hs.rackIndex != kNoIndex && s.role == SwitchRole::Rtsw &&
            L.racks_[hs.rackIndex].rtsw.empty()) {
            L.racks_[hs.rackIndex].rtsw = s.name;
            L.racks_[hs.rackIndex].rtswIndex = si;
        }
        S.switchByName_.emplace(s.name, si);
        S.switches_.push_back(std::move(hs));
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
        std::string_view device =
            p ? std::string_view(p->device) : portName.substr(0, portName.rfind('/'));
        int number = p ? p->index : trailingNumber(portName);
        if (auto s = L.switchByName(device); s != kNoIndex) {
            const auto& hs = S.switches_[s];
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
            if (h != kNoIndex && S.hostGpuCount_[h] > 0)
                e.rack = S.gpuRack_[S.hostGpuOffset_[h]];
            else if (auto hi = find(hostIdxInv, nic->host); hi != kNoIndex)
                e.rack = find(S.rackByName_, inv.hosts[hi].rack);
        }
        return e;
    };

    struct Pending {
        HallLink link;
        std::uint32_t inv;  // index into inv.links
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
        links.push_back({std::move(hl), static_cast<std::uint32_t>(&l - inv.links.data())});
    }
    std::sort(links.begin(), links.end(), [](const Pending& x, const Pending& y) {
        return std::tie(x.link.tier, x.link.rackIndex, x.link.name) <
               std::tie(y.link.tier, y.link.rackIndex, y.link.name);
    });
    for (auto& p : links) {
        auto li = static_cast<std::uint32_t>(S.links_.size());
        if (p.link.aPort != kNoIndex) S.ports_[p.link.aPort].linkIndex = li;
        if (p.link.bPort != kNoIndex) S.ports_[p.link.bPort].linkIndex = li;
        S.links_.push_back(std::move(p.link));
        S.linkInv_.push_back(p.inv);
    }
    // Now that the names stay where they are. The first of a duplicate name wins, as before.
    S.gpuByName_.reserve(S.gpuNames_.size());
    for (std::uint32_t g = 0; g < S.gpuNames_.size(); ++g) S.gpuByName_.emplace(S.gpuNames_[g], g);
    S.linkByName_.reserve(S.links_.size());
    for (std::uint32_t l = 0; l < S.links_.size(); ++l) S.linkByName_.emplace(S.links_[l].name, l);

    if (layoutVersion == 0) {
        // A digest of the structure: the same inventory always gets the same version, so two
        // loomd instances agree, and any added/removed/renamed entity changes it. 53 bits so
        // that JSON clients holding it as a double see it exactly.
        std::uint64_t h = NameHash::mix(NameHash::kBasis, S.cluster_);
        for (const auto& r : L.racks_) h = NameHash::mix(h, r.name);
        for (const auto& g : S.gpuNames_) h = NameHash::mix(h, g);
        for (const auto& s : S.switches_)
            h = NameHash::mix(NameHash::mix(h, s.name), inventory::portNamingText(*s.naming));
        for (const auto& id : S.nicIdentities_)
            for (const auto* list : {&id.backend, &id.frontend})
                for (const auto& n : *list) h = NameHash::mix(NameHash::mix(h, n.hcaType), n.pci);
        for (const auto& l : S.links_) h = NameHash::mix(h, l.name);
        layoutVersion = static_cast<std::int64_t>(h & ((1ull << 53) - 1));
        if (layoutVersion == 0) layoutVersion = 1;
    }
    S.layoutVersion_ = layoutVersion;
    L.computeStates(inv);
    return L;
}

std::shared_ptr<const HallLayout::Shape> HallLayout::emptyShape() {
    static const auto empty = std::make_shared<const Shape>();
    return empty;
}

void HallLayout::computeStates(const inventory::Inventory& inv) {
    const Shape& S = *shape_;
    for (std::size_t i = 0; i < racks_.size(); ++i)
        racks_[i].state = inv.racks[S.rackInv_[i]].state;
    gpuAdmin_.resize(S.gpuInv_.size());
    for (std::size_t i = 0; i < S.gpuInv_.size(); ++i) {
        const auto& g = inv.gpus[S.gpuInv_[i]];
        const auto& h = inv.hosts[S.gpuHostInv_[i]];
        const bool quarantined = g.state == "quarantined" || h.state == "quarantined";
        gpuAdmin_[i] =
            quarantined ? AdminState::Quarantined : rackAdminOf(racks_[S.gpuRack_[i]].state);
    }
    linkAdmin_.resize(S.linkInv_.size());
    for (std::size_t i = 0; i < S.linkInv_.size(); ++i)
        linkAdmin_[i] = linkAdminOf(inv.links[S.linkInv_[i]].state);
    // The states drawn over that structure: any rack, GPU or link state change gives a new
    // stateVersion (the packed telemetry arrays keep their order; clients refetch /hall).
    std::uint64_t h = NameHash::mix(NameHash::kBasis, std::to_string(S.layoutVersion_));
    for (const auto& r : racks_) h = NameHash::mix(h, r.state);
    h = NameHash::mix(
        h, std::string_view(reinterpret_cast<const char*>(gpuAdmin_.data()), gpuAdmin_.size()));
    h = NameHash::mix(
        h, std::string_view(reinterpret_cast<const char*>(linkAdmin_.data()), linkAdmin_.size()));
    stateVersion_ = static_cast<std::int64_t>(h & ((1ull << 53) - 1));
}

std::optional<HallLayout> HallLayout::withStates(const inventory::Inventory& inv) const {
    const Shape& S = *shape_;
    if (inv.racks.size() != S.invRacks_ || inv.hosts.size() != S.invHosts_ ||
        inv.gpus.size() != S.invGpus_ || inv.links.size() != S.invLinks_)
        return std::nullopt;
    HallLayout L;
    L.shape_ = shape_;
    L.racks_ = racks_;
    L.computeStates(inv);
    return L;
}

std::uint32_t HallLayout::gpuByName(std::string_view name) const {
    return find(shape_->gpuByName_, name);
}
std::uint32_t HallLayout::gpuByUuid(std::string_view uuid) const {
    return find(shape_->gpuByUuid_, uuid);
}
std::uint32_t HallLayout::switchByName(std::string_view n) const {
    return find(shape_->switchByName_, n);
}
std::uint32_t HallLayout::rackByName(std::string_view n) const {
    return find(shape_->rackByName_, n);
}
std::uint32_t HallLayout::linkByName(std::string_view n) const {
    return find(shape_->linkByName_, n);
}

std::uint32_t HallLayout::hostByName(std::string_view host) const {
    auto byName = [&](std::string_view name) {
        auto h = find(shape_->hostByName_, name);
        if (h == kNoIndex) {
            // DCGM reports the node's hostname, often fully qualified.
            auto dot = name.find('.');
            if (dot != std::string_view::npos && dot > 0)
                h = find(shape_->hostByName_, name.substr(0, dot));
        }
        return h;
    };
    auto h = byName(host);
    // Host names are case-insensitive (RFC 4343), and a node's hostname is in capitals where its
    // provisioning set it so ("Z1-R001-H0"): it finds the inventory's lower-case name.
    if (h == kNoIndex && host.size() <= 255 &&
        std::any_of(host.begin(), host.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
        char lower[256];
        for (std::size_t i = 0; i < host.size(); ++i)
            lower[i] =
                host[i] >= 'A' && host[i] <= 'Z' ? static_cast<char>(host[i] - 'A' + 'a') : host[i];
        h = byName(std::string_view(lower, host.size()));
    }
    return h;
}

std::uint32_t HallLayout::gpuByHost(std::string_view host, int gpuIndex) const {
    return gpuOfHost(hostByName(host), gpuIndex);
}

std::uint32_t HallLayout::gpuOfHost(std::uint32_t h, int gpuIndex) const {
    if (h >= shape_->hostGpuOffset_.size()) return kNoIndex;
    auto off = shape_->hostGpuOffset_[h], n = shape_->hostGpuCount_[h];
    // Fast path: GPUs 0..n-1 are in place.
    if (gpuIndex >= 0 && static_cast<std::uint32_t>(gpuIndex) < n &&
        shape_->gpuLocal_[off + gpuIndex] == gpuIndex)
        return off + static_cast<std::uint32_t>(gpuIndex);
    for (std::uint32_t i = 0; i < n; ++i)
        if (shape_->gpuLocal_[off + i] == gpuIndex) return off + i;
    return kNoIndex;
}

std::uint32_t HallLayout::portBySwitch(std::uint32_t s, std::string_view port, bool* exists) const {
    if (exists) *exists = false;
    if (s >= shape_->switches_.size()) return kNoIndex;
    const auto& hs = shape_->switches_[s];
    // "<switch>/p17": the switch's own prefix only.
    if (auto slash = port.rfind('/');
        slash != std::string_view::npos && port.substr(0, slash) == std::string_view(hs.name))
        port.remove_prefix(slash + 1);
    // Loom's own names first (pN, N), then the front-panel names of the switch's scheme.
    static const inventory::PortNaming kLoomNames;
    auto m = inventory::matchPort(kLoomNames, port);
    if (m.kind != inventory::PortMatch::Port || port.starts_with("swp") ||
        port.starts_with("Ethernet"))
        m = inventory::matchPort(*hs.naming, port);
    if (m.kind != inventory::PortMatch::Port) return kNoIndex;
    const int n = m.port;
    if (exists) *exists = static_cast<std::uint32_t>(n) <= hs.declaredPorts;
    if (static_cast<std::uint32_t>(n) >= hs.portSlots) return kNoIndex;
    return hs.portOffset + static_cast<std::uint32_t>(n);
}

InterfacePort HallLayout::interfacePort(std::uint32_t s, std::string_view ifName,
                                        std::string_view ifAlias) const {
    InterfacePort r;
    if (s >= shape_->switches_.size()) return r;
    const auto& hs = shape_->switches_[s];
    const auto m = inventory::matchPort(*hs.naming, ifName, ifAlias);
    if (m.kind == inventory::PortMatch::NotAPort) return r;
    r.number = m.port;
    const auto n = static_cast<std::uint32_t>(m.port);
    if (m.kind == inventory::PortMatch::SubPort)
        r.kind = InterfacePort::SubPort;
    else if (n > hs.declaredPorts && n >= hs.portSlots)
        r.kind = InterfacePort::OutOfRange;
    else if (n >= hs.portSlots || ports()[hs.portOffset + n].linkIndex == kNoIndex)
        r.kind = InterfacePort::Uncabled;
    else
        r.kind = InterfacePort::Tracked;
    // Uncabled ports within the slots still have a slot (oper status, counters are kept).
    if (r.kind != InterfacePort::OutOfRange && r.kind != InterfacePort::SubPort && n < hs.portSlots)
        r.port = hs.portOffset + n;
    return r;
}

std::string HallLayout::portName(std::uint32_t port) const {
    if (port >= shape_->ports_.size()) return {};
    const auto& p = shape_->ports_[port];
    return shape_->switches_[p.switchIndex].name + "/p" + std::to_string(p.number);
}

nlohmann::json HallLayout::toJson() const {
    using nlohmann::json;
    json j;
    j["cluster"] = shape_->cluster_;
    j["fabric"] = std::string(inventory::fabricTypeName(shape_->fabric_));
    j["layoutVersion"] = shape_->layoutVersion_;
    j["stateVersion"] = stateVersion_;
    auto zones = json::array();
    for (const auto& z : shape_->zones_) zones.push_back({{"name", z}});
    j["zones"] = std::move(zones);
    auto rows = json::array();
    for (std::size_t i = 0; i < shape_->rows_.size(); ++i)
        rows.push_back({{"name", shape_->rows_[i].first},
                        {"zone", shape_->rows_[i].second},
                        {"index", shape_->rowIndex_[i]}});
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
    j["gpus"] = shape_->gpuNames_;
    auto links = json::array();
    for (const auto& l : shape_->links_) links.push_back(l.name);
    j["links"] = std::move(links);
    auto sws = json::array();
    for (const auto& s : shape_->switches_)
        sws.push_back({{"name", s.name},
                       {"role", std::string(inventory::switchRoleName(s.role))},
                       {"zone", s.zone}});
    j["switches"] = std::move(sws);
    return j;
}

}  // namespace loom::telemetry
