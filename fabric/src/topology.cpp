#include "loom/fabric/topology.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "adjacency.hpp"

namespace loom::fabric {

namespace inv = loom::inventory;

std::string_view linkStateName(LinkState s) {
    switch (s) {
        case LinkState::Up:
            return "up";
        case LinkState::Down:
            return "down";
        case LinkState::Drained:
            return "drained";
        case LinkState::NotInService:
            return "not_in_service";
    }
    return "?";
}

bool Topology::usableAs(std::int32_t link, LinkState state) const {
    if (state != LinkState::Up) return false;
    auto nodeUp = [&](std::int32_t v) {
        return isSwitch(v) ? switchUp[v] != 0 : nicUp[v - switchCount()] != 0;
    };
    return nodeUp(linkA[link]) && nodeUp(linkB[link]);
}

LinkState stateIn(const Topology& t, LinkStates over, std::int32_t link) {
    auto it = std::lower_bound(over.begin(), over.end(), link,
                               [](const auto& e, std::int32_t l) { return e.first < l; });
    return it != over.end() && it->first == link ? it->second : t.linkState[link];
}

bool switchUpIn(const Topology& t, SwitchUps over, std::int32_t sw) {
    auto it = std::lower_bound(over.begin(), over.end(), sw,
                               [](const auto& e, std::int32_t s) { return e.first < s; });
    return it != over.end() && it->first == sw ? it->second : t.switchUp[sw] != 0;
}

bool usableIn(const Topology& t, LinkStates over, std::int32_t link, SwitchUps switches) {
    if (switches.empty()) return t.usableAs(link, stateIn(t, over, link));
    if (stateIn(t, over, link) != LinkState::Up) return false;
    auto nodeUp = [&](std::int32_t v) {
        return t.isSwitch(v) ? switchUpIn(t, switches, v) : t.nicUp[v - t.switchCount()] != 0;
    };
    return nodeUp(t.linkA[link]) && nodeUp(t.linkB[link]);
}

std::int32_t Topology::findSwitch(std::string_view name) const {
    for (std::size_t i = 0; i < switchNames.size(); ++i)
        if (switchNames[i] == name) return static_cast<std::int32_t>(i);
    return kNone;
}
std::int32_t Topology::findLink(std::string_view name) const {
    for (std::size_t i = 0; i < linkNames.size(); ++i)
        if (linkNames[i] == name) return static_cast<std::int32_t>(i);
    return kNone;
}
std::int32_t Topology::findHost(std::string_view name) const {
    for (std::size_t i = 0; i < hostNames.size(); ++i)
        if (hostNames[i] == name) return static_cast<std::int32_t>(i);
    return kNone;
}

namespace {

// The topology's SharedArrays, in one fixed order (TopologyArrays' slots).
template <class F>
void forEachSharedArray(Topology& t, F&& f) {
    f(t.nicNames);
    f(t.nicHost);
    f(t.nicRail);
    f(t.nicLink);
    f(t.hostNames);
    f(t.linkNames);
    f(t.linkA);
    f(t.linkB);
    f(t.linkAPort);
    f(t.linkBPort);
    f(t.linkCapGbps);
    f(t.adjOffset);
    f(t.adjLink);
    f(t.adjUpBegin);
}

template <class T>
std::size_t arrayBytes(const std::vector<T>& v) {
    std::size_t n = v.capacity() * sizeof(T);
    if constexpr (std::is_same_v<T, std::string>)
        for (const auto& s : v)
            if (s.capacity() > 15) n += s.capacity() + 1;
    return n;
}

}  // namespace

std::size_t TopologyArrays::share(Topology& t) {
    std::lock_guard lock(mutex_);
    std::size_t adopted = 0, i = 0;
    forEachSharedArray(t, [&](auto& a) {
        using Vec = std::vector<typename std::decay_t<decltype(a)>::value_type>;
        if (i >= arrays_.size()) arrays_.emplace_back();
        auto& slot = arrays_[i++];
        auto mine = std::static_pointer_cast<const Vec>(slot.lock());
        if (mine && mine != a.owner() && mine->size() == a.size() &&
            std::equal(mine->begin(), mine->end(), a.begin())) {
            a.adopt(std::move(mine));
            adopted += arrayBytes(*a.owner());
            return;
        }
        slot = a.owner();
    });
    return adopted;
}

namespace {

// Names -> ids for buildTopology: one open-addressing table (at most half full) of the names'
// 32-bit hashes and their ids, the names themselves read through `keyOf(id)` only on a hash
// match. At 98k the port table alone was ~1 M nodes of an unordered_map<string_view, ...>
// (one allocation each, a pointer chase per probe): 40 % of the topology build's CPU.
template <class KeyOf>
class TopologyNameTable {
public:
    TopologyNameTable(std::size_t n, KeyOf keyOf)
        : slots_(std::bit_ceil(std::max<std::size_t>(16, 2 * n)), 0), keyOf_(std::move(keyOf)) {}

