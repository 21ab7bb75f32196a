#include "loom/fabric/verify.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <span>
#include <thread>
#include <unordered_map>

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
                lo != hi
                    ? name + ": up-groups of " + std::to_string(lo) + " to " + std::to_string(hi) +
                          " parallel links (not a uniform fat tree; OpenSM ftree refuses it)"
                    : name + ": up-groups of " + std::to_string(lo) + " parallel links, " +
                          std::to_string(tierWidth) +
                          " on the rest of its tier (not a uniform "
                          "fat tree; OpenSM ftree refuses it)");
        }
    }
}

// Balance over switch-to-switch links that carry routes, and the up-group warnings.
void finishReport(const Topology& t, VerifyReport& rep, std::size_t maxProblems) {
    std::int64_t sum = 0, used = 0, mx = 0;
    for (std::int32_t l = 0; l < t.linkCount(); ++l) {
        if (!t.isSwitch(t.linkA[l]) || rep.linkRoutes[l] == 0) continue;
        sum += rep.linkRoutes[l];
        ++used;
        mx = std::max(mx, rep.linkRoutes[l]);
    }
    rep.maxLinkRoutes = static_cast<double>(mx);
    rep.avgLinkRoutes = used ? static_cast<double>(sum) / used : 0.0;
    checkUpGroups(t, rep, maxProblems);
}

