#include "loom/fabric/verify.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>

namespace loom::fabric {

namespace {

// Name of the thing a leaf target stands for in reports: its rack on RoCE, itself on IB.
std::string leafLabel(const Topology& t, std::int32_t sw) {
    if (t.type == inventory::FabricType::Roce && t.switchRack[sw] != kNone)
        return t.rackNames[t.switchRack[sw]];
    return t.switchNames[sw];
}

struct PortMap {
    std::vector<std::int32_t> offset, link;  // switch -> [port] -> link id
    PortMap(const Topology& t) {
        offset.assign(t.switchCount() + 1, 0);
        for (std::int32_t s = 0; s < t.switchCount(); ++s) offset[s + 1] = offset[s] + 256;
        link.assign(offset.back(), kNone);
        for (std::int32_t l = 0; l < t.linkCount(); ++l) {
            if (t.isSwitch(t.linkA[l]) && t.linkAPort[l] < 256)
                link[offset[t.linkA[l]] + t.linkAPort[l]] = l;
            if (t.linkBPort[l] < 256) link[offset[t.linkB[l]] + t.linkBPort[l]] = l;
        }
    }
    std::int32_t at(std::int32_t s, int port) const { return link[offset[s] + port]; }
};

}  // namespace

namespace {

// Up-group widths per switch: the parallel links to each upper neighbour (all links, in
// service or not: the cabling is what makes a tree uniform).
void checkUpGroups(const Topology& t, VerifyReport& rep, std::size_t maxWarnings) {
    std::vector<std::int32_t> width(t.switchCount(), 0);
    for (int tier = 1; tier <= 3; ++tier) {
        // Per switch of the tier: narrowest and widest up-group (0, 0 without uplinks).
        std::vector<std::pair<int, int>> range;
        std::map<int, int> switchesOfWidth;
        for (auto s : t.tierSwitches[tier]) {
            auto ups = t.upLinks(s);
            int lo = ups.empty() ? 0 : INT32_MAX, hi = 0;
            for (auto l : ups) ++width[t.peer(l, s)];
            for (auto l : ups) {
                lo = std::min(lo, width[t.peer(l, s)]);
                hi = std::max(hi, width[t.peer(l, s)]);
            }
            for (auto l : ups) width[t.peer(l, s)] = 0;
            range.emplace_back(lo, hi);
            if (lo == hi && hi > 0) ++switchesOfWidth[lo];
        }
        // The tier's width is the most common one; the odd switches out are reported.
        int tierWidth = 0, most = 0;
        for (auto [w, n] : switchesOfWidth)
            if (n > most) tierWidth = w, most = n;
        for (std::size_t i = 0; i < range.size(); ++i) {
            auto [lo, hi] = range[i];
            if (hi == 0 || (lo == hi && lo == tierWidth)) continue;
            const auto& name = t.switchNames[t.tierSwitches[tier][i]];
            ++rep.nonUniformUpGroups;
            if (rep.warnings.size() >= maxWarnings) continue;
            rep.warnings.push_back(
                lo != hi ? name + ": up-groups of " + std::to_string(lo) + " to " + std::to_string(hi) +
                               " parallel links (not a uniform fat tree; OpenSM ftree refuses it)"
                         : name + ": up-groups of " + std::to_string(lo) + " parallel links, " +
                               std::to_string(tierWidth) + " on the rest of its tier (not a uniform "
                               "fat tree; OpenSM ftree refuses it)");
        }
    }
}

}  // namespace

VerifyReport verify(const Router& r, std::size_t maxProblems) {
    const Topology& t = r.topology();
    const bool roce = t.type == inventory::FabricType::Roce;
    const auto S = t.switchCount();
    VerifyReport rep;
    rep.linkRoutes.assign(t.linkCount(), 0);
    auto problem = [&](std::string s) {
        if (rep.problems.size() < maxProblems) rep.problems.push_back(std::move(s));
    };
    std::vector<NextHop> hops;

    // Local invariants of every entry.
    for (std::int32_t ti = 0; ti < r.targetCount(); ++ti) {
        const auto tgt = r.targetSwitch(ti);
        for (std::int32_t s = 0; s < S; ++s) {
            ++rep.entriesChecked;
            auto m = r.mode(s, ti);
            if (m == RouteMode::None || m == RouteMode::Self) {
                bool wrong = (m == RouteMode::Self && s != tgt) ||
                             (s == tgt && m == RouteMode::None && t.switchUp[s]);
                if (wrong) {
                    ++rep.loops;
                    problem("entry of " + t.switchNames[s] + " for " + t.switchNames[tgt] +
                            " claims to be the target");
                }
                continue;
            }
            std::span<const NextHop> g;
            if (roce) {
                auto gid = r.groupOf(s, ti);
                if (gid < 0) {
                    ++rep.loops;
                    problem(t.switchNames[s] + " has mode but no group for " + t.switchNames[tgt]);
                    continue;
                }
                g = r.group(gid);
            } else {
                r.nextHops(s, ti, hops);
                g = hops;
            }
            if (g.empty()) {
                ++rep.loops;
                problem(t.switchNames[s] + " has an empty next-hop set for " + t.switchNames[tgt]);
            }
            for (const auto& nh : g) {
                auto l = nh.link;
                bool attached = t.linkA[l] == s || t.linkB[l] == s;
                auto n = attached ? t.peer(l, s) : kNone;
                if (!attached || !t.usable(l) || !t.isSwitch(n) || r.mode(n, ti) == RouteMode::None ||
                    r.dist(n, ti) + 1 != r.dist(s, ti)) {
                    ++rep.loops;
                    problem(t.switchNames[s] + " -> " + t.switchNames[tgt] + " via " +
                            t.linkNames[l] + ": next hop is not one hop closer");
                    continue;
                }
                bool goesDown = t.linkB[l] == s;
                if (m == RouteMode::Down && !goesDown) {
                    ++rep.downUpTurns;
                    problem(t.switchNames[s] + " -> " + t.switchNames[tgt] + ": up after down");
                }
                if (goesDown && r.mode(n, ti) == RouteMode::Up) {
                    ++rep.downUpTurns;
                    problem(t.switchNames[s] + " -> " + t.switchNames[tgt] + " via " +
                            t.switchNames[n] + ": down-then-up turn");
                }
                if (roce) ++rep.linkRoutes[l];
            }
        }
    }

    // InfiniBand: every LFT entry must forward over a link to a switch that is one hop
    // closer to the LID's switch (or deliver the LID on its own leaf).
    if (!roce) {
        PortMap pm(t);
        for (std::int32_t s = 0; s < S; ++s) {
            for (std::int32_t lid = 1; lid <= r.maxLid(); ++lid) {
                auto port = r.lftPort(s, static_cast<std::uint16_t>(lid));
                if (port == kNoPort || port == 0) continue;
                auto node = r.lidNode(static_cast<std::uint16_t>(lid));
                auto l = pm.at(s, port);
                if (l == kNone || !t.usable(l)) {
                    ++rep.loops;
                    problem(t.switchNames[s] + " lid " + std::to_string(lid) + ": port " +
                            std::to_string(port) + " has no usable link");
                    continue;
                }
                ++rep.linkRoutes[l];
                auto n = t.peer(l, s);
                std::int32_t tgtSw = t.isSwitch(node) ? node : t.nicSwitch(node - S);
                if (!t.isSwitch(n)) {
                    if (n != node) {
                        ++rep.loops;
                        problem(t.switchNames[s] + " lid " + std::to_string(lid) +
                                ": delivered to the wrong HCA");
                    }
                    continue;
                }
                auto ti = tgtSw == kNone ? kNone : r.targetOf(tgtSw);
                if (ti == kNone || r.dist(n, ti) + 1 != r.dist(s, ti)) {
                    ++rep.loops;
                    problem(t.switchNames[s] + " lid " + std::to_string(lid) +
                            ": next hop not closer");
                }
                bool goesDown = t.linkB[l] == s;
                if (goesDown && ti != kNone && r.mode(n, ti) == RouteMode::Up) {
                    ++rep.downUpTurns;
                    problem(t.switchNames[s] + " lid " + std::to_string(lid) + ": down-then-up turn");
                }
            }
        }
    }

    // Reachability between leaves (racks), then between hosts on small fabrics.
    const auto& leaves = t.tierSwitches[1];
    for (auto a : leaves)
        for (auto b : leaves) {
            if (a == b) continue;
            ++rep.rackPairs;
            auto tb = r.targetOf(b);
            if (tb == kNone || r.mode(a, tb) == RouteMode::None) {
                ++rep.rackPairsUnreachable;
                problem("unreachable: " + leafLabel(t, a) + " -> " + leafLabel(t, b));
            }
        }
    if (t.nicCount() <= kHostPairLimit) {
        auto nicOk = [&](std::int32_t nic) {
            return t.nicLink[nic] != kNone && t.usable(t.nicLink[nic]);
        };
        const auto H = static_cast<std::int32_t>(t.hostNames.size());
        for (std::int32_t a = 0; a < H; ++a)
            for (std::int32_t b = 0; b < H; ++b) {
                if (a == b || t.hostNicCount[a] == 0 || t.hostNicCount[b] == 0) continue;
                ++rep.hostPairs;
                bool ok = true;
                for (int k = 0; ok && k < std::min(t.hostNicCount[a], t.hostNicCount[b]); ++k) {
                    auto na = t.hostFirstNic[a] + k, nb = t.hostFirstNic[b] + k;
                    if (!nicOk(na) || !nicOk(nb)) {
                        ok = false;
                        break;
                    }
                    auto sa = t.nicSwitch(na), sb = t.nicSwitch(nb);
                    if (sa == sb) continue;
                    auto tb = r.targetOf(sb);
                    ok = tb != kNone && r.mode(sa, tb) != RouteMode::None;
                }
                if (!ok) {
                    ++rep.hostPairsUnreachable;
                    problem("unreachable: host " + t.hostNames[a] + " -> " + t.hostNames[b]);
                }
            }
    }

    // Balance over switch-to-switch links that carry routes.
    std::int64_t sum = 0, used = 0, mx = 0;
    for (std::int32_t l = 0; l < t.linkCount(); ++l) {
        if (!t.isSwitch(t.linkA[l]) || rep.linkRoutes[l] == 0) continue;
        sum += rep.linkRoutes[l];
        ++used;
        mx = std::max(mx, rep.linkRoutes[l]);
    }
    rep.maxLinkRoutes = static_cast<double>(mx);
    rep.avgLinkRoutes = used ? static_cast<double>(sum) / used : 0.0;
    checkUpGroups(r.topology(), rep, maxProblems);
    return rep;
}

namespace {

FailureReport compare(const Router& before, const Router& after, std::size_t maxListed) {
    const Topology& t = before.topology();
    FailureReport rep;
    const auto& leaves = t.tierSwitches[1];
    for (auto a : leaves)
        for (auto b : leaves) {
            if (a == b) continue;
            auto tb = before.targetOf(b);
            if (tb == kNone || before.mode(a, tb) == RouteMode::None) continue;
            if (after.mode(a, tb) == RouteMode::None) {
                ++rep.unreachablePairs;
                if (rep.unreachable.size() < maxListed)
                    rep.unreachable.push_back(leafLabel(t, a) + " -> " + leafLabel(t, b));
            } else if (after.bandwidth(a, tb) < before.bandwidth(a, tb) * 0.9999f) {
                ++rep.degradedPairs;
                if (rep.degraded.size() < maxListed) {
                    char buf[64];
                    std::snprintf(buf, sizeof buf, ": %.0f -> %.0f Gb/s", before.bandwidth(a, tb),
                                  after.bandwidth(a, tb));
                    rep.degraded.push_back(leafLabel(t, a) + " -> " + leafLabel(t, b) + buf);
                }
            }
        }
    return rep;
}

}  // namespace

FailureReport whatIfLinkDown(const Router& router, std::int32_t link, std::size_t maxListed) {
    Router after = router;
    auto st = after.setLinkState(link, LinkState::Down);
    auto rep = compare(router, after, maxListed);
    rep.reroute = st;
    return rep;
}

FailureReport whatIfSwitchDown(const Router& router, std::int32_t sw, std::size_t maxListed) {
    Router after = router;
    auto st = after.setSwitchUp(sw, false);
    auto rep = compare(router, after, maxListed);
    rep.reroute = st;
    return rep;
}

}  // namespace loom::fabric
