#include "jobs_routing.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "live_topology.hpp"
#include "loom/fabric/topology.hpp"

namespace loom::backend {

namespace {

// True when `w` still names the object `p` owns (an expired pointer names none: its control
// block lives while `w` does, so a new snapshot never compares equal to it).
template <class T>
bool sameSnapshot(const std::weak_ptr<T>& w, const std::shared_ptr<T>& p) {
    return !w.owner_before(p) && !p.owner_before(w) && !w.expired();
}

}  // namespace

std::optional<std::vector<std::int32_t>> JobsRouting::sync(
    const std::shared_ptr<const inventory::Inventory>& inv, std::int64_t layoutVersion,
    const std::vector<std::string_view>& down, bool& rebuilt) {
    rebuilt = false;
    if (!built() || layoutVersion != builtLayout_) {
        auto topo = buildLiveTopology(*inv);
        if (!topo) {
            spdlog::warn("jobs view: {}", topo.error().toString());
            return std::vector<std::int32_t>{};
        }
        linkIds_ = fabric::LinkNameIndex(*topo);
        linkMemo_ = {};
        stored_ = topo->linkState;
        router_.reset();
        summary_.reset();
        if (topo->type == inventory::FabricType::Roce)
            summary_ = std::make_unique<fabric::SummaryRouter>(std::move(*topo));
        else
            router_ = std::make_unique<fabric::Router>(std::move(*topo));
        builtLayout_ = layoutVersion;
        syncedFrom_ = inv;
        applied_.clear();
        rebuilt = true;
    }
    std::vector<std::pair<std::int32_t, fabric::LinkState>> set;
    std::vector<std::pair<std::int32_t, bool>> switches;  // (switch, up) the snapshot moved
    const auto& t = get().topology();
    if (!sameSnapshot(syncedFrom_, inv)) {
        syncedFrom_ = inv;
        switches = fabric::switchChanges(t, linkIds_.switchStates(t, *inv));
        // changes() compares with the routing, whose overlay links differ on purpose: the
        // stored state is remembered, the routing keeps them down.
        for (auto [l, s] : linkIds_.changes(t, *inv, linkMemo_)) {
            stored_[l] = s;
            if (!applied_.contains(l)) set.emplace_back(l, s);
        }
    }
    std::unordered_set<std::int32_t> want;
    for (auto name : down)
        if (auto l = linkIds_.find(t, name); l != fabric::kNone) want.insert(l);
    for (auto l : want)
        if (!applied_.contains(l) && t.linkState[l] != fabric::LinkState::Down)
            set.emplace_back(l, fabric::LinkState::Down);
    for (auto l : applied_)
        if (!want.contains(l)) set.emplace_back(l, stored_[l]);
    applied_ = std::move(want);
    std::vector<std::int32_t> changed;
    std::vector<std::pair<std::int32_t, fabric::LinkState>> effective;
    for (auto [l, s] : set)
        if (t.linkState[l] != s) {
            effective.emplace_back(l, s);
            changed.push_back(l);
        }
    // Switches follow their racks as cables do (fabric::liveSwitchState): a switch that goes
    // down or comes back changes the usability of each of its links.
    for (auto [sw, up] : switches)
        for (auto i = t.adjOffset[sw]; i < t.adjOffset[sw + 1]; ++i)
            changed.push_back(t.adjLink[i]);
    if (!switches.empty()) {
        std::sort(changed.begin(), changed.end());
        changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    }
    setLiveStates(router_.get(), summary_.get(), effective, switches);
    if (rebuilt) return std::nullopt;
    return changed;
}

}  // namespace loom::backend
