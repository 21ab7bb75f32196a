// The inventory in PostgreSQL: load it, and write a plan (inventory/plan.hpp) to it.
//
//   auto snap = loadSnapshot(conn);                         // inventory + its generation
//   Plan p = plan(desired, snap->inventory, {.prune = false});
//   auto r = applyPlan(conn, p, desired, {.actor = "alice", .expectedGeneration = snap->generation});
//
// loadSnapshot reads every table with one COPY ... TO STDOUT each (no query per row) inside a
// REPEATABLE READ read-only transaction, so the Inventory is one consistent state.
//
// applyPlan writes the whole plan in ONE transaction:
//  - it takes the transaction-level advisory lock "apply" with pg_try_advisory_xact_lock; if
//    another apply holds it the call fails at once with Errc::Conflict "another apply is in
//    progress (started by <actor> at <time>)". Nothing is written.
//  - with expectedGeneration set it checks that the inventory is still the one that was
//    planned against (inventory_state.generation); otherwise Errc::Conflict, nothing written.
//  - creates: ids are reserved in one block per kind, then rows go in with COPY FROM STDIN
//    (parents before children; foreign keys are deferred to commit).
//  - updates: the new spec fields are COPYed into a temporary table and applied with one
//    UPDATE ... FROM per kind (resource_version + 1, updated_at = now()); operational fields
//    (state, serial, uuid, mac) are never touched.
//  - deletes (prune): one DELETE ... WHERE name = ANY($1) per kind, children first, whose
//    RETURNING rows become change_log entries with the deleted row as `before`.
//  - change_log: one summary row per kind (name '*', after = counts), one row per update and
//    per delete, and one row per create (COPY; `after` NULL: the row is the after state) unless
//    the apply creates more than ApplyOptions::maxCreateLogRows; an apply_runs row; the
//    generation goes up by one.
//  - kinds receiving >= 10,000 new rows have their foreign keys dropped for the load, and
//    kinds losing >= 256 rows the (NO ACTION) foreign keys that point at them; all are re-added
//    (validated, one join each) before commit, in the same transaction, after SET CONSTRAINTS
//    ALL IMMEDIATE has run the checks still deferred (ALTER TABLE refuses a table with pending
//    trigger events). Thresholds: ApplyOptions::bulkForeignKeyRows / bulkDeleteForeignKeyRows.
//    A kind whose table is still empty (a first apply) is truncated in the transaction and
//    also loses its keys, unique constraints and the foreign keys pointing at it until the
//    COPY is in: under wal_level = minimal its load writes no WAL (db/src/bulk_load.hpp).
// An empty plan writes nothing. A failure anywhere rolls the whole transaction back; errors
// come back as loom::Error (see database.hpp for the SQLSTATE mapping).
#pragma once

#include "loom/db/database.hpp"
#include "loom/inventory/model.hpp"
#include "loom/inventory/digest.hpp"
#include "loom/inventory/plan.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace loom::db {

struct Snapshot {
    inventory::Inventory inventory;
    std::int64_t generation = 0;  // inventory_state.generation when it was read
};

Result<Snapshot> loadSnapshot(Connection& conn);
Result<inventory::Inventory> loadInventory(Connection& conn);

// Called as work proceeds: stage is "lock", "ids", "create racks", "update hosts", "delete
// links", "change log", "commit"; done/total count rows of that stage (0/0 when not counted).
// Called from the thread running applyPlan, at most every few thousand rows.
using ProgressFn = std::function<void(std::string_view stage, std::size_t done, std::size_t total)>;

struct ApplyResult;

struct ApplyOptions {
    std::string actor = "loomd";
    // The generation the plan was computed against (Snapshot::generation); nullopt: no check.
    std::optional<std::int64_t> expectedGeneration;
    // Per-entity change_log rows for creates are written when the apply creates at most this
    // many entities; a bigger (bulk, e.g. first) apply logs one summary row per kind instead
    // (each row's created_at and apply_runs say when and by whom). Updates and deletes are
    // always logged per entity. Measured on the 24k cluster: see bench/README.md.
    std::size_t maxCreateLogRows = 10'000;
    // A table receiving at least this many creates has its foreign keys dropped before the
    // COPY and re-added (one set-based check) after it, in the same transaction. Tests lower
    // it to run the bulk path on small clusters.
    std::size_t bulkForeignKeyRows = 10'000;
    // A table losing at least this many rows has the foreign keys that point at it dropped and
    // re-added likewise: without an index on the referencing column, each deleted row's check
    // scans the referencing table (shrinking the 24k cluster to dev-small took 60 s).
    std::size_t bulkDeleteForeignKeyRows = 256;
    ProgressFn progress;
    // With a key: the answer (status, body(result)) is stored under it in the apply's own
    // transaction (db/idempotency.hpp), so it commits exactly when the apply does.
    struct Idempotency {
        std::string actor, key, request;
        int status = 200;
        std::function<std::string(const ApplyResult&)> body;
    };
    std::optional<Idempotency> idempotency;
    // The spec's content digests (inventory::contentDigests(desired)): stored with the apply
    // (also by an apply with nothing to write), so the next re-apply of the same spec can
    // skip loading and planning (storedDigestsMatch). Null: the stored digests of the kinds
    // this apply writes are dropped (0013's triggers), the others kept.
    const inventory::ContentDigests* digests = nullptr;
};

struct ApplyResult {
    std::size_t created = 0;
    std::size_t updated = 0;
    std::size_t deleted = 0;
    std::int64_t generation = 0;  // inventory generation after the apply
    std::int64_t applyRunId = 0;  // apply_runs.id; 0 when nothing was written
    bool changed() const { return created + updated + deleted > 0 || applyRunId != 0; }
};

Result<ApplyResult> applyPlan(Connection& conn, const inventory::Plan& plan,
                              const inventory::Inventory& desired, const ApplyOptions& options);

// Whether every stored digest (each kind and the cluster metadata) equals `digests`, i.e. an
// apply of that spec would change nothing: the last apply stored them and nothing wrote those
// tables' spec columns since. With prune, every kind must also have been stored exactly (no
// entity outside the spec). One small query; false when any digest is missing.
Result<bool> storedDigestsMatch(Connection& conn, const inventory::ContentDigests& digests, bool prune);

// Counts per kind straight from the tables (summary views, tests).
Result<std::size_t> countRows(Connection& conn, inventory::Kind kind);

}  // namespace loom::db
