// Lemons (issue 34 item 6; the "lemon nodes" of Meta's RSC reliability papers): a host or GPU
// that is the straggler suspect, or fails, in several different jobs within a window. One bad
// job proves little (its own code, its neighbours); the same host named by three jobs that ran
// different code beside different neighbours points at the host.
//
// The rule (docs/api.md, Lemons): a strike is (host or GPU, job, cause, time); a host or GPU with
// strikes from at least kLemonJobs different jobs in the last kLemonWindowMs is a lemon. What
// strikes:
//   - a straggler event opened on a GPU cause (thermal_throttle, power_brake, hw_slowdown,
//     low_sm_clock, ecc_pressure, xid): the GPU and its host;
//   - a host cause (host_contention, host_slow) and slow_nic (the NIC sits in the host): the host;
//   - a GPU failure while the GPU is in a running job (gpu_xid critical, gpu_ecc_dbe,
//     gpu_row_remap_failure): the GPU and its host.
// Fabric causes (pfc_storm, link_errors, flapping_link, congested_link) strike no host: the
// optic, cable or switch port is as likely at fault, and the fabric has its own events.
//
//   auto s = lemonStrikes("llama", suspect, "z1-r001-h0", nowMs);   // 0, 1 or 2 strikes
//   auto lemons = countLemons(strikes, nowMs);                       // those at the threshold
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/jobs/straggler.hpp"

namespace loom::jobs {

inline constexpr int kLemonJobs = 3;
inline constexpr std::int64_t kLemonWindowMs = std::int64_t{7} * 24 * 3600 * 1000;

struct LemonStrike {
    std::string entity;  // a host or GPU name
    std::string kind;    // "host" or "gpu"
    std::string host;    // the host (the entity itself for a host)
    std::string job;
    std::string cause;  // the straggler cause, or the failure event's kind
    std::int64_t atMs = 0;
    bool operator==(const LemonStrike&) const = default;
};

// The strikes a straggler event opened for `job` on `suspect` gives (`host`: the host of the
// suspect's GPU, or the suspect itself for a host cause; empty when unknown: no strike).
std::vector<LemonStrike> lemonStrikes(const std::string& job, const StragglerSuspect& suspect,
                                      const std::string& host, std::int64_t atMs);
// The strikes a failure event (kind, severity) on `gpu` of `host` gives while it runs `job`.
std::vector<LemonStrike> failureStrikes(const std::string& job, std::string_view kind,
                                        std::string_view severity, const std::string& gpu,
                                        const std::string& host, std::int64_t atMs);

struct Lemon {
    std::string entity, kind, host;
    int jobs = 0;                   // different jobs struck it within the window
    std::vector<std::string> list;  // "job (cause)", newest first
    std::int64_t lastMs = 0;
    bool lemon = false;  // jobs >= kLemonJobs
};
// Per host and GPU with a strike in the window ending at `nowMs`: its count (one per job, the
// newest strike of each), lemons first, then by count and name.
std::vector<Lemon> countLemons(const std::vector<LemonStrike>& strikes, std::int64_t nowMs,
                               int threshold = kLemonJobs, std::int64_t windowMs = kLemonWindowMs);

// "z1-r003-h1 is a lemon: the suspect or a failure in 3 jobs in 7 days: a (thermal_throttle),
// b (ecc_pressure), c (gpu_xid)".
std::string lemonMessage(const Lemon& l, std::int64_t windowMs = kLemonWindowMs);

}  // namespace loom::jobs
