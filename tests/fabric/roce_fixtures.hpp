// The small RoCE fabrics and builders the summary tests share (summary_test,
// summary_router_test, summary_router_export_test): a topology or router from a synthetic
// inventory, the four-zone shape whose healthy tables they count, and one random failure or
// repair of a switch, applied the same way to every router under comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>

#include "link_batch.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/inventory/spec.hpp"

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

// 4 zones of 6 racks (2 hosts, 2 rails), 3 CTSWs per zone with 4 uplinks each to 4 ATSWs:
// healthy, (4 * 6 + 4 * 3) * 9 + 4 * 4 summarised entries.
inline constexpr testbed::RoceShape kFourZonesSixRacks{.zones = 4,
                                                       .racksPerZone = 6,
                                                       .hostsPerRack = 2,
                                                       .nicsPerHost = 2,
                                                       .ctswPerZone = 3,
                                                       .linksPerCtsw = 1,
                                                       .atsws = 4,
                                                       .ctswUplinks = 4};

// 3 zones of 4 racks, 3 CTSWs per zone with 3 uplinks each to 4 ATSWs: small enough to run many
// random failure sequences against the full Router.
inline constexpr testbed::RoceShape kThreeZonesFourRacks{.zones = 3,
                                                         .racksPerZone = 4,
                                                         .hostsPerRack = 2,
                                                         .nicsPerHost = 2,
                                                         .ctswPerZone = 3,
                                                         .linksPerCtsw = 1,
                                                         .atsws = 4,
                                                         .ctswUplinks = 3};

// A random switch goes down (two times in three) or comes back up, in every router given.
template <class... Routers>
void flipRandomSwitch(std::mt19937& rng, const Topology& t, Routers&... routers) {
    auto sw = static_cast<std::int32_t>(rng() % t.switchCount());
    bool up = rng() % 3 == 0;
    (routers.setSwitchUp(sw, up), ...);
}

}  // namespace loom::fabric::fixtures
