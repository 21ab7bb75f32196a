#include "live_topology.hpp"

namespace loom::backend {

Result<fabric::Topology> buildLiveTopology(const inventory::Inventory& inv) {
    // One per process: a second loomd in the same process (tests) shares only what is equal.
    static fabric::TopologyArrays shared;
    auto topo = fabric::buildTopology(inv, {.plannedIsUp = true, .storedLinkStates = true});
    if (topo) shared.share(*topo);
    return topo;
}

}  // namespace loom::backend
