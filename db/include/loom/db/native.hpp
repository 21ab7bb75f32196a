// The libpqxx connection under a loom::db::Connection, for code that writes its own SQL
// (e.g. the server's list/get queries). Including this makes the includer depend on libpqxx
// 6.4: link it (pkg-config libpqxx) and catch pqxx exceptions at your own boundary, or call
// loom::db::translateException() in a catch (...) block.
#pragma once

#include "loom/db/database.hpp"

#include <pqxx/pqxx>

#include <cstddef>
#include <string>
#include <unordered_map>

namespace loom::db {

struct Connection::Impl {
    pqxx::connection conn;
    std::unordered_map<std::string, std::string> prepared;  // SQL text -> statement name
    explicit Impl(const std::string& conninfo) : conn(conninfo) {}
};

inline pqxx::connection& native(Connection& c) { return c.impl().conn; }

// Statements prepared per connection at most: the list queries' shapes (kind x filters) that
// repeat; any further shape (a client trying every filter) runs unprepared.
inline constexpr std::size_t kMaxPreparedPerConnection = 64;

// The name under which `sql` is prepared on this connection, defined on first use (libpqxx
// registers it with the server when first executed, and again after a reconnect), so a query
// that repeats is parsed and planned by PostgreSQL once per connection instead of on every
// request. nullptr once kMaxPreparedPerConnection are defined: run `sql` unprepared.
//
//   if (auto* name = preparedName(c, sql)) tx.exec_prepared(*name, ...); else tx.exec_params(sql, ...);
inline const std::string* preparedName(Connection& c, const std::string& sql) {
    auto& impl = c.impl();
    if (auto it = impl.prepared.find(sql); it != impl.prepared.end()) return &it->second;
    if (impl.prepared.size() >= kMaxPreparedPerConnection) return nullptr;
    std::string name = "loom_q" + std::to_string(impl.prepared.size());
    impl.conn.prepare(name, sql);
    return &impl.prepared.emplace(sql, std::move(name)).first->second;
}

// Maps the exception in flight (call inside catch (...)) to a loom::Error, SQLSTATE aware:
// broken connection -> Unavailable, unique/serialization/deadlock/foreign key -> Conflict,
// check/not-null/data -> InvalidArgument, anything else -> Internal. `context` prefixes the
// message ("apply: ...").
Error translateException(std::string_view context);

}  // namespace loom::db
