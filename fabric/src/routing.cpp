#include "loom/fabric/routing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

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

Router::Router(Topology topo) : topo_(std::move(topo)) {
    roce_ = topo_.type == inventory::FabricType::Roce;
    const auto S = topo_.switchCount();
    targetOf_.assign(S, kNone);
    if (roce_) {
        targets_ = topo_.tierSwitches[1];
    } else {
        targets_.resize(S);
        std::iota(targets_.begin(), targets_.end(), 0);
    }
    for (std::size_t i = 0; i < targets_.size(); ++i)
        targetOf_[targets_[i]] = static_cast<std::int32_t>(i);
    for (auto s : topo_.tierSwitches[1])
        tier1Up_ = std::max<std::int32_t>(tier1Up_, static_cast<std::int32_t>(topo_.upLinks(s).size()));
    const std::size_t cells = targets_.size() * static_cast<std::size_t>(S);
    mode_.assign(cells, RouteMode::None);
    dist_.assign(cells, kUnreachable);
    bw_.assign(cells, 0.0f);
    if (roce_) group_.assign(cells, kNoRoute);
    lastGroup_.assign(S, kNoRoute);
    capAcc_.assign(S, 0.0f);
    std::size_t buckets = 64;
    while (buckets < static_cast<std::size_t>(S) * 16) buckets <<= 1;
    groupBuckets_.assign(buckets, {});
    assignLids();
    recomputeAll();
}

void Router::assignLids() {
    const auto S = topo_.switchCount(), N = topo_.nicCount();
    nicLid_.assign(N, 0);
    switchLid_.assign(S, 0);
    targetNicBegin_.assign(targets_.size() + 1, 0);
    targetNics_.clear();
    std::int32_t lid = 0;
    // HCAs in leaf-major order so a leaf's HCAs have consecutive LIDs (the d-mod-k key).
    for (std::size_t ti = 0; ti < targets_.size(); ++ti) {
        auto t = targets_[ti];
        for (auto l : topo_.downLinks(t)) {
            auto a = topo_.linkA[l];
            if (topo_.isSwitch(a)) continue;
            auto nic = a - S;
            nicLid_[nic] = static_cast<std::uint16_t>(++lid);
            targetNics_.push_back(nic);
        }
        targetNicBegin_[ti + 1] = static_cast<std::int32_t>(targetNics_.size());
    }
    for (std::int32_t n = 0; n < N; ++n)
        if (nicLid_[n] == 0) nicLid_[n] = static_cast<std::uint16_t>(++lid);  // uncabled
    for (std::int32_t s = 0; s < S; ++s) switchLid_[s] = static_cast<std::uint16_t>(++lid);
    maxLid_ = lid;
    lidNode_.assign(maxLid_ + 1, kNone);
    for (std::int32_t n = 0; n < N; ++n) lidNode_[nicLid_[n]] = S + n;
    for (std::int32_t s = 0; s < S; ++s) lidNode_[switchLid_[s]] = s;
    if (!roce_) {
        lidStride_ = static_cast<std::size_t>(maxLid_) + 1;
        lft_.assign(lidStride_ * S, kNoPort);
    }
}

void Router::recomputeAll() {
    groupPool_.clear();
    groupOffset_.assign(1, 0);
    for (auto& b : groupBuckets_) b.clear();
    std::fill(lastGroup_.begin(), lastGroup_.end(), kNoRoute);
    for (std::int32_t ti = 0; ti < targetCount(); ++ti) computeTarget(ti);
}

void Router::computeTarget(std::int32_t ti) {
    const auto S = topo_.switchCount();
    const auto t = targets_[ti];
    const std::size_t base = static_cast<std::size_t>(ti) * S;
    std::fill_n(mode_.begin() + base, S, RouteMode::None);
    std::fill_n(dist_.begin() + base, S, kUnreachable);
    std::fill_n(bw_.begin() + base, S, 0.0f);
    if (roce_) std::fill_n(group_.begin() + base, S, kNoRoute);
    if (!roce_)
        for (std::int32_t s = 0; s < S; ++s) writeLft(s, ti);  // all drop for now
    if (!topo_.switchUp[t]) return;

    mode_[base + t] = RouteMode::Self;
    dist_[base + t] = 0;
    bw_[base + t] = kInf;
    if (roce_) group_[base + t] = kLocal;
    if (!roce_) writeLft(t, ti);

    // Down-reach: every switch that reaches t going only down, layer by layer.
    frontier_.assign(1, t);
    while (!frontier_.empty()) {
        next_.clear();
        for (auto u : frontier_) {
            for (auto l : topo_.upLinks(u)) {
                if (!topo_.usable(l)) continue;
                auto v = topo_.linkB[l];
                if (mode_[base + v] != RouteMode::None) continue;
                mode_[base + v] = RouteMode::Down;
                dist_[base + v] = static_cast<std::uint8_t>(dist_[base + u] + 1);
                next_.push_back(v);
            }
        }
        for (auto v : next_) finishEntry(v, ti);
        std::swap(frontier_, next_);
    }
    // Everyone else climbs first: upper tiers are final before the tiers below read them.
    for (int tier = 3; tier >= 1; --tier)
        for (auto s : topo_.tierSwitches[tier])
            if (mode_[base + s] == RouteMode::None) computeUpEntry(s, ti);
}

