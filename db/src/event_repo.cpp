#include "loom/db/event_repo.hpp"

#include "fence.hpp"

#include "copy_text.hpp"
#include "loom/db/native.hpp"

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include <charconv>
#include <cmath>
#include <map>

namespace loom::db {
namespace {

using detail::CopyIn;

constexpr std::size_t kMaxBatch = 10000;

void appendInt(std::string& out, std::int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// An open event's identity (the events_one_open index, migration 0027): kind, location and the
// job it slows (the `job` label; empty for the telemetry rules' events).
std::string keyOf(const EventRecord& e) {
    std::string job;
    for (const auto& [k, v] : e.labels)
        if (k == "job") job = v;
    return e.kind + '\x1f' + e.location + '\x1f' + job;
}

// Every column of an event, in the order readEvent() expects ("e" is the events alias).
constexpr const char* kEventColumns =
    "e.id, e.kind, e.severity, e.location, e.rack, e.zone, e.message, "
    "(extract(epoch FROM e.opened_at) * 1000)::bigint, "
    "COALESCE((extract(epoch FROM e.closed_at) * 1000)::bigint, 0), "
    "(SELECT string_agg(key || chr(31) || value, chr(30) ORDER BY key) "
    "   FROM jsonb_each_text(e.labels)), "
    "e.source, COALESCE(e.event_key, ''), COALESCE(e.acknowledged_by, ''), "
    "COALESCE((extract(epoch FROM e.acknowledged_at) * 1000)::bigint, 0), e.ack_comment, "
    "COALESCE(e.closed_by, ''), e.close_reason, e.origin, e.down_ends";

EventRecord readEvent(const pqxx::row& r) {
    EventRecord e;
    e.id = r[0].as<std::int64_t>();
    e.kind = r[1].c_str();
    e.severity = r[2].c_str();
    e.location = r[3].c_str();
    e.rack = r[4].c_str();
    e.zone = r[5].c_str();
    e.message = r[6].c_str();
    e.openedAtMs = r[7].as<std::int64_t>();
    e.closedAtMs = r[8].as<std::int64_t>();
    if (!r[9].is_null()) {
        std::string_view all = r[9].c_str();
        while (!all.empty()) {
            auto end = all.find('\x1e');
            auto item = all.substr(0, end);
            auto sep = item.find('\x1f');
            e.labels.emplace_back(std::string(item.substr(0, sep)),
                                  sep == std::string_view::npos ? "" : std::string(item.substr(sep + 1)));
            if (end == std::string_view::npos) break;
            all.remove_prefix(end + 1);
        }
    }
    e.source = r[10].c_str();
    e.key = r[11].c_str();
    e.acknowledgedBy = r[12].c_str();
    e.acknowledgedAtMs = r[13].as<std::int64_t>();
    e.ackComment = r[14].c_str();
    e.closedBy = r[15].c_str();
    e.closeReason = r[16].c_str();
    e.origin = r[17].c_str();
    std::string_view ends = r[18].c_str();
    while (!ends.empty()) {
        auto comma = ends.find(',');
        if (comma != 0) e.downEnds.emplace_back(ends.substr(0, comma));
        if (comma == std::string_view::npos) break;
        ends.remove_prefix(comma + 1);
    }
    return e;
}

std::string idArray(const std::vector<std::int64_t>& ids) {
    std::string a = "{";
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i) a += ',';
        appendInt(a, ids[i]);
    }
    a += '}';
    return a;
}

bool validSource(std::string_view s) {
    for (auto k : kEventSources)
        if (k == s) return true;
    return false;
}

// "must be telemetry, provisioning, operator or jobs, not 'x'": the sources from kEventSources,
// so the message cannot fall behind the list (the list filter's had lost "jobs").
std::string sourceError(std::string_view got) {
    std::string m = "must be ";
    for (std::size_t i = 0; i < std::size(kEventSources); ++i) {
        if (i) m += i + 1 == std::size(kEventSources) ? " or " : ", ";
        m += kEventSources[i];
    }
    return m + ", not '" + std::string(got) + "'";
}

}  // namespace

