// Keeping a router's link states equal to an inventory snapshot's stored ones, incrementally:
// the link ids of a topology by inventory link name, and the changes a newer snapshot brings.
// Used by the API's fabric state and the reconciler's router (one rule: the stored state as
// BuildOptions::storedLinkStates reads it).
//
//   LinkNameIndex ids(topo);                                  // once per topology
//   auto changes = ids.changes(router.topology(), *snapshot);  // each new snapshot
//   if (!changes.empty()) router.setLinkStates(changes);
#pragma once

#include "loom/fabric/topology.hpp"
#include "loom/inventory/model.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace loom::fabric {

class LinkNameIndex {
public:
    LinkNameIndex() = default;
    explicit LinkNameIndex(const Topology& t);

    std::int32_t find(std::string_view name) const;  // kNone if the topology has no such link

    // (link id, state) for every link of `inv` whose stored state differs from `t`'s.
    std::vector<std::pair<std::int32_t, LinkState>> changes(const Topology& t,
                                                            const inventory::Inventory& inv) const;

private:
    std::unordered_map<std::string, std::int32_t> ids_;
};

}  // namespace loom::fabric
