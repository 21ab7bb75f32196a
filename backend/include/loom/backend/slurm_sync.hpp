// Slurm's jobs kept in step with Loom (issue 15 item 1): `squeue --json -t all` read into Jobs
// of source `slurm` (jobs/slurm.hpp) and stored with db::syncJobs — each job upserted with its
// state, a `slurm` job no longer in the output and not finished becomes `completed` (Slurm
// forgets ended jobs after MinJobAge), finished ones are deleted an hour after they ended.
//
// Two ways in, the same code:
//   - POST /api/v1/jobs/sync/slurm with the output as the body (`loomctl jobs sync-slurm`,
//     from a file or by running squeue itself on the operator's machine);
//   - SlurmPoller: `jobs.slurm` in loomd.yaml; the leader loomd runs the command every
//     `intervalSeconds` and syncs what it printed.
//
//   SlurmPoller poller(services, cfg.slurm);   // nothing runs without a command
//   poller.start();                            // a thread; stop() or the destructor
//   services.addMetricsSource([&](std::string& out) { poller.appendMetrics(out); });
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "loom/inventory/error.hpp"

namespace loom::db {
class Connection;
}

namespace loom::backend {

class Services;

struct SlurmSyncConfig {
    // Run by /bin/sh -c; its stdout is the `squeue --json` output. Empty: no poller.
    std::string command;
    std::chrono::seconds interval{10};
    std::chrono::seconds timeout{30};
    bool enabled() const { return !command.empty(); }
};

// Parses `squeue --json` text and syncs it; publishes {"type": "jobsSynced", "source":
// "slurm", ...} on the `jobs` topic when something changed. Answers {"source": "slurm",
// "jobs": N, "created": c, "updated": u, "finished": f}. Bad text: InvalidArgument naming the
// place (`jobs[2].nodes`).
Result<nlohmann::json> syncSlurmJobs(db::Connection& conn, Services& services,
                                     std::string_view squeueJson);

class SlurmPoller {
public:
    SlurmPoller(Services& services, SlurmSyncConfig config);
    ~SlurmPoller();
    SlurmPoller(const SlurmPoller&) = delete;
    SlurmPoller& operator=(const SlurmPoller&) = delete;
    void start();  // no-op without a command
    void stop();
    // loom_slurm_syncs_total, loom_slurm_sync_failures_total, loom_slurm_jobs,
    // loom_slurm_last_sync_timestamp_seconds, loom_slurm_sync_seconds (the last one).
    void appendMetrics(std::string& out) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace loom::backend
