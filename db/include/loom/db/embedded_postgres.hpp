// EmbeddedPostgres: the PostgreSQL 15 server Loom runs for itself when no --db is given.
//
// start() runs the system's initdb/pg_ctl (/usr/lib/postgresql/15/bin) on <stateDir>/pgdata,
// listening only on a Unix socket in <stateDir> (listen_addresses = ''), and creates the
// database "loom". The log is <stateDir>/postgres.log; a failure to start reports its tail.
// When running as root, initdb/pg_ctl/postgres run as the `postgres` system user (PostgreSQL
// refuses root); the state dir is then owned by postgres, and its ancestors get search (o+x)
// permission if postgres could not reach it.
//
// Reuse and ownership: a server already running on the state dir is reused. If the process
// that started it is still alive (another loomd), we are a guest and leave it running on
// exit; if that process is gone (a crash), we adopt the server and stop it on exit. A stale
// postmaster.pid of a dead server is handled by pg_ctl itself. The owner stops the server with
// `pg_ctl stop -m fast` in stop() or the destructor. Limits: the socket path
// <stateDir>/.s.PGSQL.<port> must fit in 107 bytes (a Unix socket limit).
//
//   auto pg = EmbeddedPostgres::start({.stateDir = defaultStateDir()});
//   if (!pg) { std::cerr << pg.error().toString(); return 1; }
//   auto conn = (*pg)->database().connect();
#pragma once

#include "loom/db/database.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace loom::db {

struct EmbeddedOptions {
    std::filesystem::path stateDir;
    // fsync=off makes a crash of the machine lose data; only for throw-away test servers.
    bool fsync = true;
    std::string binDir = "/usr/lib/postgresql/15/bin";
    int port = 5432;  // only names the socket file; no TCP listener
    std::string database = "loom";
    bool verbose = false;  // echo what is being done to stderr
};

class EmbeddedPostgres {
public:
    static Result<std::unique_ptr<EmbeddedPostgres>> start(EmbeddedOptions options);
    ~EmbeddedPostgres();
    EmbeddedPostgres(const EmbeddedPostgres&) = delete;
    EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

    // Stops the server if this process owns it (pg_ctl stop -m fast). Idempotent.
    Result<void> stop();

    // The "loom" database (or options.database) on this server, as superuser postgres.
    Database database() const;
    const std::filesystem::path& stateDir() const { return options_.stateDir; }
    std::filesystem::path logFile() const { return options_.stateDir / "postgres.log"; }
    bool owner() const { return owner_; }
    bool reused() const { return reused_; }  // was already running when start() was called

private:
    explicit EmbeddedPostgres(EmbeddedOptions o) : options_(std::move(o)) {}
    Result<void> run();

    EmbeddedOptions options_;
    bool owner_ = false;
    bool reused_ = false;
    bool stopped_ = false;
};

// --state-dir wins, then $LOOM_STATE_DIR, then ~/.local/state/loom ($XDG_STATE_HOME/loom if
// set).
std::filesystem::path defaultStateDir();

}  // namespace loom::db
