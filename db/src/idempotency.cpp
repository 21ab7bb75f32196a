#include "loom/db/idempotency.hpp"

#include "idempotency_tx.hpp"
#include "loom/db/native.hpp"

#include <pqxx/pqxx>

namespace loom::db {
namespace {

const std::string kTtlSeconds = std::to_string(
    std::chrono::duration_cast<std::chrono::seconds>(kIdempotencyTtl).count());

}  // namespace

void storeIdempotent(pqxx::work& tx, std::string_view actor, std::string_view key,
                     std::string_view request, int status, std::string_view body) {
    tx.exec("DELETE FROM idempotency_keys WHERE expires_at < now()");
    // A plain INSERT: a concurrent request with the same key that committed first makes this
    // transaction fail (unique violation), so one of the two writes, never both.
    tx.exec_params(
        "INSERT INTO idempotency_keys (actor, key, request_hash, status, body, expires_at) "
        "VALUES ($1, $2, md5($3), $4, $5, now() + make_interval(secs => $6::int))",
        std::string(actor), std::string(key), std::string(request), status, std::string(body),
        kTtlSeconds);
}

Result<std::optional<IdempotentAnswer>> findIdempotent(Connection& c, std::string_view actor,
                                                       std::string_view key,
                                                       std::string_view request) {
    try {
        pqxx::nontransaction tx(native(c));
        auto r = tx.exec_params(
            "SELECT status, body, request_hash = md5($3) FROM idempotency_keys "
            "WHERE actor = $1 AND key = $2 AND expires_at > now()",
            std::string(actor), std::string(key), std::string(request));
        if (r.empty()) return std::optional<IdempotentAnswer>{};
        return std::optional<IdempotentAnswer>{
            IdempotentAnswer{r[0][0].as<int>(), r[0][1].c_str(), r[0][2].as<bool>()}};
    } catch (...) {
        return fail(translateException("idempotency key"));
    }
}

Result<void> recordIdempotent(Connection& c, std::string_view actor, std::string_view key,
                              std::string_view request, int status, std::string_view body) {
    try {
        pqxx::work tx(native(c));
        tx.exec("DELETE FROM idempotency_keys WHERE expires_at < now()");
        tx.exec_params(
            "INSERT INTO idempotency_keys (actor, key, request_hash, status, body, expires_at) "
            "VALUES ($1, $2, md5($3), $4, $5, now() + make_interval(secs => $6::int)) "
            "ON CONFLICT (actor, key) DO NOTHING",
            std::string(actor), std::string(key), std::string(request), status, std::string(body),
            kTtlSeconds);
        tx.commit();
        return {};
    } catch (...) {
        return fail(translateException("idempotency key"));
    }
}

}  // namespace loom::db
