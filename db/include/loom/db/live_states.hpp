// The operational part of the inventory — each row's `state` and `resourceVersion` — read
// without the rest: what rack/host actions, the reconciler and link-state writes change
// between two applies. loomd's live state is refreshed with it on every such change instead
// of reloading all ~250k rows of a 24k-GPU cluster (issue 11).
//
//   auto r = db::refreshStates(conn, *current, generation);
//   if (r && r->outcome == db::StateRefresh::Outcome::Patched) publish(std::move(r->inventory));
//
// The refreshed snapshot keeps the current one's vector order (so indices built over it,
// such as provisioning::LinkOwners, stay valid) and differs from it only in state and
// resourceVersion. A structural change — another generation (an apply), or rows added,
// removed or renamed behind it — is reported as Outcome::Structure: load the whole snapshot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "loom/db/database.hpp"
#include "loom/inventory/model.hpp"

namespace loom::db {

struct StateRefresh {
    enum class Outcome { Unchanged, Patched, Structure };
    Outcome outcome = Outcome::Unchanged;
    inventory::Inventory inventory;  // Patched: the current snapshot with the new states
    std::size_t changedRows = 0;     // Patched: rows whose state or resourceVersion moved
    std::size_t rowsRead = 0;
    // The read's snapshot horizon (the oldest transaction still running when it was taken, as
    // a 32-bit xid): pass it as `sinceXmin` to the next refresh of the same snapshot.
    std::int64_t snapshotXmin = -1;
};

// Where each row of a snapshot is, by name, for the refreshes after it: a patched snapshot keeps
// its vectors' order, so one index serves every refresh until the next full load (call reset()
// then). Built on first use, a sorted (hash, index) table per kind (~12 bytes a row, ~5 MB at
// 98k GPUs): a delta read used to build a hash map of every rack, host, GPU and link name
// (~400k at 98k) to place a few hundred changed rows. A stale index can only miss (every hit
// is checked against the row's name), and a miss is reported as a structural change.
class StateNameIndex {
public:
    void reset() {
        for (auto& k : kinds_) k = Kind{};
    }

    // Internal (live_states.cpp): the table of one kind, rebuilt when its row count moved.
    struct Kind {
        std::vector<std::pair<std::uint64_t, std::uint32_t>> byHash;
        std::size_t rows = 0;
        bool built = false;
    };
    Kind& kind(std::size_t k) { return kinds_[k]; }

private:
    Kind kinds_[5];
};

// One read-only, repeatable-read transaction: inventory_state.generation, then
// (name, state, resource_version) of racks, hosts, GPUs, links and switches by COPY — the kinds
// whose state is written between applies (rack and host actions, the reconciler, link and switch
// sync; NICs, ports and storage nodes change only by an apply, which moves the generation).
// O(rows) with no allocation per unchanged row; the result shares every kind with `current`
// (inventory/kind_vector.hpp) except those with a changed row, which it copies.
//
// With `sinceXmin` (a previous refresh's snapshotXmin of this same snapshot lineage), only the
// rows written by transactions from that horizon on are read: `age(xmin) <= age(sinceXmin)`,
// a scan inside PostgreSQL that sends the few changed rows instead of all of them (at 98k GPUs
// 365k rows, 1.3-6 s of loomd's CPU per refresh under load; a rollout refreshes ~10 times a
// minute). Every transaction that committed after that earlier snapshot has an xid at or
// after its horizon, so no change is missed; rows from before it may come back and count as
// unchanged. Rows added or renamed without an apply are not seen by a delta read (Structure is
// reported only by a full one): callers read in full now and then (loomd: every 5 minutes), and
// always after a frozen tuple could hide a change (VACUUM FREEZE resets xmin; autovacuum
// freezes only tuples ~50M transactions old).
// `names` (optional) is kept by the caller across the refreshes of one snapshot lineage.
Result<StateRefresh> refreshStates(Connection& conn, const inventory::Inventory& current,
                                   std::int64_t generation, std::int64_t sinceXmin = -1,
                                   StateNameIndex* names = nullptr);

}  // namespace loom::db
