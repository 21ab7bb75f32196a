// Training jobs (migration 0011_jobs.sql): put (create or replace), get, list with the API's
// filters, delete, and the bulk sync of one source's jobs (the simulator's, the Slurm adapter's)
// in one statement, whatever their number.
//
//   auto w = putJob(conn, job, {.actor = "ci"});        // w->created, w->stored.resourceVersion
//   auto page = listJobs(conn, {.filters = {{"state", "running"}}});
//   syncJobs(conn, JobSource::Simulator, running);      // others of that source: completed
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/db/database.hpp"
#include "loom/inventory/error.hpp"
#include "loom/jobs/job.hpp"

namespace loom::db {

struct StoredJob {
    jobs::Job job;
    std::string nodelist;  // the Slurm hostlist of job.hosts
    std::int64_t resourceVersion = 0;
    std::string createdAt, updatedAt, finishedAt;  // ISO 8601 UTC; finishedAt empty while not
};

struct PutJobOptions {
    std::optional<std::int64_t> ifMatch;  // expected resourceVersion; stale -> 412
    std::string actor;
    // A running job on hosts another running job (not the simulator's) holds is refused
    // (Conflict: jobs::overlapError) unless job.sharesHosts; only the hosts it newly claims.
    bool refuseOverlap = true;
};
struct PutJobResult {
    StoredJob stored;
    bool created = false;
    bool changed = false;  // false: the stored job was already equal (resourceVersion kept)
};
// Create or replace by name. A job of another source is replaced too (an operator's document
// wins), and its source becomes the new one.
Result<PutJobResult> putJob(Connection& conn, const jobs::Job& job,
                            const PutJobOptions& options = {});

Result<StoredJob> getJob(Connection& conn, const std::string& name);
// NotFound when there is no such job; returns what was deleted.
Result<StoredJob> deleteJob(Connection& conn, const std::string& name);

struct JobQuery {
    int limit = 500;     // 1..5000
    std::string cursor;  // from a previous page
    // name owner state source pattern nodelist hostCount tensorParallel (with NetBox lookups,
    // name__ic=llama), host=<name> (the jobs on that host), label.<key>=<value>.
    std::vector<std::pair<std::string, std::string>> filters;
};
struct JobPage {
    std::vector<StoredJob> items;  // in natural order of names (train-2 before train-10)
    std::string nextCursor;
};
Result<JobPage> listJobs(Connection& conn, const JobQuery& query);
std::vector<std::string> jobFilterFields();

// Every job in one of these states (the live per-job view loads the running ones).
Result<std::vector<StoredJob>> jobsInState(Connection& conn, jobs::JobState state);

struct SyncResult {
    int created = 0, updated = 0, finished = 0;
};
// Makes the stored jobs of `source` match `running`: each is upserted (its state as given),
// jobs of that source that are not in the list and not finished become `completed`, and
// finished jobs of that source older than `keepFinishedSeconds` are deleted. Jobs of other
// sources with the same name are left alone (the name belongs to them). One transaction.
// Never refuses an overlap: a running job of the list on hosts another running job holds (of
// the list or of another source, not the simulator) is stored with sharesHosts (Slurm gives one
// node's GPUs to several jobs); the simulator's jobs are stored as given.
Result<SyncResult> syncJobs(Connection& conn, jobs::JobSource source,
                            const std::vector<jobs::Job>& running, int keepFinishedSeconds = 3600);

}  // namespace loom::db
