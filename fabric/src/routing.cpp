#include "loom/fabric/routing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

namespace loom::fabric {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

std::uint64_t hashGroup(std::span<const NextHop> g) {
    std::uint64_t h = 1469598103934665603ull;
    for (const auto& nh : g) {
        h = (h ^ static_cast<std::uint32_t>(nh.link)) * 1099511628211ull;
        h = (h ^ nh.weight) * 1099511628211ull;
    }
    return h;
}
}  // namespace

Router::Router(Topology topo) : Router(std::move(topo), {-1}) {}

Router::Router(Topology topo, std::vector<std::int32_t> explicitTargets) : topo_(std::move(topo)) {
    roce_ = topo_.type == inventory::FabricType::Roce;
    const auto S = topo_.switchCount();
    targetOf_.assign(S, kNone);
    const bool all = explicitTargets.size() == 1 && explicitTargets[0] == -1;
    if (roce_ && !all) {
        targets_ = std::move(explicitTargets);
    } else if (roce_) {
        targets_ = topo_.tierSwitches[1];
    } else {
        targets_.resize(S);
        std::iota(targets_.begin(), targets_.end(), 0);
    }
    for (std::size_t i = 0; i < targets_.size(); ++i)
        targetOf_[targets_[i]] = static_cast<std::int32_t>(i);
    for (auto s : topo_.tierSwitches[1])
        tier1Up_ =
            std::max<std::int32_t>(tier1Up_, static_cast<std::int32_t>(topo_.upLinks(s).size()));
    const std::size_t cells = targets_.size() * static_cast<std::size_t>(S);
    mode_.assign(cells, RouteMode::None);
    dist_.assign(cells, kUnreachable);
    bw_.assign(cells, 0.0f);
    if (roce_) group_.assign(cells, kNoRoute);
    main_.init(S);
    up_.resize(topo_.linkCount());
    for (std::int32_t l = 0; l < topo_.linkCount(); ++l) up_[l] = topo_.usable(l) ? 1 : 0;
    std::size_t buckets = 64;
    while (buckets < static_cast<std::size_t>(S) * 16) buckets <<= 1;
    bucketCount_ = buckets;
    // For each switch, the most capacity it has to any single upper / lower neighbour
    // (parallel links summed): a neighbour on that side never reads more of its bandwidth.
    maxUpCap_.assign(S, 0.0f);
    maxDownCap_.assign(S, 0.0f);
    for (std::int32_t v = 0; v < S; ++v) {
        for (auto i = topo_.adjOffset[v]; i < topo_.adjOffset[v + 1]; ++i) {
            auto l = topo_.adjLink[i];
            auto n = topo_.peer(l, v);
            if (!topo_.isSwitch(n)) continue;
            main_.capAcc[n] += topo_.linkCapGbps[l];
            auto& m = topo_.linkA[l] == v ? maxUpCap_[v] : maxDownCap_[v];
            m = std::max(m, main_.capAcc[n]);
        }
        for (auto i = topo_.adjOffset[v]; i < topo_.adjOffset[v + 1]; ++i) {
            auto n = topo_.peer(topo_.adjLink[i], v);
            if (topo_.isSwitch(n)) main_.capAcc[n] = 0.0f;
        }
    }
    assignLids();
    recomputeAll();
}

