// The live per-job view of loomd (issue 15 item 2): for every running job, its GPUs' health,
// the fabric links its traffic crosses, the open events on any of them and its expected bus
// bandwidth now (jobs/job_impact.hpp on the fabric's link states, with links the telemetry
// sees down counted as down). A worker thread keeps it current:
//   - a live-state change (a rack failed or drained, an apply) reroutes its own router copy
//     incrementally and updates the jobs the change can move;
//   - a telemetry event (link_down opened or closed, a GPU event) wakes it at once;
//   - jobsChanged() (a PUT/DELETE of a job) reloads the job list from the database, as does a
//     5 s timer (other loomds' writes, the Slurm and simulator syncs).
// Each job whose summary changed is pushed on the `jobs` topic as
//   {"type": "jobHealth", "name": "llama", "health": {...}}
// and, on the leader loomd, a failure that lowers a job's busbw opens a `job_degraded` event
// (source `jobs`, location the job's name) that closes when the job recovers.
// It also answers placement requests on the same router (place()).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "loom/fabric/impact.hpp"
#include "loom/inventory/error.hpp"

namespace loom::backend {

class Services;

class JobsView {
public:
    virtual ~JobsView() = default;
    // A job was written or deleted through this loomd: reload the list now.
    virtual void jobsChanged() = 0;
    // The health object of a running job (docs/api.md, Jobs), null for other jobs or before the
    // first computation; `detail` adds the link names, bottlenecks, GPUs and events.
    virtual nlohmann::json health(const std::string& name, bool detail = false) const = 0;
    // Placement of a new job (jobs/placement.hpp) on the live fabric: racks in service, whose
    // hosts are reachable, with no failed or quarantined GPU and not in a running job. The
    // answer of POST /api/v1/placement (docs/api.md).
    virtual Result<nlohmann::json> place(int gpus, fabric::Collective pattern) = 0;
};

// The view of this loomd. The returned pointer is weak on purpose: the view is owned by the
// live-change hook registered on `services`, so its worker stops before `services` goes.
std::weak_ptr<JobsView> makeJobsView(Services& services);

}  // namespace loom::backend