void Router::computeUpEntry(std::int32_t s, std::int32_t ti) {
    const std::size_t base = static_cast<std::size_t>(ti) * topo_.switchCount();
    const auto t = targets_[ti];
    mode_[base + s] = RouteMode::None;
    dist_[base + s] = kUnreachable;
    bw_[base + s] = 0.0f;
    if (roce_) group_[base + s] = kNoRoute;
    bool allowed = topo_.switchUp[s] != 0;
    // The CTSWs of a zone share an ASN: BGP drops a path back into their own zone.
    if (roce_ && topo_.switchTier[s] == 2 && topo_.switchTier[t] == 1 &&
        topo_.switchZone[s] != kNone && topo_.switchZone[s] == topo_.switchZone[t])
        allowed = false;
    std::uint8_t best = kUnreachable;
    if (allowed) {
        for (auto l : topo_.upLinks(s)) {
            if (!topo_.usable(l)) continue;
            auto u = topo_.linkB[l];
            if (mode_[base + u] != RouteMode::None && dist_[base + u] < best) best = dist_[base + u];
        }
    }
    if (best == kUnreachable) {
        if (!roce_) writeLft(s, ti);
        return;
    }
    mode_[base + s] = RouteMode::Up;
    dist_[base + s] = static_cast<std::uint8_t>(best + 1);
    finishEntry(s, ti);
}

void Router::nextHops(std::int32_t s, std::int32_t ti, std::vector<NextHop>& out) const {
    gather(s, ti, out);
}

// Collects the next hops of s toward target ti into out, weights them, and returns bw(s):
// Σ over neighbours n of min(Σcap of the links to n, bw(n)). Link l to n is weighted by its
// part of that: min(Σcap, bw(n)) · cap(l) / Σcap. O(links of s) with per-switch scratch.
float Router::gather(std::int32_t s, std::int32_t ti, std::vector<NextHop>& out) const {
    out.clear();
    const std::size_t base = static_cast<std::size_t>(ti) * topo_.switchCount();
    auto m = mode_[base + s];
    if (m != RouteMode::Down && m != RouteMode::Up) return m == RouteMode::Self ? kInf : 0.0f;
    auto d = dist_[base + s];
    auto links = m == RouteMode::Down ? topo_.downLinks(s) : topo_.upLinks(s);
    for (auto l : links) {
        if (!topo_.usable(l)) continue;
        auto n = topo_.peer(l, s);
        if (!topo_.isSwitch(n)) continue;
        auto mn = mode_[base + n];
        if (mn == RouteMode::None || dist_[base + n] + 1 != d) continue;
        if (m == RouteMode::Down && mn != RouteMode::Down && mn != RouteMode::Self) continue;
        out.push_back({l, 0});
        capAcc_[n] += topo_.linkCapGbps[l];
    }
    float total = 0, firstW = -1;
    bool equal = true;
    weightAcc_.resize(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        auto l = out[i].link;
        auto n = topo_.peer(l, s);
        float capSum = capAcc_[n];
        float share = std::min(capSum, bw_[base + n]);
        weightAcc_[i] = share * topo_.linkCapGbps[l] / capSum;
        total += weightAcc_[i];
        if (firstW < 0) firstW = weightAcc_[i];
        if (std::fabs(weightAcc_[i] - firstW) > 1e-3f * firstW) equal = false;
    }
    for (const auto& nh : out) capAcc_[topo_.peer(nh.link, s)] = 0.0f;
    if (equal) {
        for (auto& nh : out) nh.weight = 1;
        return total;
    }
    std::uint32_t g = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].weight =
            std::max<std::uint32_t>(1, static_cast<std::uint32_t>(std::lround(weightAcc_[i])));
        g = std::gcd(g, out[i].weight);
    }
    for (auto& nh : out) nh.weight /= g;
    return total;
}

