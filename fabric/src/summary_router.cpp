#include "loom/fabric/summary_router.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>

#include "adjacency.hpp"

namespace loom::fabric {

namespace {

constexpr std::int32_t kUnknown = -3;  // remap entry not interned yet

// Next-hop groups by content, ids in order of first appearance. The index is an
// open-addressing table (at most half full) whose slots hold a group's id and its 32-bit hash
// together, so a probe reads one slot: an unordered_map<hash, vector<id>> was a node and a
// vector block per group, ~12 MB at 98k with the whole hall in service (118k groups); this is
// 2 MB.
struct Pool {
    std::vector<NextHop> hops;
    std::vector<std::int32_t> offset{0};
    std::vector<std::uint64_t> slots;  // hash << 32 | (id + 1); 0 = empty; size a power of two

    std::span<const NextHop> get(std::int32_t id) const {
        return {hops.data() + offset[id], hops.data() + offset[id + 1]};
    }
    std::int32_t size() const { return static_cast<std::int32_t>(offset.size()) - 1; }
    std::size_t indexBytes() const { return slots.capacity() * sizeof(std::uint64_t); }
    std::int32_t intern(std::span<const NextHop> g) {
        std::uint64_t h64 = 1469598103934665603ull;
        for (const auto& nh : g) {
            h64 = (h64 ^ static_cast<std::uint32_t>(nh.link)) * 1099511628211ull;
            h64 = (h64 ^ nh.weight) * 1099511628211ull;
        }
        // Fibonacci hashing: the top bits of the product mix every bit of the content hash.
        const auto h = static_cast<std::uint32_t>((h64 * 0x9E3779B97F4A7C15ull) >> 32);
        if (2 * (static_cast<std::size_t>(size()) + 1) > slots.size()) grow();
        const std::size_t mask = slots.size() - 1;
        std::size_t i = h & mask;
        for (;; i = (i + 1) & mask) {
            const auto e = slots[i];
            if (e == 0) break;
            if (static_cast<std::uint32_t>(e >> 32) != h) continue;
            const auto id = static_cast<std::int32_t>(e & 0xffffffffu) - 1;
            auto c = get(id);
            if (c.size() == g.size() && std::equal(c.begin(), c.end(), g.begin())) return id;
        }
        const auto id = size();
        hops.insert(hops.end(), g.begin(), g.end());
        offset.push_back(static_cast<std::int32_t>(hops.size()));
        slots[i] = static_cast<std::uint64_t>(h) << 32 | static_cast<std::uint32_t>(id + 1);
        return id;
    }
    void grow() {
        std::vector<std::uint64_t> old(std::max<std::size_t>(1024, slots.size() * 2), 0);
        old.swap(slots);
        const std::size_t mask = slots.size() - 1;
        for (auto e : old) {
            if (e == 0) continue;
            std::size_t i = (e >> 32) & mask;
            while (slots[i] != 0) i = (i + 1) & mask;
            slots[i] = e;
        }
    }
};

struct Zone {
    bool local = false;                  // has a zone router (conditions (a) and (b) hold)
    std::vector<std::int32_t> targets;   // global target ids, ascending (= zone router targets)
    std::vector<std::int32_t> switches;  // zone router switch id -> global switch
    std::vector<std::int32_t> links;     // zone router link id -> global link
    std::vector<std::int32_t> boundary;  // zone router ids of the switches with up-links out
    std::unique_ptr<Router> router;
    EntryChanges changes;
    std::vector<std::int32_t> remap;  // zone router group id -> pool id
    std::unordered_map<std::string, std::int32_t> classOfSig;
    std::vector<std::int32_t> classes;  // live class ids
};

struct Class {
    std::int32_t zone = 0;
    std::string sig;
    std::int32_t slot = kNone;
    std::vector<std::int32_t> members;  // global targets, ascending
};

}  // namespace

struct SummaryRouter::Impl {
    std::optional<Router> rep;  // representatives router (RoCE)
    Topology ibTopo;            // InfiniBand: kept only to answer topology()
    EntryChanges repChanges;
    std::vector<std::int32_t> repRemap;
    Pool pool;
    std::vector<Zone> zones;  // zones_ + 1: the last holds racks outside any zone
    std::vector<Class> classes;
    std::vector<std::int32_t> freeClasses;
    std::vector<std::int32_t> targetClass;  // target -> class
    std::vector<std::int32_t> slotClass;    // representative slot -> class (kNone: free)
    std::vector<std::int32_t> freeSlots;
    std::vector<std::int32_t> targetOfSwitch;       // switch -> target or kNone
    std::vector<std::int32_t> switchLocal;          // switch -> id in its zone's router, or kNone
    std::vector<std::int32_t> linkZone, linkLocal;  // link -> zone router holding it / its id
    std::vector<std::uint32_t> mark;                // cell -> epoch (dirty)
    std::uint32_t epoch = 0;
    std::vector<std::size_t> dirty;
    std::vector<NextHop> scratch;
    std::vector<std::int32_t> classGroups;

