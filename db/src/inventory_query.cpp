// The inventory's read path and its PATCH: each kind's SQL (kindSql, derived from
// inventory/kinds.hpp), the filter compiler over it (lookups, relation filters and their plans)
// and the statements that use both. Over 600 lines, for a reason: the filter compiler
// and the statements share the per-kind table and its relations, which are the file's
// subject; splitting them means an internal header for KindSql/Relation/selectSql, planned
// (filters vs statements) but left out of session 12, when kinds.hpp rewrote kindSql and the
// list plans changed in the same days, to keep both changes reviewable.
#include "loom/db/inventory_query.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <pqxx/pqxx>
#include <span>
#include <stdexcept>

#include "bulk_load.hpp"
#include "copy_text.hpp"
#include "list_sql.hpp"
#include "loom/db/native.hpp"
#include "loom/inventory/kinds.hpp"
#include "loom/inventory/natural_order.hpp"

namespace loom::db {

using detail::decodeCursor;
using detail::encodeCursor;
using detail::kLookups;
using detail::lookupCondition;
using inventory::Kind;

namespace {

struct Field {
    const char* api;  // API field name
    std::string sql;  // SQL expression over alias t and the joins
};

// A relation filter (NetBox's `gpus?rack=`, `links?switch=`, `ports?peer=`): a filter-only
// field that names a related object. `where` is a condition on the listed row `t` with one or
// two `{}`, each replaced by the lookup's condition on `expr` inside a subquery, so the filter
// is a few index probes instead of a join of every row.
//
// A pattern lookup (`peer__ic=ctsw`) can match thousands of related objects, and the subquery
// then builds every one's id list before the first row is listed: `rowWhere`, when set, is the
// relation tested per listed row instead (a correlated subquery over `rowExpr`), which costs a
// few probes per row the other filters leave or the page walks.
struct Relation {
    const char* api;
    const char* expr;
    const char* where;
    const char* rowExpr = nullptr;
    const char* rowWhere = nullptr;
};

struct KindSql {
    const char* table;
    const char* joins;
    std::vector<Field> fields;
    std::vector<const char*> patchable;
    std::span<const Relation> relations = {};  // the kind's relation filters
    // Output fields computed together by one subquery (a jsonb object merged into the row's),
    // not filterable as fields (the kind's relations filter on them).
    const char* extraJson = nullptr;
};

// The ids of the ports of the device whose name matches {} (over alias x): one index probe per
// device table, then the partial parent indexes of migration 0015 (a UNION ALL, which the
// planner runs as three nested loops; an OR of IN-lists would be a scan of every port).
#define LOOM_DEVICE_PORTS                                                                \
    "SELECT p.id FROM ports p JOIN switches x ON x.id = p.switch_id WHERE {} UNION ALL " \
    "SELECT p.id FROM ports p JOIN nics x ON x.id = p.nic_id WHERE {} UNION ALL "        \
    "SELECT p.id FROM ports p JOIN storage_nodes x ON x.id = p.storage_node_id WHERE {}"
#define LOOM_SWITCH_PORTS \
    "SELECT p.id FROM ports p WHERE p.switch_id IN (SELECT x.id FROM switches x WHERE {})"
#define LOOM_HOST_PORTS                                                                    \
    "SELECT p.id FROM ports p WHERE p.nic_id IN (SELECT n.id FROM nics n JOIN hosts x ON " \
    "x.id = n.host_id WHERE {})"

constexpr Relation kHostRelations[] = {
    {"zone", "z.name",
     "t.rack_id IN (SELECT r.id FROM racks r JOIN zones z ON z.id = r.zone_id WHERE {})"}};
constexpr Relation kGpuRelations[] = {
    {"rack", "r.name",
     "t.host_id IN (SELECT h.id FROM hosts h JOIN racks r ON r.id = h.rack_id WHERE {})"},
    {"zone", "z.name",
     "t.host_id IN (SELECT h.id FROM hosts h JOIN racks r ON r.id = h.rack_id "
     "JOIN zones z ON z.id = r.zone_id WHERE {})"}};
constexpr Relation kNicRelations[] = {
    {"rack", "r.name",
     "(t.host_id IN (SELECT h.id FROM hosts h JOIN racks r ON r.id = h.rack_id WHERE {}) OR "
     "t.storage_node_id IN (SELECT x.id FROM storage_nodes x JOIN racks r ON r.id = x.rack_id "
     "WHERE {}))"}};
constexpr Relation kPortRelations[] = {
    // The matching ports' ids through the parent indexes (a UNION ALL: an OR of IN lists
    // made PostgreSQL filter every port in name order instead, 20-35 ms at 24k against ~1 ms).
    {"device", "x.name", "t.id IN (" LOOM_DEVICE_PORTS ")"},
    {"switch", "x.name", "t.switch_id IN (SELECT x.id FROM switches x WHERE {})"},
    {"host", "x.name",
     "t.nic_id IN (SELECT n.id FROM nics n JOIN hosts x ON x.id = n.host_id WHERE {})"},
    {"link", "l.name",
     "t.id IN (SELECT l.a_port_id FROM links l WHERE {} UNION ALL "
     "SELECT l.b_port_id FROM links l WHERE {})"},
    {"peerPort", "p.name",
     "t.id IN (SELECT l.b_port_id FROM links l JOIN ports p ON p.id = l.a_port_id WHERE {} "
     "UNION ALL SELECT l.a_port_id FROM links l JOIN ports p ON p.id = l.b_port_id WHERE {})"},
    // The peer's ports, their links, the far ends: a few hundred probes for one peer, but 31k
    // for `peer__ic=ctsw`. So a pattern with another filter that narrows the rows (a device's
    // 34 ports) is tested per row on the port's own cable and far end: `device=<rtsw>&
    // peer__ic=ctsw` went from 0.5-0.8 s to 2.9 ms of PostgreSQL CPU. Alone, a pattern keeps
    // the set (per row, `peer__ic=z3-ctsw07` walked 50k ports: 235 ms).
    {"peer", "x.name",
     "t.id IN (SELECT l.b_port_id FROM links l WHERE l.a_port_id IN (" LOOM_DEVICE_PORTS
     ") UNION ALL SELECT l.a_port_id FROM links l WHERE l.b_port_id IN (" LOOM_DEVICE_PORTS "))",
     "coalesce(ps.name, pn.name, psn.name)",
     "EXISTS (SELECT 1 FROM (SELECT l.b_port_id AS peer FROM links l WHERE l.a_port_id = t.id "
     "UNION ALL SELECT l.a_port_id FROM links l WHERE l.b_port_id = t.id) e "
     "JOIN ports p ON p.id = e.peer LEFT JOIN switches ps ON ps.id = p.switch_id "
     "LEFT JOIN nics pn ON pn.id = p.nic_id "
     "LEFT JOIN storage_nodes psn ON psn.id = p.storage_node_id WHERE {})"}};
// A link at either end: the links found through each end's unique index, as one id list (an
// OR of the two ends filtered every link in name order instead: 10-27 ms at 24k against 1-2).
#define LOOM_EITHER_END(ports)                                       \
    "t.id IN (SELECT l.id FROM links l WHERE l.a_port_id IN (" ports \
    ") UNION ALL "                                                   \
    "SELECT l.id FROM links l WHERE l.b_port_id IN (" ports "))"
constexpr Relation kLinkRelations[] = {{"device", "x.name", LOOM_EITHER_END(LOOM_DEVICE_PORTS)},
                                       {"switch", "x.name", LOOM_EITHER_END(LOOM_SWITCH_PORTS)},
                                       {"host", "x.name", LOOM_EITHER_END(LOOM_HOST_PORTS)}};
#undef LOOM_EITHER_END
#undef LOOM_DEVICE_PORTS
#undef LOOM_SWITCH_PORTS
#undef LOOM_HOST_PORTS

// Operational health of a GPU or link, from its open telemetry events (migration 0007): failed
// while a critical one is open, degraded while a warning one is, else ok. It survives restarts
// and is the same on every loomd because it is read from the events, not from memory.
constexpr const char* kHealthSql =
    "(SELECT CASE WHEN bool_or(e.severity = 'critical') THEN 'failed' "
    "WHEN count(*) > 0 THEN 'degraded' ELSE 'ok' END "
    "FROM events e WHERE e.location = t.name AND e.closed_at IS NULL AND e.source = 'telemetry')";
// A switch: failed while a critical event names the switch itself, degraded while any event is
// open on one of its ports or links ("<switch>/p<N>", "...--<switch>/p<N>"), else ok. The two
// split_part expressions are indexed (migration 0009).
constexpr const char* kSwitchHealthSql =
    "(SELECT CASE WHEN bool_or(e.severity = 'critical' AND e.location = t.name) THEN 'failed' "
    "WHEN count(*) > 0 THEN 'degraded' ELSE 'ok' END "
    "FROM events e WHERE e.closed_at IS NULL AND e.source = 'telemetry' "
    "AND (split_part(split_part(e.location, '--', 1), '/', 1) = t.name "
    "OR split_part(split_part(e.location, '--', 2), '/', 1) = t.name))";

// Parent references are ids in the schema and names in the API: each kind's joins resolve
// them. Only these whitelisted expressions are ever spliced into SQL; values are parameters.
// The fields are those of inventory/kinds.hpp (t.<column>), in its order, each reference as
// its name over the kind's joins (`refs`), then the computed fields (`computed`); labels are
// one map for every kind (selectSql). A reference with no expression here is a programming
// error, caught at the first query of that kind (every kind is listed by the tests).
KindSql derive(Kind k, const char* joins, std::initializer_list<Field> refs,
               std::initializer_list<Field> computed, std::span<const Relation> relations = {},
               const char* extraJson = nullptr) {
    KindSql ks{inventory::kindPlural(k).data(), joins, {}, {}, relations, extraJson};
    for (const auto& f : inventory::kindInfo(k).fields) {
        if (f.type == inventory::ValueType::Labels) continue;
        if (f.type == inventory::ValueType::Ref) {
            auto it = std::find_if(refs.begin(), refs.end(),
                                   [&](const Field& r) { return f.api == r.api; });
            if (it == refs.end())
                throw std::logic_error("kindSql: no join for the reference " + std::string(f.api));
            ks.fields.push_back(*it);
        } else {
            ks.fields.push_back(Field{f.api.data(), "t." + std::string(f.column)});
        }
        if (f.patchable) ks.patchable.push_back(f.api.data());
    }
    ks.fields.insert(ks.fields.end(), computed.begin(), computed.end());
    return ks;
}

const KindSql& kindSql(Kind k) {
    static const KindSql site = derive(Kind::Site, "", {}, {});
    static const KindSql zone =
        derive(Kind::Zone, "LEFT JOIN sites s ON s.id = t.site_id", {{"site", "s.name"}}, {});
    static const KindSql row =
        derive(Kind::Row, "LEFT JOIN zones z ON z.id = t.zone_id", {{"zone", "z.name"}}, {});
    static const KindSql rack = derive(
        Kind::Rack, "LEFT JOIN rows r ON r.id = t.row_id LEFT JOIN zones z ON z.id = t.zone_id",
        {{"row", "r.name"}, {"zone", "z.name"}}, {});
    static const KindSql host = derive(Kind::Host, "LEFT JOIN racks r ON r.id = t.rack_id",
                                       {{"rack", "r.name"}}, {}, kHostRelations);
    static const KindSql gpu =
        derive(Kind::Gpu, "LEFT JOIN hosts h ON h.id = t.host_id", {{"host", "h.name"}},
               {{"health", kHealthSql}}, kGpuRelations);
    static const KindSql nic = derive(Kind::Nic,
                                      "LEFT JOIN hosts h ON h.id = t.host_id "
                                      "LEFT JOIN storage_nodes sn ON sn.id = t.storage_node_id",
                                      {{"host", "coalesce(h.name, sn.name)"}}, {}, kNicRelations);
    static const KindSql sw = derive(
        Kind::Switch, "LEFT JOIN zones z ON z.id = t.zone_id LEFT JOIN racks r ON r.id = t.rack_id",
        {{"zone", "coalesce(z.name, '')"}, {"rack", "coalesce(r.name, '')"}},
        {{"health", kSwitchHealthSql}});
    static const KindSql port = derive(
        Kind::Port,
        "LEFT JOIN switches s ON s.id = t.switch_id LEFT JOIN nics n ON n.id = t.nic_id "
        "LEFT JOIN storage_nodes sn ON sn.id = t.storage_node_id",
        {{"device", "coalesce(s.name, n.name, sn.name)"}}, {}, kPortRelations,
        // The cable on the port and what is at its other end: one probe of each link-end
        // unique index, one of the peer port, one of its device (null for a port with no
        // link). A select-list subquery, so it runs only for the rows the page returns.
        "coalesce((SELECT jsonb_build_object('link', lk.name, 'peerPort', p.name, 'peer', "
        "coalesce(ps.name, pn.name, psn.name)) FROM (SELECT l.name, l.b_port_id AS peer FROM "
        "links l WHERE l.a_port_id = t.id UNION ALL SELECT l.name, l.a_port_id FROM links l "
        "WHERE l.b_port_id = t.id LIMIT 1) lk JOIN ports p ON p.id = lk.peer "
        "LEFT JOIN switches ps ON ps.id = p.switch_id LEFT JOIN nics pn ON pn.id = p.nic_id "
        "LEFT JOIN storage_nodes psn ON psn.id = p.storage_node_id), "
        "'{\"link\": null, \"peerPort\": null, \"peer\": null}')");
    static const KindSql link = derive(
        Kind::Link, "JOIN ports pa ON pa.id = t.a_port_id JOIN ports pb ON pb.id = t.b_port_id",
        {{"aPort", "pa.name"}, {"bPort", "pb.name"}}, {{"health", kHealthSql}}, kLinkRelations);
    static const KindSql storage = derive(
        Kind::StorageNode, "LEFT JOIN racks r ON r.id = t.rack_id", {{"rack", "r.name"}}, {});
    switch (k) {
        case Kind::Site:
            return site;
        case Kind::Zone:
            return zone;
        case Kind::Row:
            return row;
        case Kind::Rack:
            return rack;
        case Kind::Host:
            return host;
        case Kind::Gpu:
            return gpu;
        case Kind::Nic:
            return nic;
        case Kind::Switch:
            return sw;
        case Kind::Port:
            return port;
        case Kind::Link:
            return link;
        case Kind::StorageNode:
            return storage;
    }
    return rack;
}

std::string selectSql(Kind k) {
    const auto& ks = kindSql(k);
    std::string base = "'name', t.name, 'kind', '";
    base += inventory::kindName(k);
    base += "'";
    for (const auto& f : ks.fields) {
        base += ", '";
        base += f.api;
        base += "', ";
        base += f.sql;
    }
    // One labels map: those set by hand (user_labels) under the spec's own (0010_user_labels).
    base +=
        ", 'labels', t.user_labels || t.labels, 'resourceVersion', t.resource_version, "
        "'createdAt', t.created_at, 'updatedAt', t.updated_at";
    // Built as json, not jsonb: the text is only forwarded, and jsonb sorted and de-duplicated
    // every object's keys (1.77 against 1.27 ms of PostgreSQL CPU per page of 101 ports).
    // Annotations (0020_annotations) only when an object has some, as Kubernetes omits them:
    // one branch or the other is evaluated per row.
    std::string object = "(CASE WHEN t.annotations = '{}'::jsonb THEN json_build_object(" + base +
                         ") ELSE json_build_object(" + base +
                         ", 'annotations', t.annotations) END)::text";
    std::string s = "SELECT t.name, ";
    if (ks.extraJson) {
        // The extra fields' object spliced in: "{...}" + "{...}" -> "{..., ...}".
        s += "left(" + object + ", -1) || ', ' || substr((";
        s += ks.extraJson;
        s += ")::text, 2)";
    } else {
        s += object;
    }
    s += " FROM ";
    s += ks.table;
    s += " t ";
    s += ks.joins;
    return s;
}

// The connection and SQL failures the API reports, as loom errors (no pqxx escapes db/): the
// one mapping of database.cpp. Called inside a catch block.
Error toError(const std::exception&) { return translateException(""); }

std::string joinNames(const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) {
        if (!s.empty()) s += ", ";
        s += x;
    }
    return s;
}

}  // namespace

