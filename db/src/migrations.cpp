#include "loom/db/migrations.hpp"

#include <algorithm>
#include <map>

#include "copy_text.hpp"
#include "loom/db/native.hpp"
#include "loom/inventory/natural_order.hpp"

namespace loom::db {
namespace {

// Advisory lock keys are one bigint namespace per database; "LMIG" keeps ours apart.
constexpr long long kMigrateLockKey = 0x4c4d4947;

// The natural sort keys (0021; jobs 0024) of rows written before those existed: computed here,
// by the same C++ function the writers use, then the NOT VALID check is validated, once. A
// database made later has none to fill and only pays one index probe per table.
void fillSortKeys(pqxx::connection& conn) {
    static constexpr const char* kTables[] = {"sites", "zones",         "rows",  "racks",
                                              "hosts", "gpus",          "nics",  "switches",
                                              "ports", "storage_nodes", "links", "jobs"};
    pqxx::work tx(conn);
    for (const char* table : kTables) {
        const std::string t = table;
        std::vector<std::string> ids, keys;
        for (const auto& row : tx.exec("SELECT id, name FROM " + t + " WHERE sort_key IS NULL")) {
            ids.emplace_back(row[0].c_str());
            keys.push_back(loom::naturalSortKey(row[1].c_str()));
        }
        if (!ids.empty())
            tx.exec_params("UPDATE " + t +
                               " t SET sort_key = u.k FROM unnest($1::bigint[], $2::text[]) "
                               "u(id, k) WHERE t.id = u.id",
                           detail::pgTextArray(ids), detail::pgTextArray(keys));
        if (tx.exec_params("SELECT 1 FROM pg_constraint WHERE conname = $1 AND NOT convalidated",
                           t + "_sort_key_set")
                .size())
            tx.exec("ALTER TABLE " + t + " VALIDATE CONSTRAINT " + t + "_sort_key_set");
    }
    tx.commit();
}

}  // namespace

const std::vector<Migration>& migrations() {
    static const std::vector<Migration> sorted = [] {
        auto v = detail::embeddedMigrations();
        std::sort(v.begin(), v.end(),
                  [](const Migration& a, const Migration& b) { return a.version < b.version; });
        return v;
    }();
    return sorted;
}

Result<MigrateResult> migrate(Connection& c) {
    pqxx::connection& conn = native(c);
    MigrateResult out;
    bool locked = false;
    try {
        {
            pqxx::nontransaction tx(conn);
            // Quiet the NOTICE "relation already exists, skipping" of a second start.
            tx.exec("SET client_min_messages = warning");
            // Lock first: two CREATE TABLE IF NOT EXISTS racing each other can still collide.
            tx.exec_params("SELECT pg_advisory_lock($1)", kMigrateLockKey);
            locked = true;
            tx.exec(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())");
        }
        std::map<int, std::pair<std::string, std::string>> applied;  // version -> name, md5
        {
            pqxx::nontransaction tx(conn);
            for (const auto& row : tx.exec("SELECT version, name, checksum FROM schema_migrations"))
                applied[row[0].as<int>()] = {row[1].c_str(), row[2].c_str()};
        }
        int previous = 0;
        for (const Migration& m : migrations()) {
            if (m.version == previous)
                throw std::runtime_error("two migrations numbered " + std::to_string(m.version));
            previous = m.version;
            std::string sql(m.sql);
            pqxx::work tx(conn);
            std::string sum = tx.exec_params1("SELECT md5($1)", sql)[0].c_str();
            if (auto it = applied.find(m.version); it != applied.end()) {
                if (it->second.second != sum)
                    throw std::runtime_error(
                        "migration " + std::string(m.name) +
                        " differs from the one applied to this database (checksum " + sum + " vs " +
                        it->second.second + "); migrations are append-only");
                out.version = m.version;
                continue;
            }
            tx.exec(sql);
            tx.exec_params(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                m.version, std::string(m.name), sum);
            tx.commit();
            ++out.applied;
            out.version = m.version;
        }
        if (out.version >= 21) fillSortKeys(conn);
        pqxx::nontransaction tx(conn);
        tx.exec_params("SELECT pg_advisory_unlock($1)", kMigrateLockKey);
        return out;
    } catch (...) {
        Error e = translateException("migrate");
        if (locked) {
            try {
                pqxx::nontransaction tx(conn);
                tx.exec_params("SELECT pg_advisory_unlock($1)", kMigrateLockKey);
            } catch (...) {
                // The session is gone; the lock went with it.
            }
        }
        return fail(std::move(e));
    }
}

}  // namespace loom::db
