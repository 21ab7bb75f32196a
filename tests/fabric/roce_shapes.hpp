// The small RoCE shapes the fabric and jobs tests share (testbed::RoceShape), in a header of
// their own: tests/jobs includes it without roce_fixtures.hpp's spec loading (LOOM_SOURCE_DIR).
#pragma once

#include "loom/fabric/testbed.hpp"

namespace loom::fabric::fixtures {

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

// 4 zones of 4 racks, 3 CTSWs per zone with 3 uplinks each to 4 ATSWs: few racks per zone, so
// failures often leave a zone without a majority group (the aggregate's tie rule: the group of
// the lowest rack), small enough to compare the SummaryRouter with a full Router under many
// random failure sequences (summary_router_export_test, tests/jobs/summary_jobs_test).
inline constexpr testbed::RoceShape kFourZonesFourRacks{.zones = 4,
                                                        .racksPerZone = 4,
                                                        .hostsPerRack = 2,
                                                        .nicsPerHost = 2,
                                                        .ctswPerZone = 3,
                                                        .linksPerCtsw = 1,
                                                        .atsws = 4,
                                                        .ctswUplinks = 3};

// `zones` zones of `racksPerZone` racks (2 hosts, 2 rails), 2 CTSWs per zone with 2 uplinks each
// to 2 ATSWs: the smallest three-tier Clos, as the topology tests build it (topology_test: 2 x 2,
// 32 links; topology_share_test: 3 x 4).
constexpr testbed::RoceShape twoCtswClos(int zones, int racksPerZone) {
    return {.zones = zones,
            .racksPerZone = racksPerZone,
            .hostsPerRack = 2,
            .nicsPerHost = 2,
            .ctswPerZone = 2,
            .linksPerCtsw = 1,
            .atsws = 2,
            .ctswUplinks = 2};
}

}  // namespace loom::fabric::fixtures
