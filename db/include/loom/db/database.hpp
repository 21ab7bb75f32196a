// Database and Connection: how the rest of Loom reaches PostgreSQL.
//
// A Database is a connection factory: a libpq connection string or URL
// ("postgresql://user@host/db", "host=/state/dir port=5432 dbname=loom"). It is a plain value
// (copy it to every thread). A Connection is one libpq session and belongs to one thread at a
// time. libpqxx never shows through these headers; every failure comes back as loom::Error:
//   Unavailable - cannot connect / connection lost,  Conflict - unique or serialization
//   failure,  InvalidArgument - data rejected by a constraint,  Internal - anything else.
//
//   auto db = loom::db::Database::fromUrl("postgresql:///loom?host=/tmp/s");
//   auto conn = db.connect();                 // Result<Connection>
//   if (conn) conn->exec("VACUUM ANALYZE");
//
// Code outside db/ that needs raw SQL (the server's list/get queries) can include
// loom/db/native.hpp for the underlying pqxx::connection; it then links libpqxx itself.
#pragma once

#include "loom/inventory/error.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::db {

class Connection {
public:
    struct Impl;
    explicit Connection(std::unique_ptr<Impl> impl);
    Connection(Connection&&) noexcept;
    Connection& operator=(Connection&&) noexcept;
    ~Connection();

    // Runs one or more statements without parameters, outside any caller transaction
    // (DDL, CREATE DATABASE, test set-up). Never build `sql` from untrusted input.
    Result<void> exec(std::string_view sql);
    // First column of the first row of a parameterless query, as text; nullopt for no row or
    // NULL. For tests and small probes ("SELECT count(*) FROM racks").
    Result<std::optional<std::string>> queryValue(std::string_view sql);
    // Every row of a parameterless query, each field as text ("" for NULL).
    Result<std::vector<std::vector<std::string>>> queryRows(std::string_view sql);

    // The server process id of this session (pg_backend_pid()), e.g. to cancel it in tests.
    int backendPid() const;

    Impl& impl() { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
};

class Database {
public:
    Database() = default;
    // A libpq URL or key=value connection string.
    static Database fromUrl(std::string url);
    // A server listening only on a Unix socket in `socketDir` (the embedded server).
    static Database fromSocket(std::string socketDir, int port, std::string dbname,
                               std::string user = "postgres");

    Result<Connection> connect() const;

    // The same server, another database (tests use one database per test).
    Database withDatabase(std::string dbname) const;

    // What connect() uses, withDatabase() applied: another Database::fromUrl() of it reaches
    // the same database (loops that open their own connections rely on that).
    std::string connectionString() const;
    // The connection string with any password replaced by "***" (for messages and logs).
    std::string redacted() const;

private:
    Result<std::string> resolvedConninfo() const;
    std::string conninfo_;
    std::string dbnameOverride_;
};

// Quotes an SQL identifier ("t_1" -> "\"t_1\""); for the few statements (CREATE DATABASE)
// that cannot take parameters.
std::string quoteIdentifier(std::string_view name);

}  // namespace loom::db