    const Topology& topo() const { return rep ? rep->topology() : ibTopo; }

    std::int32_t fromRep(std::int32_t g) {
        if (g < 0) return g;
        if (static_cast<std::size_t>(g) >= repRemap.size()) repRemap.resize(g + 1, kUnknown);
        if (repRemap[g] == kUnknown) repRemap[g] = pool.intern(rep->group(g));
        return repRemap[g];
    }
    std::int32_t fromZone(Zone& z, std::int32_t g) {
        if (g < 0) return g;
        if (static_cast<std::size_t>(g) >= z.remap.size()) z.remap.resize(g + 1, kUnknown);
        if (z.remap[g] == kUnknown) {
            scratch.assign(z.router->group(g).begin(), z.router->group(g).end());
            for (auto& nh : scratch) nh.link = z.links[nh.link];
            z.remap[g] = pool.intern(scratch);
        }
        return z.remap[g];
    }

    // The boundary switches' (mode, dist, bw) toward the zone router's target lt.
    static std::string signature(const Zone& z, std::int32_t lt) {
        std::string sig(z.boundary.size() * 6, '\0');
        char* p = sig.data();
        for (auto b : z.boundary) {
            p[0] = static_cast<char>(z.router->mode(b, lt));
            p[1] = static_cast<char>(z.router->dist(b, lt));
            float bw = z.router->bandwidth(b, lt);
            std::memcpy(p + 2, &bw, 4);
            p += 6;
        }
        return sig;
    }

    // A slot routing switch sw: the one already targeting it, a free one, or a new one.
    std::int32_t slotFor(std::int32_t sw) {
        auto s = rep->targetOf(sw);
        if (s != kNone) {
            freeSlots.erase(std::find(freeSlots.begin(), freeSlots.end(), s));
            return s;
        }
        if (!freeSlots.empty()) {
            s = freeSlots.back();
            freeSlots.pop_back();
            rep->setTarget(s, sw);
            return s;
        }
        s = rep->addTarget(sw);
        slotClass.resize(s + 1, kNone);
        return s;
    }
    void freeSlot(std::int32_t s) {
        slotClass[s] = kNone;
        freeSlots.push_back(s);
    }
    std::int32_t newClass(std::int32_t zone, std::string sig) {
        std::int32_t c;
        if (!freeClasses.empty()) {
            c = freeClasses.back();
            freeClasses.pop_back();
        } else {
            c = static_cast<std::int32_t>(classes.size());
            classes.emplace_back();
        }
        classes[c] = Class{zone, std::move(sig), kNone, {}};
        zones[zone].classes.push_back(c);
        return c;
    }
    std::int32_t targetSwitch(std::int32_t t) const { return topo().tierSwitches[1][t]; }

