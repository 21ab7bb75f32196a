// Keeping a router's link states equal to an inventory snapshot's stored ones, incrementally:
// the link ids of a topology by inventory link name, and the changes a newer snapshot brings.
// Used by the API's fabric state, the jobs view and the reconciler's router (one rule: the
// stored state as BuildOptions::storedLinkStates reads it).
//
// The index holds link ids only (an open-addressing table over the topology's own linkNames),
// not copies of the names: at 98k GPUs (222,720 backend links) an unordered_map<string, id> was
// 26.8 MB per holder, this is 2 MB. So every query takes the topology it was built from (or a
// copy of it, such as the one a router owns: the same names at the same ids).
//
//   LinkNameIndex ids(topo);                                  // once per topology
//   auto changes = ids.changes(router.topology(), *snapshot);  // each new snapshot
//   if (!changes.empty()) router.setLinkStates(changes);
//   auto l = ids.find(router.topology(), "z01-r0001-rtsw/p17--z01-ctsw01/p1");
//
// Switches follow their racks as cables do (topology.hpp, liveSwitchState): the same index holds
// the switch ids by name, and every holder applies a snapshot's switch states with its cables'.
//
//   auto states = ids.switchStates(router.topology(), *snapshot);     // one per switch id
//   for (auto [sw, up] : switchChanges(router.topology(), states)) router.setSwitchUp(sw, up);
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/fabric/topology.hpp"
#include "loom/inventory/model.hpp"

namespace loom::fabric {

class LinkNameIndex {
public:
    LinkNameIndex() = default;
    explicit LinkNameIndex(const Topology& t);

    // The id of the link named `name` in `t` (the topology the index was built from, or one with
    // the same link names), kNone if it has no such link. With duplicate names, the lowest id.
    std::int32_t find(const Topology& t, std::string_view name) const;

    // (link id, state) for every link of `inv` whose stored state differs from `t`'s.
    std::vector<std::pair<std::int32_t, LinkState>> changes(const Topology& t,
                                                            const inventory::Inventory& inv) const;

    // changes() for a holder that follows one snapshot after another: what the last call saw
    // of each inventory link (its name and state blocks, inventory/text.hpp, and the link id
    // and state they gave) is kept in `memo`, so a link whose blocks are the same is compared
    // by pointers and one array read instead of a hash probe, a name compare and a state parse
    // (at 98k, ~330k links per snapshot, three holders: 30 % of loomd's CPU during a rollout).
    // Same answer as changes(t, inv); a memo is tied to this index and its topology.
    struct Memo {
        std::vector<inventory::Text> names, states;  // held: the blocks cannot be reused
        std::vector<std::int32_t> ids;
        std::vector<LinkState> want;
        std::size_t memoryBytes() const {
            return names.capacity() * sizeof(inventory::Text) * 2 + ids.capacity() * 4 +
                   want.capacity() * sizeof(LinkState);
        }
    };
    std::vector<std::pair<std::int32_t, LinkState>> changes(const Topology& t,
                                                            const inventory::Inventory& inv,
                                                            Memo& memo) const;

    // The id of the switch named `name` in `t`, kNone if it has no such switch.
    std::int32_t findSwitch(const Topology& t, std::string_view name) const;
    // Each switch of `t` (by id) in the state the live fabric reads from `inv`'s stored one
    // (liveSwitchState); a switch `inv` does not hold keeps its up-ness in `t` (Up or
    // NotInService). ~1 hash probe per inventory switch (6,144 RTSWs and ~200 others at 98k).
    std::vector<LinkState> switchStates(const Topology& t, const inventory::Inventory& inv) const;

    std::size_t memoryBytes() const {
        return (slots_.capacity() + switchSlots_.capacity()) * sizeof(std::int32_t);
    }

private:
    std::vector<std::int32_t> slots_;  // link id or kNone; size a power of two, at most half full
    std::vector<std::int32_t> switchSlots_;  // switch id or kNone, the same way
    std::int32_t links_ = 0;                 // linkCount() of the topology indexed
};

// (switch, up) for every switch of `t` whose up-ness differs from `states` (switchStates()), in
// switch order: what setSwitchUp must be given to bring a router to them.
std::vector<std::pair<std::int32_t, bool>> switchChanges(const Topology& t,
                                                         std::span<const LinkState> states);

}  // namespace loom::fabric
