// The live fabric's topology as loomd's routers build it from a stored inventory snapshot (the
// API's fabric state, the jobs view's routing, the reconciler's router): switches and NICs in
// service unless their state says otherwise, every cable as stored (BuildOptions). The arrays
// that never change (names, link ends, ports, adjacency) are shared between every topology of
// the same structure in this process (fabric::TopologyArrays: one copy instead of one per
// router, ~32 MB each at 98k GPUs); each router keeps its own link states.
//
//   auto topo = buildLiveTopology(*services.inventory());
//   if (!topo) return fail(topo.error());
//   summary = std::make_shared<fabric::SummaryRouter>(std::move(*topo));
//   setLiveStates(router.get(), summary.get(), linkChanges, switchChanges);
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

namespace loom::backend {

Result<fabric::Topology> buildLiveTopology(const inventory::Inventory& inv);

// Stored link and switch changes into the router loomd holds, a full Router or the summarised
// tables (the other null): cables first, then their switches, one routing version whichever
// order. An empty list changes nothing.
void setLiveStates(fabric::Router* router, fabric::SummaryRouter* summary,
                   std::span<const std::pair<std::int32_t, fabric::LinkState>> links,
                   std::span<const std::pair<std::int32_t, bool>> switches);

}  // namespace loom::backend
