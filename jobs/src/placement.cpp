#include "loom/jobs/placement.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "loom/jobs/hostlist.hpp"
#include "loom/jobs/job.hpp"

namespace loom::jobs {

namespace {

using fabric::kNone;

struct Racks {
    std::vector<std::vector<std::int32_t>> hosts;  // per rack, host ids
    std::vector<std::int32_t> gpus;                // per rack
};

Racks racksOf(const fabric::Topology& t) {
    Racks r;
    r.hosts.resize(t.rackNames.size());
    r.gpus.assign(t.rackNames.size(), 0);
    for (std::int32_t h = 0; h < static_cast<std::int32_t>(t.hostNames.size()); ++h) {
        auto rack = t.hostRack[h];
        if (rack == kNone || t.hostNicCount[h] == 0) continue;
        r.hosts[rack].push_back(h);
        r.gpus[rack] += kGpusPerHost;
    }
    return r;
}

// Per rack: min over the leaves its NICs reach of usable up / usable down capacity. Not capped
// at 1: of two racks that both still have enough uplinks, the one with more headroom spreads
// ECMP more evenly (a rack with all 18 of 18 uplinks beats one with 16 of 18).
std::vector<double> uplinkScores(const fabric::Topology& t, const Racks& racks) {
    std::vector<double> up(t.switchCount(), 0.0), down(t.switchCount(), 0.0);
    for (auto leaf : t.tierSwitches[1]) {
        for (auto l : t.upLinks(leaf))
            if (t.usable(l)) up[leaf] += t.linkCapGbps[l];
        for (auto l : t.downLinks(leaf))
            if (t.usable(l)) down[leaf] += t.linkCapGbps[l];
    }
    std::vector<double> score(t.rackNames.size(), 0.0);
    for (std::size_t rack = 0; rack < racks.hosts.size(); ++rack) {
        double s = racks.hosts[rack].empty() ? 0.0 : 1e30;
        for (auto h : racks.hosts[rack])
            for (int k = 0; k < t.hostNicCount[h]; ++k) {
                auto leaf = t.nicSwitch(t.hostFirstNic[h] + k);
                if (leaf == kNone) continue;
                s = std::min(s, down[leaf] > 0 ? up[leaf] / down[leaf] : 0.0);
            }
        score[rack] = s;
    }
    return score;
}

Result<double> evaluate(RouterRef r, const Racks& racks, const std::vector<std::int32_t>& chosen,
                        fabric::Collective c, std::vector<fabric::Bottleneck>* bottlenecks) {
    const auto& t = r.topology();
    std::vector<std::int32_t> hosts;
    for (auto rack : chosen)
        hosts.insert(hosts.end(), racks.hosts[rack].begin(), racks.hosts[rack].end());
    std::sort(hosts.begin(), hosts.end(),
              [&](auto a, auto b) { return naturalLess(t.hostNames[a], t.hostNames[b]); });
    auto res = r.impact(hosts, c, 16);
    if (!res) return fail(res.error());
    if (bottlenecks) *bottlenecks = std::move(res->bottlenecks);
    return res->busBwNormalized;
}

Result<Placement> finish(RouterRef r, const Racks& racks, std::vector<std::int32_t> chosen,
                         fabric::Collective c) {
    const auto& t = r.topology();
    std::sort(chosen.begin(), chosen.end());
    Placement p;
    std::set<std::int32_t> zones;
    for (auto rack : chosen) {
        zones.insert(t.rackZone[rack]);
        p.gpus += racks.gpus[rack];
        for (auto h : racks.hosts[rack]) p.hosts.push_back(t.hostNames[h]);
    }
    p.hosts = normalizedHosts(std::move(p.hosts));
    auto bw = evaluate(r, racks, chosen, c, nullptr);
    if (!bw) return fail(bw.error());
    p.busBw = *bw;
    p.racks = std::move(chosen);
    p.zones = static_cast<int>(zones.size());
    return p;
}

Result<void> check(const PlacementRequest& req, const Racks& racks,
                   const std::vector<std::uint8_t>& available) {
    if (req.gpus <= 0) return fail(Error::invalid("gpus must be positive", "gpus"));
    std::int64_t total = 0;
    for (std::size_t rack = 0; rack < racks.gpus.size(); ++rack)
        if (rack < available.size() && available[rack]) total += racks.gpus[rack];
    if (total < req.gpus)
        return fail(Error::conflict("only " + std::to_string(total) +
                                    " GPUs are in available racks (in service, healthy, not in a "
                                    "job); asked for " +
                                    std::to_string(req.gpus)));
    return {};
}

}  // namespace

std::vector<std::uint8_t> availableRacks(const fabric::Topology& t,
                                         const std::vector<std::uint8_t>& free) {
    std::vector<std::uint8_t> out(t.rackNames.size(), 0);
    std::vector<std::uint8_t> broken(t.rackNames.size(), 0);
    for (std::int32_t h = 0; h < static_cast<std::int32_t>(t.hostNames.size()); ++h) {
        auto rack = t.hostRack[h];
        if (rack == kNone || t.hostNicCount[h] == 0) continue;
        out[rack] = 1;
        for (int k = 0; k < t.hostNicCount[h]; ++k) {
            auto l = t.nicLink[t.hostFirstNic[h] + k];
            if (l == kNone || !t.usable(l)) broken[rack] = 1;
        }
    }
    for (std::size_t rack = 0; rack < out.size(); ++rack) {
        if (broken[rack]) out[rack] = 0;
        if (!free.empty() && (rack >= free.size() || !free[rack])) out[rack] = 0;
    }
    return out;
}

Result<Placement> placeFirstFit(RouterRef r, const PlacementRequest& req,
                                const std::vector<std::uint8_t>& available) {
    const auto& t = r.topology();
    const auto racks = racksOf(t);
    if (auto ok = check(req, racks, available); !ok) return fail(ok.error());
    std::vector<std::int32_t> order;
    for (std::int32_t rack = 0; rack < static_cast<std::int32_t>(racks.gpus.size()); ++rack)
        if (rack < static_cast<std::int32_t>(available.size()) && available[rack] &&
            racks.gpus[rack] > 0)
            order.push_back(rack);
    std::sort(order.begin(), order.end(),
              [&](auto a, auto b) { return naturalLess(t.rackNames[a], t.rackNames[b]); });
    std::vector<std::int32_t> chosen;
    int gpus = 0;
    for (auto rack : order) {
        if (gpus >= req.gpus) break;
        chosen.push_back(rack);
        gpus += racks.gpus[rack];
    }
    return finish(r, racks, std::move(chosen), req.pattern);
}

Result<Placement> placeJob(RouterRef r, const PlacementRequest& req,
                           const std::vector<std::uint8_t>& available) {
    const auto& t = r.topology();
    const auto racks = racksOf(t);
    if (auto ok = check(req, racks, available); !ok) return fail(ok.error());
    const auto score = uplinkScores(t, racks);

    // Candidates per zone, best score first, then by name.
    std::map<std::int32_t, std::vector<std::int32_t>> byZone;
    for (std::int32_t rack = 0; rack < static_cast<std::int32_t>(racks.gpus.size()); ++rack)
        if (rack < static_cast<std::int32_t>(available.size()) && available[rack] &&
            racks.gpus[rack] > 0)
            byZone[t.rackZone[rack]].push_back(rack);
    auto better = [&](std::int32_t a, std::int32_t b) {
        if (score[a] != score[b]) return score[a] > score[b];
        return naturalLess(t.rackNames[a], t.rackNames[b]);
    };
    for (auto& [z, list] : byZone) std::sort(list.begin(), list.end(), better);
    auto take = [&](const std::vector<std::int32_t>& list, int& gpus,
                    std::vector<std::int32_t>& out) {
        for (auto rack : list) {
            if (gpus >= req.gpus) break;
            out.push_back(rack);
            gpus += racks.gpus[rack];
        }
    };

    std::vector<std::int32_t> chosen;
    double bestWorst = -1;
    for (const auto& [z, list] : byZone) {
        int gpus = 0;
        std::vector<std::int32_t> option;
        take(list, gpus, option);
        if (gpus < req.gpus) continue;
        double worst = 1e30;
        for (auto rack : option) worst = std::min(worst, score[rack]);
        if (worst > bestWorst) {
            bestWorst = worst;
            chosen = std::move(option);
        }
    }
    if (chosen.empty()) {
        // Fewest zones: the zones with the most good capacity first.
        std::vector<std::pair<double, std::int32_t>> zones;
        for (const auto& [z, list] : byZone) {
            double good = 0;
            for (auto rack : list) good += score[rack] * racks.gpus[rack];
            zones.emplace_back(good, z);
        }
        std::sort(zones.begin(), zones.end(), [](auto& a, auto& b) {
            return a.first != b.first ? a.first > b.first : a.second < b.second;
        });
        int gpus = 0;
        for (auto& [good, z] : zones) take(byZone[z], gpus, chosen);
    }

    // Refinement: swap a rack at a bottleneck for the best unused candidate while it helps.
    std::vector<fabric::Bottleneck> bottlenecks;
    auto bw = evaluate(r, racks, chosen, req.pattern, &bottlenecks);
    if (!bw) return fail(bw.error());
    std::vector<std::uint8_t> used(racks.gpus.size(), 0), tried(racks.gpus.size(), 0);
    for (auto rack : chosen) used[rack] = 1;
    std::vector<std::int32_t> leafRack(t.switchCount(), kNone);
    for (std::size_t rack = 0; rack < racks.hosts.size(); ++rack)
        for (auto h : racks.hosts[rack])
            for (int k = 0; k < t.hostNicCount[h]; ++k)
                if (auto leaf = t.nicSwitch(t.hostFirstNic[h] + k); leaf != kNone)
                    leafRack[leaf] = static_cast<std::int32_t>(rack);
    for (int round = 0; round < kPlacementRefinements && *bw < 100.0 - 1e-9; ++round) {
        std::int32_t victim = kNone;
        for (const auto& b : bottlenecks) {
            for (auto end : {t.linkA[b.link], t.linkB[b.link]}) {
                if (!t.isSwitch(end)) end = t.linkB[b.link];
                auto rack = leafRack[end];
                if (rack != kNone && used[rack] && !tried[rack]) {
                    victim = rack;
                    break;
                }
            }
            if (victim != kNone) break;
        }
        if (victim == kNone) break;
        tried[victim] = 1;
        std::int32_t best = kNone;
        // Same zone first (no new crossing), then any zone already used.
        for (int pass = 0; pass < 2 && best == kNone; ++pass)
            for (const auto& [z, list] : byZone) {
                if ((pass == 0) != (z == t.rackZone[victim])) continue;
                for (auto rack : list)
                    if (!used[rack] && racks.gpus[rack] >= racks.gpus[victim] &&
                        score[rack] > score[victim]) {
                        if (best == kNone || better(rack, best)) best = rack;
                        break;
                    }
            }
        if (best == kNone) continue;
        auto trial = chosen;
        std::replace(trial.begin(), trial.end(), victim, best);
        std::vector<fabric::Bottleneck> tb;
        auto tbw = evaluate(r, racks, trial, req.pattern, &tb);
        if (!tbw) return fail(tbw.error());
        if (*tbw > *bw + 1e-9) {
            used[victim] = 0;
            used[best] = 1;
            chosen = std::move(trial);
            bw = tbw;
            bottlenecks = std::move(tb);
        }
    }
    return finish(r, racks, std::move(chosen), req.pattern);
}

}  // namespace loom::jobs