void Router::recomputeAll() {
    const auto S = topo_.switchCount();
    const auto T = targetCount();
    pool_.clear(bucketCount_);
    main_.init(S);
    main_.pool = &pool_;
    // Targets are independent: split them over the cores. Each worker interns into its own
    // pool; the pools are merged (deterministically, in worker order) afterwards.
    unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    if (static_cast<std::int64_t>(T) * S < 200000) n = 1;
    if (n == 1) {
        for (std::int32_t ti = 0; ti < T; ++ti) computeTarget(main_, ti, slot(ti));
        return;
    }
    std::vector<Work> works(n);
    std::vector<GroupPool> pools(n);
    auto chunk = [&](unsigned k) {
        return static_cast<std::int32_t>(static_cast<std::int64_t>(T) * k / n);
    };
    {
        std::vector<std::jthread> threads;
        for (unsigned k = 0; k < n; ++k) {
            works[k].init(S);
            pools[k].clear(bucketCount_);
            works[k].pool = &pools[k];
            threads.emplace_back([this, &works, k, lo = chunk(k), hi = chunk(k + 1)] {
                for (std::int32_t ti = lo; ti < hi; ++ti) computeTarget(works[k], ti, slot(ti));
            });
        }
    }
    if (!roce_) return;
    for (unsigned k = 0; k < n; ++k) {
        std::vector<std::int32_t> remap(pools[k].size());
        for (std::int32_t id = 0; id < pools[k].size(); ++id) {
            std::int32_t none = kNoRoute;
            remap[id] = pool_.intern(pools[k].get(id), none);
        }
        auto first = group_.begin() + static_cast<std::size_t>(chunk(k)) * S;
        auto last = group_.begin() + static_cast<std::size_t>(chunk(k + 1)) * S;
        for (auto it = first; it != last; ++it)
            if (*it >= 0) *it = remap[*it];
    }
}

void Router::setTarget(std::int32_t ti, std::int32_t sw) {
    const auto old = targets_[ti];
    if (old == sw) return;
    if (targetOf_[old] == ti) targetOf_[old] = kNone;
    targets_[ti] = sw;
    targetOf_[sw] = ti;
    // The entries that read the target's identity itself: the old and the new target (Self),
    // and, when the zone changes, the CTSWs of both zones (the ASN rule); everything else
    // follows from its neighbours, so the change-driven pass gives the full recompute's result.
    std::vector<std::int32_t> seeds{old, sw};
    auto zo = topo_.switchZone[old], zn = topo_.switchZone[sw];
    if (zo != zn)
        for (auto c : topo_.tierSwitches[2])
            if (topo_.switchZone[c] != kNone &&
                (topo_.switchZone[c] == zo || topo_.switchZone[c] == zn))
                seeds.push_back(c);
    std::sort(seeds.begin(), seeds.end());
    UpdateStats st;
    main_.pool = &pool_;
    propagateTarget(ti, seeds, kNone, st);
}

std::int32_t Router::addTarget(std::int32_t sw) {
    const std::size_t cells = (targets_.size() + 1) * static_cast<std::size_t>(topo_.switchCount());
    mode_.resize(cells, RouteMode::None);
    dist_.resize(cells, kUnreachable);
    bw_.resize(cells, 0.0f);
    group_.resize(cells, kNoRoute);
    targets_.push_back(sw);
    auto ti = targetCount() - 1;
    targetOf_[sw] = ti;
    main_.pool = &pool_;
    computeTarget(main_, ti, slot(ti));
    return ti;
}

Router::Slot Router::slot(std::int32_t ti) {
    const std::size_t base = static_cast<std::size_t>(ti) * topo_.switchCount();
    return {mode_.data() + base,
            dist_.data() + base,
            bw_.data() + base,
            roce_ ? group_.data() + base : nullptr,
            roce_ ? nullptr : lft_.data() + lftBlock_[ti],
            up_.data(),
            topo_.switchUp.data()};
}