Result<std::vector<std::int64_t>> insertEvents(Connection& c, const std::vector<EventRecord>& events) {
    if (events.empty()) return std::vector<std::int64_t>{};
    if (events.size() > kMaxBatch)
        return fail(Error::invalid("at most " + std::to_string(kMaxBatch) + " events per batch"));
    // One JSON array parameter, unpacked by jsonb_to_recordset: one statement for the batch.
    std::string json = "[";
    std::map<std::string, bool> seen;  // a batch must not touch one open key twice
    for (std::size_t i = 0; i < events.size(); ++i) {
        const auto& e = events[i];
        if (!validSource(e.source))
            return fail(Error::invalid("event source " + sourceError(e.source)));
        if (!seen.emplace(keyOf(e), true).second) continue;
        if (json.size() > 1) json += ',';
        json += "{\"ord\":";
        appendInt(json, static_cast<std::int64_t>(i));
        json += ",\"kind\":";
        appendJsonString(json, e.kind);
        json += ",\"severity\":";
        appendJsonString(json, e.severity);
        json += ",\"location\":";
        appendJsonString(json, e.location);
        json += ",\"rack\":";
        appendJsonString(json, e.rack);
        json += ",\"zone\":";
        appendJsonString(json, e.zone);
        json += ",\"message\":";
        appendJsonString(json, e.message);
        json += ",\"opened_ms\":";
        appendInt(json, e.openedAtMs);
        json += ",\"labels\":";
        json += detail::labelsJson(e.labels);
        json += ",\"source\":";
        appendJsonString(json, e.source);
        json += ",\"key\":";
        if (e.key.empty()) json += "null";
        else appendJsonString(json, e.key);
        json += ",\"origin\":";
        appendJsonString(json, e.origin);
        std::string ends;
        for (const auto& end : e.downEnds) {
            if (!ends.empty()) ends += ',';
            ends += end;
        }
        json += ",\"down_ends\":";
        appendJsonString(json, ends);
        json += '}';
    }
    json += ']';
    // DO NOTHING on either unique index (the key: a retry; the one open event per kind,
    // location and job: another loomd's open event), then the id of the row that is there: the
    // statement's own insert, else the row of that key, else the open row of (kind, location,
    // job).
    // The subqueries see the table as it was when the statement began; a row another loomd
    // committed meanwhile yields no id, and a second run of the (idempotent) statement finds it.
    const char* sql =
        "WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(ord int, kind text, "
        "     severity text, location text, rack text, zone text, message text, opened_ms bigint, "
        "     labels jsonb, source text, key text, origin text, down_ends text)), "
        "ins AS (INSERT INTO events (kind, severity, location, rack, zone, message, opened_at, "
        "     labels, source, event_key, origin, down_ends) "
        "  SELECT kind, severity, location, rack, zone, message, to_timestamp(opened_ms / 1000.0), "
        "     labels, source, key, origin, down_ends FROM x ORDER BY ord "
        "  ON CONFLICT DO NOTHING "
        "  RETURNING id, kind, location, COALESCE(labels ->> 'job', '') AS job) "
        "SELECT x.ord, COALESCE(ins.id, "
        "  (SELECT e.id FROM events e WHERE x.key IS NOT NULL AND e.event_key = x.key), "
        "  (SELECT e.id FROM events e WHERE e.kind = x.kind AND e.location = x.location "
        "     AND COALESCE(e.labels ->> 'job', '') = COALESCE(x.labels ->> 'job', '') "
        "     AND e.closed_at IS NULL), 0), "
        // Whether the id is another key's row: this key becomes its alias (migration 0051).
        "  ins.id IS NULL AND x.key IS NOT NULL AND NOT EXISTS "
        "     (SELECT 1 FROM events e WHERE e.event_key = x.key) "
        "FROM x LEFT JOIN ins ON ins.kind = x.kind AND ins.location = x.location "
        "  AND ins.job = COALESCE(x.labels ->> 'job', '')";
    try {
        std::map<std::string, std::int64_t> ids;
        for (int attempt = 0; attempt < 2; ++attempt) {
            pqxx::work tx(native(c));
            auto rows = tx.exec_params(sql, json);
            ids.clear();
            bool missing = false;
            std::vector<std::string> aliasKeys, aliasIds;
            for (const auto& r : rows) {
                auto id = r[1].as<std::int64_t>();
                const auto& e = events[r[0].as<std::size_t>()];
                ids[keyOf(e)] = id;
                missing = missing || id == 0;
                if (id != 0 && r[2].as<bool>()) {
                    aliasKeys.push_back(e.key);
                    aliasIds.push_back(std::to_string(id));
                }
            }
            // The same condition opened by two loomds is one row, under the first one's key:
            // the second's key names it too, so each loomd finds it by its own key.
            if (!aliasKeys.empty())
                tx.exec_params(
                    "INSERT INTO event_key_aliases (event_key, event_id) "
                    "SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING",
                    detail::pgTextArray(aliasKeys), detail::pgTextArray(aliasIds));
            tx.commit();
            if (!missing) break;
        }
        std::vector<std::int64_t> out;
        out.reserve(events.size());
        for (const auto& e : events) {
            auto it = ids.find(keyOf(e));
            out.push_back(it == ids.end() ? 0 : it->second);
        }
        // An open link_down sent again (the hub's update when the other end went down, or one
        // end came back while the other is still down): its stored ends follow, the last in the
        // batch winning, so a restarted loomd holds the right ends down (issue 39). Only open
        // rows change; a closed one keeps the ends it closed with.
        std::map<std::int64_t, std::string> ends;
        for (std::size_t i = 0; i < events.size(); ++i) {
            if (events[i].kind != "link_down" || out[i] == 0) continue;
            std::string joined;
            for (const auto& end : events[i].downEnds) {
                if (!joined.empty()) joined += ',';
                joined += end;
            }
            ends[out[i]] = std::move(joined);
        }
        if (!ends.empty()) {
            std::vector<std::string> idList, endList;
            for (const auto& [id, e] : ends) {
                idList.push_back(std::to_string(id));
                endList.push_back(e);
            }
            pqxx::work tx(native(c));
            tx.exec_params(
                "UPDATE events e SET down_ends = u.ends FROM unnest($1::bigint[], $2::text[]) "
                "AS u(id, ends) WHERE e.id = u.id AND e.closed_at IS NULL AND e.down_ends <> "
                "u.ends",
                detail::pgTextArray(idList), detail::pgTextArray(endList));
            tx.commit();
        }
        return out;
    } catch (...) {
        return fail(translateException("insert events"));
    }
}

