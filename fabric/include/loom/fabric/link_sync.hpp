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
#pragma once

#include <cstddef>
#include <cstdint>
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

    std::size_t memoryBytes() const { return slots_.capacity() * sizeof(std::int32_t); }

private:
    std::vector<std::int32_t> slots_;  // link id or kNone; size a power of two, at most half full
    std::int32_t links_ = 0;           // linkCount() of the topology indexed
};

}  // namespace loom::fabric