    // Moves target t (of a zone with a router) to the class of its current signature.
    // Returns whether it moved.
    bool reclassify(std::int32_t zi, std::int32_t lt) {
        Zone& z = zones[zi];
        const auto t = z.targets[lt];
        auto sig = signature(z, lt);
        const auto old = targetClass[t];
        if (classes[old].sig == sig) return false;
        Class& oc = classes[old];
        oc.members.erase(std::lower_bound(oc.members.begin(), oc.members.end(), t));
        if (oc.slot != kNone && rep->targetSwitch(oc.slot) == targetSwitch(t)) {
            freeSlot(oc.slot);
            oc.slot = kNone;
        }
        if (oc.members.empty()) {
            if (oc.slot != kNone) freeSlot(oc.slot);
            z.classOfSig.erase(oc.sig);
            z.classes.erase(std::find(z.classes.begin(), z.classes.end(), old));
            freeClasses.push_back(old);
        } else if (oc.slot == kNone) {
            oc.slot = slotFor(targetSwitch(oc.members.front()));
            slotClass[oc.slot] = old;
        }
        auto it = z.classOfSig.find(sig);
        std::int32_t nc;
        if (it != z.classOfSig.end()) {
            nc = it->second;
        } else {
            nc = newClass(zi, sig);
            z.classOfSig.emplace(std::move(sig), nc);
        }
        Class& c = classes[nc];
        c.members.insert(std::lower_bound(c.members.begin(), c.members.end(), t), t);
        targetClass[t] = nc;
        if (c.slot == kNone) {
            c.slot = slotFor(targetSwitch(t));
            slotClass[c.slot] = nc;
        }
        return true;
    }
};

SummaryRouter::SummaryRouter(Topology topo) : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    if (topo.type != inventory::FabricType::Roce) {
        m.ibTopo = std::move(topo);
        return;
    }
    const Topology& t = topo;
    const auto S = t.switchCount();
    const auto& tier1 = t.tierSwitches[1];
    const auto T = static_cast<std::int32_t>(tier1.size());
    initCells(t, tier1);
    auto zoneOf = [&](std::int32_t sw) {
        auto z = t.switchZone[sw];
        return (z == kNone || z >= zones_) ? zones_ : z;
    };
    m.zones.resize(zones_ + 1);
    m.targetOfSwitch.assign(S, kNone);
    for (std::int32_t ti = 0; ti < T; ++ti) m.targetOfSwitch[tier1[ti]] = ti;
    for (std::int32_t z = 0; z <= zones_; ++z) m.zones[z].targets = zoneTargets_[z];