void Router::computeTarget(Work& w, std::int32_t ti, const Slot& c) const {
    const auto S = topo_.switchCount();
    const auto t = targets_[ti];
    std::fill_n(c.mode, S, RouteMode::None);
    std::fill_n(c.dist, S, kUnreachable);
    std::fill_n(c.bw, S, 0.0f);
    if (roce_) std::fill_n(c.group, S, kNoRoute);
    if (!c.switchUp[t]) {
        if (!roce_)
            std::fill_n(c.lft,
                        static_cast<std::size_t>(lftWidth_[ti]) * (c.lftOnly == kNone ? S : 1),
                        kNoPort);
        return;
    }

    c.mode[t] = RouteMode::Self;
    c.dist[t] = 0;
    c.bw[t] = kInf;
    if (roce_) c.group[t] = kLocal;
    if (!roce_) writeLft(w, t, ti, c);

    // Down-reach: every switch that reaches t going only down, layer by layer.
    w.frontier.assign(1, t);
    while (!w.frontier.empty()) {
        w.next.clear();
        for (auto u : w.frontier) {
            for (auto l : topo_.upLinks(u)) {
                if (!c.up[l]) continue;
                auto v = topo_.linkB[l];
                if (c.mode[v] != RouteMode::None) continue;
                c.mode[v] = RouteMode::Down;
                c.dist[v] = static_cast<std::uint8_t>(c.dist[u] + 1);
                w.next.push_back(v);
            }
        }
        for (auto v : w.next) finishEntry(w, v, ti, c);
        std::swap(w.frontier, w.next);
    }
    // Everyone else climbs first: upper tiers are final before the tiers below read them.
    for (int tier = 3; tier >= 1; --tier)
        for (auto s : topo_.tierSwitches[tier])
            if (c.mode[s] == RouteMode::None) computeUpEntry(w, s, ti, c);
}

void Router::computeUpEntry(Work& w, std::int32_t s, std::int32_t ti, const Slot& c) const {
    const auto t = targets_[ti];
    c.mode[s] = RouteMode::None;
    c.dist[s] = kUnreachable;
    c.bw[s] = 0.0f;
    if (roce_) c.group[s] = kNoRoute;
    bool allowed = c.switchUp[s] != 0;
    // The CTSWs of a zone share an ASN: BGP drops a path back into their own zone.
    if (roce_ && topo_.switchTier[s] == 2 && topo_.switchTier[t] == 1 &&
        topo_.switchZone[s] != kNone && topo_.switchZone[s] == topo_.switchZone[t])
        allowed = false;
    std::uint8_t best = kUnreachable;
    if (allowed) {
        for (auto l : topo_.upLinks(s)) {
            if (!c.up[l]) continue;
            auto u = topo_.linkB[l];
            if (c.mode[u] != RouteMode::None && c.dist[u] < best) best = c.dist[u];
        }
    }
    if (best == kUnreachable) {
        if (!roce_) writeLft(w, s, ti, c);
        return;
    }
    c.mode[s] = RouteMode::Up;
    c.dist[s] = static_cast<std::uint8_t>(best + 1);
    finishEntry(w, s, ti, c);
}

void Router::nextHops(std::int32_t s, std::int32_t ti, std::vector<NextHop>& out) const {
    // gather() only reads the slot.
    gather(main_, s, const_cast<Router*>(this)->slot(ti), out);
}

