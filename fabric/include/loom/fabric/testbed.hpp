// Synthetic Clos inventories built in code, for tests and benchmarks that must not depend on a
// spec file: a RoCE three-tier Clos (RTSW/CTSW/ATSW) and a rail-optimized InfiniBand fat tree
// (leaf/spine/core). Names follow configs/clusters (z1-r001-rtsw, z1-ctsw01, atsw01,
// su001-leaf1, pod01-spine01, core001). Every entity is in state "planned" unless noted.
#pragma once

#include "loom/inventory/model.hpp"

namespace loom::fabric::testbed {

struct RoceShape {
    int zones = 1;
    int racksPerZone = 2;
    int hostsPerRack = 2;
    int nicsPerHost = 8;      // backend NICs (rails)
    int ctswPerZone = 2;
    int linksPerCtsw = 1;     // parallel links from each RTSW to each CTSW
    int atsws = 0;            // 0: no aggregation tier
    int ctswUplinks = 0;      // uplinks per CTSW, dealt round-robin over the ATSWs
    int speedGbps = 400;
};
// meta-24k-roce: 8 zones × 192 racks, 18 CTSWs per zone, 36 ATSWs, 24 uplinks per CTSW.
RoceShape meta24kRoce();
inventory::Inventory makeRoce(const RoceShape& shape);

struct IbShape {
    int pods = 1;
    int susPerPod = 1;     // scalable units per pod
    int hostsPerSu = 4;    // each host has one HCA port per leaf of its SU (rail-optimized)
    int leavesPerSu = 2;   // = HCA ports per host
    int spinesPerPod = 2;  // every leaf of a pod links to every spine of the pod
    int cores = 0;         // spine k of every pod links to cores [k·g, (k+1)·g), g = cores/spines
    int spineUplinks = 0;  // 0: one link to each of those g cores; else uplink u goes to core
                           // k·g + u mod g (spineUplinks / g parallel links each), as the spec
                           // expander cables planes (docs/cluster-spec.md)
    int ports = 64;        // switch radix
    int speedGbps = 400;
};
// meta-24k-ib: 24 pods × 4 SUs × 32 hosts, 8 leaves per SU, 32 spines per pod, 512 cores,
// 32 uplinks per spine (2 to each of the 16 cores of its plane): the cabling of
// configs/clusters/meta-24k-ib.yaml, a uniform fat tree at any pod count up to 32.
IbShape meta24kIb();
inventory::Inventory makeIb(const IbShape& shape);

}  // namespace loom::fabric::testbed
