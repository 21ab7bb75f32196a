// Slurm's jobs as Job objects of source "slurm" (issue 15 item 1): what `squeue --json` and
// `scontrol show job` print, read into the jobs db::syncJobs stores. Checked against the
// outputs of slurm-wlm 22.05.8 (slurmctld + four slurmd on one machine; how they were recorded:
// tests/jobs/data/slurm/README.md).
//
//   auto jobs = parseSqueueJson(text);       // `squeue --json -t all`
//   auto same = parseScontrolShowJob(text);  // `scontrol show job`
//
// A Slurm job becomes: name "slurm-<job id>", owner the user name, hosts its allocated nodes
// (none while pending), state pending (PENDING, CONFIGURING, REQUEUED...), running (RUNNING,
// COMPLETING, SUSPENDED), completed (COMPLETED) or failed (CANCELLED, FAILED, TIMEOUT,
// NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE), tensorParallel 8 (a training job
// on Grand Teton hosts), labels slurm.id, slurm.name, slurm.partition, slurm.state.
// Errors name the job and field ("jobs[2].nodes: ..."); bad text is InvalidArgument.
//
// Bounded while parsing, whatever the text: of `squeue --json` only the six fields read are
// kept (kMaxSlurmValues values at most, as every request body), a job names at most
// kMaxJobHosts hosts and all jobs of one output kMaxSlurmHosts hosts of kMaxSlurmHostBytes
// characters together, each name at most 128 characters (TooLarge / InvalidArgument otherwise,
// found before a name is built).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"
#include "loom/jobs/job.hpp"

namespace loom::jobs {

inline constexpr std::size_t kMaxSlurmValues = 200'000;  // the request body limit of loomd
inline constexpr int kMaxSlurmDepth = 64;
// 8x the hosts of the 98k reference cluster: `squeue -t all` lists finished jobs too.
inline constexpr std::size_t kMaxSlurmHosts = 131'072;
inline constexpr std::size_t kMaxSlurmHostBytes = std::size_t{4} << 20;
// A job's user, name, partition and state (stored as owner and labels).
inline constexpr std::size_t kMaxSlurmFieldChars = 256;

Result<std::vector<Job>> parseSqueueJson(std::string_view text);
Result<std::vector<Job>> parseScontrolShowJob(std::string_view text);

// The Job state of a Slurm state name (the first word of "CANCELLED by 0" too).
JobState slurmJobState(std::string_view slurmState);

}  // namespace loom::jobs
