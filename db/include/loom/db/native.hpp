// The libpqxx connection under a loom::db::Connection, for code that writes its own SQL
// (e.g. the server's list/get queries). Including this makes the includer depend on libpqxx
// 6.4: link it (pkg-config libpqxx) and catch pqxx exceptions at your own boundary, or call
// loom::db::translateException() in a catch (...) block.
#pragma once

#include "loom/db/database.hpp"

#include <pqxx/pqxx>

namespace loom::db {

struct Connection::Impl {
    pqxx::connection conn;
    explicit Impl(const std::string& conninfo) : conn(conninfo) {}
};

inline pqxx::connection& native(Connection& c) { return c.impl().conn; }

// Maps the exception in flight (call inside catch (...)) to a loom::Error, SQLSTATE aware:
// broken connection -> Unavailable, unique/serialization/deadlock/foreign key -> Conflict,
// check/not-null/data -> InvalidArgument, anything else -> Internal. `context` prefixes the
// message ("apply: ...").
Error translateException(std::string_view context);

}  // namespace loom::db
