// What a bulk write takes off the inventory tables before its COPY and puts back after it, all
// inside the apply's one transaction (internal to db/).
//
//   BulkLoad bulk(tx);
//   bulk.forCreates("ports", /*rows=*/500'000);   // before the COPY into ports
//   bulk.forDeletes("hosts");                      // before deleting many hosts
//   ... COPY, UPDATE, DELETE ...
//   bulk.restore(progress);                        // before commit
//
// forCreates on a table that already has rows drops its foreign keys (re-added with one
// validating join each instead of one deferred trigger per row) and its plain secondary
// indexes (one sorted build instead of one insertion per row). On an EMPTY table (a first
// apply, or a kind the cluster did not have yet) it goes further: the foreign keys pointing at
// it and its primary-key and unique constraints are dropped too, and the table is TRUNCATEd,
// which gives it a new file: under wal_level = minimal (the embedded server) PostgreSQL then
// writes no WAL for the COPY or for the index builds and fsyncs the table's files at commit
// instead, as for a table created in the transaction. Durability is the same (the commit
// waits for the fsync); the truncate removes nothing (the table is checked empty under an
// ACCESS EXCLUSIVE lock). Every dropped constraint and index is re-created by restore(),
// which validates all rows (unique and foreign-key violations still fail the apply, and the
// transaction rolls back). Cost, as before: the tables are locked ACCESS EXCLUSIVE until commit.
#pragma once

#include <functional>
#include <pqxx/transaction_base>
#include <string>
#include <string_view>
#include <vector>

namespace loom::db::detail {

// Indexes a bulk load drops and leaves to after the apply's commit (db::buildNameIndexes)
// instead of rebuilding them in restore(): the name trigram GINs of migration 0022 (on
// lower(name) since 0032, so they never serve an equality on the name), ~570 ms of
// server CPU at 24k that would otherwise hold the apply's locks, and those of 0026 for ports'
// `peer` (the btree (peer, sort_key), ~70 ms, and the switch and NIC name GINs). Lists are
// correct without them (a scan) until they are built.
struct AfterCommitIndex {
    const char* name;
    const char* definition;
};
inline constexpr AfterCommitIndex kAfterCommitIndexes[] = {
    {"ports_name_trgm",
     "CREATE INDEX ports_name_trgm ON ports USING gin (lower(name) gin_trgm_ops)"},
    {"links_name_trgm",
     "CREATE INDEX links_name_trgm ON links USING gin (lower(name) gin_trgm_ops)"},
    {"ports_peer", "CREATE INDEX ports_peer ON ports (peer, sort_key)"},
    {"switches_name_trgm",
     "CREATE INDEX switches_name_trgm ON switches USING gin (lower(name) gin_trgm_ops)"},
    {"nics_name_trgm", "CREATE INDEX nics_name_trgm ON nics USING gin (lower(name) gin_trgm_ops)"}};

class BulkLoad {
public:
    explicit BulkLoad(pqxx::transaction_base& tx) : tx_(tx) {}

    // `table` is about to receive many new rows. Returns true when it was empty and took the
    // no-WAL path (truncated, keys and unique constraints dropped).
    bool forCreates(const std::string& table);
    // `table` is about to lose many rows: the NO ACTION / RESTRICT foreign keys pointing at
    // it are dropped (each deleted row's check would scan the referencing table).
    void forDeletes(const std::string& table);
    // Puts everything back: deferred checks run first (ALTER TABLE and CREATE INDEX refuse a
    // table with pending trigger events), then primary keys and unique constraints, plain
    // indexes, foreign keys. `stage` is called before each step with its name.
    void restore(const std::function<void(std::string_view stage)>& stage);

    bool empty() const { return fks_.empty() && keys_.empty() && indexes_.empty(); }

private:
    struct Constraint {
        std::string table, name, definition;
    };
    void dropConstraints(const std::string& query, const std::string& table,
                         std::vector<Constraint>& into);
    void addConstraints(const std::vector<Constraint>& all,
                        const std::function<void(std::string_view)>& stage, const char* what);

    pqxx::transaction_base& tx_;
    std::vector<Constraint> fks_;       // foreign keys, re-added last
    std::vector<Constraint> keys_;      // primary keys and unique constraints, re-added first
    std::vector<std::string> indexes_;  // CREATE INDEX statements of plain indexes to rebuild
};

}  // namespace loom::db::detail
