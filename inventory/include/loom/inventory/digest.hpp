// Content digests of an Inventory: per kind, a 128-bit hash of every entity's name and spec
// fields (exactly the fields plan() compares; never state/serial/uuid/mac), independent of the
// entities' order; and one of the cluster metadata (metadata.name, fabric type).
//
// db stores the digests of what an apply wrote (inventory_digests, 0013) and drops a kind's
// digest whenever anything else writes that table's spec columns; a re-apply whose digests
// all equal the stored ones is a no-op without loading or planning (db::storedDigestsMatch).
//
//   auto d = contentDigests(spec);   // O(entities), ~40 bytes hashed per entity
#pragma once

#include <array>
#include <string>

#include "loom/inventory/model.hpp"

namespace loom::inventory {

struct ContentDigests {
    std::array<std::string, kKindCount> kinds;  // indexed by Kind; 32 hex digits each
    std::string cluster;                        // 32 hex digits
    friend bool operator==(const ContentDigests&, const ContentDigests&) = default;
};

ContentDigests contentDigests(const Inventory& inv);

}  // namespace loom::inventory
