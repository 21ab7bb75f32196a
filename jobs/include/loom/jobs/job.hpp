// Training jobs as objects (issue 15): what runs on which hosts, with which collective.
//
// A Job is read from a `kind: Job` document (YAML or JSON; `loomctl apply -f job.yaml`,
// `PUT /api/v1/jobs/<name>`), stored by the db module (db/job_repo.hpp) and served as the JSON
// of docs/api.md ("Jobs"). Hosts are given as a list of names or as a Slurm hostlist
// (hostlist.hpp); they are kept expanded, in natural order, without duplicates.
//
//   apiVersion: loom/v1
//   kind: Job
//   metadata: {name: llama-70b, labels: {team: llm}}
//   spec:
//     owner: alice
//     hosts: z1-r[001-016]-h[0-1]
//     pattern: allreduce          # allgather | alltoall
//     tensorParallel: 8           # GPUs per tensor-parallel group, inside the host (1..8)
//     state: running              # pending | running | completed | failed
//     sharesHosts: false          # true: may run on hosts another running job holds
//
//   auto job = parseJobDocument(text);  // errors name path and line: "spec.hosts (line 7)"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/fabric/impact.hpp"
#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

namespace loom::jobs {

enum class JobState : std::uint8_t { Pending, Running, Completed, Failed };
enum class JobSource : std::uint8_t { Apply, Slurm, Simulator };

std::string_view jobStateName(JobState s);
std::optional<JobState> parseJobState(std::string_view s);
std::string_view jobSourceName(JobSource s);
std::optional<JobSource> parseJobSource(std::string_view s);

inline constexpr int kGpusPerHost = 8;
inline constexpr std::size_t kMaxJobHosts = 16'384;

struct Job {
    std::string name;  // 1..128 of [A-Za-z0-9._-]
    std::string owner;
    std::vector<std::string> hosts;  // natural order, unique
    fabric::Collective pattern = fabric::Collective::AllReduce;
    int tensorParallel = 1;  // 1..kGpusPerHost: GPUs per TP group inside a host
    JobState state = JobState::Pending;
    JobSource source = JobSource::Apply;
    // Runs on hosts another running job holds, knowingly (issue 34 item 5): without it a running
    // job is refused on them (hostOverlaps, db::putJob).
    bool sharesHosts = false;
    inventory::Labels labels;

    int gpus() const { return static_cast<int>(hosts.size()) * kGpusPerHost; }
    friend bool operator==(const Job&, const Job&) = default;
};

// Checks a name (the same rule as every Loom object name); path names the field in errors.
Result<void> checkJobName(std::string_view name, std::string path = "metadata.name");

// A `kind: Job` document (YAML or JSON text). `source` is what the caller says produced it
// (apply for documents). Errors: InvalidArgument with path and line; TooLarge for a document
// over the shape limits or a hostlist over kMaxHostlistHosts.
Result<Job> parseJobDocument(std::string_view text, JobSource source = JobSource::Apply);

// Hosts sorted naturally, duplicates dropped (what a Job keeps).
std::vector<std::string> normalizedHosts(std::vector<std::string> hosts);

// Overlap (issue 34 item 5): the hosts of `hosts` that each job of `others` also names (in the
// order of `hosts`), one entry per job that shares any; a job named `self` is skipped.
struct HostOverlap {
    std::string job;
    std::vector<std::string> hosts;
};
std::vector<HostOverlap> hostOverlaps(std::string_view self, const std::vector<std::string>& hosts,
                                      const std::vector<Job>& others);
// The 409 of a running job refused on hosts others hold: names the first job and its shared
// hosts as a Slurm hostlist (and how many other jobs), path spec.hosts.
Error overlapError(const Job& job, const std::vector<HostOverlap>& overlaps);

}  // namespace loom::jobs
