// Per-job impact, live (issue 15 item 2): for every job, the bus bandwidth its collective gets on
// the fabric's current link states (fabric/impact.hpp, 0..100), the links its traffic crosses,
// and whether a failure degraded it — kept up to date as links change.
//
// The tracker holds one result per job. After the router's link states change, only the jobs
// the change can move are recomputed: a link that went down moves only the jobs whose traffic
// crossed it (a fluid ECMP split sends some of every flow down every branch, so a job that
// never crossed the link keeps its routes and its rate); a link that came back may draw
// traffic of any job, so then every job is recomputed (a 4,096-GPU ring costs ~0.5 ms).
//
// Degraded: the busbw is more than kDegradedMargin points below the best the job had since its
// hosts were set (its healthy value), or some of its traffic has no route at all (a NIC cable
// or every path down: busbw 0, whatever the job had before — a job placed on a broken fabric is
// degraded from its first computation, never "ok" at 0 %). The links to blame are those it
// crossed that are not usable now. What the server turns into a `job_degraded` event:
//   "job llama-70b degraded to 62% busbw by link z1-r005-rtsw/p20--z1-ctsw04/p5 down"
//
//   JobImpactTracker t;
//   auto changed = t.setJobs(router, {{"llama", hosts, Collective::AllReduce}});
//   router.setLinkState(l, LinkState::Down);
//   for (auto& c : t.linksChanged(router, std::array{l}))
//       if (c.degradation == Degradation::Opened) openEvent(c.name, c.message);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/fabric/impact.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/jobs/router_ref.hpp"

namespace loom::jobs {

inline constexpr double kDegradedMargin = 0.5;  // busbw points below healthy that count

struct JobImpactInput {
    std::string name;
    std::vector<std::string> hosts;
    fabric::Collective pattern = fabric::Collective::AllReduce;
};

struct JobImpact {
    std::string name;
    std::vector<std::string> hosts;
    fabric::Collective pattern = fabric::Collective::AllReduce;
    std::vector<std::int32_t> hostIds;      // topology ids of the hosts the fabric knows
    std::vector<std::string> unknownHosts;  // hosts with no backend NIC in the fabric
    double busBw = 100;                     // expected busbw now, 0..100
    double healthyBusBw = 100;              // the best seen since the hosts were set
    std::int64_t unroutedFlows = 0;
    std::vector<std::int32_t> links;        // crossed now, ascending link ids
    std::vector<std::int32_t> everCrossed;  // crossed at any time since the hosts were set
    std::vector<std::int32_t> downLinks;    // of everCrossed: not usable now
    std::vector<fabric::Bottleneck> bottlenecks;
    std::string error;          // the impact model refused the job (e.g. alltoall over 1,024 hosts)
    std::uint64_t version = 0;  // bumped each time busBw, links or degraded change
    bool degraded() const {
        return error.empty() && (busBw < healthyBusBw - kDegradedMargin || unroutedFlows > 0);
    }
};

enum class Degradation : std::uint8_t { None, Opened, Closed };

struct JobChange {
    std::string name;
    Degradation degradation = Degradation::None;
    std::string message;  // for Opened and Closed: the event text
};

class JobImpactTracker {
public:
    // Replaces the job list. Jobs whose hosts or pattern are new or changed are computed (and
    // reported); the others keep their results, healthy values and open degradations. A job
    // that disappears is reported with Degradation::Closed if it was degraded.
    std::vector<JobChange> setJobs(RouterRef r, std::vector<JobImpactInput> jobs);

    // After the router's link states changed (link ids of r's topology): recomputes the jobs
    // that can move (see above); returns those whose busbw, links or degradation changed.
    std::vector<JobChange> linksChanged(RouterRef r, std::span<const std::int32_t> links);

    // A new topology (link and host ids moved): every job is mapped and computed again; the
    // healthy values and open degradations carry over by job name.
    std::vector<JobChange> recomputeAll(RouterRef r);

    const JobImpact* find(std::string_view name) const;
    const std::vector<JobImpact>& jobs() const { return jobs_; }
    std::uint64_t recomputed() const { return recomputed_; }  // impact runs so far

private:
    // Computes one job; returns true when something a client sees changed.
    bool compute(RouterRef r, JobImpact& j);
    JobChange changeOf(RouterRef r, const JobImpact& j, bool wasDegraded) const;

    std::vector<JobImpact> jobs_;
    std::unordered_map<std::string, std::size_t> byName_;
    std::uint64_t recomputed_ = 0;
};

// "job X degraded to 62% busbw by link Y down" (up to three links named, then "+N more").
std::string degradedMessage(const fabric::Topology& t, const JobImpact& j);
// "job X recovered to 100% busbw".
std::string recoveredMessage(const JobImpact& j);

// What a job's health is shown as, in one word: loomd sends it as `health.status`, and
// loomctl's HEALTH column, the web dashboard and the console show it (one rule, not one per
// client). The first that holds: "degraded" (JobImpact::degraded), "gpu-failed", "unknown" (the
// impact model refused the job), "links-down" (a link under the job is down without costing
// busbw), "gpu-warning" (a GPU with a warning event, or quarantined), else "ok".
struct JobHealthFacts {
    bool degraded = false;
    bool modelError = false;
    std::int64_t gpusFailed = 0, gpusWarning = 0, gpusQuarantined = 0;
    std::size_t linksDown = 0;
};
std::string_view jobHealthStatus(const JobHealthFacts& f);

}  // namespace loom::jobs