// Collects the next hops of s toward target ti into out, weights them, and returns bw(s):
// Σ over neighbours n of min(Σcap of the links to n, bw(n)). Link l to n is weighted by its
// part of that: min(Σcap, bw(n)) · cap(l) / Σcap. O(links of s) with per-switch scratch.
float Router::gather(Work& w, std::int32_t s, const Slot& c, std::vector<NextHop>& out) const {
    out.clear();
    auto m = c.mode[s];
    if (m != RouteMode::Down && m != RouteMode::Up) return m == RouteMode::Self ? kInf : 0.0f;
    auto d = c.dist[s];
    auto links = m == RouteMode::Down ? topo_.downLinks(s) : topo_.upLinks(s);
    const bool down = m == RouteMode::Down;
    for (auto l : links) {
        if (!c.up[l]) continue;
        auto n = down ? topo_.linkA[l] : topo_.linkB[l];
        if (!topo_.isSwitch(n)) continue;
        auto mn = c.mode[n];
        if (mn == RouteMode::None || c.dist[n] + 1 != d) continue;
        if (m == RouteMode::Down && mn != RouteMode::Down && mn != RouteMode::Self) continue;
        out.push_back({l, 0});
        w.capAcc[n] += topo_.linkCapGbps[l];
    }
    float total = 0, firstW = -1;
    bool equal = true;
    w.weightAcc.resize(out.size());
    if (++w.seenEpoch == 0) {
        std::fill(w.seen.begin(), w.seen.end(), 0);
        w.seenEpoch = 1;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
        auto l = out[i].link;
        auto n = down ? topo_.linkA[l] : topo_.linkB[l];
        float capSum = w.capAcc[n];
        float share = std::min(capSum, c.bw[n]);
        w.weightAcc[i] = share * topo_.linkCapGbps[l] / capSum;
        // Sum shares per neighbour, not per-link pieces: exact, whatever the parallel links.
        if (w.seen[n] != w.seenEpoch) {
            w.seen[n] = w.seenEpoch;
            total += share;
        }
        if (firstW < 0) firstW = w.weightAcc[i];
        if (std::fabs(w.weightAcc[i] - firstW) > 1e-3f * firstW) equal = false;
    }
    for (const auto& nh : out) w.capAcc[down ? topo_.linkA[nh.link] : topo_.linkB[nh.link]] = 0.0f;
    if (equal) {
        for (auto& nh : out) nh.weight = 1;
        return total;
    }
    std::uint32_t g = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].weight =
            std::max<std::uint32_t>(1, static_cast<std::uint32_t>(std::lround(w.weightAcc[i])));
        g = std::gcd(g, out[i].weight);
    }
    for (auto& nh : out) nh.weight /= g;
    return total;
}

void Router::finishEntry(Work& w, std::int32_t s, std::int32_t ti, const Slot& c) const {
    c.bw[s] = gather(w, s, c, w.hops);
    if (roce_)
        c.group[s] = w.pool->intern(w.hops, w.lastGroup[s]);
    else
        writeLft(w, s, ti, c);
}

void Router::GroupPool::clear(std::size_t bucketCount) {
    hops.clear();
    offset.assign(1, 0);
    buckets.assign(bucketCount, {});
}

std::int32_t Router::GroupPool::intern(std::span<const NextHop> g, std::int32_t& last) {
    if (last >= 0) {
        auto lg = get(last);
        if (lg.size() == g.size() && std::equal(lg.begin(), lg.end(), g.begin())) return last;
    }
    auto h = hashGroup(g);
    auto& bucket = buckets[h & (buckets.size() - 1)];
    for (auto id : bucket) {
        auto cg = get(id);
        if (cg.size() == g.size() && std::equal(cg.begin(), cg.end(), g.begin())) return last = id;
    }
    auto id = size();
    hops.insert(hops.end(), g.begin(), g.end());
    offset.push_back(static_cast<std::int32_t>(hops.size()));
    bucket.push_back(id);
    return last = id;
}

void Router::Work::init(std::int32_t switches) {
    capAcc.assign(switches, 0.0f);
    seen.assign(switches, 0);
    seenEpoch = 0;
    lastGroup.assign(switches, kNoRoute);
}

UpdateStats Router::setLinkState(std::int32_t l, LinkState st) {
    bool before = up_[l] != 0;
    topo_.linkState[l] = st;
    up_[l] = topo_.usable(l) ? 1 : 0;
    if (before == (up_[l] != 0)) return {};
    auto x = topo_.linkA[l];
    if (!topo_.isSwitch(x)) {
        // An HCA port: only its leaf's own LFT entry changes. RoCE tables do not depend on NICs.
        if (roce_) return {};
        auto ti = targetOf_[topo_.linkB[l]];
        if (ti == kNone) return {};
        main_.hops.clear();
        writeLft(main_, topo_.linkB[l], ti, slot(ti));
        return {1, 1};
    }
    std::int32_t seeds[2] = {x, topo_.linkB[l]};
    return propagate(seeds, l);
}

