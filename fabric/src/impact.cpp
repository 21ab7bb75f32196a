#include "loom/fabric/impact.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

namespace loom::fabric {

std::optional<Collective> parseCollective(std::string_view s) {
    std::string k;
    for (char c : s)
        if (c != '_' && c != '-') k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (k == "allreduce") return Collective::AllReduce;
    if (k == "allgather") return Collective::AllGather;
    if (k == "alltoall") return Collective::AllToAll;
    return std::nullopt;
}

std::string_view collectiveName(Collective c) {
    switch (c) {
        case Collective::AllReduce: return "allreduce";
        case Collective::AllGather: return "allgather";
        case Collective::AllToAll: return "alltoall";
    }
    return "?";
}

namespace {

// Links are full duplex: loads are kept per direction, slot = 2·link + (0 up, 1 down).
std::int32_t slot(const Topology& t, std::int32_t link, std::int32_t from) {
    return 2 * link + (t.linkA[link] == from ? 0 : 1);
}

struct Spread {
    std::vector<std::pair<std::int32_t, float>> links;  // direction slot, fraction of the flow
    bool routed = true;
};

// RoCE: split one unit of traffic from leaf src toward target ti over the ECMP groups,
// layer by layer (every hop is one closer, so a layer never feeds itself).
template <class R>
Spread spreadRoce(const R& r, std::int32_t src, std::int32_t ti, std::vector<float>& frac) {
    const Topology& t = r.topology();
    Spread sp;
    std::vector<std::int32_t> layer{src}, next;
    frac[src] = 1.0f;
    const auto tgt = r.targetSwitch(ti);
    while (!layer.empty()) {
        next.clear();
        for (auto s : layer) {
            float f = frac[s];
            frac[s] = 0.0f;
            if (s == tgt) continue;
            auto gid = r.groupOf(s, ti);
            if (gid < 0) {
                sp.routed = false;
                continue;
            }
            auto g = r.group(gid);
            double W = 0;
            for (const auto& nh : g) W += nh.weight;
            for (const auto& nh : g) {
                float part = static_cast<float>(f * nh.weight / W);
                sp.links.emplace_back(slot(t, nh.link, s), part);
                auto n = t.peer(nh.link, s);
                if (frac[n] == 0.0f) next.push_back(n);
                frac[n] += part;
            }
        }
        std::swap(layer, next);
    }
    return sp;
}

// InfiniBand: follow the LFTs from leaf src to the destination HCA's LID.
Spread walkIb(const Router& r, std::int32_t src, std::int32_t dstNic,
              const std::vector<std::int32_t>& portLink) {
    const Topology& t = r.topology();
    Spread sp;
    auto lid = r.nicLid(dstNic);
    auto dstSw = t.nicSwitch(dstNic);
    std::int32_t s = src;
    for (int hops = 0; hops < 16; ++hops) {
        if (s == dstSw) return sp;
        auto port = r.lftPort(s, lid);
        auto l = (port == kNoPort || port == 0) ? kNone : portLink[s * 256 + port];
        if (l == kNone) break;
        sp.links.emplace_back(slot(t, l, s), 1.0f);
        s = t.peer(l, s);
        if (!t.isSwitch(s)) break;
    }
    sp.routed = false;
    return sp;
}

// A Router (RoCE or InfiniBand) or a SummaryRouter (RoCE).
template <class R>
Result<ImpactResult> impactOf(const R& r, std::span<const std::int32_t> hosts, Collective c,
                              std::size_t maxBottlenecks) {
    const Topology& t = r.topology();
    const bool roce = t.type == inventory::FabricType::Roce;
    if constexpr (!std::is_same_v<R, Router>)
        if (!roce) return fail(Error::invalid("impact on InfiniBand needs the full router (LFTs)", "hosts"));
    if (hosts.empty()) return fail(Error::invalid("no hosts given", "hosts"));
    std::unordered_set<std::int32_t> seen;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        auto h = hosts[i];
        auto where = "hosts[" + std::to_string(i) + "]";
        if (h < 0 || h >= static_cast<std::int32_t>(t.hostNames.size()))
            return fail(Error::invalid("unknown host id " + std::to_string(h), where));
        if (!seen.insert(h).second)
            return fail(Error::invalid("host " + t.hostNames[h] + " listed twice", where));
    }
    const auto m = static_cast<std::int32_t>(hosts.size());
    if (c == Collective::AllToAll && m > kAllToAllMaxHosts)
        return fail(Error::invalid("alltoall impact is limited to " +
                                       std::to_string(kAllToAllMaxHosts) + " hosts, got " +
                                       std::to_string(m),
                                   "hosts"));

