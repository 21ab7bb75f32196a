// Hosts follow their racks (docs/api.md, "Hosts follow their racks"), as the rack's cables do
// (link_service.hpp): one rule for the reconciler's batches and the operator's rack actions
// (both in db/src/provisioning_sql.hpp followRacks).
//
//   if (!hostKeepsOwnState(host)) host = hostStateFor(rack);
#pragma once

#include "loom/provisioning/lifecycle.hpp"

namespace loom::provisioning {

// The state a host of a rack in state `rack` has: planned before burn-in (and while the rack
// is failed or in repair), burn_in, ready once validated (and while drained or in
// maintenance), in_service while the rack is in service or draining, decommissioned with it.
HostState hostStateFor(RackState rack);

// Quarantined, rma, repair, decommissioned: set for the host itself (burn-in, an operator),
// left only through the quarantine flow, never by its rack's transitions.
bool hostKeepsOwnState(HostState s);

}  // namespace loom::provisioning
