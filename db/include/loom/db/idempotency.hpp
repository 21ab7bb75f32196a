// Idempotency keys of POST /api/v1/apply (migration 0008). A client picks a random key per
// logical request and sends it again on its retries; the first successful answer is stored
// under (actor, key) — for an apply that wrote, in the apply's own transaction
// (ApplyOptions::idempotency), so an apply whose answer was lost on the way is found by the
// retry instead of being applied again. `request` is what was asked (flags and body): the
// same key with another request is a client error. Keys live kIdempotencyTtl.
//
//   if (auto prior = db::findIdempotent(conn, actor, key, request); prior && *prior) ...
#pragma once

#include "loom/db/database.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace loom::db {

inline constexpr std::chrono::hours kIdempotencyTtl{24};

struct IdempotentAnswer {
    int status = 200;
    std::string body;
    bool sameRequest = true;  // false: the key was used for another request
};

// The stored answer for (actor, key) if it has not expired.
Result<std::optional<IdempotentAnswer>> findIdempotent(Connection& conn, std::string_view actor,
                                                       std::string_view key,
                                                       std::string_view request);

// Stores an answer that wrote nothing (e.g. "no changes"); a key already stored is kept.
Result<void> recordIdempotent(Connection& conn, std::string_view actor, std::string_view key,
                              std::string_view request, int status, std::string_view body);

}  // namespace loom::db