    // Flows: (src NIC, dst NIC) on the same rail.
    std::vector<std::pair<std::int32_t, std::int32_t>> flows;
    int rails = 0;
    for (auto h : hosts) rails = std::max(rails, t.hostNicCount[h]);
    auto nicOf = [&](std::int32_t h, int k) {
        return k < t.hostNicCount[h] ? t.hostFirstNic[h] + k : kNone;
    };
    for (int k = 0; k < rails; ++k) {
        if (c == Collective::AllToAll) {
            for (auto a : hosts)
                for (auto b : hosts)
                    if (a != b) flows.emplace_back(nicOf(a, k), nicOf(b, k));
        } else if (m > 1) {
            for (std::int32_t j = 0; j < m; ++j)
                flows.emplace_back(nicOf(hosts[j], k), nicOf(hosts[(j + 1) % m], k));
        }
    }
    const double flowsPerNic = c == Collective::AllToAll ? std::max(1, m - 1) : 1;

    ImpactResult res;
    res.flows = static_cast<std::int64_t>(flows.size());
    double nicRate = 0;
    for (auto h : hosts)
        for (int k = 0; k < t.hostNicCount[h]; ++k) {
            auto l = t.nicLink[t.hostFirstNic[h] + k];
            if (l != kNone) nicRate = std::max<double>(nicRate, t.linkCapGbps[l]);
        }
    if (nicRate == 0) nicRate = 400;
    if (flows.empty()) {
        res.busBwNormalized = 100;
        res.busBwGbps = nicRate;
        return res;
    }

    // Aggregate flows by (source switch, destination): their fabric spread is identical.
    std::vector<double> load(2 * static_cast<std::size_t>(t.linkCount()), 0.0);
    std::unordered_map<std::int64_t, std::int32_t> pairIndex;
    std::vector<Spread> spreads;
    std::vector<std::int32_t> flowPair(flows.size(), kNone);
    std::vector<float> frac(t.switchCount(), 0.0f);
    std::vector<std::int32_t> portLink;
    if (!roce) {
        portLink.assign(static_cast<std::size_t>(t.switchCount()) * 256, kNone);
        for (std::int32_t l = 0; l < t.linkCount(); ++l) {
            if (t.isSwitch(t.linkA[l]) && t.linkAPort[l] < 256)
                portLink[t.linkA[l] * 256 + t.linkAPort[l]] = l;
            if (t.linkBPort[l] < 256) portLink[t.linkB[l] * 256 + t.linkBPort[l]] = l;
        }
    }
    std::vector<std::int32_t> pairCount;
    for (std::size_t f = 0; f < flows.size(); ++f) {
        auto [a, b] = flows[f];
        if (a == kNone || b == kNone) {
            ++res.unroutedFlows;
            continue;
        }
        auto la = t.nicLink[a], lb = t.nicLink[b];
        if (la == kNone || lb == kNone || !t.usable(la) || !t.usable(lb)) {
            ++res.unroutedFlows;
            continue;
        }
        load[2 * la] += 1;      // NIC -> switch
        load[2 * lb + 1] += 1;  // switch -> NIC
        auto sa = t.nicSwitch(a), sb = t.nicSwitch(b);
        if (sa == sb) continue;
        std::int64_t dstKey = roce ? r.targetOf(sb) : b;
        auto key = static_cast<std::int64_t>(sa) * (t.nodeCount() + 1) + dstKey;
        auto [it, fresh] = pairIndex.emplace(key, static_cast<std::int32_t>(spreads.size()));
        if (fresh) {
            if constexpr (std::is_same_v<R, Router>)
                spreads.push_back(roce ? spreadRoce(r, sa, r.targetOf(sb), frac) : walkIb(r, sa, b, portLink));
            else
                spreads.push_back(spreadRoce(r, sa, r.targetOf(sb), frac));
            pairCount.push_back(0);
        }
        flowPair[f] = it->second;
        ++pairCount[it->second];
    }
    for (std::size_t p = 0; p < spreads.size(); ++p)
        for (auto [l, fr] : spreads[p].links) load[l] += static_cast<double>(fr) * pairCount[p];