UpdateStats Router::setLinkStates(std::span<const std::pair<std::int32_t, LinkState>> changes) {
    UpdateStats st;
    std::vector<std::int32_t> seeds;
    for (auto [l, state] : changes) {
        bool before = up_[l] != 0;
        topo_.linkState[l] = state;
        up_[l] = topo_.usable(l) ? 1 : 0;
        if (before == (up_[l] != 0)) continue;
        auto x = topo_.linkA[l];
        if (topo_.isSwitch(x)) {
            seeds.push_back(x);
            seeds.push_back(topo_.linkB[l]);
        } else if (!roce_ && targetOf_[topo_.linkB[l]] != kNone) {
            seeds.push_back(topo_.linkB[l]);  // its leaf: recomputing it rewrites the HCA port
        }
    }
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    if (seeds.empty()) return st;
    if (seeds.size() * 4 > static_cast<std::size_t>(topo_.switchCount())) {
        recomputeAll();
        return {targetCount(), static_cast<std::int64_t>(targetCount()) * topo_.switchCount(),
                true};
    }
    return propagate(seeds);
}

UpdateStats Router::setSwitchUp(std::int32_t sw, bool up) {
    if ((topo_.switchUp[sw] != 0) == up) return {};
    topo_.switchUp[sw] = up ? 1 : 0;
    for (auto i = topo_.adjOffset[sw]; i < topo_.adjOffset[sw + 1]; ++i)
        up_[topo_.adjLink[i]] = topo_.usable(topo_.adjLink[i]) ? 1 : 0;
    std::vector<std::int32_t> seeds{sw};
    for (auto i = topo_.adjOffset[sw]; i < topo_.adjOffset[sw + 1]; ++i) {
        auto n = topo_.peer(topo_.adjLink[i], sw);
        if (topo_.isSwitch(n)) seeds.push_back(n);
    }
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    return propagate(seeds);
}

UpdateStats Router::setSwitchesUp(std::span<const std::pair<std::int32_t, bool>> changes) {
    std::vector<std::int32_t> seeds;
    for (auto [sw, up] : changes) {
        if ((topo_.switchUp[sw] != 0) == up) continue;
        topo_.switchUp[sw] = up ? 1 : 0;
        seeds.push_back(sw);
    }
    if (seeds.empty()) return {};
    // Every switch changed first, then the usability of their links (a link between two of
    // them reads both ends), then one pass from them and their neighbours.
    const auto changed = seeds.size();
    for (std::size_t k = 0; k < changed; ++k) {
        const auto sw = seeds[k];
        for (auto i = topo_.adjOffset[sw]; i < topo_.adjOffset[sw + 1]; ++i) {
            const auto l = topo_.adjLink[i];
            up_[l] = topo_.usable(l) ? 1 : 0;
            if (auto n = topo_.peer(l, sw); topo_.isSwitch(n)) seeds.push_back(n);
        }
    }
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    if (seeds.size() * 4 > static_cast<std::size_t>(topo_.switchCount())) {
        recomputeAll();
        return {targetCount(), static_cast<std::int64_t>(targetCount()) * topo_.switchCount(),
                true};
    }
    return propagate(seeds);
}

// Change-driven recompute, per target. An entry is a function of the link states next to
// its switch and of its neighbours' (mode, dist, bw); the dependencies are acyclic: a Down
// entry reads only lower switches' Down entries, an Up entry reads only upper switches. So
// phase 1 settles down-reachability from the seeds upward (tiers ascending) and phase 2
// settles the climbing entries downward (tiers descending), each entry recomputed by the
// same code as a full run and propagating only if what its neighbours read changed. A
// neighbour reads bw only as min(Σcap of the links between them, bw), hence the cap test.
UpdateStats Router::propagate(std::span<const std::int32_t> seeds, std::int32_t link) {
    UpdateStats st;
    main_.pool = &pool_;
    for (std::int32_t ti = 0; ti < targetCount(); ++ti) propagateTarget(ti, seeds, link, st);
    return st;
}

