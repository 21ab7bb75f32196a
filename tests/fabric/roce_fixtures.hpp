// The small RoCE fabrics and builders the summary tests share (summary_test,
// summary_router_test, summary_router_export_test): a topology or router from a synthetic
// inventory, the shapes they share (roce_shapes.hpp), and one random failure or repair of a
// switch, applied the same way to every router under comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>

#include "link_batch.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/inventory/spec.hpp"
#include "roce_shapes.hpp"

namespace loom::fabric::fixtures {

// A shipped cluster spec (configs/clusters/<file>) loaded; a failure is reported, with an
// empty inventory returned.
inline inventory::Inventory fromSpec(const std::string& file) {
    auto inv =
        inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + file);
    if (!inv) ADD_FAILURE() << file << ": " << inv.error().toString();
    return inv ? std::move(*inv) : inventory::Inventory{};
}

inline Topology roceTopology(const inventory::Inventory& inv) {
    auto topo = buildTopology(inv);
    EXPECT_TRUE(topo.has_value()) << topo.error().toString();
    return std::move(*topo);
}

inline Router roceRouter(const inventory::Inventory& inv) { return Router(roceTopology(inv)); }

// A random switch goes down (two times in three) or comes back up, in every router given.
template <class... Routers>
void flipRandomSwitch(std::mt19937& rng, const Topology& t, Routers&... routers) {
    auto sw = static_cast<std::int32_t>(rng() % t.switchCount());
    bool up = rng() % 3 == 0;
    (routers.setSwitchUp(sw, up), ...);
}

}  // namespace loom::fabric::fixtures