    // Which zones get a zone router: (a) a switch of Z with an up-link out of Z is a tier-2
    // switch of Z; (b) no switch outside Z has an up-link into Z.
    std::vector<std::uint8_t> ok(zones_ + 1, 1);
    ok[zones_] = 0;
    for (std::int32_t l = 0; l < t.linkCount(); ++l) {
        auto a = t.linkA[l], b = t.linkB[l];
        if (!t.isSwitch(a)) continue;
        auto za = zoneOf(a), zb = zoneOf(b);
        if (za == zb) continue;
        if (zb < zones_) ok[zb] = 0;                          // (b)
        if (za < zones_ && t.switchTier[a] != 2) ok[za] = 0;  // (a)
    }
    m.switchLocal.assign(S, kNone);
    m.linkZone.assign(t.linkCount(), kNone);
    m.linkLocal.assign(t.linkCount(), kNone);
    std::vector<Topology> subs(zones_);
    for (std::int32_t z = 0; z < zones_; ++z) {
        auto& zn = m.zones[z];
        zn.local = ok[z] && !zn.targets.empty();
        if (!zn.local) continue;
        Topology& st = subs[z];
        st.type = t.type;
        st.cluster = t.cluster;
        st.zoneNames = t.zoneNames;
        for (int tier = 1; tier <= 3; ++tier)
            for (auto sw : t.tierSwitches[tier]) {
                if (zoneOf(sw) != z) continue;
                auto id = st.switchCount();
                m.switchLocal[sw] = id;
                zn.switches.push_back(sw);
                st.switchNames.push_back(t.switchNames[sw]);
                st.switchRole.push_back(t.switchRole[sw]);
                st.switchTier.push_back(t.switchTier[sw]);
                st.switchZone.push_back(t.switchZone[sw]);
                st.switchRack.push_back(t.switchRack[sw]);
                st.switchUp.push_back(t.switchUp[sw]);
                st.switchOrdinal.push_back(t.switchOrdinal[sw]);
                st.tierSwitches[tier].push_back(id);
            }
    }
    // A zone's links, filled here and handed to its sub-topology's SharedArrays once whole.
    struct ZoneLinks {
        std::vector<std::int32_t> a, b;
        std::vector<std::uint16_t> aPort, bPort;
        std::vector<float> cap;
    };
    std::vector<ZoneLinks> zoneLinks(zones_);
    // A zone router's links have no names (linkCount() counts them): one array of empty names
    // per link count, shared by every zone of that size (32 B a link: 3.4 MB at 98k otherwise).
    std::unordered_map<std::int32_t, SharedArray<std::string>> noNames;
    for (std::int32_t l = 0; l < t.linkCount(); ++l) {
        auto a = t.linkA[l], b = t.linkB[l];
        if (!t.isSwitch(a) || zoneOf(a) != zoneOf(b) || zoneOf(a) == zones_ ||
            !m.zones[zoneOf(a)].local)
            continue;
        auto z = zoneOf(a);
        ZoneLinks& zl = zoneLinks[z];
        m.linkZone[l] = z;
        m.linkLocal[l] = static_cast<std::int32_t>(zl.a.size());
        m.zones[z].links.push_back(l);
        zl.a.push_back(m.switchLocal[a]);
        zl.b.push_back(m.switchLocal[b]);
        zl.aPort.push_back(t.linkAPort[l]);
        zl.bPort.push_back(t.linkBPort[l]);
        zl.cap.push_back(t.linkCapGbps[l]);
        subs[z].linkState.push_back(t.linkState[l]);
    }
    for (std::int32_t z = 0; z < zones_; ++z) {
        auto& zn = m.zones[z];
        if (!zn.local) continue;
        Topology& st = subs[z];
        ZoneLinks& zl = zoneLinks[z];
        const auto L = static_cast<std::int32_t>(zl.a.size());
        // Adjacency as buildTopology orders it, so the next hops come in the same order as in
        // the whole fabric.
        const auto N = st.switchCount();
        auto adj = detail::buildAdjacency(N, zl.a, zl.b, zl.aPort, zl.bPort);
        auto& names = noNames[L];
        if (names.size() != static_cast<std::size_t>(L))
            names = std::vector<std::string>(static_cast<std::size_t>(L));
        st.linkNames = names;
        st.linkA = std::move(zl.a);
        st.linkB = std::move(zl.b);
        st.linkAPort = std::move(zl.aPort);
        st.linkBPort = std::move(zl.bPort);
        st.linkCapGbps = std::move(zl.cap);
        st.adjOffset = std::move(adj.offset);
        st.adjLink = std::move(adj.link);
        st.adjUpBegin = std::move(adj.upBegin);
        for (std::int32_t v = 0; v < N; ++v) {
            bool out = false;
            for (auto l : t.upLinks(zn.switches[v])) out |= zoneOf(t.linkB[l]) != z;
            if (out) zn.boundary.push_back(v);
        }
    }
    // The zone routers, zones spread over the cores.
    {
        std::atomic<std::int32_t> next{0};
        auto work = [&] {
            for (std::int32_t z; (z = next++) < zones_;)
                if (m.zones[z].local)
                    m.zones[z].router = std::make_unique<Router>(std::move(subs[z]));
        };
        unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
        if (static_cast<std::int64_t>(T) * 64 < 200000) n = 1;
        std::vector<std::jthread> threads;
        for (unsigned k = 1; k < n; ++k) threads.emplace_back(work);
        work();
    }
    // Classes: racks of a zone with a router by signature, every other rack alone.
    m.targetClass.assign(T, kNone);
    std::vector<std::int32_t> slotTargets;
    for (std::int32_t z = 0; z <= zones_; ++z) {
        auto& zn = m.zones[z];
        for (std::size_t lt = 0; lt < zn.targets.size(); ++lt) {
            auto ti = zn.targets[lt];
            std::string sig =
                zn.local ? Impl::signature(zn, static_cast<std::int32_t>(lt)) : std::to_string(ti);
            auto it = zn.classOfSig.find(sig);
            std::int32_t c;
            if (it == zn.classOfSig.end()) {
                c = m.newClass(z, sig);
                zn.classOfSig.emplace(std::move(sig), c);
                m.classes[c].slot = static_cast<std::int32_t>(slotTargets.size());
                slotTargets.push_back(tier1[ti]);
                m.slotClass.push_back(c);
            } else {
                c = it->second;
            }
            m.classes[c].members.push_back(ti);
            m.targetClass[ti] = c;
        }
        if (zn.router) zn.router->recordChanges(&zn.changes);
    }
    m.rep.emplace(std::move(topo), std::move(slotTargets));
    m.rep->recordChanges(&m.repChanges);