void Router::finishEntry(std::int32_t s, std::int32_t ti) {
    const std::size_t base = static_cast<std::size_t>(ti) * topo_.switchCount();
    bw_[base + s] = gather(s, ti, scratch_);
    if (roce_)
        group_[base + s] = intern(s);
    else
        writeLft(s, ti);
}

std::int32_t Router::intern(std::int32_t s) {
    std::span<const NextHop> g(scratch_);
    auto last = lastGroup_[s];
    if (last >= 0) {
        auto lg = group(last);
        if (lg.size() == g.size() && std::equal(lg.begin(), lg.end(), g.begin())) return last;
    }
    auto h = hashGroup(g);
    auto& bucket = groupBuckets_[h & (groupBuckets_.size() - 1)];
    for (auto id : bucket) {
        auto cg = group(id);
        if (cg.size() == g.size() && std::equal(cg.begin(), cg.end(), g.begin())) {
            lastGroup_[s] = id;
            return id;
        }
    }
    auto id = groupCount();
    groupPool_.insert(groupPool_.end(), g.begin(), g.end());
    groupOffset_.push_back(static_cast<std::int32_t>(groupPool_.size()));
    bucket.push_back(id);
    lastGroup_[s] = id;
    return id;
}

std::uint8_t Router::pickPort(std::int32_t s, std::int32_t key) const {
    const auto n = static_cast<std::int32_t>(scratch_.size());
    if (n == 0) return kNoPort;
    // d-mod-k: a leaf spreads destinations over its uplinks by LID; the tier above divides
    // the LID by the leaf's uplink count first, so the two choices are independent.
    std::int32_t idx = key;
    if (topo_.switchTier[s] >= 2 && topo_.linkA[scratch_[0].link] == s) idx = key / tier1Up_;
    const auto l = scratch_[idx % n].link;
    auto port = topo_.linkA[l] == s ? topo_.linkAPort[l] : topo_.linkBPort[l];
    return port > 254 ? kNoPort : static_cast<std::uint8_t>(port);
}

// Writes the LFT entries of switch s for the LIDs that target ti stands for (its HCAs and
// its own switch LID), from the current mode and next hops in scratch_.
void Router::writeLft(std::int32_t s, std::int32_t ti) {
    const auto t = targets_[ti];
    const std::size_t base = static_cast<std::size_t>(ti) * topo_.switchCount();
    std::uint8_t* row = lft_.data() + static_cast<std::size_t>(s) * lidStride_;
    auto m = mode_[base + s];
    for (auto i = targetNicBegin_[ti]; i < targetNicBegin_[ti + 1]; ++i) {
        auto nic = targetNics_[i];
        auto lid = nicLid_[nic];
        if (m == RouteMode::None) {
            row[lid] = kNoPort;
        } else if (m == RouteMode::Self) {
            auto l = topo_.nicLink[nic];
            row[lid] = (l != kNone && topo_.usable(l) && topo_.linkBPort[l] <= 254)
                           ? static_cast<std::uint8_t>(topo_.linkBPort[l])
                           : kNoPort;
        } else {
            row[lid] = pickPort(s, lid - 1);
        }
    }
    auto slid = switchLid_[t];
    row[slid] = m == RouteMode::None ? kNoPort : m == RouteMode::Self ? 0 : pickPort(s, slid - 1);
}

UpdateStats Router::setLinkState(std::int32_t l, LinkState st) {
    bool before = topo_.usable(l);
    topo_.linkState[l] = st;
    if (before == topo_.usable(l)) return {};
    auto x = topo_.linkA[l];
    if (!topo_.isSwitch(x)) {
        // An HCA port: only its leaf's LFT entry changes. RoCE tables do not depend on NICs.
        if (roce_) return {};
        auto ti = targetOf_[topo_.linkB[l]];
        if (ti == kNone) return {};
        computeTarget(ti);
        return {1, 0};
    }
    return rerouteAround(x, false);
}

UpdateStats Router::setSwitchUp(std::int32_t sw, bool up) {
    if ((topo_.switchUp[sw] != 0) == up) return {};
    topo_.switchUp[sw] = up ? 1 : 0;
    return rerouteAround(sw, true);
}

