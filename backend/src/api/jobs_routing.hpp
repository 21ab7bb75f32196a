// The jobs view's own routing (jobs_view.hpp): the live fabric's routing as the per-job impact
// reads it — the summarised tables on RoCE (fabric::SummaryRouter: the same impact answers as a
// full Router, tests/jobs/summary_jobs_test.cpp; ~50 MB at 98k GPUs instead of ~400 MB), a full
// Router on InfiniBand (its LFTs are per LID) — kept at the live inventory's stored link and
// switch states (a switch follows its rack, fabric::liveSwitchState), with the links telemetry
// reports down forced down. Split from jobs_view.cpp.
//
//   bool rebuilt;
//   auto changed = routing.sync(services.inventory(), layout->layoutVersion(), downLinks, rebuilt);
//   if (routing.built()) tracker.linksChanged(routing.get(), *changed);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "loom/fabric/link_sync.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/inventory/model.hpp"
#include "loom/jobs/router_ref.hpp"

namespace loom::backend {

class JobsRouting {
public:
    // Brings the routing to `inv`: rebuilt from it when there is none or `layoutVersion` moved
    // (`rebuilt` set, nullopt returned: every link id may have moved), else the stored link
    // and switch states that changed since the last sync, with the links named in `down`
    // (telemetry's open link_down events) kept down. Returns the links whose routing state
    // changed (every link of a switch that went down or came back).
    std::optional<std::vector<std::int32_t>> sync(
        const std::shared_ptr<const inventory::Inventory>& inv, std::int64_t layoutVersion,
        const std::vector<std::string_view>& down, bool& rebuilt);

    bool built() const { return router_ || summary_; }
    // Only when built().
    jobs::RouterRef get() const {
        return router_ ? jobs::RouterRef(*router_) : jobs::RouterRef(*summary_);
    }

private:
    std::unique_ptr<fabric::Router> router_;          // InfiniBand
    std::unique_ptr<fabric::SummaryRouter> summary_;  // RoCE
    fabric::LinkNameIndex linkIds_;
    fabric::LinkNameIndex::Memo linkMemo_;      // changes() by pointers (link_sync.hpp)
    std::vector<fabric::LinkState> stored_;     // the inventory's state of every router link
    std::unordered_set<std::int32_t> applied_;  // links forced down by open link_down events
    // The snapshot last synced to: weak, so an old snapshot (hundreds of MB at 98k) is not
    // kept alive while no job needs the routing.
    std::weak_ptr<const inventory::Inventory> syncedFrom_;
    std::int64_t builtLayout_ = -1;
};

}  // namespace loom::backend