void Router::propagateTarget(std::int32_t ti, std::span<const std::int32_t> seeds,
                             std::int32_t link, UpdateStats& st) {
    Work& w = main_;
    const auto S = topo_.switchCount();
    const Slot c = slot(ti);
    if (mark1_.size() != static_cast<std::size_t>(S)) {
        mark1_.assign(S, 0);
        mark2_.assign(S, 0);
        forced_.assign(S, 0);
    }
    {
        const std::size_t base = static_cast<std::size_t>(ti) * S;
        const auto t = targets_[ti];
        if (++epoch_ == 0) {  // wrapped: reset the marks
            std::fill(mark1_.begin(), mark1_.end(), 0);
            std::fill(mark2_.begin(), mark2_.end(), 0);
            std::fill(forced_.begin(), forced_.end(), 0);
            epoch_ = 1;
        }
        for (auto& q : q1_) q.clear();
        for (auto& q : q2_) q.clear();
        auto push1 = [&](std::int32_t v) {
            if (mark1_[v] != epoch_) {
                mark1_[v] = epoch_;
                q1_[topo_.switchTier[v]].push_back(v);
            }
        };
        auto push2 = [&](std::int32_t v) {
            if (mark2_[v] != epoch_) {
                mark2_[v] = epoch_;
                q2_[topo_.switchTier[v]].push_back(v);
            }
        };
        // Whether the neighbours above (up) or below (!up) v read a different entry: they
        // read its mode, dist and min(their capacity to v, its bw).
        auto changed = [&](bool up, std::int32_t v, RouteMode m, std::uint8_t d, float b) {
            if (mode_[base + v] != m || dist_[base + v] != d) return true;
            float cap = up ? maxUpCap_[v] : maxDownCap_[v];
            return std::min(b, cap) != std::min(bw_[base + v], cap);
        };
        auto notifyBelow = [&](std::int32_t v) {
            for (auto l : topo_.downLinks(v))
                if (topo_.isSwitch(topo_.linkA[l])) push2(topo_.linkA[l]);
        };
        bool touched = false;
        if (link != kNone) {
            // One link a (lower) - b (upper): it is a down-link of b, read by b's Down entry
            // only when a goes down toward t (Down/Self); otherwise it is an up-link that only
            // a's climbing entry reads. (Entries of either end that do not read it cannot change.)
            auto a = topo_.linkA[link], b = topo_.linkB[link];
            auto ma = mode_[base + a];
            if (ma == RouteMode::Down || ma == RouteMode::Self)
                push1(b);
            else
                push2(a);
        } else {
            for (auto v : seeds) push1(v);
        }
        for (int tier = 1; tier <= 3; ++tier) {
            for (std::size_t i = 0; i < q1_[tier].size(); ++i) {
                auto v = q1_[tier][i];
                ++st.entriesRecomputed;
                if (changes_) changes_->emplace_back(v, ti);
                auto om = mode_[base + v];
                auto od = dist_[base + v];
                auto ob = bw_[base + v];
                bool wasDown = om == RouteMode::Down || om == RouteMode::Self;
                RouteMode nm = RouteMode::None;
                std::uint8_t nd = kUnreachable;
                if (topo_.switchUp[v]) {
                    if (v == t) {
                        nm = RouteMode::Self;
                        nd = 0;
                    } else {
                        std::uint8_t best = kUnreachable;
                        for (auto l : topo_.downLinks(v)) {
                            auto n = topo_.linkA[l];
                            if (!topo_.isSwitch(n) || !up_[l]) continue;
                            auto mn = mode_[base + n];
                            if ((mn == RouteMode::Down || mn == RouteMode::Self) &&
                                dist_[base + n] < best)
                                best = dist_[base + n];
                        }
                        if (best != kUnreachable) {
                            nm = RouteMode::Down;
                            nd = static_cast<std::uint8_t>(best + 1);
                        }
                    }
                }
                if (nm != RouteMode::None) {
                    mode_[base + v] = nm;
                    dist_[base + v] = nd;
                    if (nm == RouteMode::Self) {
                        bw_[base + v] = kInf;
                        if (roce_)
                            group_[base + v] = kLocal;
                        else
                            writeLft(w, v, ti, c);
                    } else {
                        finishEntry(w, v, ti, c);
                    }
                    std::swap(mode_[base + v], om);  // compare new against old
                    std::swap(dist_[base + v], od);
                    std::swap(bw_[base + v], ob);
                    bool chUp = changed(true, v, om, od, ob);
                    bool chDown = changed(false, v, om, od, ob);
                    mode_[base + v] = om;
                    dist_[base + v] = od;
                    bw_[base + v] = ob;
                    touched = touched || chUp || chDown;
                    if (chUp)
                        for (auto l : topo_.upLinks(v)) push1(topo_.linkB[l]);
                    if (chDown) notifyBelow(v);
                } else {
                    if (wasDown) {
                        mode_[base + v] = RouteMode::None;
                        dist_[base + v] = kUnreachable;
                        bw_[base + v] = 0.0f;
                        if (roce_) group_[base + v] = kNoRoute;
                        for (auto l : topo_.upLinks(v)) push1(topo_.linkB[l]);
                        forced_[v] = epoch_;
                    }
                    push2(v);
                }
            }
        }
        for (int tier = 3; tier >= 1; --tier) {
            for (std::size_t i = 0; i < q2_[tier].size(); ++i) {
                auto v = q2_[tier][i];
                auto om = mode_[base + v];
                if (om == RouteMode::Down || om == RouteMode::Self) continue;
                ++st.entriesRecomputed;
                if (changes_) changes_->emplace_back(v, ti);
                auto od = dist_[base + v];
                auto ob = bw_[base + v];
                computeUpEntry(w, v, ti, c);
                if (forced_[v] == epoch_ || changed(false, v, om, od, ob)) {
                    touched = true;
                    notifyBelow(v);
                }
            }
        }
        if (touched) ++st.targetsRecomputed;
    }
}

