// Which cables carry traffic, decided from the racks' lifecycle states alone.
//
// The one rule every writer of link state uses — the reconciler, the operator's rack actions,
// the periodic drift repair — so drain/undrain, fail/repair are exact inverses on the fabric:
// after any sequence of transitions, the links are what desiredLinkStates() says for the racks'
// current states, never a leftover of the path that led there.
//
//   auto owners = LinkOwners::of(inventory);                 // once per inventory structure
//   auto want = desiredLinkStates(owners, rackStates);       // one entry per inventory link
//   if (want[i] != parseLinkService(inv.links[i].state)) ... // store linkStateName(want[i])
//
// The rule (docs/api.md, "Links follow their racks"):
//  - A link with an end in a rack (NIC–RTSW, RTSW–CTSW uplinks, a host's frontend cable) follows
//    that rack: in_service and draining -> active (draining moves traffic away first, the
//    drained state turns the links off); drained and maintenance -> drained; failed and repair
//    -> down; every state before in_service, and decommissioned -> planned (not in service).
//  - A link with no rack at either end (CTSW–ATSW, spine–core, frontend aggregation) serves
//    its zone: active while at least one rack of that zone has active links, planned otherwise.
//    A link above zones (no zone at either end) is active while any rack is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "loom/inventory/model.hpp"
#include "loom/provisioning/lifecycle.hpp"

namespace loom::provisioning {

enum class LinkService : std::uint8_t { NotInService, Active, Drained, Down };

// The stored `links.state` values: "planned", "active", "drained", "down".
std::string_view linkStateName(LinkService s);
std::optional<LinkService> parseLinkService(std::string_view s);

// What a rack in state `s` means for the cables it carries.
LinkService linkServiceFor(RackState s);

// Who decides each link's state: its rack, or (for links with no rack) its zone.
struct LinkOwners {
    static constexpr std::int32_t kNoRack = -1;
    std::vector<std::int32_t> rack;  // per inventory link: index into inv.racks, or kNoRack
    std::vector<std::int32_t> zone;  // per link without a rack: zone index, -1 = above zones
    std::vector<std::int32_t> rackZone;  // per rack: zone index (-1 if unknown)
    std::size_t zoneCount = 0;
    // Per inventory switch (follow_rack.hpp, desiredSwitchStates): its rack (kNoRack when it
    // stands outside racks) and, for one outside racks, its zone (-1 = above zones).
    std::vector<std::int32_t> switchRack;
    std::vector<std::int32_t> switchZone;

    static LinkOwners of(const inventory::Inventory& inv);
};

// The state every link must have, given each rack's state (indexed like inv.racks).
std::vector<LinkService> desiredLinkStates(const LinkOwners& owners,
                                           std::span<const RackState> rackStates);

// Whether a rack of that zone (-1: of any zone) has its cables active, per zone index; the
// last entry is "any rack". What a link or a switch outside racks follows.
std::vector<char> zonesServing(const LinkOwners& owners, std::span<const RackState> rackStates);

// Racks' states from their stored names; an unknown name counts as planned.
std::vector<RackState> rackStatesOf(const inventory::Inventory& inv);

}  // namespace loom::provisioning
