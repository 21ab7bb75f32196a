// Schema migrations: the numbered db/migrations/*.sql files, embedded at build time.
//
// migrate() applies every migration newer than the database's, each in its own transaction,
// and records it in schema_migrations (version, name, checksum, applied_at). A session-level
// advisory lock serialises concurrent migrators (two loomd processes starting at once). A
// migration that was applied with different text (checksum mismatch) is an error: migrations
// are append-only; fix a mistake with a new file.
#pragma once

#include "loom/db/database.hpp"

#include <string_view>
#include <vector>

namespace loom::db {

struct Migration {
    int version = 0;         // leading number of the file name
    std::string_view name;   // file name without .sql, e.g. "0001_inventory"
    std::string_view sql;
};

// All embedded migrations, sorted by version.
const std::vector<Migration>& migrations();

struct MigrateResult {
    int applied = 0;  // migrations applied by this call
    int version = 0;  // schema version afterwards
};
Result<MigrateResult> migrate(Connection& conn);

namespace detail {
const std::vector<Migration>& embeddedMigrations();  // generated from db/migrations/*.sql
}

}  // namespace loom::db