    const std::size_t cells = aggregate_.size();
    m.mark.assign(cells, 0);
    for (std::int32_t s = 0; s < S; ++s)
        for (std::int32_t z = 0; z <= zones_; ++z) summarise(s, z);
}

SummaryRouter::~SummaryRouter() = default;
SummaryRouter::SummaryRouter(SummaryRouter&&) noexcept = default;
SummaryRouter& SummaryRouter::operator=(SummaryRouter&&) noexcept = default;

const Topology& SummaryRouter::topology() const { return impl_->topo(); }
std::int32_t SummaryRouter::targetSwitch(std::int32_t target) const {
    return impl_->targetSwitch(target);
}
std::int32_t SummaryRouter::targetOf(std::int32_t sw) const { return impl_->targetOfSwitch[sw]; }

// One (switch, zone) cell: the zone's own switches list every reachable rack (from the zone
// router); any other switch the group of the class with most racks as the aggregate and the
// racks of the other classes whose group differs (from the representatives router).
void SummaryRouter::summarise(std::int32_t s, std::int32_t z) {
    Impl& m = *impl_;
    Zone& zn = m.zones[z];
    auto& spec = specifics_[cell(s, z)];
    // On the way out, the cell keeps exactly its entries: a cell lists every rack of its zone
    // while the zone is not aggregated (mid-rollout) and a handful once it is, and clear() kept
    // the larger capacity (with push_back's doubling on top) for good: at 98k, 377 MB of
    // loomd's 1.16 GB heap peak during a rollout was these vectors in its three routers
    // (heaptrack). Rebuilt at the same size, it reallocates nothing.
    struct SummaryCellFit {
        std::vector<Specific>& v;
        ~SummaryCellFit() {
            if (v.capacity() == v.size()) return;
            if (v.empty())
                std::vector<Specific>().swap(v);
            else
                std::vector<Specific>(v.begin(), v.end()).swap(v);
        }
    } fit{spec};
    auto& agg = aggregate_[cell(s, z)];
    spec.clear();
    agg = kNoRoute;
    if (zn.targets.empty()) return;
    if (zn.local && m.switchLocal[s] != kNone && m.topo().switchZone[s] == z) {
        const auto ls = m.switchLocal[s];
        for (std::size_t lt = 0; lt < zn.targets.size(); ++lt) {
            auto g = m.fromZone(zn, zn.router->groupOf(ls, static_cast<std::int32_t>(lt)));
            if (g != kNoRoute) spec.push_back({zn.targets[lt], g});
        }
        return;
    }
    const bool own = m.topo().switchZone[s] == z;
    if (!zoneAggregated_[z] || own || z == zones_) {
        for (auto ti : zn.targets) {
            auto g = m.fromRep(m.rep->groupOf(s, m.classes[m.targetClass[ti]].slot));
            if (g != kNoRoute) spec.push_back({ti, g});
        }
        return;
    }
    // The group of each class at s; one group for all of them is the common case (healthy,
    // or a failure that this switch does not see).
    auto& gs = m.classGroups;
    gs.clear();
    bool same = true;
    for (auto c : zn.classes) {
        gs.push_back(m.fromRep(m.rep->groupOf(s, m.classes[c].slot)));
        same = same && gs.back() == gs.front();
    }
    if (same) {
        agg = gs.front();
        return;
    }
    // Group weights over the classes; the heaviest is the aggregate (ties: the group of the
    // class with the lowest rack), so the cell depends on the routes only, not on history.
    std::int32_t bestWeight = -1, bestFirst = 0;
    for (std::size_t i = 0; i < gs.size(); ++i) {
        std::int32_t weight = 0, first = std::numeric_limits<std::int32_t>::max();
        for (std::size_t j = 0; j < gs.size(); ++j) {
            if (gs[j] != gs[i]) continue;
            const auto& cl = m.classes[zn.classes[j]];
            weight += static_cast<std::int32_t>(cl.members.size());
            first = std::min(first, cl.members.front());
        }
        if (weight > bestWeight || (weight == bestWeight && first < bestFirst)) {
            bestWeight = weight;
            bestFirst = first;
            agg = gs[i];
        }
    }
    for (std::size_t i = 0; i < gs.size(); ++i) {
        if (gs[i] == agg) continue;
        for (auto ti : m.classes[zn.classes[i]].members) spec.push_back({ti, gs[i]});
    }
    std::sort(spec.begin(), spec.end(),
              [](const Specific& a, const Specific& b) { return a.target < b.target; });
}