std::vector<std::string> filterFields(Kind kind) {
    std::vector<std::string> out{"name"};
    for (const auto& f : kindSql(kind).fields) out.emplace_back(f.api);
    for (const auto& r : kindSql(kind).relations)
        if (std::find(out.begin(), out.end(), r.api) == out.end()) out.emplace_back(r.api);
    return out;
}

std::vector<std::string> patchableFields(Kind kind) {
    std::vector<std::string> out;
    for (const char* f : kindSql(kind).patchable) out.emplace_back(f);
    return out;
}

namespace {

// A relation filter's condition for all the values given for one key (`rack=a&rack=b`): the
// relation's subquery once, its lookup an OR of the values — for exact names one `= ANY($n)`,
// one index probe per name — so the planner sees one semi-join. An OR of one subquery per
// value was a hashed subplan filtering every row in sort order (gpus?rack=a&rack=b&index__gte=4:
// 187 ms p99 at 24k under 50 clients).
// `narrowed`: another filter of the query finds the listed rows through an index, so a relation
// with a per-row form is tested on those rows only.
Result<std::string> relationCondition(const Relation& r, const std::string& field,
                                      const std::string& base, const std::string& op,
                                      const std::vector<std::string>& values, bool narrowed,
                                      std::vector<std::string>& params) {
    // A related object: "no related object matches" for the negated lookups, so
    // `links?switch__n=z1-ctsw01` is every link with neither end on z1-ctsw01.
    if (op == "empty")
        return fail(
            Error::invalid("__empty does not apply to the relation filter '" + base + "'", field));
    const bool negated = op == "n" || op == "nic";
    const std::string positive = op == "n" ? "" : op == "nic" ? "ic" : op;
    const bool perRow = r.rowWhere && !positive.empty() && narrowed;
    const std::string expr = std::string("(") + (perRow ? r.rowExpr : r.expr) + ")";
    std::string out;
    std::string_view tmpl = perRow ? r.rowWhere : r.where;
    std::size_t pos = 0;
    for (auto at = tmpl.find("{}"); at != std::string_view::npos; at = tmpl.find("{}", pos)) {
        std::string cond;
        if (positive.empty() && values.size() > 1) {
            params.push_back(detail::pgTextArray(values));
            cond = expr + "::text = ANY($" + std::to_string(params.size()) + "::text[])";
        } else {
            for (const auto& value : values) {
                auto one = lookupCondition(expr, positive, value, params);
                if (!one) return fail(Error::invalid(one.error().message, field));
                cond += (cond.empty() ? "(" : " OR (") + *one + ")";
            }
        }
        out.append(tmpl.substr(pos, at - pos));
        out += "(" + cond + ")";
        pos = at + 2;
    }
    out.append(tmpl.substr(pos));
    return negated ? "NOT " + out : out;
}

// The SQL condition of one filter (`field` is `name`, a field, `label.<key>`, each with an
// optional `__lookup`); its values go to `params`.
Result<std::string> filterCondition(Kind kind, const std::string& field, const std::string& value,
                                    std::vector<std::string>& params) {
    if (field.rfind("label.", 0) == 0) {
        std::string key = field.substr(6);
        if (key.empty()) return fail(Error::invalid("empty label key", field));
        params.push_back(key);
        params.push_back(value);
        return "(t.user_labels || t.labels) ->> $" + std::to_string(params.size() - 1) + " = $" +
               std::to_string(params.size());
    }
    // NetBox's lookups: field__op (name__ic=rtsw, index__gte=4, serial__empty=true).
    std::string base = field, op;
    if (auto dunder = field.rfind("__"); dunder != std::string::npos && dunder > 0) {
        base = field.substr(0, dunder);
        op = field.substr(dunder + 2);
    }
    // health=ok|degraded|failed (and __n) of a GPU or a link: membership in the locations of
    // the open telemetry events (partial index events_open_location), the same rule as
    // kHealthSql; the per-row subquery made PostgreSQL aggregate events for every row it
    // filtered in name order (links?health=failed: 1-2 s p99 at 24k under 50 clients).
    if (base == "health" && (op.empty() || op == "n") &&
        (kind == Kind::Gpu || kind == Kind::Link)) {
#define LOOM_OPEN_EVENTS \
    "SELECT e.location FROM events e WHERE e.closed_at IS NULL AND e.source = 'telemetry'"
        std::string cond;
        if (value == "failed")
            cond = "t.name IN (" LOOM_OPEN_EVENTS " AND e.severity = 'critical')";
        else if (value == "degraded")
            cond = "(t.name IN (" LOOM_OPEN_EVENTS ") AND t.name NOT IN (" LOOM_OPEN_EVENTS
                   " AND e.severity = 'critical'))";
        else if (value == "ok")
            cond = "t.name NOT IN (" LOOM_OPEN_EVENTS ")";
        else
            return fail(Error::invalid("health must be ok, degraded or failed, not '" + value + "'",
                                       field));
#undef LOOM_OPEN_EVENTS
        return op == "n" ? "NOT " + cond : cond;
    }
    const auto& ks = kindSql(kind);
    const char* expr = nullptr;
    if (base == "name") expr = "t.name";
    for (const auto& f : ks.fields)
        if (base == f.api) expr = f.sql.c_str();
    if (!expr)
        return fail(Error::invalid("unknown filter '" + base + "' for " +
                                       std::string(inventory::kindPlural(kind)) +
                                       "; valid: " + joinNames(filterFields(kind)) +
                                       ", label.<key>; lookups: field__" + kLookups,
                                   field));
    auto cond = lookupCondition(std::string("(") + expr + ")", op, value, params);
    if (!cond) return fail(Error::invalid(cond.error().message, field));
    return *cond;
}

}  // namespace

Result<ListPage> listObjects(Connection& c, const ListQuery& query) {
    if (query.limit < 1 || query.limit > kMaxListLimit)
        return fail(Error::invalid("limit must be between 1 and " + std::to_string(kMaxListLimit),
                                   "limit"));
    if (query.filters.size() > kMaxListFilters)
        return fail(Error::invalid("at most " + std::to_string(kMaxListFilters) + " filters"));
    std::string sql = selectSql(query.kind);
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
        addCond("(" + conds + ")");
    }
    sql += where;
    // Natural order (p2 before p10): the btree on sort_key, COLLATE "C" (0021).
    sql += " ORDER BY t.sort_key LIMIT " + std::to_string(query.limit + 1);
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