Result<std::vector<std::int64_t>> closeEvents(Connection& c, const std::vector<EventClose>& closes) {
    if (closes.empty()) return std::vector<std::int64_t>{};
    if (closes.size() > kMaxBatch)
        return fail(Error::invalid("at most " + std::to_string(kMaxBatch) + " closes per batch"));
    std::string json = "[";
    for (std::size_t i = 0; i < closes.size(); ++i) {
        if (i) json += ',';
        json += "{\"ord\":";
        appendInt(json, static_cast<std::int64_t>(i));
        json += ",\"kind\":";
        appendJsonString(json, closes[i].kind);
        json += ",\"location\":";
        appendJsonString(json, closes[i].location);
        json += ",\"closed_ms\":";
        appendInt(json, closes[i].closedAtMs);
        json += ",\"id\":";
        appendInt(json, closes[i].id);
        json += ",\"key\":";
        appendJsonString(json, closes[i].key);
        json += ",\"reason\":";
        appendJsonString(json, closes[i].reason);
        json += '}';
    }
    json += ']';
    try {
        pqxx::work tx(native(c));
        // Each close names its row: by id, else by the writer's key, else the open event of
        // (kind, location). Only open rows change, so a retried close changes nothing.
        auto rows = tx.exec_params(
            "UPDATE events e SET closed_at = GREATEST(e.opened_at, to_timestamp(x.closed_ms / 1000.0)), "
            "  close_reason = COALESCE(NULLIF(x.reason, ''), e.close_reason) "
            "FROM jsonb_to_recordset($1::jsonb) AS x(ord int, kind text, location text, "
            "     closed_ms bigint, id bigint, key text, reason text) "
            "WHERE e.closed_at IS NULL AND CASE WHEN x.id <> 0 THEN e.id = x.id "
            "  WHEN x.key <> '' THEN e.event_key = x.key "
            "  ELSE e.kind = x.kind AND e.location = x.location END "
            "RETURNING x.ord, e.id",
            json);
        tx.commit();
        std::vector<std::int64_t> out(closes.size(), 0);
        for (const auto& r : rows) {
            auto ord = r[0].as<std::size_t>();
            if (ord < out.size()) out[ord] = r[1].as<std::int64_t>();
        }
        return out;
    } catch (...) {
        return fail(translateException("close events"));
    }
}

