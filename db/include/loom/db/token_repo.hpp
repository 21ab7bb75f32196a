// API tokens (migration 0002_auth.sql): create, look up by secret, list, revoke.
//
// Only the SHA-256 of a token is stored, so a leaked database does not leak tokens; the secret
// itself is made and hashed by the caller (backend/auth.hpp: generateTokenSecret, hashToken)
// and shown once.
//
//   auto info = createToken(conn, "ci", "operator", hashToken(secret), "admin-alice");
//   auto who = findToken(conn, hashToken(presented));             // on every request (cached)
#pragma once

#include "loom/db/database.hpp"
#include "loom/inventory/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::db {

struct TokenInfo {
    std::string name;
    std::string role;  // viewer | operator | admin
    std::string createdAt, createdBy, lastUsedAt, revokedAt;  // ISO 8601; empty when unset
};

// Names: 1..64 of [A-Za-z0-9._-]; role viewer|operator|admin. A taken name -> Conflict.
Result<TokenInfo> createToken(Connection& conn, const std::string& name, const std::string& role,
                              const std::string& hash, const std::string& createdBy);
// The live (not revoked) token with this hash; nullopt when none.
Result<std::optional<TokenInfo>> findToken(Connection& conn, const std::string& hash);
// Every token, revoked ones too, in natural order of the names.
Result<std::vector<TokenInfo>> listTokens(Connection& conn);
// NotFound when no live token has that name.
Result<TokenInfo> revokeToken(Connection& conn, const std::string& name);
// Sets last_used_at = now() for these token names (batched by the server, once a minute).
Result<void> touchTokens(Connection& conn, const std::vector<std::string>& names);

}  // namespace loom::db
