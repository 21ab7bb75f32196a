// The inventory's read path and its PATCH, as statements: a list page (the filters compiled
// by inventory_filters.cpp, keyset pagination in natural order), get by name, the PATCH of
// labels, annotations and operational fields, the name indexes left to after an apply's commit,
// and the per-kind summary.
#include "loom/db/inventory_query.hpp"

#include <algorithm>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>

#include "bulk_load.hpp"
#include "copy_text.hpp"
#include "inventory_filters.hpp"
#include "list_sql.hpp"
#include "loom/db/native.hpp"
#include "loom/inventory/kinds.hpp"
#include "loom/inventory/natural_order.hpp"

namespace loom::db {

using detail::decodeCursor;
using detail::encodeCursor;
using detail::Field;
using detail::filterCondition;
using detail::joinNames;
using detail::kindSql;
using detail::Relation;
using detail::relationCondition;
using detail::selectSql;
using inventory::Kind;

namespace {

// The connection and SQL failures the API reports, as loom errors (no pqxx escapes db/): the
// one mapping of database.cpp. Called inside a catch block.
Error toError(const std::exception&) { return translateException(""); }

}  // namespace

Result<ListPage> listObjects(Connection& c, const ListQuery& query) {
    if (query.limit < 1 || query.limit > kMaxListLimit)
        return fail(Error::invalid("limit must be between 1 and " + std::to_string(kMaxListLimit),
                                   "limit"));
    if (query.filters.size() > kMaxListFilters)
        return fail(Error::invalid("at most " + std::to_string(kMaxListFilters) + " filters"));
    std::vector<std::string> params;
    std::string where;
    auto addCond = [&](const std::string& cond) {
        where += where.empty() ? " WHERE " : " AND ";
        where += cond;
    };
    if (!query.cursor.empty()) {
        auto after = decodeCursor(query.cursor);
        if (!after) return fail(Error::invalid("malformed cursor", "cursor"));
        // The cursor is the last name of the previous page; the page after it starts after
        // its natural sort key (0021; distinct names have distinct keys).
        params.push_back(naturalSortKey(*after));
        addCond("t.sort_key > $" + std::to_string(params.size()));
    }
    const std::string cursorWhere = where;  // " WHERE t.sort_key > $1", or empty
    // One condition per filter key; the same key given again is an alternative (NetBox's
    // `?rack=z1-r001&rack=z1-r002`): its values are ORed — of a negated lookup ANDed
    // (`state__n=failed&state__n=planned` excludes both) — different keys ANDed.
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // key, its values
    // A pattern on the name (`__ic`, `__isw`, `__iew`) is planned with its value: a rare one
    // goes through the trigram index (0022), a common one walks the sort_key index until the
    // page is full. A prepared statement's generic plan cannot tell them apart and walked the
    // whole sort_key index for a rare one (68 ms at 24k against 1.4 ms). Other patterns (a
    // relation's, `peer__ic=ctsw`) have no index to choose and stay prepared: planned on every
    // request, `device=&peer__ic=` took 2.6 ms of PostgreSQL CPU per page, prepared 1.0 ms.
    bool planWithValues = false;
    std::optional<std::pair<std::string, std::string>> walkFirst;  // per row, as a set
    for (const auto& [field, value] : query.filters) {
        planWithValues |= field == "name__ic" || field == "name__isw" || field == "name__iew";
        auto g = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& x) { return x.first == field; });
        if (g == groups.end()) g = groups.insert(groups.end(), {field, {}});
        g->second.push_back(value);
    }
    for (const auto& [field, values] : groups) {
        std::string base = field, op;
        if (auto dunder = field.rfind("__"); dunder != std::string::npos && dunder > 0) {
            base = field.substr(0, dunder);
            op = field.substr(dunder + 2);
        }
        const auto& relations = kindSql(query.kind).relations;
        auto rel = std::find_if(relations.begin(), relations.end(),
                                [&](const Relation& r) { return base == r.api; });
        if (rel != relations.end() && field.rfind("label.", 0) != 0) {
            // Narrowed by another key: an exact relation (`device=`, `switch=`: the related
            // object's index) or an exact or prefix name.
            const bool narrowed = std::any_of(groups.begin(), groups.end(), [&](const auto& g) {
                if (g.first == field) return false;
                if (g.first == "name" || g.first == "name__isw") return true;
                return std::any_of(relations.begin(), relations.end(),
                                   [&](const Relation& r) { return g.first == r.api; });
            });
            // Given alone with a pattern (`peer__ic=ctsw`): see walkFirst below.
            if (groups.size() == 1 && rel->rowWhere && !op.empty() && op != "n" && op != "nic") {
                auto perRow = relationCondition(*rel, field, base, op, values, true, params);
                if (!perRow) return fail(perRow.error());
                auto set = relationCondition(*rel, field, base, op, values, false, params);
                if (!set) return fail(set.error());
                walkFirst = {*perRow, *set};
                continue;
            }
            auto cond = relationCondition(*rel, field, base, op, values, narrowed, params);
            if (!cond) return fail(cond.error());
            addCond("(" + *cond + ")");
            continue;
        }
        const bool negated = field.ends_with("__n") || field.ends_with("__nic");
        std::string conds;
        for (const auto& value : values) {
            auto cond = filterCondition(query.kind, field, value, params);
            if (!cond) return fail(cond.error());
            conds += (conds.empty() ? "(" : negated ? " AND (" : " OR (") + *cond + ")";
        }
        if (query.kind == inventory::Kind::Link && query.liveBackendLinks &&
            (field == "health" || field == "health__n")) {
            const auto& live = *query.liveBackendLinks;
            params.push_back(detail::pgTextArray(live.names));
            conds = "((t.network = 'backend' AND t.name " +
                    std::string(live.failing ? "<> ALL" : "= ANY") + "($" +
                    std::to_string(params.size()) + "::text[])) OR (t.network <> 'backend' AND " +
                    conds + "))";
        }
        addCond("(" + conds + ")");
    }
    // Natural order (p2 before p10): the btree on sort_key, COLLATE "C" (0021).
    const std::string orderLimit = " ORDER BY t.sort_key LIMIT " + std::to_string(query.limit + 1);
    const std::string table = kindSql(query.kind).table;
    // The page's sort keys in two tries, one statement: the first `walk` rows in natural order
    // (after the cursor) are tested with `walkCond` over the columns `walkCols`, and when they
    // hold the whole page that is the page; otherwise `setCond` finds every matching row and
    // the page is its first ones (what the walk found is a prefix of them). The set's OFFSET 0
    // keeps its plan a set (an index that finds the rows, then a top-N sort) and not a walk of
    // the natural order filtered row by row, which a generic plan would take for a rare value.
    auto walkThenSet = [&](const char* walkCols, int walk, const std::string& walkCond,
                           const std::string& setCond) {
        const std::string n = std::to_string(query.limit);
        return "WITH w AS (SELECT t.sort_key FROM (SELECT " + std::string(walkCols) + " FROM " +
               table + " t" + cursorWhere + " ORDER BY t.sort_key LIMIT " + std::to_string(walk) +
               ") t WHERE " + walkCond + orderLimit +
               ") SELECT w.sort_key FROM w WHERE (SELECT count(*) FROM w) > " + n +
               " UNION ALL (SELECT t.sort_key FROM (SELECT t.sort_key FROM " + table + " t" +
               (cursorWhere.empty() ? " WHERE " : cursorWhere + " AND ") + "(" + setCond +
               ") AND (SELECT count(*) FROM w) <= " + n + " OFFSET 0) t" + orderLimit + ")";
    };
    // Filtered on the name (or a port's stored peer) alone: the page's sort keys first, then
    // the objects of those keys (one probe each). A broad name pattern then walks
    // ports_sort_key / links_sort_key, which carry the name (0025), as an index-only scan:
    // `ports?name__ic=ctsw` checks ~6,700 names before its 100th match, 3,788 buffers and
    // 8.2 ms as heap fetches, 43 buffers and 1.3 ms without. A rare one still goes through the
    // trigram index, and the join is 101 probes of sort_key. `ports?peer=<device>` reads its
    // keys from (peer, sort_key) (0026) the same way.
    // (Tried: one prepared walk-then-set statement for both, which saves the planning with the
    // value, ~1.3 ms for a broad pattern, as the planner reads ~180 pages of the trigram index
    // to cost it; its walk of 10,100 names cost as much for a broad one and ~1.5 ms more for a
    // rare one, under 50 clients at 24k.)
    const bool keysFirst =
        !groups.empty() && std::all_of(groups.begin(), groups.end(), [&](auto& g) {
            return g.first == "name" || g.first.starts_with("name__") ||
                   (query.kind == Kind::Port &&
                    (g.first == "peer" || g.first.starts_with("peer__")));
        });
    std::string sql;
    if (walkFirst) {
        // A relation's pattern given alone: as a set (for `peer`, the devices whose names match,
        // then their ranges of ports_peer, 0026) it costs what the set holds, 31k ports for
        // `peer__ic=ctsw`; per row in natural order it costs the rows walked, every port for a
        // rare pattern. So the first 2 x (limit + 1) ports are tested per row (a broad pattern:
        // the ATSW ports that lead the order all face a CTSW), and only when they do not hold
        // the page is the set taken (`peer__ic=ctsw07`: 8 switches, 1,728 index entries).
        sql = selectSql(query.kind, walkThenSet("t.*", 2 * (query.limit + 1), walkFirst->first,
                                                walkFirst->second)) +
              " ORDER BY t.sort_key";
    } else if (keysFirst) {
        sql = selectSql(query.kind, "SELECT t.sort_key FROM " + table + " t" + where + orderLimit) +
              " ORDER BY t.sort_key";
    } else {
        sql = selectSql(query.kind) + where + orderLimit;
    }
    try {
        const std::string* prepared = planWithValues ? nullptr : preparedName(c, sql);
        // One statement, so one snapshot without BEGIN READ ONLY / COMMIT: two round trips and
        // two commands fewer per request.
        pqxx::nontransaction tx(native(c));
        auto rows = prepared
                        ? tx.exec_prepared(*prepared, pqxx::prepare::make_dynamic_params(params))
                        : tx.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
        ListPage page;
        std::size_t n = std::min<std::size_t>(rows.size(), std::size_t(query.limit));
        page.items.reserve(n);
        for (std::size_t i = 0; i < n; ++i) page.items.push_back(rows[i][1].as<std::string>());
        if (rows.size() > std::size_t(query.limit))
            page.nextCursor = encodeCursor(rows[n - 1][0].as<std::string>());
        return page;
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<std::string> getObject(Connection& c, Kind kind, const std::string& name) {
    std::string sql = selectSql(kind) + " WHERE t.name = $1";
    try {
        const std::string* prepared = preparedName(c, sql);
        pqxx::nontransaction tx(native(c));  // one statement: no BEGIN / COMMIT round trips
        auto rows = prepared ? tx.exec_prepared(*prepared, name) : tx.exec_params(sql, name);
        if (rows.empty())
            return fail(Error::notFound(std::string(inventory::kindName(kind)) + " '" + name +
                                        "' not found"));
        return rows[0][1].as<std::string>();
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<std::string> patchObject(Connection& c, Kind kind, const std::string& name,
                                const ObjectPatch& patch) {
    const auto& ks = kindSql(kind);
    std::string table = ks.table;
    std::string sets;
    std::vector<std::string> params{name};
    for (const auto& [field, value] : patch.fields) {
        bool ok = std::find_if(ks.patchable.begin(), ks.patchable.end(),
                               [&](const char* f) { return field == f; }) != ks.patchable.end();
        if (!ok) {
            auto valid = patchableFields(kind);
            return fail(Error::invalid(
                "field '" + field + "' of a " + std::string(inventory::kindName(kind)) +
                    " cannot be patched; patchable: labels" +
                    (valid.empty() ? std::string() : ", " + joinNames(valid)),
                field));
        }
        params.push_back(value);
        // The column of a patchable field of kinds.hpp (whitelisted: never the input's text).
        sets += ", " + std::string(inventory::kindInfo(kind).find(field)->column) + " = $" +
                std::to_string(params.size());
    }
    // Labels set by hand go to user_labels: an apply of the spec never reverts them. A key the
    // spec sets is the spec's: changing or removing it here is a conflict (409).
    if (patch.labels) {
        params.push_back(*patch.labels);
        sets += ", user_labels = jsonb_strip_nulls(user_labels || $" +
                std::to_string(params.size()) + "::jsonb)";
    }
    // Annotations are all set by hand (the spec sets none): merged the same way.
    if (patch.annotations) {
        params.push_back(*patch.annotations);
        sets += ", annotations = jsonb_strip_nulls(annotations || $" +
                std::to_string(params.size()) + "::jsonb)";
    }
    try {
        pqxx::work tx(native(c));
        auto cur = tx.exec_params(
            "SELECT resource_version, to_jsonb(x) - 'id' - 'sort_key', "
            "(SELECT string_agg(k || '=' || (x.labels ->> k), ', ' ORDER BY k) "
            "   FROM jsonb_object_keys(coalesce($2::jsonb, '{}')) k WHERE x.labels ? k) FROM " +
                table + " x WHERE name = $1 FOR UPDATE",
            name, patch.labels ? std::optional<std::string>(*patch.labels) : std::nullopt);
        if (cur.empty())
            return fail(Error::notFound(std::string(inventory::kindName(kind)) + " '" + name +
                                        "' not found"));
        if (!cur[0][2].is_null())
            return fail(Error::conflict(
                "label " + cur[0][2].as<std::string>() + " of " +
                std::string(inventory::kindName(kind)) + " '" + name +
                "' is set by the cluster spec: change it there and apply (labels set by "
                "hand are those the spec does not set)"));
        auto rv = cur[0][0].as<std::int64_t>();
        if (patch.ifMatch && *patch.ifMatch != rv)
            return fail(Error{Errc::PreconditionFailed,
                              "resourceVersion of " + std::string(inventory::kindName(kind)) +
                                  " '" + name + "' is " + std::to_string(rv) + ", If-Match said " +
                                  std::to_string(*patch.ifMatch)});
        std::string before = cur[0][1].as<std::string>();
        if (!sets.empty()) {
            auto after = tx.exec_params(
                "UPDATE " + table +
                    " x SET resource_version = resource_version + 1, updated_at = now()" + sets +
                    " WHERE name = $1 RETURNING to_jsonb(x) - 'id' - 'sort_key', "
                    "octet_length(x.annotations::text)",
                pqxx::prepare::make_dynamic_params(params));
            if (const auto size = after[0][1].as<std::int64_t>(); size > kMaxAnnotationBytes)
                return fail(Error::invalid(
                    "the annotations of " + std::string(inventory::kindName(kind)) + " '" + name +
                        "' would take " + std::to_string(size) + " bytes; at most " +
                        std::to_string(kMaxAnnotationBytes) + " (remove some with key: null)",
                    "annotations"));
            tx.exec_params(
                "INSERT INTO change_log (actor, kind, name, action, before, after) "
                "VALUES ($1, $2, $3, 'update', $4::jsonb, $5::jsonb)",
                patch.actor, std::string(inventory::kindName(kind)), name, before,
                after[0][0].as<std::string>());
        }
        auto obj = tx.exec_params(selectSql(kind) + " WHERE t.name = $1", name);
        tx.commit();
        return obj[0][1].as<std::string>();
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<int> buildNameIndexes(Connection& c) {
    // The indexes a bulk load leaves to after its commit (bulk_load.hpp); each built in one
    // statement (SHARE lock: lists read on, writers of that table wait for the build), under a
    // lock that serialises two loomd doing it.
    try {
        int built = 0;
        for (const auto& [name, sql] : detail::kAfterCommitIndexes) {
            pqxx::work tx(native(c));
            tx.exec("SELECT pg_advisory_xact_lock(hashtext('loom_name_indexes'))");
            if (!tx.exec_params("SELECT to_regclass($1)", std::string(name))[0][0].is_null())
                continue;
            tx.exec(sql);
            tx.commit();
            ++built;
        }
        // An index-only scan of the sort_key indexes (0025) reads no table page only where the
        // visibility map is set, which a bulk load leaves to autovacuum (a minute or more
        // later): a table whose map is mostly unset is vacuumed now (~30 ms for 124k ports).
        // ANALYZE, which ends every apply, brings relallvisible up to date.
        for (const char* table : {"ports", "links"}) {
            pqxx::nontransaction tx(native(c));
            auto stale = tx.exec_params(
                "SELECT relallvisible < relpages / 2 FROM pg_class WHERE oid = $1::regclass",
                std::string(table));
            if (stale[0][0].as<bool>()) tx.exec(std::string("VACUUM ") + table);
        }
        return built;
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<std::string> inventorySummary(Connection& c) {
    // One statement: per-kind totals and state histograms built by PostgreSQL.
    std::string sql =
        "SELECT jsonb_build_object('cluster', s.cluster, 'fabric', s.fabric, "
        "'generation', s.generation, 'kinds', jsonb_build_object(";
    bool first = true;
    for (Kind k : inventory::kAllKinds) {
        const auto& ks = kindSql(k);
        bool hasState = std::any_of(ks.fields.begin(), ks.fields.end(), [](const Field& f) {
            return std::string_view(f.api) == "state";
        });
        if (!first) sql += ", ";
        first = false;
        sql += "'";
        sql += inventory::kindPlural(k);
        sql += "', jsonb_build_object('total', (SELECT count(*) FROM ";
        sql += ks.table;
        sql += ")";
        if (hasState) {
            sql +=
                ", 'states', (SELECT coalesce(jsonb_object_agg(state, n), '{}'::jsonb) FROM "
                "(SELECT state, count(*) AS n FROM ";
            sql += ks.table;
            sql += " GROUP BY state) q)";
        }
        sql += ")";
    }
    sql += "))::text FROM inventory_state s WHERE s.id = 1";
    try {
        pqxx::read_transaction tx(native(c));
        auto r = tx.exec(sql);
        if (r.empty()) return fail(Error::internal("inventory_state has no row"));
        return r[0][0].as<std::string>();
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

}  // namespace loom::db