    // The id already under `key`, or `id` (inserted); `.second` is true when inserted.
    std::pair<std::int32_t, bool> insert(std::string_view key, std::int32_t id) {
        const auto h = hashOf(key);
        std::size_t i = probe(key, h);
        if (slots_[i] != 0) return {idOf(slots_[i]), false};
        if (2 * (++count_) > slots_.size()) {
            grow();
            i = probe(key, h);
        }
        slots_[i] = static_cast<std::uint64_t>(h) << 32 | static_cast<std::uint32_t>(id + 1);
        return {id, true};
    }
    std::int32_t find(std::string_view key) const {
        const auto e = slots_[probe(key, hashOf(key))];
        return e == 0 ? kNone : idOf(e);
    }

private:
    static std::uint32_t hashOf(std::string_view key) {
        return static_cast<std::uint32_t>(
            (std::hash<std::string_view>{}(key)*0x9E3779B97F4A7C15ull) >> 32);
    }
    static std::int32_t idOf(std::uint64_t e) {
        return static_cast<std::int32_t>(e & 0xffffffffu) - 1;
    }
    // The slot holding `key`, or the empty slot where it would go.
    std::size_t probe(std::string_view key, std::uint32_t h) const {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = h & mask;; i = (i + 1) & mask) {
            const auto e = slots_[i];
            if (e == 0) return i;
            if (static_cast<std::uint32_t>(e >> 32) == h && keyOf_(idOf(e)) == key) return i;
        }
    }
    void grow() {
        std::vector<std::uint64_t> old(slots_.size() * 2, 0);
        old.swap(slots_);
        const std::size_t mask = slots_.size() - 1;
        for (auto e : old) {
            if (e == 0) continue;
            std::size_t i = (e >> 32) & mask;
            while (slots_[i] != 0) i = (i + 1) & mask;
            slots_[i] = e;
        }
    }

    std::vector<std::uint64_t> slots_;
    KeyOf keyOf_;
    std::size_t count_ = 0;
};

bool isBackendRole(inv::SwitchRole r) {
    using R = inv::SwitchRole;
    return r == R::Rtsw || r == R::Ctsw || r == R::Atsw || r == R::Leaf || r == R::Spine ||
           r == R::Core;
}

// Live states that take a device out of the data path. Anything else ("active",
// "in_service", "ok", "burn_in", ...) carries traffic.
bool deviceDown(std::string_view state, bool plannedIsUp) {
    if (state == "planned") return !plannedIsUp;
    return state == "down" || state == "failed" || state == "drained" || state == "maintenance" ||
           state == "decommissioned" || state == "not_in_service";
}

}  // namespace

LinkState liveSwitchState(std::string_view s) {
    if (s == "in_service" || s == "draining" || s == "active" || s == "up") return LinkState::Up;
    if (s == "failed" || s == "repair" || s == "down") return LinkState::Down;
    if (s == "drained" || s == "maintenance") return LinkState::Drained;
    return LinkState::NotInService;
}

LinkState linkStateFrom(std::string_view s, bool plannedIsUp) {
    if (s == "planned") return plannedIsUp ? LinkState::Up : LinkState::NotInService;
    if (s == "down" || s == "failed") return LinkState::Down;
    if (s == "drained") return LinkState::Drained;
    if (s == "active" || s == "up" || s == "in_service") return LinkState::Up;
    return LinkState::NotInService;
}