Result<std::vector<EventRecord>> getEvents(Connection& c, const std::vector<std::int64_t>& ids) {
    std::vector<EventRecord> out;
    if (ids.empty()) return out;
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params(std::string("SELECT ") + kEventColumns +
                                       " FROM events e WHERE e.id = ANY($1::bigint[])",
                                   idArray(ids));
        std::map<std::int64_t, EventRecord> byId;
        for (const auto& r : rows) {
            auto e = readEvent(r);
            byId.emplace(e.id, std::move(e));
        }
        for (auto id : ids)
            if (auto it = byId.find(id); it != byId.end()) out.push_back(it->second);
        return out;
    } catch (...) {
        return fail(translateException("get events"));
    }
}

Result<std::map<std::string, std::int64_t>> eventIdsByKey(Connection& c,
                                                          const std::vector<std::string>& keys) {
    std::map<std::string, std::int64_t> out;
    if (keys.empty()) return out;
    try {
        pqxx::read_transaction tx(native(c));
        // A key names the row it opened, or the row another loomd stored first for the same
        // condition (event_key_aliases).
        auto rows = tx.exec_params(
            "SELECT event_key, id FROM events WHERE event_key = ANY($1::text[]) "
            "UNION ALL SELECT a.event_key, a.event_id FROM event_key_aliases a "
            "WHERE a.event_key = ANY($1::text[]) "
            "  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_key = a.event_key)",
            detail::pgTextArray(keys));
        for (const auto& r : rows) out.emplace(r[0].c_str(), r[1].as<std::int64_t>());
        return out;
    } catch (...) {
        return fail(translateException("event ids by key"));
    }
}

Result<EventRecord> ackEvent(Connection& c, std::int64_t id, const std::string& actor,
                             const std::string& comment) {
    try {
        pqxx::work tx(native(c));
        // COALESCE keeps the first acknowledgement.
        auto rows = tx.exec_params(
            std::string("UPDATE events e SET acknowledged_by = COALESCE(e.acknowledged_by, $2), "
                        "ack_comment = CASE WHEN e.acknowledged_by IS NULL THEN $3 ELSE e.ack_comment END, "
                        "acknowledged_at = COALESCE(e.acknowledged_at, now()) "
                        "WHERE e.id = $1 RETURNING ") +
                kEventColumns,
            id, actor, comment);
        tx.commit();
        if (rows.empty()) return fail(Error::notFound("event " + std::to_string(id) + " not found"));
        return readEvent(rows[0]);
    } catch (...) {
        return fail(translateException("acknowledge event"));
    }
}

Result<EventRecord> closeEventByHand(Connection& c, std::int64_t id, const std::string& actor,
                                     const std::string& reason) {
    try {
        pqxx::work tx(native(c));
        auto rows = tx.exec_params(
            std::string("UPDATE events e SET closed_at = GREATEST(e.opened_at, now()), "
                        "closed_by = $2, close_reason = $3 "
                        "WHERE e.id = $1 AND e.closed_at IS NULL RETURNING ") +
                kEventColumns,
            id, actor, reason);
        if (!rows.empty()) {
            tx.commit();
            return readEvent(rows[0]);
        }
        auto cur = tx.exec_params(std::string("SELECT ") + kEventColumns +
                                      " FROM events e WHERE e.id = $1",
                                  id);
        if (cur.empty()) return fail(Error::notFound("event " + std::to_string(id) + " not found"));
        auto e = readEvent(cur[0]);
        return fail(Error::conflict(
            "event " + std::to_string(id) + " is already closed (at " + isoTimeMs(e.closedAtMs) +
            (e.closedBy.empty() ? std::string(", by recovery)") : ", by " + e.closedBy + ")")));
    } catch (...) {
        return fail(translateException("close event"));
    }
}

Result<std::vector<EventRecord>> listOpenTelemetryEvents(Connection& c) {
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec(std::string("SELECT ") + kEventColumns +
                            " FROM events e WHERE e.closed_at IS NULL AND e.source = 'telemetry' "
                            "ORDER BY e.id");
        std::vector<EventRecord> out;
        out.reserve(rows.size());
        for (const auto& r : rows) out.push_back(readEvent(r));
        return out;
    } catch (...) {
        return fail(translateException("list open events"));
    }
}

