#include "loom/db/lemon_repo.hpp"

#include <pqxx/pqxx>

#include "copy_text.hpp"
#include "loom/db/native.hpp"
#include "loom/inventory/json_text.hpp"

namespace loom::db {

namespace {

constexpr const char* kStrikeCols =
    "entity, kind, host, job, cause, (extract(epoch FROM struck_at) * 1000)::bigint";

std::vector<jobs::LemonStrike> rowsToStrikes(const pqxx::result& rows) {
    std::vector<jobs::LemonStrike> out;
    out.reserve(rows.size());
    for (const auto& r : rows)
        out.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                       r[3].as<std::string>(), r[4].as<std::string>(), r[5].as<std::int64_t>()});
    return out;
}

}  // namespace

Result<void> recordStrikes(Connection& c, const std::vector<jobs::LemonStrike>& strikes) {
    if (strikes.empty()) return {};
    std::string rows = "[";
    for (std::size_t i = 0; i < strikes.size(); ++i) {
        const auto& s = strikes[i];
        if (s.kind != "host" && s.kind != "gpu")
            return fail(Error::invalid("a strike's kind is host or gpu, not '" + s.kind + "'"));
        if (i) rows += ',';
        rows += "{\"entity\":";
        appendJsonString(rows, s.entity);
        rows += ",\"kind\":";
        appendJsonString(rows, s.kind);
        rows += ",\"host\":";
        appendJsonString(rows, s.host);
        rows += ",\"job\":";
        appendJsonString(rows, s.job);
        rows += ",\"cause\":";
        appendJsonString(rows, s.cause);
        rows += ",\"at\":" + std::to_string(s.atMs) + "}";
    }
    rows += ']';
    try {
        pqxx::work tx(native(c));
        tx.exec_params(
            "INSERT INTO lemon_strikes AS l (entity, kind, host, job, cause, struck_at) "
            "SELECT DISTINCT ON (x.entity, x.job) x.entity, x.kind, x.host, x.job, x.cause, "
            "to_timestamp(x.at / 1000.0) FROM jsonb_to_recordset($1::jsonb) AS x(entity text, "
            "kind text, host text, job text, cause text, at bigint) "
            "ORDER BY x.entity, x.job, x.at DESC "
            "ON CONFLICT (entity, job) DO UPDATE SET cause = EXCLUDED.cause, struck_at = "
            "EXCLUDED.struck_at WHERE l.struck_at < EXCLUDED.struck_at",
            rows);
        tx.commit();
        return {};
    } catch (const std::exception&) {
        return fail(translateException("lemon strikes"));
    }
}

Result<std::vector<jobs::LemonStrike>> strikesSince(Connection& c, std::int64_t sinceMs,
                                                    int limit) {
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params(std::string("SELECT ") + kStrikeCols +
                                       " FROM lemon_strikes WHERE struck_at >= to_timestamp($1 / "
                                       "1000.0) ORDER BY struck_at LIMIT $2",
                                   sinceMs, limit);
        return rowsToStrikes(rows);
    } catch (const std::exception&) {
        return fail(translateException("lemon strikes"));
    }
}

Result<std::vector<jobs::LemonStrike>> strikesOnHosts(Connection& c,
                                                      const std::vector<std::string>& hosts,
                                                      std::int64_t sinceMs) {
    if (hosts.empty()) return std::vector<jobs::LemonStrike>{};
    try {
        pqxx::read_transaction tx(native(c));
        auto rows =
            tx.exec_params(std::string("SELECT ") + kStrikeCols +
                               " FROM lemon_strikes WHERE host = ANY($1::text[]) "
                               "AND struck_at >= to_timestamp($2 / 1000.0) ORDER BY struck_at",
                           detail::pgTextArray(hosts), sinceMs);
        return rowsToStrikes(rows);
    } catch (const std::exception&) {
        return fail(translateException("lemon strikes"));
    }
}

Result<std::vector<jobs::LemonStrike>> strikesInRack(Connection& c, const std::string& rack,
                                                     std::int64_t sinceMs) {
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params(
            std::string("SELECT ") + kStrikeCols +
                " FROM lemon_strikes WHERE host IN (SELECT h.name FROM hosts h JOIN racks r ON "
                "r.id = h.rack_id WHERE r.name = $1) AND struck_at >= to_timestamp($2 / 1000.0) "
                "ORDER BY struck_at",
            rack, sinceMs);
        return rowsToStrikes(rows);
    } catch (const std::exception&) {
        return fail(translateException("lemon strikes"));
    }
}

Result<int> pruneStrikes(Connection& c, std::int64_t beforeMs) {
    try {
        pqxx::work tx(native(c));
        auto r = tx.exec_params(
            "DELETE FROM lemon_strikes WHERE struck_at < to_timestamp($1 / 1000.0)", beforeMs);
        tx.commit();
        return static_cast<int>(r.affected_rows());
    } catch (const std::exception&) {
        return fail(translateException("lemon strikes"));
    }
}

}  // namespace loom::db