Result<Topology> buildTopology(const inv::Inventory& in, const BuildOptions& opt) {
    Topology t;
    t.type = in.fabric;
    t.cluster = in.cluster;

    // Zones, racks and hosts keep their inventory order (id = inventory index); a name given
    // twice finds its first entity.
    TopologyNameTable zoneIdx(in.zones.size(),
                              [&](std::int32_t i) { return std::string_view(in.zones[i].name); });
    for (const auto& z : in.zones) {
        zoneIdx.insert(z.name, static_cast<std::int32_t>(t.zoneNames.size()));
        t.zoneNames.emplace_back(z.name);
    }
    auto idxOr = [](const auto& map, std::string_view key) { return map.find(key); };
    TopologyNameTable rackIdx(in.racks.size(),
                              [&](std::int32_t i) { return std::string_view(in.racks[i].name); });
    for (const auto& r : in.racks) {
        rackIdx.insert(r.name, static_cast<std::int32_t>(t.rackNames.size()));
        t.rackNames.emplace_back(r.name);
        t.rackZone.push_back(idxOr(zoneIdx, r.zone));
    }

    // Switches, ordered by tier then inventory order: tiers are contiguous id ranges.
    std::vector<std::int32_t> order;
    for (std::size_t i = 0; i < in.switches.size(); ++i)
        if (isBackendRole(in.switches[i].role)) order.push_back(static_cast<std::int32_t>(i));
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        return inv::switchTier(in.switches[a].role) < inv::switchTier(in.switches[b].role);
    });
    // Switches then backend NICs (node ids); nicOrder is filled below.
    std::vector<std::int32_t> nicOrder;
    TopologyNameTable nodeIdx(order.size() + in.nics.size(), [&](std::int32_t id) {
        const auto sw = static_cast<std::int32_t>(order.size());
        return id < sw ? std::string_view(in.switches[order[id]].name)
                       : std::string_view(in.nics[nicOrder[id - sw]].name);
    });
    for (std::int32_t i : order) {
        const auto& s = in.switches[i];
        auto id = static_cast<std::int32_t>(t.switchNames.size());
        if (!nodeIdx.insert(s.name, id).second)
            return fail(Error::invalid("duplicate switch name " + s.name,
                                       "switches[" + std::to_string(i) + "]"));
        int tier = std::clamp(inv::switchTier(s.role), 1, 3);
        t.switchNames.emplace_back(s.name);
        t.switchRole.push_back(s.role);
        t.switchTier.push_back(static_cast<std::uint8_t>(tier));
        t.switchZone.push_back(s.zone.empty() ? kNone : idxOr(zoneIdx, s.zone));
        t.switchRack.push_back(s.rack.empty() ? kNone : idxOr(rackIdx, s.rack));
        t.switchUp.push_back(opt.storedLinkStates ? liveSwitchState(s.state) == LinkState::Up
                                                  : !deviceDown(s.state, opt.plannedIsUp));
        t.switchOrdinal.push_back(static_cast<std::int32_t>(t.tierSwitches[tier].size()));
        t.tierSwitches[tier].push_back(id);
    }

    // Hosts and their backend NICs (contiguous per host, by rail).
    // The shared arrays (SharedArray) are filled as vectors here and handed over once whole.
    TopologyNameTable hostIdx(in.hosts.size(),
                              [&](std::int32_t i) { return std::string_view(in.hosts[i].name); });
    std::vector<std::string> hostNames;
    hostNames.reserve(in.hosts.size());
    for (const auto& h : in.hosts) {
        hostIdx.insert(h.name, static_cast<std::int32_t>(hostNames.size()));
        hostNames.emplace_back(h.name);
        t.hostRack.push_back(idxOr(rackIdx, h.rack));
    }
    t.hostNames = std::move(hostNames);
    // Each backend NIC's host, looked up once (the sort compares by it).
    std::vector<std::int32_t> nicHostOf(in.nics.size(), kNone);
    for (std::size_t i = 0; i < in.nics.size(); ++i) {
        if (in.nics[i].network != inv::Network::Backend) continue;
        nicHostOf[i] = hostIdx.find(in.nics[i].host);
        if (nicHostOf[i] != kNone) nicOrder.push_back(static_cast<std::int32_t>(i));
    }
    std::stable_sort(nicOrder.begin(), nicOrder.end(), [&](std::int32_t a, std::int32_t b) {
        auto ha = nicHostOf[a], hb = nicHostOf[b];
        return ha != hb ? ha < hb : in.nics[a].index < in.nics[b].index;
    });
    t.hostFirstNic.assign(t.hostNames.size(), kNone);
    t.hostNicCount.assign(t.hostNames.size(), 0);
    const auto S = t.switchCount();
    std::vector<std::string> nicNames;
    std::vector<std::int32_t> nicHost, nicRail;
    for (std::int32_t i : nicOrder) {
        const auto& n = in.nics[i];
        auto nic = static_cast<std::int32_t>(nicNames.size());
        if (!nodeIdx.insert(n.name, S + nic).second)
            return fail(
                Error::invalid("duplicate NIC name " + n.name, "nics[" + std::to_string(i) + "]"));
        auto h = nicHostOf[i];
        if (t.hostFirstNic[h] == kNone) t.hostFirstNic[h] = nic;
        ++t.hostNicCount[h];
        nicNames.emplace_back(n.name);
        nicHost.push_back(h);
        nicRail.push_back(n.index);
        t.nicUp.push_back(deviceDown(n.state, opt.plannedIsUp) ? 0 : 1);
    }
    t.nicNames = std::move(nicNames);
    t.nicHost = std::move(nicHost);
    t.nicRail = std::move(nicRail);
    std::vector<std::int32_t> nicLink(static_cast<std::size_t>(t.nicCount()), kNone);

    // Ports: name -> (node, physical port). Only ports on fabric nodes matter. A name given
    // twice keeps its first port.
    struct PortRef {
        std::int32_t node;
        std::uint16_t index;
    };
    std::vector<PortRef> portRefs(in.ports.size());
    TopologyNameTable ports(in.ports.size(),
                            [&](std::int32_t i) { return std::string_view(in.ports[i].name); });
    for (std::size_t i = 0; i < in.ports.size(); ++i) {
        const auto& p = in.ports[i];
        std::int32_t node = nodeIdx.find(p.device);  // kNone: not in fabric
        if (p.index < 1 || p.index > 65535)
            return fail(
                Error::invalid("port index " + std::to_string(p.index) + " outside 1..65535",
                               "ports[" + std::to_string(i) + "].index"));
        portRefs[i] = PortRef{node, static_cast<std::uint16_t>(p.index)};
        ports.insert(p.name, static_cast<std::int32_t>(i));
    }

    const auto N = t.nodeCount();
    // (node, port) pairs cabled so far: an open-addressing set of key + 1 (0 = empty), at most
    // a quarter full.
    std::vector<std::uint64_t> usedPorts(
        std::bit_ceil(std::max<std::size_t>(16, 4 * in.links.size())), 0);
    auto firstUse = [&](std::uint64_t key) {
        const std::size_t mask = usedPorts.size() - 1;
        for (std::size_t i = (key * 0x9E3779B97F4A7C15ull) >> 32 & mask;; i = (i + 1) & mask) {
            if (usedPorts[i] == key + 1) return false;
            if (usedPorts[i] == 0) {
                usedPorts[i] = key + 1;
                return true;
            }
        }
    };
    std::vector<std::string> linkNames;
    std::vector<std::int32_t> linkA, linkB;
    std::vector<std::uint16_t> linkAPort, linkBPort;
    std::vector<float> linkCapGbps;
    for (std::size_t i = 0; i < in.links.size(); ++i) {
        const auto& l = in.links[i];
        if (l.network != inv::Network::Backend) continue;
        auto where = [i] { return "links[" + std::to_string(i) + "]"; };
        auto pa = ports.find(l.aPort), pb = ports.find(l.bPort);
        if (pa == kNone || pb == kNone)
            return fail(Error::invalid(
                "link " + l.name + " names unknown port " + (pa == kNone ? l.aPort : l.bPort),
                where() + (pa == kNone ? ".aPort" : ".bPort")));
        PortRef a = portRefs[pa], b = portRefs[pb];
        // A backend link to a device outside the fabric (a storage node) is not routed here.
        if (a.node == kNone || b.node == kNone) continue;
        if (t.tierOf(a.node) == t.tierOf(b.node))
            return fail(Error::invalid("link " + l.name + " joins two tier-" +
                                           std::to_string(t.tierOf(a.node)) +
                                           " devices; a Clos link must go up one tier",
                                       where()));
        if (t.tierOf(a.node) > t.tierOf(b.node)) std::swap(a, b);
        if (!t.isSwitch(b.node))
            return fail(Error::invalid("link " + l.name + " joins two NICs", where()));
        for (auto pr : {a, b}) {
            auto key = (static_cast<std::uint64_t>(pr.node) << 16) | pr.index;
            if (!firstUse(key))
                return fail(Error::invalid(
                    "port " + std::to_string(pr.index) + " of " +
                        (t.isSwitch(pr.node) ? t.switchNames[pr.node] : t.nicNames[pr.node - S]) +
                        " is used by two links",
                    where()));
        }
        auto id = static_cast<std::int32_t>(linkNames.size());
        linkNames.emplace_back(l.name);
        linkA.push_back(a.node);
        linkB.push_back(b.node);
        linkAPort.push_back(a.index);
        linkBPort.push_back(b.index);
        linkCapGbps.push_back(static_cast<float>(l.speedGbps > 0 ? l.speedGbps : 400));
        t.linkState.push_back(linkStateFrom(l.state, opt.plannedIsUp && !opt.storedLinkStates));
        if (!t.isSwitch(a.node)) {
            auto nic = a.node - S;
            if (nicLink[nic] != kNone)
                return fail(
                    Error::invalid("NIC " + t.nicNames[nic] + " has two backend links", where()));
            nicLink[nic] = id;
        }
    }

    // CSR: down-links (peer below) first, then up-links, each by local port number.
    auto adj = detail::buildAdjacency(N, linkA, linkB, linkAPort, linkBPort);
    t.nicLink = std::move(nicLink);
    t.linkNames = std::move(linkNames);
    t.linkA = std::move(linkA);
    t.linkB = std::move(linkB);
    t.linkAPort = std::move(linkAPort);
    t.linkBPort = std::move(linkBPort);
    t.linkCapGbps = std::move(linkCapGbps);
    t.adjOffset = std::move(adj.offset);
    t.adjLink = std::move(adj.link);
    t.adjUpBegin = std::move(adj.upBegin);
    return t;
}

}  // namespace loom::fabric
