// The backend fabric as a compact graph: what routing, verification and impact work on.
//
// buildTopology() turns an Inventory (model.hpp) into index arrays: switches are nodes
// [0, switchCount), backend NIC ports are nodes [switchCount, nodeCount). Links are
// struct-of-arrays (endpoints, ports, capacity, state) and adjacency is CSR, so a 24k-GPU
// fabric (~56k links) costs a few MB and no per-edge heap object. Names stay available for
// reports and exports; everything hot is an integer.
//
// What never changes after the build (names, NIC and link ends, ports, capacities, adjacency)
// is held in SharedArrays: a copy of a topology shares them, and TopologyArrays lets a topology
// built separately from the same structure adopt them (loomd's fabric state, jobs view and
// reconciler each route their own link states over one set of arrays: ~32 MB each at 98k).
// States (linkState, switchUp, nicUp) and the small per-switch, per-host and per-rack arrays
// are plain vectors of each topology.
//
//   auto topo = loom::fabric::buildTopology(inventory, {.plannedIsUp = true});
//   if (!topo) std::cerr << topo.error().toString();
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/fabric/shared_array.hpp"
#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

namespace loom::fabric {

enum class LinkState : std::uint8_t { Up, Down, Drained, NotInService };
std::string_view linkStateName(LinkState s);  // "up", "down", "drained", "not_in_service"

// A stored `links.state` as routing sees it ("planned" is up only for an offline spec export).
LinkState linkStateFrom(std::string_view stored, bool plannedIsUp);

// A switch's stored state as the live fabric reads it. A switch follows its rack (its state is
// the rack's; one outside racks is in_service or planned, provisioning/follow_rack.hpp), and the
// fabric reads it as the rack's cables are read (link_service.hpp, linkServiceFor): Up while
// in_service or draining (also "active", "up"), Down while failed or in repair (also "down"),
// Drained while drained or in maintenance, NotInService otherwise (planned and every state
// before in_service, decommissioned, a word it does not know). One rule for every view of the
// live fabric: the routers' switchUp (Up alone is up), GET /fabric/topology's `state`.
// tests/provisioning/link_service_test.cpp holds it equal to linkServiceFor for every rack state.
LinkState liveSwitchState(std::string_view stored);

struct BuildOptions {
    // Offline export from a spec: everything is "planned", and should be routed as if up.
    // On a live inventory planned links are not in service yet.
    bool plannedIsUp = true;
    // The live fabric: NICs as plannedIsUp says, but every cable as stored ("planned" = not in
    // service): cables follow their racks (provisioning/link_service.hpp), and so do switches
    // (follow_rack.hpp): a switch is up as liveSwitchState() reads its stored state, so a failed
    // rack's RTSW is down with its cables, and the routers take it out as they take its cables.
    bool storedLinkStates = false;
};

inline constexpr std::int32_t kNone = -1;

struct Topology {
    inventory::FabricType type = inventory::FabricType::Roce;
    std::string cluster;

    // Switches: nodes [0, switchCount()).
    std::vector<std::string> switchNames;
    std::vector<inventory::SwitchRole> switchRole;
    std::vector<std::uint8_t> switchTier;       // 1 rack/leaf, 2 cluster/spine, 3 aggregator/core
    std::vector<std::int32_t> switchZone;       // zone index or kNone
    std::vector<std::int32_t> switchRack;       // rack index or kNone
    std::vector<std::uint8_t> switchUp;         // 0 when the switch itself is down / not in service
    std::vector<std::int32_t> switchOrdinal;    // position within its tier (ASN, LIDs, keys)
    std::vector<std::int32_t> tierSwitches[4];  // switch ids by tier (index 0 unused)

    // Backend NIC ports: node id = switchCount() + nic index.
    SharedArray<std::string> nicNames;
    SharedArray<std::int32_t> nicHost;
    SharedArray<std::int32_t> nicRail;
    SharedArray<std::int32_t> nicLink;  // the link to its switch, or kNone if uncabled
    std::vector<std::uint8_t> nicUp;

    SharedArray<std::string> hostNames;
    std::vector<std::int32_t> hostRack;
    std::vector<std::int32_t> hostFirstNic;  // NICs of a host are contiguous
    std::vector<std::int32_t> hostNicCount;
    std::vector<std::string> rackNames;
    std::vector<std::int32_t> rackZone;
    std::vector<std::string> zoneNames;

