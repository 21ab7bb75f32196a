// plan(): what an apply would change, as a pure diff of two Inventories.
//
// `desired` is an expanded cluster spec, `current` what the database holds. Entities are
// matched by name within their kind. Only spec fields are compared (see model.hpp); the
// operational fields state/serial/uuid/mac/resourceVersion are never compared, and apply never
// overwrites them on an existing row. Entities in `current` that the spec no longer names are
// deleted only with PlanOptions::prune; otherwise they are reported as "would delete". One
// exception: a stored link on a port that a desired link of another name uses is deleted also
// without prune (a port holds one cable; the spec says which), so growing or recabling a
// cluster without --prune succeeds.
//
//   Plan p = plan(spec, stored, {.prune = false});
//   std::cout << formatPlan(p);            // human summary, first 5 names per kind
//   for (const auto& k : summarize(p)) ...  // the same as plain values, for a JSON body
//
// O(n) in the number of entities (one hash map per kind). A Plan refers to `desired` by
// index (creates, updates) and views its names (createNames): keep that Inventory alive while
// the plan is used, and apply the plan together with it.
#pragma once

#include "loom/inventory/model.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace loom::inventory {

struct PlanOptions {
    bool prune = false;  // delete what the spec no longer names
};

// One spec field that differs, rendered as text ("model": "a" -> "b").
struct FieldChange {
    std::string field;
    std::string before;
    std::string after;
};

struct Update {
    std::string name;
    std::size_t desiredIndex = 0;  // index into desired's vector of this kind
    std::vector<FieldChange> changes;
};

struct KindPlan {
    Kind kind = Kind::Site;
    std::vector<std::size_t> creates;      // indexes into desired's vector of this kind
    // Same order as creates; views of desired's names (a first apply of 1 M entities copied
    // each name here once more).
    std::vector<std::string_view> createNames;
    std::vector<Update> updates;
    std::vector<std::string> deletes;      // names in current; with prune, or links replaced on a port
    std::vector<std::string> wouldDelete;  // names in current kept because prune is off
    std::vector<std::string> duplicates;   // names that appear twice in desired (a bad spec)

    bool empty() const { return creates.empty() && updates.empty() && deletes.empty(); }
};

struct Plan {
    bool prune = false;
    std::array<KindPlan, kKindCount> kinds;  // indexed by static_cast<int>(Kind)
    // Cluster-level metadata (metadata.name, fabric type) that differs, if any.
    std::vector<FieldChange> clusterChanges;

    const KindPlan& of(Kind k) const { return kinds[static_cast<int>(k)]; }
    KindPlan& of(Kind k) { return kinds[static_cast<int>(k)]; }
    std::size_t creates() const;
    std::size_t updates() const;
    std::size_t deletes() const;
    std::size_t wouldDelete() const;
    bool hasDuplicates() const;
    // Nothing to write (creates, updates, deletes and cluster changes all empty).
    bool empty() const;
};

Plan plan(const Inventory& desired, const Inventory& current, PlanOptions options = {});

// A summary a person reads:
//   rack: 2 to create (z1-r001, z1-r002), 1 to update (z1-r003: model), 0 to delete
// Kinds without changes are left out; "no changes" when the plan is empty.
std::string formatPlan(const Plan& p, int maxNamesPerKind = 5);

// The same summary as plain values (the server turns it into the JSON body of /apply).
struct KindSummary {
    std::string kind;  // plural kind name: "racks"
    std::size_t creates = 0, updates = 0, deletes = 0, wouldDelete = 0;
    std::vector<std::string> createNames, updateNames, deleteNames;  // first few of each
};
std::vector<KindSummary> summarize(const Plan& p, int maxNamesPerKind = 5);

}  // namespace loom::inventory
