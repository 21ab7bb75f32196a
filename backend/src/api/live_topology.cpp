#include "live_topology.hpp"

namespace loom::backend {

Result<fabric::Topology> buildLiveTopology(const inventory::Inventory& inv) {
    // One per process: a second loomd in the same process (tests) shares only what is equal.
    // Never destroyed: a worker thread still building at exit must not meet a destroyed mutex.
    static auto* const shared = new fabric::TopologyArrays;
    auto topo = fabric::buildTopology(inv, {.plannedIsUp = true, .storedLinkStates = true});
    if (topo) shared->share(*topo);
    return topo;
}

void setLiveStates(fabric::Router* router, fabric::SummaryRouter* summary,
                   std::span<const std::pair<std::int32_t, fabric::LinkState>> links,
                   std::span<const std::pair<std::int32_t, bool>> switches) {
    if (router) {
        if (!links.empty()) router->setLinkStates(links);
        if (!switches.empty()) router->setSwitchesUp(switches);
    } else {
        if (!links.empty()) summary->setLinkStates(links);
        if (!switches.empty()) summary->setSwitchesUp(switches);
    }
}

}  // namespace loom::backend
