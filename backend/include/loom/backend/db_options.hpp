// Database options shared by every loomd command that touches the database (apply, serve,
// token): `--db URL` for an external PostgreSQL, else the embedded server under
// `--state-dir DIR` ($LOOM_STATE_DIR, else ~/.local/state/loom).
//
//   DbOptions opts;
//   addDbOptions(*cmd, opts);                     // at set-up
//   auto db = openDatabase(opts);                 // in the callback: starts/reuses, migrates
//   if (!db) { std::cerr << db.error().toString() << "\n"; return 1; }
//   auto conn = db->database.connect();
//
// OpenedDatabase owns the embedded server (if one was started): keep it alive as long as the
// command runs; destroying it stops a server this process started.
#pragma once

#include "loom/db/database.hpp"
#include "loom/db/embedded_postgres.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace loom::backend {

struct DbOptions {
    std::string url;       // --db: libpq URL; empty = embedded
    std::string stateDir;  // --state-dir: empty = $LOOM_STATE_DIR or ~/.local/state/loom
    bool verbose = false;  // say what the embedded server is doing (stderr)
};

void addDbOptions(CLI::App& app, DbOptions& options);

struct OpenedDatabase {
    std::unique_ptr<db::EmbeddedPostgres> embedded;  // null with --db
    db::Database database;
    std::string description;  // "embedded PostgreSQL in /x" or the redacted URL
};

// Starts (or reuses) the embedded server when no URL is given, then applies pending
// migrations. Errors: Unavailable (cannot start/connect), Internal (migration failed).
Result<OpenedDatabase> openDatabase(const DbOptions& options);

}  // namespace loom::backend