// x is the lower end of a changed link, or a switch that changed itself. Targets whose down
// paths may cross the change (x, or for a switch event one of the switches below it, is on
// a down path) are recomputed whole; for every other target only switches beneath x can
// change (they may climb through x), and they are recomputed top-down.
UpdateStats Router::rerouteAround(std::int32_t x, bool nodeItselfChanged) {
    UpdateStats st;
    const auto S = topo_.switchCount();
    const auto T = targetCount();
    auto onDownPath = [&](std::int32_t v, std::int32_t ti) {
        auto m = mode_[static_cast<std::size_t>(ti) * S + v];
        return m == RouteMode::Self || m == RouteMode::Down;
    };
    std::vector<std::int32_t> below;
    if (nodeItselfChanged)
        for (auto l : topo_.downLinks(x))
            if (topo_.isSwitch(topo_.linkA[l])) below.push_back(topo_.linkA[l]);
    std::vector<std::uint8_t> full(T, 0);
    for (std::int32_t ti = 0; ti < T; ++ti) {
        bool f = onDownPath(x, ti) || (nodeItselfChanged && targets_[ti] == x);
        for (std::size_t i = 0; !f && i < below.size(); ++i) f = onDownPath(below[i], ti);
        full[ti] = f;
    }
    // The cone beneath x, upper tiers first.
    std::vector<std::int32_t> cone{x};
    std::vector<std::uint8_t> seen(S, 0);
    seen[x] = 1;
    for (std::size_t i = 0; i < cone.size(); ++i)
        for (auto l : topo_.downLinks(cone[i])) {
            auto v = topo_.linkA[l];
            if (topo_.isSwitch(v) && !seen[v]) {
                seen[v] = 1;
                cone.push_back(v);
            }
        }
    std::stable_sort(cone.begin(), cone.end(), [&](std::int32_t a, std::int32_t b) {
        return topo_.switchTier[a] > topo_.switchTier[b];
    });
    for (std::int32_t ti = 0; ti < T; ++ti) {
        if (full[ti]) {
            computeTarget(ti);
            ++st.targetsRecomputed;
            continue;
        }
        for (auto s : cone) {
            if (onDownPath(s, ti)) continue;
            computeUpEntry(s, ti);
            ++st.entriesRecomputed;
        }
    }
    return st;
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
                if ((ga < 0 || gb < 0) ? ga != gb
                                       : !std::ranges::equal(group(ga), o.group(gb)))
                    return "ECMP group differs at " + where();
            }
        }
    }
    if (lft_ != o.lft_) {
        for (std::size_t i = 0; i < lft_.size(); ++i)
            if (lft_[i] != o.lft_[i])
                return "LFT differs at switch " + topo_.switchNames[i / lidStride_] + " lid " +
                       std::to_string(i % lidStride_);
    }
    return {};
}

std::size_t Router::memoryBytes() const {
    auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
    std::size_t n = bytes(mode_) + bytes(dist_) + bytes(bw_) + bytes(group_) + bytes(groupPool_) +
                    bytes(groupOffset_) + bytes(lft_) + bytes(lidNode_) + bytes(targetNics_);
    for (const auto& b : groupBuckets_) n += bytes(b) + sizeof(b);
    return n;
}

// ---- addressing ----

std::uint32_t AddressPlan::asn(const Topology& t, std::int32_t sw) {
    switch (t.switchTier[sw]) {
        case 3: return 4200000000u;
        case 2:
            return 4200000001u + static_cast<std::uint32_t>(
                                     t.switchZone[sw] != kNone ? t.switchZone[sw]
                                                               : 500 + t.switchOrdinal[sw]);
        default: return 4200001000u + static_cast<std::uint32_t>(t.switchOrdinal[sw]);
    }
}

std::string AddressPlan::loopback(std::int32_t sw) {
    return "10.254." + std::to_string((sw >> 8) & 255) + "." + std::to_string(sw & 255);
}

namespace {
std::string ipv4(std::uint32_t a) {
    return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
           std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
}
}  // namespace

std::string AddressPlan::rackPrefix(std::int32_t ordinal) {
    return ipv4((10u << 24) + (128u << 16) + 64u * static_cast<std::uint32_t>(ordinal)) + "/26";
}
std::string AddressPlan::rackGateway(std::int32_t ordinal) {
    return ipv4((10u << 24) + (128u << 16) + 64u * static_cast<std::uint32_t>(ordinal) + 62) +
           "/26";
}

}  // namespace loom::fabric
