// Hosts and switches follow their racks (docs/api.md, "Hosts and switches follow their racks"),
// as the rack's cables do (link_service.hpp): one rule for the reconciler's batches and the
// operator's rack actions (both in db/src/provisioning_sql.hpp followRacks), and for the leader's
// live-state sync, which keeps the switches outside racks (and anything a crash left) in step.
//
//   if (!hostKeepsOwnState(host)) host = hostStateFor(rack);
//   switch = switchStateFor(rack);                       // a switch in a rack
//   auto want = desiredSwitchStates(owners, rackStates);  // every switch, one per inventory row
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "loom/provisioning/lifecycle.hpp"
#include "loom/provisioning/link_service.hpp"

namespace loom::provisioning {

// The state a host of a rack in state `rack` has: planned before burn-in (and while the rack
// is failed or in repair), burn_in, ready once validated (and while drained or in
// maintenance), in_service while the rack is in service or draining, decommissioned with it.
HostState hostStateFor(RackState rack);

// Quarantined, rma, repair, decommissioned: set for the host itself (burn-in, an operator),
// left only through the quarantine flow, never by its rack's transitions.
bool hostKeepsOwnState(HostState s);

// A switch in a rack (RTSW, fsw, ssw) has its rack's state, by the rack's name for it
// (`in_service`, `failed`, ...): what discovery labels it with and what the fabric reads (a
// failed, drained, maintenance or decommissioned rack's switch is down, fabric/topology.hpp).
// A switch has no state of its own: no action sets one.
std::string_view switchStateFor(RackState rack);

// A switch outside racks (CTSW, ATSW, spine, core, fcsw) serves its zone as that zone's cables
// do: `in_service` while a rack of its zone has its cables active, `planned` otherwise (one above
// zones: while any rack does). The state of every inventory switch, indexed like inv.switches
// (owners built from the same snapshot).
std::vector<std::string_view> desiredSwitchStates(const LinkOwners& owners,
                                                  std::span<const RackState> rackStates);

}  // namespace loom::provisioning