    // Links (struct of arrays). a is the lower-tier end (NIC or lower switch).
    SharedArray<std::string> linkNames;
    SharedArray<std::int32_t> linkA, linkB;           // node ids
    SharedArray<std::uint16_t> linkAPort, linkBPort;  // 1-based physical port numbers
    SharedArray<float> linkCapGbps;
    std::vector<LinkState> linkState;

    // CSR adjacency over nodes: for node v, entries [adjOffset[v], adjOffset[v+1]) hold the
    // incident link ids, ordered down-links first (by port), then up-links (by port).
    SharedArray<std::int32_t> adjOffset;
    SharedArray<std::int32_t> adjLink;
    SharedArray<std::int32_t> adjUpBegin;  // per node: first up-link position in adjLink

    std::int32_t switchCount() const { return static_cast<std::int32_t>(switchNames.size()); }
    std::int32_t nicCount() const { return static_cast<std::int32_t>(nicNames.size()); }
    std::int32_t nodeCount() const { return switchCount() + nicCount(); }
    std::int32_t linkCount() const { return static_cast<std::int32_t>(linkNames.size()); }
    bool isSwitch(std::int32_t node) const { return node < switchCount(); }
    std::int32_t nicNode(std::int32_t nic) const { return switchCount() + nic; }
    int tierOf(std::int32_t node) const { return isSwitch(node) ? switchTier[node] : 0; }
    std::int32_t peer(std::int32_t link, std::int32_t node) const {
        return linkA[link] == node ? linkB[link] : linkA[link];
    }
    std::span<const std::int32_t> downLinks(std::int32_t node) const {
        return {adjLink.data() + adjOffset[node], adjLink.data() + adjUpBegin[node]};
    }
    std::span<const std::int32_t> upLinks(std::int32_t node) const {
        return {adjLink.data() + adjUpBegin[node], adjLink.data() + adjOffset[node + 1]};
    }
    // A link carries traffic when it is up and both of its ends are up.
    bool usable(std::int32_t link) const { return usableAs(link, linkState[link]); }
    // The same were the link in `state` (its ends as they are).
    bool usableAs(std::int32_t link, LinkState state) const;
    // The switch a NIC is cabled to, or kNone.
    std::int32_t nicSwitch(std::int32_t nic) const {
        return nicLink[nic] == kNone ? kNone : linkB[nicLink[nic]];
    }

    std::int32_t findSwitch(std::string_view name) const;  // kNone if absent (linear scan)
    std::int32_t findLink(std::string_view name) const;    // kNone if absent (linear scan)
    std::int32_t findHost(std::string_view name) const;    // kNone if absent (linear scan)
};

// Link states in place of a topology's own (an earlier version of the fabric, as
// GET /fabric/config/{sw}?previous=true renders it): (link, state) pairs sorted by link, at most
// one per link. stateIn()/usableIn() read a link through them (binary search).
using LinkStates = std::span<const std::pair<std::int32_t, LinkState>>;
// The same for switches: (switch, up) pairs sorted by switch, at most one per switch (a switch
// follows its rack: an earlier version may have had it up).
using SwitchUps = std::span<const std::pair<std::int32_t, bool>>;
LinkState stateIn(const Topology& t, LinkStates over, std::int32_t link);
bool switchUpIn(const Topology& t, SwitchUps over, std::int32_t sw);
// Whether the link carries traffic in that version: its state up and both of its ends up.
bool usableIn(const Topology& t, LinkStates over, std::int32_t link, SwitchUps switches = {});

// Weak references to the shared arrays of the last topology given to share(), so that the next
// topology of the same structure adopts those buffers instead of keeping its own, without
// keeping them alive once no topology holds them. Safe to call from several threads.
//
//   static TopologyArrays live;       // one per process: every live topology goes through it
//   auto topo = buildTopology(inv, opt);
//   live.share(*topo);                 // equal arrays now one buffer with the last one's
class TopologyArrays {
public:
    // Replaces each array of t by the referenced one when that one is still alive and equal in
    // content (a different structure keeps its own), then references t's arrays. Returns the
    // bytes of the arrays t adopted.
    std::size_t share(Topology& t);

private:
    std::mutex mutex_;
    std::vector<std::weak_ptr<const void>> arrays_;
};

// Backend switches, backend NICs and backend links of the inventory. Errors (code
// InvalidArgument, path `links[i]` etc.) for links naming unknown ports, ports on unknown
// devices, links between switches of the same tier, or ports used twice.
// Limits: < 2^31 nodes and links, at most 65535 ports per device.
Result<Topology> buildTopology(const inventory::Inventory& inv, const BuildOptions& opt = {});

}  // namespace loom::fabric
