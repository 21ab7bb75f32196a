// The filter compiler of the inventory's lists and the per-kind SQL it compiles against:
// each kind's table, joins and fields (kindSql, derived from inventory/kinds.hpp), its relation
// filters (NetBox's `gpus?rack=`, `links?switch=`, `ports?peer=`) with their plans, the object
// JSON (selectSql), and each filter as a parameterised condition. The statements are
// inventory_query.cpp.
#include "inventory_filters.hpp"

#include <algorithm>
#include <stdexcept>

#include "copy_text.hpp"
#include "list_sql.hpp"
#include "loom/db/inventory_query.hpp"
#include "loom/inventory/kinds.hpp"

namespace loom::db {

using detail::Field;
using detail::joinNames;
using detail::kindSql;
using detail::KindSql;
using detail::kLookups;
using detail::lookupCondition;
using detail::Relation;
using inventory::Kind;

namespace {

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
    // The device at the other end of the port's cable, stored on the port (0026). As a set: the
    // devices whose names match (trigram indexes on switch and NIC names for a pattern, the
    // unique names for an exact one), then their ranges of (peer, sort_key) from the index
    // alone; `peer__ic=ctsw07` ~95 buffers, against ~1,600 through a trigram index on the
    // column (its 1,728 ports lie on ~1,550 table pages). Per row: the column itself, for the
    // ports another filter narrows to, or the first ports of the natural order that a pattern
    // given alone tests before it takes the set (inventory_query.cpp).
    {"peer", "x.name",
     "t.peer = ANY(ARRAY(SELECT x.name FROM switches x WHERE {} UNION ALL "
     "SELECT x.name FROM nics x WHERE {} UNION ALL SELECT x.name FROM storage_nodes x WHERE {}))",
     "t.peer", "{}"}};
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
// A link's health in the words of the stream's link.health (docs/api.md, "Link health"), as
// far as the database knows it: its state first (drained; not in service while planned), then
// down while a critical event is open on it (link_down), degraded while a warning one is
// (link_flapping, link_errors, link_pfc_storm, link_speed), down when its state is (a failed
// rack's cable, no sample to say otherwise), else up. loomd's REST handlers put the hub's word
// (the stream's, with `no data`) in its place for every backend link (api_inventory.cpp).
#define LOOM_LINK_OPEN_EVENTS \
    "FROM events e WHERE e.location = t.name AND e.closed_at IS NULL AND e.source = 'telemetry'"
constexpr const char* kLinkHealthSql =
    "(CASE WHEN t.state = 'drained' THEN 'drained' WHEN t.state = 'planned' THEN 'not in service' "
    "ELSE (SELECT CASE WHEN bool_or(e.severity = 'critical') THEN 'down' "
    "WHEN count(*) > 0 THEN 'degraded' WHEN t.state = 'down' THEN 'down' ELSE 'up' "
    "END " LOOM_LINK_OPEN_EVENTS ") END)";
#undef LOOM_LINK_OPEN_EVENTS
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
               std::initializer_list<Field> computed, std::span<const Relation> relations = {}) {
    KindSql ks{inventory::kindPlural(k).data(), joins, {}, {}, relations};
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

}  // namespace

namespace detail {

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
    // A port's device as three scalar subqueries (one probe for the id that is set) rather
    // than three LEFT JOINs: a list planned with its value (`ports?name__ic=ctsw`) spent
    // 0.35 ms planning the five-way join against 0.17 ms, and a prepared page runs no slower
    // (0.59-0.61 against 0.63 ms of PostgreSQL CPU per page of 101 ports at 24k).
    static const KindSql port =
        derive(Kind::Port, "",
               {{"device",
                 "coalesce((SELECT s.name FROM switches s WHERE s.id = t.switch_id), "
                 "(SELECT n.name FROM nics n WHERE n.id = t.nic_id), "
                 "(SELECT sn.name FROM storage_nodes sn WHERE sn.id = t.storage_node_id))"}},
               {}, kPortRelations);
    static const KindSql link = derive(
        Kind::Link, "JOIN ports pa ON pa.id = t.a_port_id JOIN ports pb ON pb.id = t.b_port_id",
        {{"aPort", "pa.name"}, {"bPort", "pb.name"}}, {{"health", kLinkHealthSql}}, kLinkRelations);
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

std::string selectSql(Kind k, std::string_view page) {
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
    std::string s = "SELECT t.name, " + object;
    s += " FROM ";
    if (!page.empty()) {
        s += "(";
        s += page;
        s += ") page JOIN ";
    }
    s += ks.table;
    s += " t ";
    if (!page.empty()) s += "ON t.sort_key = page.sort_key ";
    s += ks.joins;
    return s;
}

std::string joinNames(const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) {
        if (!s.empty()) s += ", ";
        s += x;
    }
    return s;
}

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
    // Negated: no related object matches, also when there is none (a port with no cable has a
    // null peer, a NIC's port a null switch_id: NOT of a null condition would drop them).
    return negated ? "NOT coalesce(" + out + ", false)" : out;
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
        const bool link = kind == Kind::Link;
        if (link) {
            // The words of kLinkHealthSql, and `no data`, which only the hub can say (no row
            // here); ok and failed stay accepted as the words they were before (up, down).
#define LOOM_LINK_LIVE "t.state NOT IN ('drained', 'planned')"
            if (value == "drained")
                cond = "t.state = 'drained'";
            else if (value == "not in service")
                cond = "t.state = 'planned'";
            else if (value == "no data")
                cond = "false";
            else if (value == "failed" || value == "down")
                cond = "(" LOOM_LINK_LIVE " AND (t.state = 'down' OR t.name IN (" LOOM_OPEN_EVENTS
                       " AND e.severity = 'critical')))";
            else if (value == "degraded")
                cond = "(" LOOM_LINK_LIVE " AND t.name IN (" LOOM_OPEN_EVENTS
                       ") AND t.name NOT IN (" LOOM_OPEN_EVENTS " AND e.severity = 'critical'))";
            else if (value == "ok" || value == "up")
                cond = "(" LOOM_LINK_LIVE
                       " AND t.state <> 'down' AND t.name NOT IN (" LOOM_OPEN_EVENTS "))";
            else
                return fail(
                    Error::invalid("health must be up, degraded, down, drained, "
                                   "not in service or no data, not '" +
                                       value + "'",
                                   field));
#undef LOOM_LINK_LIVE
        } else if (value == "failed")
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

}  // namespace detail

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

}  // namespace loom::db