float SummaryRouter::bandwidth(std::int32_t sw, std::int32_t ti) const {
    const Impl& m = *impl_;
    const auto z = targetZone_[ti];
    const Zone& zn = m.zones[z];
    if (zn.local && m.switchLocal[sw] != kNone && m.topo().switchZone[sw] == z) {
        auto lt = std::lower_bound(zn.targets.begin(), zn.targets.end(), ti) - zn.targets.begin();
        return zn.router->bandwidth(m.switchLocal[sw], static_cast<std::int32_t>(lt));
    }
    return m.rep->bandwidth(sw, m.classes[m.targetClass[ti]].slot);
}

std::span<const NextHop> SummaryRouter::group(std::int32_t id) const {
    if (id < 0) return {};
    return impl_->pool.get(id);
}
std::int32_t SummaryRouter::groupCount() const { return impl_->pool.size(); }

std::size_t SummaryRouter::memoryBytes() const {
    const Impl& m = *impl_;
    std::size_t n = cellBytes() + m.mark.capacity() * 4 + m.pool.hops.capacity() * sizeof(NextHop) +
                    m.pool.offset.capacity() * 4 + m.pool.indexBytes();
    if (m.rep) n += m.rep->memoryBytes();
    for (const auto& z : m.zones)
        if (z.router) n += z.router->memoryBytes();
    return n;
}

std::int32_t SummaryRouter::classCount() const {
    std::int32_t n = 0;
    for (const auto& z : impl_->zones) n += static_cast<std::int32_t>(z.classes.size());
    return n;
}
std::int32_t SummaryRouter::representativeSlots() const {
    return impl_->rep ? impl_->rep->targetCount() : 0;
}

// After the routers moved: reclassify the racks whose boundary entries were recomputed (all
// racks of a zone whose router recomputed everything), then re-summarise the cells whose
// entries changed: own-zone cells from the zone routers' changes, the other cells of a zone
// whose classes changed, and the cells of the representatives' recomputed entries.
SummaryRouter::Stats SummaryRouter::finish(std::span<const std::int32_t> touched,
                                           std::span<const std::uint8_t> zoneFull, bool repFull) {
    Impl& m = *impl_;
    Stats st;
    st.full = repFull;
    if (++m.epoch == 0) {
        std::fill(m.mark.begin(), m.mark.end(), 0);
        m.epoch = 1;
    }
    m.dirty.clear();
    auto mark = [&](std::int32_t s, std::int32_t z) {
        auto c = cell(s, z);
        if (m.mark[c] == m.epoch) return;
        m.mark[c] = m.epoch;
        m.dirty.push_back(c);
    };
    if (repFull) m.repRemap.clear();
    const auto S = m.topo().switchCount();
    for (std::size_t i = 0; i < touched.size(); ++i) {
        const auto z = touched[i];
        Zone& zn = m.zones[z];
        const auto L = static_cast<std::int32_t>(zn.targets.size());
        bool moved = false;
        if (zoneFull[i]) {
            zn.remap.clear();
            zn.changes.clear();
            for (auto v : zn.switches) mark(v, z);
            for (std::int32_t lt = 0; lt < L; ++lt) moved |= m.reclassify(z, lt);
        } else {
            if (zn.changes.empty()) continue;
            ++st.zonesRerouted;
            std::vector<std::uint8_t> seen(L, 0);
            std::vector<std::uint8_t> isBoundary(zn.switches.size(), 0);
            for (auto b : zn.boundary) isBoundary[b] = 1;
            for (auto [ls, lt] : zn.changes) {
                mark(zn.switches[ls], z);
                if (isBoundary[ls] && !seen[lt]) {
                    seen[lt] = 1;
                    moved |= m.reclassify(z, lt);
                }
            }
            zn.changes.clear();
        }
        if (moved) {
            ++st.classesChanged;
            for (std::int32_t s = 0; s < S; ++s) mark(s, z);
        }
    }
    if (repFull) {
        for (std::int32_t s = 0; s < S; ++s)
            for (std::int32_t z = 0; z <= zones_; ++z) mark(s, z);
    } else {
        for (auto [s, slot] : m.repChanges) {
            auto c = m.slotClass[slot];
            if (c != kNone) mark(s, m.classes[c].zone);
        }
    }
    m.repChanges.clear();
    for (auto c : m.dirty)
        summarise(static_cast<std::int32_t>(c / (zones_ + 1)),
                  static_cast<std::int32_t>(c % (zones_ + 1)));
    st.cellsSummarised = static_cast<std::int32_t>(m.dirty.size());
    return st;
}

