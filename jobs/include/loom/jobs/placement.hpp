// Placement (issue 15 item 4): which racks a new job of N GPUs should get so that its
// collective has the highest expected bus bandwidth on the fabric as it is now.
//
// Candidates are the racks the caller says are available (in service, not in a job) whose
// hosts are all reachable (every backend NIC cable usable). Each candidate gets an uplink score:
// for each leaf its NICs reach, the usable capacity up over the usable capacity down to hosts,
// minimum over its leaves (not capped: more headroom ranks higher). The job takes:
//   1. one zone when a zone has enough candidates (no zone crossing): in each such zone the
//      best-scored racks (ties by name, so a ring runs rack to rack), and of those options the
//      one whose worst rack scores best;
//   2. otherwise the fewest zones, largest first, each contributing its best-scored racks;
// then up to kPlacementRefinements swaps: a chosen rack at the end of a bottleneck link of the
// impact model is replaced by the best unused candidate while the busbw improves.
// The result's busBw is fabric::impact of the hosts in name order (the ring a job keeps).
// First fit (the baseline of bench/jobs) takes the available racks by name.
//
//   auto avail = availableRacks(router.topology(), inServiceAndFree);
//   auto p = placeJob(router, {.gpus = 4096, .pattern = Collective::AllReduce}, avail);
//   formatHostlist(p->hosts);  // the Slurm nodelist
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/fabric/impact.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/inventory/error.hpp"
#include "loom/jobs/router_ref.hpp"

namespace loom::jobs {

inline constexpr int kPlacementRefinements = 8;

struct PlacementRequest {
    int gpus = 0;  // > 0
    fabric::Collective pattern = fabric::Collective::AllReduce;
};

struct Placement {
    std::vector<std::int32_t> racks;  // topology rack ids, ascending
    std::vector<std::string> hosts;   // natural order
    double busBw = 0;                 // expected, 0..100
    int zones = 0;                    // zones the racks span
    int gpus = 0;                     // GPUs of the chosen racks (>= the request)
};

// Per topology rack: 1 when `free[rack]` and every backend NIC cable of its hosts is usable and
// it has hosts. `free` empty = every rack is free.
std::vector<std::uint8_t> availableRacks(const fabric::Topology& t,
                                         const std::vector<std::uint8_t>& free = {});

// Errors: gpus <= 0 (InvalidArgument, path "gpus"); not enough available GPUs (Conflict, the
// message says how many are available).
Result<Placement> placeJob(RouterRef r, const PlacementRequest& req,
                           const std::vector<std::uint8_t>& available);
Result<Placement> placeFirstFit(RouterRef r, const PlacementRequest& req,
                                const std::vector<std::uint8_t>& available);

}  // namespace loom::jobs
