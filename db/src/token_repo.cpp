#include "loom/db/token_repo.hpp"

#include "loom/db/native.hpp"

#include "copy_text.hpp"
#include "loom/inventory/natural_order.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace loom::db {

namespace {

using detail::col;

// Inside a catch block: database.cpp's mapping, plus the one case that is the tokens' own.
Error toError(const std::exception& e) {
    if (auto* se = dynamic_cast<const pqxx::sql_error*>(&e); se && se->sqlstate() == "42P01")
        return Error::unavailable("the tokens table is missing: migrations not applied");
    return translateException("");
}

TokenInfo rowToInfo(const pqxx::row& r) {
    return TokenInfo{col(r[0]), col(r[1]), col(r[2]), col(r[3]), col(r[4]), col(r[5])};
}

constexpr const char* kCols =
    "name, role, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "created_by, to_char(last_used_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

}  // namespace

Result<TokenInfo> createToken(Connection& c, const std::string& name, const std::string& role,
                              const std::string& hash, const std::string& createdBy) {
    if (name.empty() || name.size() > 64)
        return fail(Error::invalid("token name must be 1 to 64 characters", "name"));
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
            return fail(Error::invalid(
                "token name may contain only letters, digits, '.', '_' and '-'", "name"));
    if (role != "viewer" && role != "operator" && role != "admin")
        return fail(Error::invalid("role must be viewer, operator or admin, not '" + role + "'",
                                   "role"));
    try {
        pqxx::work tx(native(c));
        auto r = tx.exec_params(std::string("INSERT INTO api_tokens (name, role, hash, created_by) "
                                            "VALUES ($1, $2, $3, $4) RETURNING ") +
                                    kCols,
                                name, role, hash, createdBy);
        tx.commit();
        return rowToInfo(r[0]);
    } catch (const pqxx::unique_violation&) {
        return fail(Error::conflict("a token named '" + name + "' already exists"));
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<std::optional<TokenInfo>> findToken(Connection& c, const std::string& hash) {
    try {
        pqxx::read_transaction tx(native(c));
        auto r = tx.exec_params(std::string("SELECT ") + kCols +
                                    " FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL",
                                hash);
        if (r.empty()) return std::optional<TokenInfo>{};
        return std::optional<TokenInfo>{rowToInfo(r[0])};
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<std::vector<TokenInfo>> listTokens(Connection& c) {
    try {
        pqxx::read_transaction tx(native(c));
        auto r = tx.exec(std::string("SELECT ") + kCols + " FROM api_tokens");
        std::vector<TokenInfo> out;
        for (const auto& row : r) out.push_back(rowToInfo(row));
        // In natural order (ci-2 before ci-10), as every list of the API; a few rows, sorted here.
        std::sort(out.begin(), out.end(), [](const TokenInfo& a, const TokenInfo& b) {
            return loom::naturalLess(a.name, b.name);
        });
        return out;
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<TokenInfo> revokeToken(Connection& c, const std::string& name) {
    try {
        pqxx::work tx(native(c));
        auto r = tx.exec_params(std::string("UPDATE api_tokens SET revoked_at = now() "
                                            "WHERE name = $1 AND revoked_at IS NULL RETURNING ") +
                                    kCols,
                                name);
        if (r.empty()) return fail(Error::notFound("no live token named '" + name + "'"));
        tx.commit();
        return rowToInfo(r[0]);
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<void> touchTokens(Connection& c, const std::vector<std::string>& names) {
    if (names.empty()) return {};
    try {
        pqxx::work tx(native(c));
        tx.exec_params("UPDATE api_tokens SET last_used_at = now() WHERE name = ANY($1::text[])",
                       detail::pgTextArray(names));
        tx.commit();
        return {};
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

}  // namespace loom::db