    // Rates.
    auto ratio = [&](std::int32_t sl) {
        return load[sl] > 0 ? t.linkCapGbps[sl / 2] / load[sl] : 1e30;
    };
    std::vector<double> pairRate(spreads.size(), 1e30);
    for (std::size_t p = 0; p < spreads.size(); ++p) {
        if (!spreads[p].routed) {
            pairRate[p] = 0;
            continue;
        }
        for (auto [l, fr] : spreads[p].links) pairRate[p] = std::min(pairRate[p], ratio(l));
    }
    double slowest = 1e30;
    for (std::size_t f = 0; f < flows.size(); ++f) {
        auto [a, b] = flows[f];
        if (a == kNone || b == kNone || t.nicLink[a] == kNone || t.nicLink[b] == kNone ||
            !t.usable(t.nicLink[a]) || !t.usable(t.nicLink[b])) {
            slowest = 0;
            continue;
        }
        double rate = std::min({nicRate, ratio(2 * t.nicLink[a]), ratio(2 * t.nicLink[b] + 1)});
        if (flowPair[f] != kNone) {
            rate = std::min(rate, pairRate[flowPair[f]]);
            if (!spreads[flowPair[f]].routed) ++res.unroutedFlows;
        }
        slowest = std::min(slowest, rate);
    }
    res.busBwNormalized = std::clamp(100.0 * slowest * flowsPerNic / nicRate, 0.0, 100.0);
    res.busBwGbps = res.busBwNormalized / 100.0 * nicRate;

    for (std::int32_t l = 0; l < t.linkCount(); ++l)
        if (load[2 * l] > 0 || load[2 * l + 1] > 0) res.linksCrossed.push_back(l);