Result<std::vector<EventRecord>> listAlertEvents(Connection& c, std::int64_t closedSinceMs,
                                                 int limit) {
    if (limit < 1 || limit > 100'000)
        return fail(Error::invalid("limit must be between 1 and 100000", "limit"));
    try {
        pqxx::read_transaction tx(native(c));
        // Two index scans (events_open, events_closed_at), open ones first.
        auto rows = tx.exec_params(
            std::string("(SELECT ") + kEventColumns +
                ", 0 AS part FROM events e WHERE e.closed_at IS NULL) UNION ALL (SELECT " +
                kEventColumns +
                ", 1 FROM events e WHERE e.closed_at >= to_timestamp($1::double precision / 1000) "
                "AND e.closed_at > e.opened_at) ORDER BY part, id LIMIT $2",
            closedSinceMs, limit);
        std::vector<EventRecord> out;
        out.reserve(rows.size());
        for (const auto& r : rows) out.push_back(readEvent(r));
        return out;
    } catch (...) {
        return fail(translateException("list events for alerting"));
    }
}

namespace {

// The WHERE clause of listEvents and countEvents, from fixed fragments; every value is a
// parameter (appended to params).
Result<std::string> eventWhere(const EventFilter& f, std::vector<std::string>& params) {
    if (f.severity && *f.severity != "info" && *f.severity != "warning" && *f.severity != "critical")
        return fail(Error::invalid("severity must be info, warning or critical", "severity"));
    if (f.source && !validSource(*f.source))
        return fail(Error::invalid("source " + sourceError(*f.source), "source"));
    std::string sql = " WHERE true";
    auto cond = [&](const char* expr, std::string value) {
        params.push_back(std::move(value));
        sql += " AND ";
        sql += expr;
        sql += " $" + std::to_string(params.size());
    };
    if (f.severity) cond("severity =", *f.severity);
    if (f.kind) cond("kind =", *f.kind);
    if (f.source) cond("source =", *f.source);
    if (f.acknowledged)
        sql += *f.acknowledged ? " AND acknowledged_by IS NOT NULL" : " AND acknowledged_by IS NULL";
    if (f.location) {
        // A rack name as location finds the events of everything in that rack too.
        params.push_back(*f.location);
        auto n = std::to_string(params.size());
        sql += " AND (location = $" + n + " OR rack = $" + n + ")";
    }
    if (f.host) {
        params.push_back(*f.host);
        auto n = std::to_string(params.size());
        const auto h = "$" + n + "::text";
        sql += " AND (location = " + h + " OR left(location, length(" + h + ") + 1) = " + h +
               " || '-' OR strpos(location, '--' || " + h + " || '-') > 0)";
    }
    if (f.rack) cond("rack =", *f.rack);
    if (f.zone) cond("zone =", *f.zone);
    if (f.sinceMs) {
        params.push_back(std::to_string(*f.sinceMs));
        sql += " AND opened_at >= to_timestamp($" + std::to_string(params.size()) + "::bigint / 1000.0)";
    }
    if (f.untilMs) {
        params.push_back(std::to_string(*f.untilMs));
        sql += " AND opened_at < to_timestamp($" + std::to_string(params.size()) + "::bigint / 1000.0)";
    }
    if (f.open) sql += *f.open ? " AND closed_at IS NULL" : " AND closed_at IS NOT NULL";
    return sql;
}

}  // namespace

Result<std::int64_t> countEvents(Connection& c, const EventFilter& f) {
    std::vector<std::string> params;
    auto where = eventWhere(f, params);
    if (!where) return fail(where.error());
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params("SELECT count(*) FROM events e" + *where,
                                   pqxx::prepare::make_dynamic_params(params));
        return rows[0][0].as<std::int64_t>();
    } catch (...) {
        return fail(translateException("count events"));
    }
}

Result<EventPage> listEvents(Connection& c, const EventFilter& f) {
    if (f.limit < 1 || f.limit > 5000)
        return fail(Error::invalid("limit must be between 1 and 5000", "limit"));
    std::vector<std::string> params;
    auto where = eventWhere(f, params);
    if (!where) return fail(where.error());
    std::string sql = std::string("SELECT ") + kEventColumns + " FROM events e" + *where;
    if (f.cursor) {
        params.push_back(std::to_string(*f.cursor));
        sql += " AND id < $" + std::to_string(params.size()) + "::bigint";
    }
    params.push_back(std::to_string(f.limit + 1));
    sql += " ORDER BY id DESC LIMIT $" + std::to_string(params.size()) + "::int";
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
        EventPage page;
        for (const auto& r : rows) {
            if (static_cast<int>(page.items.size()) == f.limit) {
                page.nextCursor = page.items.back().id;
                break;
            }
            auto e = readEvent(r);
            page.items.push_back(std::move(e));
        }
        return page;
    } catch (...) {
        return fail(translateException("list events"));
    }
}

