// StragglerFinder: the straggler finder's once-a-second pass over the live telemetry (issue 15
// item 3): what loomd runs on its telemetry tick (backend/src/services/telemetry_service.cpp)
// and bench/jobs/straggler_bench.cpp measures. Pure (reads a TelemetryHub, no I/O).
//
// For each running job it reads its GPUs (SM clock, temperature, power, the correctable ECC
// counter, XID), the switch port of each GPU's NIC cable (utilisation smoothed over a few
// seconds, PFC pause and error counters, up/down transitions; a shared host's NIC utilisation is
// not compared: FinderJob::sharesHosts) and the RTSW uplinks of the
// job's racks (the same, plus discards); counters become rates since the previous tick. Then
// rankStragglers + rankLinks rank the suspects and the StragglerDetector turns a steady top
// suspect into an event.
//
//   StragglerFinder finder;
//   finder.setJobs({{"llama", {"z1-r001-h0", "z1-r001-h1"}}});  // when the job list changes
//   for (auto& t : finder.tick(hub, nowMs)) writeEvent(t);      // once a second
//   for (auto& j : finder.current()) show(j.job, j.suspects);   // the last ranking
//
// Not thread-safe: one thread ticks it (the hub it reads is safe to read concurrently).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/jobs/straggler.hpp"

namespace loom::telemetry {
class HallLayout;
class TelemetryHub;
}  // namespace loom::telemetry

namespace loom::jobs {

struct FinderJob {
    std::string name;
    std::vector<std::string> hosts;  // inventory host names
    // The job says it may share its hosts (spec.sharesHosts; Slurm's jobs): its NICs carry
    // traffic that is not only its own, so none of them is compared with its job's median. A
    // host two listed jobs hold is left out of both jobs' NIC comparisons the same way.
    bool sharesHosts = false;
    bool operator==(const FinderJob&) const = default;
};

// One job after a tick.
struct JobSuspects {
    std::string job;
    std::size_t ranks = 0;                   // GPUs found in the layout
    std::vector<StragglerSuspect> suspects;  // best first; empty when nothing stands out
    // The job's open straggler events (one per suspect location), highest score first: the
    // first is the job's `straggler` in the API.
    std::vector<StragglerSuspect> open;
};

class StragglerFinder {
public:
    explicit StragglerFinder(StragglerOptions options = {});
    ~StragglerFinder();
    StragglerFinder(StragglerFinder&&) noexcept;
    StragglerFinder& operator=(StragglerFinder&&) noexcept;

    // The running jobs. Jobs no longer listed close their open event at the next tick. The same
    // list again (loomd reads it every few seconds) changes nothing.
    void setJobs(std::vector<FinderJob> jobs);

    // One pass at `nowMs`: the transitions (opened and closed events), in job order.
    std::vector<StragglerTransition> tick(const telemetry::TelemetryHub& hub, std::int64_t nowMs);

    // Every job of the last tick, in setJobs order.
    const std::vector<JobSuspects>& current() const;

    // Takes over an event opened earlier (by another leader, or before a restart) for a job of
    // the list: open from now on, closed as any other (StragglerDetector::adopt). Its suspect
    // comes from the stored event, with no score; the job's first ranking that names the same
    // location gives it one. A job can take over several (one per location). False (nothing
    // taken) for a job not in the list.
    bool adopt(const std::string& job, StragglerSuspect suspect);

    // Closes every open event (leadership lost, shutdown): their transitions.
    std::vector<StragglerTransition> reset();

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace loom::jobs