std::string Router::firstDifference(const Router& o) const {
    if (targets_ != o.targets_) return "different targets";
    const auto S = topo_.switchCount();
    std::vector<NextHop> a, b;
    for (std::int32_t ti = 0; ti < targetCount(); ++ti) {
        for (std::int32_t s = 0; s < S; ++s) {
            auto i = at(s, ti);
            auto where = [&] {
                return topo_.switchNames[s] + " -> " + topo_.switchNames[targets_[ti]];
            };
            if (mode_[i] != o.mode_[i]) return "mode differs at " + where();
            if (dist_[i] != o.dist_[i]) return "dist differs at " + where();
            if (bw_[i] != o.bw_[i])
                return "bw differs at " + where() + ": " + std::to_string(bw_[i]) + " vs " +
                       std::to_string(o.bw_[i]);
            if (roce_) {
                auto ga = group_[i], gb = o.group_[i];
                if ((ga < 0 || gb < 0) ? ga != gb : !std::ranges::equal(group(ga), o.group(gb)))
                    return "ECMP group differs at " + where();
            }
        }
    }
    if (lft_ != o.lft_) {
        for (std::int32_t s = 0; s < S; ++s)
            for (std::int32_t lid = 1; lid <= maxLid_; ++lid)
                if (lftPort(s, static_cast<std::uint16_t>(lid)) !=
                    o.lftPort(s, static_cast<std::uint16_t>(lid)))
                    return "LFT differs at switch " + topo_.switchNames[s] + " lid " +
                           std::to_string(lid);
    }
    return {};
}

std::size_t Router::memoryBytes() const {
    auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
    std::size_t n = bytes(mode_) + bytes(dist_) + bytes(bw_) + bytes(group_) + bytes(pool_.hops) +
                    bytes(pool_.offset) + bytes(lft_) + bytes(lidNode_) + bytes(targetNics_);
    for (const auto& b : pool_.buckets) n += bytes(b) + sizeof(b);
    return n;
}

}  // namespace loom::fabric
