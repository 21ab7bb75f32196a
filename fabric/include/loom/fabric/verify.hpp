// Verification of computed routes, and what-if analysis of a single failure.
//
// verify() checks the tables, not the algorithm that produced them: for every (switch,
// target) entry each next hop must be a usable link to a neighbour one hop closer (so every
// walk terminates at the target: no loops), a switch that goes down must only hand over to
// switches that keep going down (no down-then-up turn), and every pair of racks (every pair
// of hosts on fabrics up to kHostPairLimit backend NICs) must be reachable. It also counts
// routes per link (RoCE: entries whose ECMP group uses the link; InfiniBand: LFT entries
// forwarded over it) and reports max/avg balance over the switch-to-switch links, and warns
// about up-groups of unequal width (a fat tree that is not uniform).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"

namespace loom::fabric {

inline constexpr std::int32_t kHostPairLimit = 4096;

struct VerifyReport {
    std::int64_t entriesChecked = 0;
    std::int64_t rackPairs = 0, rackPairsUnreachable = 0;
    std::int64_t hostPairs = 0, hostPairsUnreachable = 0;  // 0 checked above kHostPairLimit
    std::int64_t loops = 0;  // next hop not one hop closer / unusable / dangling
    std::int64_t downUpTurns = 0;
    std::vector<std::string> problems;            // the first few, human readable
    std::vector<std::int64_t> linkRoutes;         // per link id
    double maxLinkRoutes = 0, avgLinkRoutes = 0;  // over switch-to-switch links in use
    // Warnings (not failures): switches whose up-groups (parallel links to one upper
    // neighbour) differ in width, within the switch or from the rest of its tier. Routing
    // copes, but the fabric is not a uniform fat tree: OpenSM's ftree refuses it.
    std::int64_t nonUniformUpGroups = 0;
    std::vector<std::string> warnings;  // the first few, human readable
    bool ok() const {
        return rackPairsUnreachable == 0 && hostPairsUnreachable == 0 && loops == 0 &&
               downUpTurns == 0;
    }
};

VerifyReport verify(const Router& router, std::size_t maxProblems = 20);

// The same check on the summarised RoCE tables (SummaryRouter: what loomd holds), without
// the full switch × rack tables. It walks the tables themselves: every entry's next hops must
// be attached, usable links to switches whose own entries reach the rack in one hop less, all
// of them (equal-length ECMP), with no loop and no down-then-up turn, and every rack must be
// reachable from every other. Entries are walked once per summarised entry: the racks of a
// zone that no switch outside it lists as a more-specific, and whose own zone's switches that
// face out reach them in the same way, share the walk of every switch outside the zone (their
// aggregate). Counts (rack pairs, loops, turns, routes per link) are per rack as verify(Router)
// gives them; entriesChecked counts summarised entries walked. The distances are the tables'
// own (verify(Router) compares with the router's shortest distances): a table that is
// consistent but longer than needed passes here.
VerifyReport verify(const SummaryRouter& router, std::size_t maxProblems = 20);

// What a single failure would cost, on a copy of the router (the input is not changed).
// Pairs are leaf-to-leaf (RoCE: rack to rack by rack name; InfiniBand: leaf to leaf).
struct FailureReport {
    std::int64_t unreachablePairs = 0;     // routed before, unreachable after
    std::int64_t degradedPairs = 0;        // still routed, with less bandwidth
    std::vector<std::string> unreachable;  // first few "a -> b"
    std::vector<std::string> degraded;     // first few "a -> b: 7200 -> 6800 Gb/s"
    UpdateStats reroute;
};
FailureReport whatIfLinkDown(const Router& router, std::int32_t link, std::size_t maxListed = 20);
FailureReport whatIfSwitchDown(const Router& router, std::int32_t sw, std::size_t maxListed = 20);

}  // namespace loom::fabric