Result<void> insertRollups(Connection& c, const std::vector<RollupRecord>& rows,
                           const std::optional<Fence>& fence) {
    if (rows.empty()) return {};
    auto opt = [](std::string& line, const std::optional<double>& v) {
        if (!v || !std::isfinite(*v)) {
            line += "\\N";
        } else {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.3f", *v);
            line += buf;
        }
    };
    auto num = [](std::string& line, double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.0f", std::isfinite(v) ? v : 0.0);
        line += buf;
    };
    try {
        pqxx::work tx(native(c));
        {
            CopyIn copy(tx, "telemetry_rollups",
                        {"minute", "scope", "name", "util_avg", "util_max", "temp_avg", "temp_max",
                         "power_avg", "gpus_reporting", "gpus_unhealthy", "errors", "discards",
                         "pfc_pause", "ports_down"});
            std::string line;
            for (const auto& r : rows) {
                if (r.scope != "rack" && r.scope != "switch")
                    return fail(Error::invalid("rollup scope must be rack or switch, not '" + r.scope + "'"));
                line.clear();
                line += isoTimeMs(r.minuteMs);
                line += '\t';
                detail::copyEscape(line, r.scope);
                line += '\t';
                detail::copyEscape(line, r.name);
                for (const auto* v : {&r.utilAvg, &r.utilMax, &r.tempAvg, &r.tempMax, &r.powerAvg}) {
                    line += '\t';
                    opt(line, *v);
                }
                line += '\t';
                appendInt(line, r.gpusReporting);
                line += '\t';
                appendInt(line, r.gpusUnhealthy);
                line += '\t';
                num(line, r.errors);
                line += '\t';
                num(line, r.discards);
                line += '\t';
                num(line, r.pfcPause);
                line += '\t';
                appendInt(line, r.portsDown);
                copy.line(line);
            }
            copy.complete();
        }
        if (fence) checkFence(tx, *fence);  // last: the lease row is locked only for the commit
        tx.commit();
        return {};
    } catch (const FencedOut& f) {
        return fail(Error::conflict(f.what()));
    } catch (...) {
        return fail(translateException("insert rollups"));
    }
}

Result<std::vector<RollupRecord>> listRollups(Connection& c, const std::string& scope,
                                              const std::string& name, std::int64_t sinceMs,
                                              std::int64_t untilMs) {
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params(
            "SELECT (extract(epoch FROM minute) * 1000)::bigint, scope, name, util_avg, util_max, "
            "temp_avg, temp_max, power_avg, gpus_reporting, gpus_unhealthy, errors, discards, "
            "pfc_pause, ports_down FROM telemetry_rollups "
            "WHERE scope = $1 AND ($2 = '' OR name = $2) "
            "AND minute >= to_timestamp($3::bigint / 1000.0) AND minute < to_timestamp($4::bigint / 1000.0) "
            "ORDER BY minute, name LIMIT 10000",
            scope, name, sinceMs, untilMs);
        std::vector<RollupRecord> out;
        for (const auto& r : rows) {
            RollupRecord x;
            x.minuteMs = r[0].as<std::int64_t>();
            x.scope = r[1].c_str();
            x.name = r[2].c_str();
            auto o = [&](int i) -> std::optional<double> {
                if (r[i].is_null()) return std::nullopt;
                return r[i].as<double>();
            };
            x.utilAvg = o(3);
            x.utilMax = o(4);
            x.tempAvg = o(5);
            x.tempMax = o(6);
            x.powerAvg = o(7);
            x.gpusReporting = r[8].as<int>();
            x.gpusUnhealthy = r[9].as<int>();
            x.errors = r[10].as<double>();
            x.discards = r[11].as<double>();
            x.pfcPause = r[12].as<double>();
            x.portsDown = r[13].as<int>();
            out.push_back(std::move(x));
        }
        return out;
    } catch (...) {
        return fail(translateException("list rollups"));
    }
}

}  // namespace loom::db
