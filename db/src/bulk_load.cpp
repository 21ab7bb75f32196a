#include "bulk_load.hpp"

#include <algorithm>
#include <iterator>
#include <pqxx/pqxx>

#include "loom/db/database.hpp"

namespace loom::db::detail {

namespace {

// Rows: table, constraint name, definition (pg_get_constraintdef: re-adds it exactly, with
// DEFERRABLE, ON DELETE CASCADE ... as it was).
constexpr const char* kForeignKeysOf =
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY conname";
constexpr const char* kForeignKeysTo =
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE confrelid = $1::regclass AND contype = 'f' ORDER BY 1, conname";
constexpr const char* kNoActionForeignKeysTo =
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE confrelid = $1::regclass AND contype = 'f' AND confdeltype IN ('a', 'r') "
    "ORDER BY 1, conname";
constexpr const char* kKeysOf =
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = $1::regclass AND contype IN ('p', 'u') ORDER BY contype, conname";
// Indexes that are not a constraint's: 0015's parent references, 0021's sort keys, 0022's
// trigram GINs.
constexpr const char* kPlainIndexesOf =
    "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
    "WHERE i.indrelid = $1::regclass AND NOT i.indisunique AND NOT i.indisprimary "
    "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) ORDER BY 1";

}  // namespace

void BulkLoad::dropConstraints(const std::string& query, const std::string& table,
                               std::vector<Constraint>& into) {
    // One ALTER per table: each takes the table's lock once.
    std::string alter;
    std::string alterTable;
    auto flush = [&] {
        if (!alter.empty()) tx_.exec(alter);
        alter.clear();
    };
    for (const auto& row : tx_.exec_params(query, table)) {
        Constraint c{row[0].c_str(), row[1].c_str(), row[2].c_str()};
        if (c.table != alterTable) {
            flush();
            alterTable = c.table;
        }
        alter += (alter.empty() ? "ALTER TABLE " + c.table + " " : std::string(", ")) +
                 "DROP CONSTRAINT " + quoteIdentifier(c.name);
        into.push_back(std::move(c));
    }
    flush();
}

bool BulkLoad::forCreates(const std::string& table) {
    // The lock first: the emptiness seen below must still hold when the COPY runs.
    tx_.exec("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
    const bool empty = !tx_.exec("SELECT EXISTS (SELECT 1 FROM " + table + ")")[0][0].as<bool>();
    dropConstraints(kForeignKeysOf, table, fks_);
    for (const auto& row : tx_.exec_params(kPlainIndexesOf, table)) {
        const std::string_view name = row[0].c_str();
        tx_.exec(std::string("DROP INDEX ") + row[0].c_str());
        const bool afterCommit =
            std::any_of(std::begin(kAfterCommitIndexes), std::end(kAfterCommitIndexes),
                        [&](const AfterCommitIndex& i) { return name == i.name; });
        if (!afterCommit) indexes_.emplace_back(row[1].c_str());
    }
    if (!empty) return false;
    // TRUNCATE refuses a table that other tables' foreign keys point at; they go (and come
    // back validated), then the keys, which nothing references any more.
    dropConstraints(kForeignKeysTo, table, fks_);
    dropConstraints(kKeysOf, table, keys_);
    tx_.exec("TRUNCATE " + table);
    return true;
}

void BulkLoad::forDeletes(const std::string& table) {
    dropConstraints(kNoActionForeignKeysTo, table, fks_);
}

void BulkLoad::addConstraints(const std::vector<Constraint>& all,
                              const std::function<void(std::string_view)>& stage,
                              const char* what) {
    for (std::size_t i = 0; i < all.size();) {
        const std::string& table = all[i].table;
        if (stage) stage(std::string(what) + table);
        std::string alter = "ALTER TABLE " + table + " ";
        for (bool first = true; i < all.size() && all[i].table == table; ++i, first = false)
            alter += (first ? "" : ", ") + std::string("ADD CONSTRAINT ") +
                     quoteIdentifier(all[i].name) + " " + all[i].definition;
        tx_.exec(alter);
    }
}

void BulkLoad::restore(const std::function<void(std::string_view stage)>& stage) {
    if (empty()) return;
    // The deferred checks run now: deferred foreign keys (0001) of rows written to tables
    // that kept theirs, of rows deleted from referenced tables, and the link-end unique
    // checks (0006) queue trigger events until commit, and ALTER TABLE and CREATE INDEX
    // refuse a table with pending events (55006, seen growing dev-small into the 24k
    // cluster, and on links once 0021 gave them a plain index). Every write of the apply is
    // in at this point, so checking here is checking the end state.
    tx_.exec("SET CONSTRAINTS ALL IMMEDIATE");
    // Sorts of the index builds and the hash joins of the foreign-key checks in memory (the
    // 98k ports table's keys are ~25 MB; the defaults, 64 MB / 4 MB, spill the joins).
    tx_.exec("SET LOCAL maintenance_work_mem = '256MB'");
    tx_.exec("SET LOCAL work_mem = '64MB'");
    // Keys before the foreign keys that need them; the table order is the order of
    // dropping, so grouping by table keeps one ALTER per table.
    auto byTable = [](std::vector<Constraint>& v) {
        std::stable_sort(v.begin(), v.end(), [](const Constraint& a, const Constraint& b) {
            return a.table < b.table;
        });
    };
    byTable(keys_);
    addConstraints(keys_, stage, "keys ");
    for (const auto& def : indexes_) {
        if (stage) stage("index");
        tx_.exec(def);
    }
    byTable(fks_);
    addConstraints(fks_, stage, "check references ");
    keys_.clear();
    indexes_.clear();
    fks_.clear();
}

}  // namespace loom::db::detail