    // Bottlenecks: the links whose share per flow is below what the NICs would allow.
    const double nicShare = nicRate / flowsPerNic;
    std::vector<std::int32_t> tight;
    for (std::int32_t sl = 0; sl < 2 * t.linkCount(); ++sl)
        if (load[sl] > 0 && ratio(sl) < nicShare * 0.999) tight.push_back(sl);
    std::sort(tight.begin(), tight.end(), [&](std::int32_t x, std::int32_t y) {
        return ratio(x) != ratio(y) ? ratio(x) < ratio(y) : x < y;
    });
    if (tight.size() > maxBottlenecks) tight.resize(maxBottlenecks);
    for (auto sl : tight)
        res.bottlenecks.push_back({sl / 2, t.linkNames[sl / 2], sl % 2 == 0, load[sl], ratio(sl)});
    return res;
}

template <class R>
Result<ImpactResult> impactByNameOf(const R& r, std::span<const std::string> names, Collective c,
                                    std::size_t maxBottlenecks) {
    const Topology& t = r.topology();
    std::unordered_map<std::string_view, std::int32_t> idx;
    idx.reserve(t.hostNames.size());
    for (std::size_t i = 0; i < t.hostNames.size(); ++i)
        idx.emplace(t.hostNames[i], static_cast<std::int32_t>(i));
    std::vector<std::int32_t> ids;
    ids.reserve(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        auto it = idx.find(names[i]);
        if (it == idx.end())
            return fail(Error::invalid("unknown host " + names[i], "hosts[" + std::to_string(i) + "]"));
        ids.push_back(it->second);
    }
    return impact(r, ids, c, maxBottlenecks);
}

template <class R>
std::vector<float> degradationMapOf(const R& r) {
    const Topology& t = r.topology();
    std::vector<float> out(t.rackNames.size(), 100.0f);
    const auto& leaves = t.tierSwitches[1];
    // Host-facing capacity of every leaf, counting only cables in service.
    std::vector<float> hostCap(t.switchCount(), 0.0f);
    for (std::int32_t n = 0; n < t.nicCount(); ++n) {
        auto l = t.nicLink[n];
        if (l != kNone && t.usable(l)) hostCap[t.linkB[l]] += t.linkCapGbps[l];
    }
    // The leaves a job could span: serving hosts and connected upward. A rack that is not in
    // service, or cut off entirely, is judged on its own and degrades nobody else's score.
    std::vector<std::int32_t> live;
    for (auto b : leaves) {
        if (hostCap[b] <= 0) continue;
        bool up = false;
        for (auto l : t.upLinks(b)) up |= t.usable(l);
        if (up) live.push_back(b);
    }
    std::vector<float> leafScore(t.switchCount(), 100.0f);
    for (auto a : leaves) {
        if (hostCap[a] <= 0) continue;
        float worst = 1.0f;
        auto ta = r.targetOf(a);
        for (auto b : live) {
            if (a == b) continue;
            auto tb = r.targetOf(b);
            float there = tb == kNone ? 0.0f : r.bandwidth(a, tb);
            float back = ta == kNone ? 0.0f : r.bandwidth(b, ta);
            worst = std::min({worst, there / hostCap[a], back / hostCap[a]});
        }
        leafScore[a] = 100.0f * std::max(0.0f, worst);
    }
    std::vector<std::uint8_t> anyUsable(t.rackNames.size(), 0);
    for (std::int32_t n = 0; n < t.nicCount(); ++n) {
        auto h = t.nicHost[n];
        auto rack = t.hostRack[h];
        if (rack == kNone) continue;
        auto l = t.nicLink[n];
        if (l == kNone || !t.usable(l)) continue;
        anyUsable[rack] = 1;
        out[rack] = std::min(out[rack], leafScore[t.linkB[l]]);
    }
    for (std::size_t rack = 0; rack < out.size(); ++rack)
        if (!anyUsable[rack]) out[rack] = kRackNotInService;
    return out;
}

}  // namespace

Result<ImpactResult> impact(const Router& r, std::span<const std::int32_t> hosts, Collective c,
                            std::size_t maxBottlenecks) {
    return impactOf(r, hosts, c, maxBottlenecks);
}
Result<ImpactResult> impact(const SummaryRouter& r, std::span<const std::int32_t> hosts, Collective c,
                            std::size_t maxBottlenecks) {
    return impactOf(r, hosts, c, maxBottlenecks);
}
Result<ImpactResult> impactByName(const Router& r, std::span<const std::string> names, Collective c,
                                  std::size_t maxBottlenecks) {
    return impactByNameOf(r, names, c, maxBottlenecks);
}
Result<ImpactResult> impactByName(const SummaryRouter& r, std::span<const std::string> names, Collective c,
                                  std::size_t maxBottlenecks) {
    return impactByNameOf(r, names, c, maxBottlenecks);
}
std::vector<float> degradationMap(const Router& r) { return degradationMapOf(r); }
std::vector<float> degradationMap(const SummaryRouter& r) { return degradationMapOf(r); }

}  // namespace loom::fabric
