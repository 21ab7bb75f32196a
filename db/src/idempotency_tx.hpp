// Storing an idempotent answer inside a caller's transaction (applyPlan).
#pragma once

#include <pqxx/pqxx>

#include <string_view>

namespace loom::db {

void storeIdempotent(pqxx::work& tx, std::string_view actor, std::string_view key,
                     std::string_view request, int status, std::string_view body);

}  // namespace loom::db