SummaryRouter::Stats SummaryRouter::setLinkState(std::int32_t link, LinkState state) {
    std::pair<std::int32_t, LinkState> one{link, state};
    return setLinkStates({&one, 1});
}

SummaryRouter::Stats SummaryRouter::setLinkStates(
    std::span<const std::pair<std::int32_t, LinkState>> changes) {
    Impl& m = *impl_;
    if (!m.rep) return {};
    bool repFull = changes.size() == 1
                       ? m.rep->setLinkState(changes[0].first, changes[0].second).full
                       : m.rep->setLinkStates(changes).full;
    std::vector<std::int32_t> touched;
    std::vector<std::uint8_t> full;
    std::vector<std::pair<std::int32_t, LinkState>> sub;
    for (std::int32_t z = 0; z < zones_; ++z) {
        Zone& zn = m.zones[z];
        if (!zn.router) continue;
        sub.clear();
        for (auto [l, s] : changes)
            if (m.linkZone[l] == z) sub.emplace_back(m.linkLocal[l], s);
        if (sub.empty()) continue;
        bool f = sub.size() == 1 ? zn.router->setLinkState(sub[0].first, sub[0].second).full
                                 : zn.router->setLinkStates(sub).full;
        touched.push_back(z);
        full.push_back(f ? 1 : 0);
    }
    return finish(touched, full, repFull);
}

SummaryRouter::Stats SummaryRouter::setSwitchUp(std::int32_t sw, bool up) {
    Impl& m = *impl_;
    if (!m.rep) return {};
    bool repFull = m.rep->setSwitchUp(sw, up).full;
    std::vector<std::int32_t> touched;
    std::vector<std::uint8_t> full;
    if (auto ls = m.switchLocal[sw]; ls != kNone) {
        auto z = m.topo().switchZone[sw];
        touched.push_back(z);
        full.push_back(m.zones[z].router->setSwitchUp(ls, up).full ? 1 : 0);
    }
    return finish(touched, full, repFull);
}

SummaryRouter::Stats SummaryRouter::setSwitchesUp(
    std::span<const std::pair<std::int32_t, bool>> changes) {
    Impl& m = *impl_;
    if (!m.rep) return {};
    bool repFull = m.rep->setSwitchesUp(changes).full;
    std::vector<std::int32_t> touched;
    std::vector<std::uint8_t> full;
    std::vector<std::pair<std::int32_t, bool>> sub;
    for (std::int32_t z = 0; z < zones_; ++z) {
        Zone& zn = m.zones[z];
        if (!zn.router) continue;
        sub.clear();
        for (auto [sw, up] : changes)
            if (m.switchLocal[sw] != kNone && m.topo().switchZone[sw] == z)
                sub.emplace_back(m.switchLocal[sw], up);
        if (sub.empty()) continue;
        touched.push_back(z);
        full.push_back(zn.router->setSwitchesUp(sub).full ? 1 : 0);
    }
    return finish(touched, full, repFull);
}

}  // namespace loom::fabric