// Every ordered pair of hosts with NICs: NIC k of one reaches NIC k of the other (both cabled
// and usable, and their switches the same or `reaches(from, to)`). Both checks use it, each with
// its own tables' reachability.
template <typename Reaches, typename Problem>
void checkHostPairs(const Topology& t, VerifyReport& rep, Reaches&& reaches, Problem&& problem) {
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
                if (sa != sb) ok = reaches(sa, sb);
            }
            if (!ok) {
                ++rep.hostPairsUnreachable;
                problem("unreachable: host " + t.hostNames[a] + " -> " + t.hostNames[b]);
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
                if (!attached || !t.usable(l) || !t.isSwitch(n) ||
                    r.mode(n, ti) == RouteMode::None || r.dist(n, ti) + 1 != r.dist(s, ti)) {
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
                    problem(t.switchNames[s] + " lid " + std::to_string(lid) +
                            ": down-then-up turn");
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
    if (t.nicCount() <= kHostPairLimit)
        checkHostPairs(
            t, rep,
            [&](std::int32_t sa, std::int32_t sb) {
                auto tb = r.targetOf(sb);
                return tb != kNone && r.mode(sa, tb) != RouteMode::None;
            },
            problem);

    finishReport(t, rep, maxProblems);
    return rep;
}

namespace {

// Walks the summarised tables toward one rack at a time (verify(SummaryRouter)). dist_ is the
// hops a switch's entry takes to the rack, valid in the current epoch.
class SummaryVerifyWalk {
public:
    static constexpr std::int32_t kUnreached = -1, kVisiting = -2, kLeft = -3;

    SummaryVerifyWalk(SummaryRouter&&, VerifyReport&, std::size_t) = delete;
    SummaryVerifyWalk(const SummaryRouter& r, VerifyReport& rep, std::size_t maxProblems)
        : r_(r), t_(r.topology()), rep_(rep), problems_(&rep.problems), maxProblems_(maxProblems) {
        const auto S = t_.switchCount();
        dist_.assign(S, kUnreached);
        down_.assign(S, 0);
        stamp_.assign(S, 0);
        // A link's usability and its switch ends, once: every entry's hops read them.
        usable_.assign(t_.linkCount(), 0);
        for (std::int32_t l = 0; l < t_.linkCount(); ++l)
            usable_[l] = t_.usable(l) && t_.isSwitch(t_.linkA[l]) && t_.isSwitch(t_.linkB[l]);
    }

    // A new rack; `inside` (switch -> 1) bounds the walk: an entry with a next hop out of it
    // is left unwalked (and uncounted) and left() is set. nullptr walks everywhere.
    void begin(std::int32_t target, const std::vector<std::uint8_t>* inside, bool count) {
        target_ = target;
        tgtSw_ = r_.targetSwitch(target);
        inside_ = inside;
        left_ = false;
        count_ = count;
        weight_ = 1;
        if (++epoch_ == 0) {
            std::fill(stamp_.begin(), stamp_.end(), 0);
            epoch_ = 1;
        }
    }
    // Keeps what was walked and walks on everywhere, each entry from now standing for
    // `weight` racks.
    void widen(std::int64_t weight, bool count) {
        inside_ = nullptr;
        weight_ = weight;
        count_ = count;
    }
    // Where problems go from now (a zone's own list, so that zones checked on several threads
    // are reported in zone order).
    void problemsTo(std::vector<std::string>* problems) { problems_ = problems; }
    bool left() const { return left_; }
    std::int32_t dist(std::int32_t s) const { return stamp_[s] == epoch_ ? dist_[s] : kUnreached; }
    bool down(std::int32_t s) const { return stamp_[s] == epoch_ && down_[s] != 0; }

    // The hops s's entry takes to the rack (kUnreached: none), checking it once.
    std::int32_t resolve(std::int32_t s) {
        if (stamp_[s] == epoch_) return dist_[s];
        if (inside_ && !(*inside_)[s]) {
            left_ = true;
            return kLeft;
        }
        stamp_[s] = epoch_;
        dist_[s] = kVisiting;
        down_[s] = 0;
        auto d = entry(s);
        if (d == kLeft) {
            stamp_[s] = epoch_ - 1;  // walked again once the walk widens
            return kLeft;
        }
        dist_[s] = d;
        return d;
    }

private:
    void problem(std::string p) {
        if (problems_->size() < maxProblems_) problems_->push_back(std::move(p));
    }
    void fault(std::int64_t& counter, const std::string& p) {
        if (!count_) return;
        counter += weight_;
        problem(p);
    }
    const std::string& name(std::int32_t s) const { return t_.switchNames[s]; }

    std::int32_t entry(std::int32_t s) {
        const auto g = r_.lookup(s, target_);
        if (g == kLocal || s == tgtSw_) {
            if (g != kLocal && (g != kNoRoute || t_.switchUp[s]))
                fault(rep_.loops, "entry of " + name(s) + " for its own rack is not local");
            else if (g == kLocal && s != tgtSw_)
                fault(rep_.loops,
                      "entry of " + name(s) + " for " + name(tgtSw_) + " claims to be the target");
            return g == kLocal ? 0 : kUnreached;
        }
        if (g == kNoRoute) return kUnreached;
        auto hops = r_.group(g);
        // The next hops' own entries first, so a hop out of the bounds leaves this entry
        // uncounted (it is walked whole once the walk widens).
        const auto base = scratch_.size();
        for (const auto& nh : hops) {
            const auto l = nh.link;
            const bool attached = t_.linkA[l] == s || t_.linkB[l] == s;
            const auto n = attached ? t_.peer(l, s) : kNone;
            std::int32_t dn = kUnreached;
            if (attached && usable_[l]) {
                dn = resolve(n);
                if (dn == kLeft) {
                    scratch_.resize(base);
                    return kLeft;
                }
            }
            scratch_.push_back(dn);
        }
        if (count_) ++rep_.entriesChecked;
        if (hops.empty())
            fault(rep_.loops, name(s) + " has an empty next-hop set for " + name(tgtSw_));
        std::int32_t d = kUnreached;
        std::size_t downs = 0;
        for (std::size_t i = 0; i < hops.size(); ++i) {
            const auto l = hops[i].link;
            const auto dn = scratch_[base + i];
            const bool attached = t_.linkA[l] == s || t_.linkB[l] == s;
            const auto n = attached ? t_.peer(l, s) : kNone;
            if (!attached || !usable_[l]) {
                fault(rep_.loops, name(s) + " -> " + name(tgtSw_) + " via " + t_.linkNames[l] +
                                      ": not a usable link of the switch");
                continue;
            }
            const bool goesDown = t_.linkB[l] == s;
            downs += goesDown;
            if (dn == kVisiting) {
                fault(rep_.loops,
                      name(s) + " -> " + name(tgtSw_) + " via " + name(n) + ": a routing loop");
                continue;
            }
            if (dn == kUnreached) {
                fault(rep_.loops, name(s) + " -> " + name(tgtSw_) + " via " + name(n) +
                                      ": the next hop has no route");
                continue;
            }
            if (d == kUnreached)
                d = dn + 1;
            else if (dn + 1 != d)
                fault(rep_.loops, name(s) + " -> " + name(tgtSw_) + " via " + name(n) +
                                      ": next hops at unequal distances");
            if (goesDown && n != tgtSw_ && !down_[n])
                fault(rep_.downUpTurns,
                      name(s) + " -> " + name(tgtSw_) + " via " + name(n) + ": down-then-up turn");
            if (count_) rep_.linkRoutes[l] += weight_;
        }
        scratch_.resize(base);
        if (downs > 0 && downs < hops.size())
            fault(rep_.downUpTurns,
                  name(s) + " -> " + name(tgtSw_) + ": up and down next hops together");
        down_[s] = downs > 0;
        return d;
    }

    const SummaryRouter& r_;
    const Topology& t_;
    VerifyReport& rep_;
    std::vector<std::string>* problems_;
    std::size_t maxProblems_;
    std::vector<std::int32_t> dist_;
    std::vector<std::uint8_t> down_;
    std::vector<std::uint32_t> stamp_;
    std::vector<std::int32_t> scratch_;  // the next hops' distances, a frame per entry
    std::vector<std::uint8_t> usable_;   // link -> usable, between two switches
    std::uint32_t epoch_ = 0;
    std::int32_t target_ = 0, tgtSw_ = 0;
    const std::vector<std::uint8_t>* inside_ = nullptr;
    bool left_ = false, count_ = true;
    std::int64_t weight_ = 1;
};

}  // namespace

VerifyReport verify(const SummaryRouter& r, std::size_t maxProblems) {
    const Topology& t = r.topology();
    const auto S = t.switchCount();
    VerifyReport rep;
    rep.linkRoutes.assign(t.linkCount(), 0);
    const auto T = r.targetCount();
    const auto Z = r.zoneCount();
    if (t.type != inventory::FabricType::Roce || T == 0) {
        finishReport(t, rep, maxProblems);
        return rep;
    }
    auto problem = [&](std::string s) {
        if (rep.problems.size() < maxProblems) rep.problems.push_back(std::move(s));
    };
    auto zoneOf = [&](std::int32_t sw) {
        auto z = t.switchZone[sw];
        return (z == kNone || z >= Z) ? Z : z;
    };
    const auto& leaves = t.tierSwitches[1];
    // (leaf's target, rack) reachable: kept for the host pairs of small fabrics only.
    const bool hostPairs = t.nicCount() <= kHostPairLimit;
    std::vector<std::uint8_t> reach;
    if (hostPairs) reach.assign(static_cast<std::size_t>(T) * T, 0);

    enum class From { Inside, Outside, Everywhere };
    // The leaves of each zone (Z: outside any), so a rack's pairs from inside its zone visit
    // the zone's leaves only (37.7 M leaf visits at 98k otherwise).
    std::vector<std::vector<std::int32_t>> zoneLeaves(Z + 1);
    for (auto a : leaves) zoneLeaves[zoneOf(a)].push_back(a);
    std::vector<std::vector<std::int32_t>> zoneTargets(Z + 1);
    for (std::int32_t ti = 0; ti < T; ++ti) zoneTargets[r.zoneOfTarget(ti)].push_back(ti);
    // Each zone's problems apart: zones are checked on several threads (each with its own
    // walk, counters and routes per link, summed at the end) and reported in zone order, so
    // the report is the same whatever the threads did. `reach` is written at (leaf's target,
    // rack of the zone): no two zones write one byte.
    std::vector<std::vector<std::string>> zoneProblems(Z + 1);

    auto checkZone = [&](std::int32_t z, SummaryVerifyWalk& walk, VerifyReport& rep,
                         std::vector<std::uint8_t>& inside, std::vector<std::uint8_t>& listed) {
        const auto& targets = zoneTargets[z];
        if (targets.empty()) return;
        auto& problems = zoneProblems[z];
        walk.problemsTo(&problems);
        auto problem = [&](std::string s) {
            if (problems.size() < maxProblems) problems.push_back(std::move(s));
        };
        // The rack pairs toward `target` from the leaves walked in this epoch, each standing
        // for the racks `alike`.
        auto pairs = [&](std::int32_t target, From from, std::span<const std::int32_t> alike) {
            const auto tgtSw = r.targetSwitch(target);
            const auto zone = r.zoneOfTarget(target);
            const auto weight = static_cast<std::int64_t>(alike.size());
            const auto& visit = from == From::Inside ? zoneLeaves[zone] : leaves;
            for (auto a : visit) {
                if (a == tgtSw) continue;
                if (from == From::Outside && zoneOf(a) == zone) continue;
                rep.rackPairs += weight;
                if (walk.resolve(a) >= 0) {
                    if (hostPairs)
                        for (auto ti : alike)
                            reach[static_cast<std::size_t>(r.targetOf(a)) * T + ti] = 1;
                    continue;
                }
                rep.rackPairsUnreachable += weight;
                problem("unreachable: " + leafLabel(t, a) + " -> " + leafLabel(t, tgtSw) +
                        (weight > 1 ? " (and " + std::to_string(weight - 1) +
                                          " other rack(s) of its zone alike)"
                                    : ""));
            }
        };
        auto walkEverywhere = [&](std::int32_t target, bool begun) {
            if (!begun) walk.begin(target, nullptr, true);
            walk.widen(1, true);
            for (std::int32_t s = 0; s < S; ++s) walk.resolve(s);
            const std::int32_t self[1] = {target};
            pairs(target, From::Everywhere, self);
        };

        if (z == Z || !r.aggregated(z)) {  // racks outside any zone, or not aggregated
            for (auto ti : targets) walkEverywhere(ti, false);
            return;
        }
        std::vector<std::int32_t> border;  // the zone's switches with a link out of it
        std::vector<std::int32_t> own;     // the zone's switches
        for (std::int32_t s = 0; s < S; ++s) inside[s] = zoneOf(s) == z;
        for (std::int32_t s = 0; s < S; ++s) {
            if (!inside[s]) {
                for (const auto& e : r.specifics(s, z)) listed[e.target] = 1;
                continue;
            }
            own.push_back(s);
            bool out = false;
            for (auto i = t.adjOffset[s]; i < t.adjOffset[s + 1]; ++i) {
                auto n = t.peer(t.adjLink[i], s);
                out |= t.isSwitch(n) && zoneOf(n) != z;
            }
            if (out) border.push_back(s);
        }
        // Racks alike: no switch outside the zone lists them (all take its aggregate there)
        // and the border reaches them in the same hops and direction. Their own zone's
        // entries are walked rack by rack, the rest of the fabric once per kind.
        std::unordered_map<std::string, std::vector<std::int32_t>> alike;
        std::vector<const std::vector<std::int32_t>*> kinds;
        for (auto ti : targets) {
            if (listed[ti]) {
                listed[ti] = 0;
                walkEverywhere(ti, false);
                continue;
            }
            walk.begin(ti, &inside, true);
            for (auto s : own) walk.resolve(s);
            if (walk.left()) {  // an entry of the zone leaves it toward its own rack
                walkEverywhere(ti, true);
                continue;
            }
            const std::int32_t self[1] = {ti};
            pairs(ti, From::Inside, self);
            std::string sig(border.size() * 5, '\0');
            char* p = sig.data();
            for (auto b : border) {
                auto d = walk.dist(b);
                std::memcpy(p, &d, 4);
                p[4] = static_cast<char>(walk.down(b));
                p += 5;
            }
            auto [it, fresh] = alike.try_emplace(std::move(sig));
            it->second.push_back(ti);
            if (fresh) kinds.push_back(&it->second);
        }
        for (const auto* kind : kinds) {
            const auto first = kind->front();
            walk.begin(first, &inside, false);  // walked and counted above
            for (auto s : own) walk.resolve(s);
            walk.widen(static_cast<std::int64_t>(kind->size()), true);
            for (std::int32_t s = 0; s < S; ++s) walk.resolve(s);
            pairs(first, From::Outside, *kind);
        }
    };

    // Zones on up to hardware_concurrency threads (2 here: the check at 98k was ~0.3 s of one
    // core), each taking the next zone.
    struct ZoneWorker {
        VerifyReport rep;
        std::vector<std::uint8_t> inside, listed;
    };
    const auto workers =
        std::min<unsigned>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u), Z + 1);
    std::vector<ZoneWorker> ws(workers);
    std::atomic<std::int32_t> nextZone{0};
    auto work = [&](ZoneWorker& w) {
        w.rep.linkRoutes.assign(t.linkCount(), 0);
        w.inside.assign(S, 0);
        w.listed.assign(T, 0);
        SummaryVerifyWalk walk(r, w.rep, maxProblems);
        for (std::int32_t z; (z = nextZone.fetch_add(1)) <= Z;)
            checkZone(z, walk, w.rep, w.inside, w.listed);
    };
    {
        std::vector<std::jthread> threads;
        for (unsigned k = 1; k < workers; ++k) threads.emplace_back([&, k] { work(ws[k]); });
        work(ws[0]);
    }
    for (const auto& w : ws) {
        rep.entriesChecked += w.rep.entriesChecked;
        rep.rackPairs += w.rep.rackPairs;
        rep.rackPairsUnreachable += w.rep.rackPairsUnreachable;
        rep.loops += w.rep.loops;
        rep.downUpTurns += w.rep.downUpTurns;
        for (std::size_t l = 0; l < rep.linkRoutes.size(); ++l)
            rep.linkRoutes[l] += w.rep.linkRoutes[l];
    }
    for (auto& zp : zoneProblems)
        for (auto& p : zp)
            if (rep.problems.size() < maxProblems) rep.problems.push_back(std::move(p));

    if (hostPairs)
        checkHostPairs(
            t, rep,
            [&](std::int32_t sa, std::int32_t sb) {
                auto ta = r.targetOf(sa), tb = r.targetOf(sb);
                return ta != kNone && tb != kNone &&
                       reach[static_cast<std::size_t>(ta) * T + tb] != 0;
            },
            problem);
    finishReport(t, rep, maxProblems);
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
