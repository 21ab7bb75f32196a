// InfiniBand half of the Router: LID assignment and the LFT entry of one (switch, target)
// (split out of routing.cpp, issue 10: no file over 600 lines).
#include <algorithm>

#include "loom/fabric/routing.hpp"

namespace loom::fabric {

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
        // Target-major blocks: a target's LIDs (its HCAs, then its own switch LID) for every
        // switch are contiguous, so routing one target writes one block, not a column.
        lidTarget_.assign(maxLid_ + 1, kNone);
        lidCol_.assign(maxLid_ + 1, 0);
        lftBlock_.assign(targets_.size(), 0);
        lftWidth_.assign(targets_.size(), 0);
        std::size_t total = 0;
        for (std::size_t ti = 0; ti < targets_.size(); ++ti) {
            auto w = targetNicBegin_[ti + 1] - targetNicBegin_[ti] + 1;
            lftBlock_[ti] = total;
            lftWidth_[ti] = w;
            total += static_cast<std::size_t>(w) * S;
            for (auto i = targetNicBegin_[ti]; i < targetNicBegin_[ti + 1]; ++i) {
                lidTarget_[nicLid_[targetNics_[i]]] = static_cast<std::int32_t>(ti);
                lidCol_[nicLid_[targetNics_[i]]] =
                    static_cast<std::uint16_t>(i - targetNicBegin_[ti]);
            }
            lidTarget_[switchLid_[targets_[ti]]] = static_cast<std::int32_t>(ti);
            lidCol_[switchLid_[targets_[ti]]] = static_cast<std::uint16_t>(w - 1);
        }
        lft_.assign(total, kNoPort);
    }
}

// Writes the LFT entries of switch s for the LIDs that target ti stands for (its HCAs and
// its own switch LID), from the current mode and the next hops in w.hops. The target's
// HCA LIDs are consecutive, so the d-mod-k choice advances with a counter, not a division.
void Router::writeLft(Work& w, std::int32_t s, std::int32_t ti, const Slot& c) const {
    if (c.lftOnly != kNone && s != c.lftOnly) return;
    const auto t = targets_[ti];
    std::uint8_t* row =
        c.lftOnly != kNone ? c.lft : c.lft + static_cast<std::size_t>(s) * lftWidth_[ti];
    const auto m = c.mode[s];
    const auto first = targetNicBegin_[ti], last = targetNicBegin_[ti + 1];
    const auto slid = switchLid_[t];
    if (m == RouteMode::None || (m != RouteMode::Self && w.hops.empty())) {
        std::fill_n(row, lftWidth_[ti], kNoPort);
        return;
    }
    if (m == RouteMode::Self) {
        for (auto i = first; i < last; ++i) {
            auto nic = targetNics_[i];
            auto l = topo_.nicLink[nic];
            row[i - first] = (l != kNone && c.up[l] && topo_.linkBPort[l] <= 254)
                                 ? static_cast<std::uint8_t>(topo_.linkBPort[l])
                                 : kNoPort;
        }
        row[last - first] = 0;
        return;
    }
    const auto n = static_cast<std::int32_t>(w.hops.size());
    w.ports.resize(n);
    for (std::int32_t i = 0; i < n; ++i) {
        auto l = w.hops[i].link;
        auto port = topo_.linkA[l] == s ? topo_.linkAPort[l] : topo_.linkBPort[l];
        w.ports[i] = port > 254 ? kNoPort : static_cast<std::uint8_t>(port);
    }
    // d-mod-k: a leaf spreads destinations over its uplinks by LID; the tier above divides
    // the LID by the leaf's uplink count first, so the two choices are independent.
    const bool divide = m == RouteMode::Up && topo_.switchTier[s] >= 2;
    const std::int32_t U = divide ? tier1Up_ : 1;
    if (first < last) {
        const std::int32_t key0 = nicLid_[targetNics_[first]] - 1;
        std::int32_t q = key0 / U, r = key0 % U, idx = q % n;
        for (auto i = first; i < last; ++i) {
            row[i - first] = w.ports[idx];
            if (++r == U) {
                r = 0;
                if (++idx == n) idx = 0;
            }
        }
    }
    row[last - first] = w.ports[((slid - 1) / U) % n];
}

std::vector<std::uint8_t> Router::lftRowWith(std::int32_t sw, LinkStates linkStates,
                                             SwitchUps switches) const {
    std::vector<std::uint8_t> row(static_cast<std::size_t>(maxLid_) + 1, kNoPort);
    if (roce_) return row;
    const auto S = topo_.switchCount();
    std::vector<std::uint8_t> up(up_), switchUp(topo_.switchUp);
    for (auto [s, u] : switches) switchUp[s] = u ? 1 : 0;
    for (auto [l, st] : linkStates) up[l] = usableIn(topo_, linkStates, l, switches) ? 1 : 0;
    // A switch of another up-ness changes the usability of each of its links.
    for (auto [s, u] : switches)
        for (auto i = topo_.adjOffset[s]; i < topo_.adjOffset[s + 1]; ++i)
            up[topo_.adjLink[i]] = usableIn(topo_, linkStates, topo_.adjLink[i], switches) ? 1 : 0;
    std::vector<RouteMode> mode(S);
    std::vector<std::uint8_t> dist(S), lft;
    std::vector<float> bw(S);
    Work w;
    w.init(S);
    for (std::int32_t ti = 0; ti < targetCount(); ++ti) {
        lft.assign(lftWidth_[ti], kNoPort);
        computeTarget(w, ti,
                      {mode.data(), dist.data(), bw.data(), nullptr, lft.data(), up.data(),
                       switchUp.data(), sw});
        const auto first = targetNicBegin_[ti], last = targetNicBegin_[ti + 1];
        for (auto i = first; i < last; ++i) row[nicLid_[targetNics_[i]]] = lft[i - first];
        row[switchLid_[targets_[ti]]] = lft[last - first];
    }
    return row;
}

}  // namespace loom::fabric
