// routesDown: does switch sw reach rack target going only down (Router::mode == Down)? What
// the provisioning reconciler asks of a fabric enablement's uplink peers (at least one of them
// must route down to the rack, else the enablement is undone), on either router it holds: the
// full Router (InfiniBand) or the SummaryRouter (RoCE).
//
// The summarised tables keep no modes: there it is a route whose next hops are all down links
// of sw, which is what up/down routing gives exactly when the mode is Down (Up goes up first,
// None and Self have no hops). tests/fabric/routes_down_test.cpp checks the two equal on every
// (switch, rack) pair of dev-small and the 24k RoCE reference, healthy and after every step of
// random failure and repair sequences.
#pragma once

#include <cstdint>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"

namespace loom::fabric {

inline bool routesDown(const Router& r, std::int32_t sw, std::int32_t target) {
    return r.mode(sw, target) == RouteMode::Down;
}

bool routesDown(const SummaryRouter& r, std::int32_t sw, std::int32_t target);

}  // namespace loom::fabric
