// Why over 600 lines: apply (the plan's writes, bulk COPY, reference resolution, prune) and the
// loaders share the per-kind table definitions here. Issue 10 step 2 (kinds.hpp: one
// description per kind) is to derive those, and issue 14 reworks applyPlan; split then.

#include "loom/db/inventory_repository.hpp"

#include "copy_text.hpp"
#include "idempotency_tx.hpp"
#include "live_notify.hpp"
#include "loom/db/native.hpp"
#include "loom/inventory/natural_order.hpp"

#include <pqxx/tablewriter>

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace loom::db {

using namespace loom::inventory;

namespace {

// Advisory lock key of "apply" ("LAPP"), one bigint namespace per database.
constexpr long long kApplyLockKey = 0x4c415050;
constexpr std::size_t kProgressEvery = 4096;

// Columns per table: id, name, spec columns (written by apply, compared by plan), then
// operational columns (written on create only).
struct TableDef {
    const char* table;
    std::vector<const char*> spec;
    std::vector<const char*> ops;
};

const TableDef& tableDef(Kind k) {
    static const TableDef defs[kKindCount] = {
        {"sites", {"description", "labels"}, {}},
        {"zones", {"site_id", "labels"}, {}},
        {"rows", {"zone_id", "index", "labels"}, {}},
        {"racks", {"row_id", "zone_id", "position", "model", "labels"}, {"state", "serial"}},
        {"hosts", {"rack_id", "slot", "model", "labels"}, {"state", "serial"}},
        {"gpus", {"host_id", "index", "model"}, {"state", "serial", "uuid"}},
        {"nics", {"host_id", "storage_node_id", "index", "network", "model", "speed_gbps"},
         {"state", "mac"}},
        {"switches", {"role", "model", "zone_id", "rack_id", "port_count", "speed_gbps", "labels"},
         {"state", "serial"}},
        {"ports", {"device_kind", "switch_id", "nic_id", "storage_node_id", "index", "speed_gbps"},
         {"state"}},
        {"links", {"a_port_id", "b_port_id", "network", "medium", "length_m", "speed_gbps"},
         {"state"}},
        {"storage_nodes", {"rack_id", "model", "capacity_tb", "labels"}, {"state", "serial"}},
    };
    return defs[static_cast<int>(k)];
}

std::vector<std::string> copyColumns(const TableDef& d) {
    // sort_key: the natural order's key of the name (0021), written with it.
    std::vector<std::string> cols = {"id", "name", "sort_key"};
    for (const char* c : d.spec) cols.push_back(quoteIdentifier(c));
    for (const char* c : d.ops) cols.push_back(quoteIdentifier(c));
    return cols;
}

template <class T>
const std::vector<T>& entities(const Inventory& inv);
template <> const std::vector<Site>& entities(const Inventory& i) { return i.sites; }
template <> const std::vector<Zone>& entities(const Inventory& i) { return i.zones; }
template <> const std::vector<Row>& entities(const Inventory& i) { return i.rows; }
template <> const std::vector<Rack>& entities(const Inventory& i) { return i.racks; }
template <> const std::vector<Host>& entities(const Inventory& i) { return i.hosts; }
template <> const std::vector<Gpu>& entities(const Inventory& i) { return i.gpus; }
template <> const std::vector<Nic>& entities(const Inventory& i) { return i.nics; }
template <> const std::vector<Switch>& entities(const Inventory& i) { return i.switches; }
template <> const std::vector<Port>& entities(const Inventory& i) { return i.ports; }
template <> const std::vector<Link>& entities(const Inventory& i) { return i.links; }
template <> const std::vector<StorageNode>& entities(const Inventory& i) { return i.storageNodes; }

// ---------------------------------------------------------------------------------------
// Name -> id resolution for references of created and updated rows.

class Resolver {
public:
    void addCreated(Kind k, std::string_view name, std::int64_t id) { ids_[idx(k)][name] = id; }
    void reserve(Kind k, std::size_t n) { ids_[idx(k)].reserve(ids_[idx(k)].size() + n); }
    void need(Kind k, std::string_view name) {
        if (name.empty() || ids_[idx(k)].contains(name)) return;
        needed_[idx(k)].emplace(name, 0);
    }
    // Fetches the ids of every needed name that exists: one query per kind.
    void fetch(pqxx::work& tx) {
        for (Kind k : kAllKinds) {
            auto& need = needed_[idx(k)];
            if (need.empty()) continue;
            std::vector<std::string_view> names;
            names.reserve(need.size());
            for (const auto& [n, _] : need) names.push_back(n);
            auto r = tx.exec_params(std::string("SELECT name, id FROM ") + tableDef(k).table +
                                        " WHERE name = ANY($1::text[])",
                                    detail::pgTextArray(names));
            for (const auto& row : r) {
                const std::string& stored = owned_.emplace_back(row[0].c_str());
                ids_[idx(k)][stored] = row[1].as<std::int64_t>();
            }
            need.clear();
        }
    }
    std::optional<std::int64_t> find(Kind k, std::string_view name) const {
        auto it = ids_[idx(k)].find(name);
        if (it == ids_[idx(k)].end()) return std::nullopt;
        return it->second;
    }

private:
    static int idx(Kind k) { return static_cast<int>(k); }
    std::unordered_map<std::string_view, std::int64_t> ids_[kKindCount];
    std::unordered_map<std::string_view, int> needed_[kKindCount];
    std::deque<std::string> owned_;
};

// References of each kind: (field value, kind it names). Nic::host may name a host or a
// storage node; Port::device names the kind in deviceKind.
template <class F> void refs(const Site&, F&&) {}
template <class F> void refs(const Zone& e, F&& f) { f(e.site, Kind::Site); }
template <class F> void refs(const Row& e, F&& f) { f(e.zone, Kind::Zone); }
template <class F> void refs(const Rack& e, F&& f) {
    f(e.row, Kind::Row);
    f(e.zone, Kind::Zone);
}
template <class F> void refs(const Host& e, F&& f) { f(e.rack, Kind::Rack); }
template <class F> void refs(const Gpu& e, F&& f) { f(e.host, Kind::Host); }
template <class F> void refs(const Nic& e, F&& f) {
    f(e.host, Kind::Host);
    f(e.host, Kind::StorageNode);
}
template <class F> void refs(const Switch& e, F&& f) {
    f(e.zone, Kind::Zone);
    f(e.rack, Kind::Rack);
}
Kind deviceKindOf(DeviceKind d) {
    switch (d) {
        case DeviceKind::Switch: return Kind::Switch;
        case DeviceKind::Nic: return Kind::Nic;
        case DeviceKind::StorageNode: return Kind::StorageNode;
    }
    return Kind::Switch;
}
template <class F> void refs(const Port& e, F&& f) { f(e.device, deviceKindOf(e.deviceKind)); }
template <class F> void refs(const Link& e, F&& f) {
    f(e.aPort, Kind::Port);
    f(e.bPort, Kind::Port);
}
template <class F> void refs(const StorageNode& e, F&& f) { f(e.rack, Kind::Rack); }

// ---------------------------------------------------------------------------------------
// One COPY line per entity, columns in tableDef order.

struct MissingRef {
    std::string message;
};

class LineWriter {
public:
    LineWriter(std::string& out, const Resolver& r) : out_(out), r_(r) {}
    void text(std::string_view s) {
        sep();
        detail::copyEscape(out_, s);
    }
    void integer(std::int64_t v) {
        sep();
        out_ += std::to_string(v);
    }
    void real(double v) {
        sep();
        char buf[32];
        auto res = std::to_chars(buf, buf + sizeof buf, v);
        out_.append(buf, res.ptr);
    }
    void labels(const Labels& l) {
        sep();
        if (l.empty()) out_ += "{}";
        else detail::copyEscape(out_, detail::labelsJson(l));
    }
    void null() {
        sep();
        out_ += "\\N";
    }
    // A reference: NULL when empty, else the id; a name that does not exist is an error.
    void ref(const char* owner, std::string_view field, std::string_view name, Kind k) {
        if (name.empty()) return null();
        auto id = r_.find(k, name);
        if (!id)
            throw MissingRef{std::string(owner) + ": " + std::string(field) + " \"" +
                             std::string(name) + "\" does not exist"};
        integer(*id);
    }
    // Nic::host: exactly one of the (host, storage node) columns.
    void hostOrStorage(const std::string& owner, std::string_view name) {
        if (name.empty()) return null(), null();
        if (auto id = r_.find(Kind::Host, name)) return integer(*id), null();
        if (auto id = r_.find(Kind::StorageNode, name)) return null(), integer(*id);
        throw MissingRef{owner + ": host \"" + std::string(name) + "\" does not exist"};
    }
    const std::string& owner() const { return owner_; }
    void begin(std::int64_t id, const std::string& name) {
        out_.clear();
        first_ = true;
        owner_ = name;
        integer(id);
        text(name);
        text(naturalSortKey(name));
    }

private:
    void sep() {
        if (!first_) out_ += '\t';
        first_ = false;
    }
    std::string& out_;
    const Resolver& r_;
    bool first_ = true;
    std::string owner_;
};

void writeRow(LineWriter& w, const Site& e) {
    w.text(e.description);
    w.labels(e.labels);
}
void writeRow(LineWriter& w, const Zone& e) {
    w.ref(e.name.c_str(), "site", e.site, Kind::Site);
    w.labels(e.labels);
}
void writeRow(LineWriter& w, const Row& e) {
    w.ref(e.name.c_str(), "zone", e.zone, Kind::Zone);
    w.integer(e.index);
    w.labels(e.labels);
}
void writeRow(LineWriter& w, const Rack& e) {
    w.ref(e.name.c_str(), "row", e.row, Kind::Row);
    w.ref(e.name.c_str(), "zone", e.zone, Kind::Zone);
    w.integer(e.position);
    w.text(e.model);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}
void writeRow(LineWriter& w, const Host& e) {
    w.ref(e.name.c_str(), "rack", e.rack, Kind::Rack);
    w.integer(e.slot);
    w.text(e.model);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}
void writeRow(LineWriter& w, const Gpu& e) {
    w.ref(e.name.c_str(), "host", e.host, Kind::Host);
    w.integer(e.index);
    w.text(e.model);
    w.text(e.state);
    w.text(e.serial);
    w.text(e.uuid);
}
void writeRow(LineWriter& w, const Nic& e) {
    w.hostOrStorage(e.name, e.host);
    w.integer(e.index);
    w.text(networkName(e.network));
    w.text(e.model);
    w.integer(e.speedGbps);
    w.text(e.state);
    w.text(e.mac);
}
void writeRow(LineWriter& w, const Switch& e) {
    w.text(switchRoleName(e.role));
    w.text(e.model);
    w.ref(e.name.c_str(), "zone", e.zone, Kind::Zone);
    w.ref(e.name.c_str(), "rack", e.rack, Kind::Rack);
    w.integer(e.portCount);
    w.integer(e.speedGbps);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}
void writeRow(LineWriter& w, const Port& e) {
    w.text(deviceKindName(e.deviceKind));
    for (DeviceKind d : {DeviceKind::Switch, DeviceKind::Nic, DeviceKind::StorageNode}) {
        if (d == e.deviceKind) w.ref(e.name.c_str(), "device", e.device, deviceKindOf(d));
        else w.null();
    }
    w.integer(e.index);
    w.integer(e.speedGbps);
    w.text(e.state);
}
void writeRow(LineWriter& w, const Link& e) {
    w.ref(e.name.c_str(), "aPort", e.aPort, Kind::Port);
    w.ref(e.name.c_str(), "bPort", e.bPort, Kind::Port);
    w.text(networkName(e.network));
    w.text(mediumName(e.medium));
    w.real(e.lengthM);
    w.integer(e.speedGbps);
    w.text(e.state);
}
void writeRow(LineWriter& w, const StorageNode& e) {
    w.ref(e.name.c_str(), "rack", e.rack, Kind::Rack);
    w.text(e.model);
    w.real(e.capacityTb);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}

template <class F>
void visitKind(Kind k, F&& f) {
    switch (k) {
        case Kind::Site: return f(static_cast<Site*>(nullptr));
        case Kind::Zone: return f(static_cast<Zone*>(nullptr));
        case Kind::Row: return f(static_cast<Row*>(nullptr));
        case Kind::Rack: return f(static_cast<Rack*>(nullptr));
        case Kind::Host: return f(static_cast<Host*>(nullptr));
        case Kind::Gpu: return f(static_cast<Gpu*>(nullptr));
        case Kind::Nic: return f(static_cast<Nic*>(nullptr));
        case Kind::Switch: return f(static_cast<Switch*>(nullptr));
        case Kind::Port: return f(static_cast<Port*>(nullptr));
        case Kind::Link: return f(static_cast<Link*>(nullptr));
        case Kind::StorageNode: return f(static_cast<StorageNode*>(nullptr));
    }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// COPY ... FROM STDIN of preformatted text lines. libpqxx 6.4's stream_to keeps its raw-line
// writer private (rows go through per-field tuple escaping); tablewriter, deprecated in 6.4
// but the same wire path, takes raw lines, so rows are formatted once, here.
class CopyIn {
public:
    CopyIn(pqxx::transaction_base& tx, const std::string& table,
           const std::vector<std::string>& columns)
        : writer_(tx, table, columns.begin(), columns.end()) {}
    void write_raw_line(const std::string& line) { writer_.write_raw_line(line); }
    void complete() { writer_.complete(); }

private:
    pqxx::tablewriter writer_;
};
#pragma GCC diagnostic pop

struct ApplyError {
    Error error;
};

void report(const ApplyOptions& o, std::string_view stage, std::size_t done, std::size_t total) {
    if (o.progress) o.progress(stage, done, total);
}

std::string holderOfApplyLock(pqxx::work& tx) {
    auto r = tx.exec_params(
        "SELECT a.application_name, to_char(a.xact_start, 'YYYY-MM-DD HH24:MI:SS TZ'), a.pid "
        "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1 "
        "AND l.objsubid = 1 LIMIT 1",
        kApplyLockKey);
    if (r.empty()) return "another session";
    std::string app = r[0][0].c_str();
    const std::string prefix = "loom apply by ";
    std::string who = app.rfind(prefix, 0) == 0 ? app.substr(prefix.size())
                                                : "session " + std::string(r[0][2].c_str());
    return who + " at " + r[0][1].c_str();
}

std::string changesJson(const std::vector<FieldChange>& changes, bool after) {
    std::string out = "{";
    for (std::size_t i = 0; i < changes.size(); ++i) {
        if (i) out += ',';
        appendJsonString(out, changes[i].field);
        out += ':';
        appendJsonString(out, after ? changes[i].after : changes[i].before);
    }
    return out + "}";
}

}  // namespace

namespace {

// The spec's digests as what the inventory now holds (0013): after this apply every kind
// holds the spec's entities with the spec's fields, plus, without prune, what the plan would
// have deleted (exact = false).
void storeDigests(pqxx::work& tx, const Plan& plan, const ContentDigests& d, std::int64_t generation) {
    tx.exec("DELETE FROM inventory_digests");
    std::string sql = "INSERT INTO inventory_digests (kind, digest, exact, generation) VALUES ";
    const std::string gen = std::to_string(generation);
    for (Kind k : kAllKinds) {
        const KindPlan& kp = plan.of(k);
        bool exact = plan.prune || kp.wouldDelete.empty();
        sql += "(" + tx.quote(tableDef(k).table) + "," + tx.quote(d.kinds[static_cast<int>(k)]) + "," +
               (exact ? "true" : "false") + "," + gen + "),";
    }
    sql += "('inventory_state'," + tx.quote(d.cluster) + ",true," + gen + ")";
    tx.exec(sql);
}

}  // namespace

Result<bool> storedDigestsMatch(Connection& c, const ContentDigests& digests, bool prune) {
    try {
        pqxx::read_transaction tx(native(c));
        std::size_t matched = 0;
        for (const auto& row : tx.exec("SELECT kind, digest, exact FROM inventory_digests")) {
            std::string_view kind = row[0].c_str(), digest = row[1].c_str();
            bool exact = row[2].as<bool>();
            const std::string* want = nullptr;
            if (kind == "inventory_state") want = &digests.cluster;
            for (Kind k : kAllKinds)
                if (kind == tableDef(k).table) want = &digests.kinds[static_cast<int>(k)];
            if (!want || *want != digest || (prune && !exact)) return false;
            ++matched;
        }
        return matched == kKindCount + 1;
    } catch (...) {
        return fail(translateException("stored digests"));
    }
}

Result<ApplyResult> applyPlan(Connection& c, const Plan& plan, const Inventory& desired,
                              const ApplyOptions& options) {
    for (const KindPlan& kp : plan.kinds)
        if (!kp.duplicates.empty())
            return fail(Error::invalid("duplicate " + std::string(kindName(kp.kind)) +
                                       " name \"" + kp.duplicates.front() + "\" in the spec"));
    ApplyResult result;
    pqxx::connection& conn = native(c);
    try {
        pqxx::work tx(conn, "apply");
        report(options, "lock", 0, 0);
        // Named so that a concurrent apply can say who holds the lock (pg_stat_activity).
        tx.exec_params("SELECT set_config('application_name', $1, true)",
                       "loom apply by " + options.actor);
        if (!tx.exec_params1("SELECT pg_try_advisory_xact_lock($1)", kApplyLockKey)[0].as<bool>())
            return fail(Error::conflict("another apply is in progress (started by " +
                                        holderOfApplyLock(tx) + ")"));
        auto state = tx.exec1("SELECT generation FROM inventory_state WHERE id = 1 FOR UPDATE");
        std::int64_t generation = state[0].as<std::int64_t>();
        if (options.expectedGeneration && *options.expectedGeneration != generation)
            return fail(Error::conflict(
                "the inventory changed since it was planned (generation " +
                std::to_string(generation) + ", planned against " +
                std::to_string(*options.expectedGeneration) + "); plan and apply again"));
        result.generation = generation;
        if (plan.empty()) {
            // Nothing to write; only the digests, if given (so the next no-op is a shortcut).
            if (options.digests) {
                storeDigests(tx, plan, *options.digests, generation);
                tx.commit();
            }
            return result;
        }
        // Link ends are unique at commit, not row by row: creates run before deletes and one
        // UPDATE may swap two links' ends, both valid once the whole apply is in (0006).
        tx.exec("SET CONSTRAINTS links_a_port_id_key, links_b_port_id_key DEFERRED");

        // Reserve one block of ids per kind being created (we hold the apply lock, and only
        // apply inserts inventory rows, so nextval+setval in one statement is safe).
        report(options, "ids", 0, 0);
        Resolver resolver;
        std::int64_t firstId[kKindCount] = {};
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (kp.creates.empty()) continue;
            std::string seq = std::string(tableDef(k).table) + "_id_seq";
            auto last = tx.exec_params1("SELECT setval($1::regclass, nextval($1::regclass) + $2 - 1)",
                                        seq, static_cast<long long>(kp.creates.size()))[0]
                            .as<std::int64_t>();
            firstId[static_cast<int>(k)] = last - static_cast<std::int64_t>(kp.creates.size()) + 1;
            resolver.reserve(k, kp.creates.size());
            for (std::size_t i = 0; i < kp.creates.size(); ++i)
                resolver.addCreated(k, kp.createNames[i], firstId[static_cast<int>(k)] + i);
        }
        // Names that creates and updates refer to but that are not created here.
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            visitKind(k, [&](auto* tag) {
                using T = std::remove_pointer_t<decltype(tag)>;
                const auto& all = entities<T>(desired);
                auto needRefs = [&](std::size_t i) {
                    if (i >= all.size()) throw ApplyError{Error::internal("plan does not match the desired inventory")};
                    refs(all[i], [&](const std::string& name, Kind target) { resolver.need(target, name); });
                };
                for (std::size_t i : kp.creates) needRefs(i);
                for (const Update& u : kp.updates) needRefs(u.desiredIndex);
            });
        }
        resolver.fetch(tx);

        auto run = tx.exec_params1(
            "INSERT INTO apply_runs (actor, started_at, generation, cluster, pruned) "
            "VALUES ($1, now(), $2, $3, $4) RETURNING id",
            options.actor, generation + 1, desired.cluster, plan.prune);
        result.applyRunId = run[0].as<std::int64_t>();

        std::string line;
        LineWriter w(line, resolver);

        // Bulk writes: a table receiving many rows gets its foreign keys dropped and re-added
        // after the load, in this same transaction. Re-adding validates every row with one
        // set-based join instead of one deferred trigger per row (the per-row checks were the
        // largest part of a 250k-entity first apply). References were already resolved above,
        // so this only guards against a concurrent writer. Likewise a table losing more than a
        // few hundred rows gets the foreign keys that point at it (NO ACTION ones: cascades
        // must still fire) dropped: each deleted row's check scans the referencing table (no
        // index on the referencing columns, 0001), which made shrinking the 24k cluster to
        // dev-small take 60 s. Cost: the tables are locked ACCESS EXCLUSIVE until commit (readers wait).
        std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> droppedFks;
        auto dropForeignKeys = [&](const pqxx::result& fks) {
            // Rows: table, constraint name, definition; one ALTER per table.
            for (const auto& row : fks) {
                std::string table = row[0].c_str();
                auto it = std::find_if(droppedFks.begin(), droppedFks.end(),
                                       [&](const auto& e) { return e.first == table; });
                if (it == droppedFks.end()) it = droppedFks.insert(droppedFks.end(), {table, {}});
                if (std::ranges::any_of(it->second, [&](const auto& c) { return c.first == row[1].c_str(); }))
                    continue;
                it->second.emplace_back(row[1].c_str(), row[2].c_str());
                tx.exec("ALTER TABLE " + table + " DROP CONSTRAINT " + quoteIdentifier(row[1].c_str()));
            }
        };
        // Likewise the plain secondary indexes (0015's parent references: not constraints)
        // of a table receiving many rows: one sorted build after the load instead of one
        // insertion per row during it. Unique and primary-key indexes stay (they are the
        // constraints the load must meet row by row).
        std::vector<std::string> droppedIndexes;  // CREATE INDEX statements to run again
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (kp.creates.empty() || kp.creates.size() < options.bulkForeignKeyRows) continue;
            auto idx = tx.exec_params(
                "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                "WHERE i.indrelid = $1::regclass AND NOT i.indisunique AND NOT i.indisprimary "
                "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) "
                "ORDER BY 1",
                std::string(tableDef(k).table));
            for (const auto& row : idx) {
                tx.exec(std::string("DROP INDEX ") + row[0].c_str());
                droppedIndexes.emplace_back(row[1].c_str());
            }
        }
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            const std::string table = tableDef(k).table;
            if (!kp.creates.empty() && kp.creates.size() >= options.bulkForeignKeyRows)
                dropForeignKeys(tx.exec_params(
                    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
                    "FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'f' "
                    "ORDER BY conname",
                    table));
            if (!kp.deletes.empty() && kp.deletes.size() >= options.bulkDeleteForeignKeyRows)
                dropForeignKeys(tx.exec_params(
                    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
                    "FROM pg_constraint WHERE confrelid = $1::regclass AND contype = 'f' "
                    "AND confdeltype IN ('a', 'r') ORDER BY 1, conname",
                    table));
        }

        // Creates, parents first.
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (kp.creates.empty()) continue;
            const TableDef& def = tableDef(k);
            std::string stage = std::string("create ") + def.table;
            CopyIn copy(tx, def.table, copyColumns(def));
            visitKind(k, [&](auto* tag) {
                using T = std::remove_pointer_t<decltype(tag)>;
                const auto& all = entities<T>(desired);
                std::int64_t id = firstId[static_cast<int>(k)];
                for (std::size_t n = 0; n < kp.creates.size(); ++n) {
                    const T& e = all[kp.creates[n]];
                    w.begin(id++, e.name);
                    writeRow(w, e);
                    copy.write_raw_line(line);
                    if ((n + 1) % kProgressEvery == 0) report(options, stage, n + 1, kp.creates.size());
                }
            });
            copy.complete();
            report(options, stage, kp.creates.size(), kp.creates.size());
            result.created += kp.creates.size();
        }

        // Updates: new spec fields into a temp table, then one UPDATE ... FROM per kind.
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (kp.updates.empty()) continue;
            const TableDef& def = tableDef(k);
            std::string tmp = std::string("loom_upd_") + def.table;
            std::string stage = std::string("update ") + def.table;
            tx.exec("CREATE TEMP TABLE " + tmp + " (LIKE " + def.table +
                    " INCLUDING DEFAULTS) ON COMMIT DROP");
            {
                CopyIn copy(tx, tmp, copyColumns(def));
                visitKind(k, [&](auto* tag) {
                    using T = std::remove_pointer_t<decltype(tag)>;
                    const auto& all = entities<T>(desired);
                    for (const Update& u : kp.updates) {
                        const T& e = all[u.desiredIndex];
                        w.begin(0, e.name);
                        writeRow(w, e);
                        copy.write_raw_line(line);
                    }
                });
                copy.complete();
            }
            std::string set;
            for (const char* col : def.spec) {
                std::string q = quoteIdentifier(col);
                set += q + " = u." + q + ", ";
            }
            tx.exec("UPDATE " + std::string(def.table) + " t SET " + set +
                    "updated_at = now(), resource_version = t.resource_version + 1 FROM " + tmp +
                    " u WHERE t.name = u.name");
            report(options, stage, kp.updates.size(), kp.updates.size());
            result.updated += kp.updates.size();
        }

        // Deletes, children first; the deleted rows become change_log entries.
        for (auto it = std::rbegin(kAllKinds); it != std::rend(kAllKinds); ++it) {
            const KindPlan& kp = plan.of(*it);
            if (kp.deletes.empty()) continue;
            const TableDef& def = tableDef(*it);
            std::vector<std::string_view> names(kp.deletes.begin(), kp.deletes.end());
            auto r = tx.exec_params(
                std::string("WITH d AS (DELETE FROM ") + def.table + " t WHERE t.name = ANY($1::text[]) "
                "RETURNING t.name, to_jsonb(t) - 'id' - 'sort_key' AS before) "
                "INSERT INTO change_log (actor, kind, name, action, before, apply_run_id) "
                "SELECT $2, $3, name, 'delete', before, $4 FROM d",
                detail::pgTextArray(names), options.actor, std::string(kindName(*it)), result.applyRunId);
            result.deleted += r.affected_rows();
            report(options, std::string("delete ") + def.table, kp.deletes.size(), kp.deletes.size());
        }

        // The deferred checks run now: deferred foreign keys (0001) of rows written to tables
        // that kept theirs, of rows deleted from referenced tables, and the link-end unique
        // checks (0006) queue trigger events until commit, and ALTER TABLE and CREATE INDEX
        // refuse a table with pending events (55006, seen growing dev-small into the 24k
        // cluster, and on links once 0021 gave them a plain index). Every write of the apply is
        // in at this point, so checking here is checking the end state.
        if (!droppedFks.empty() || !droppedIndexes.empty())
            tx.exec("SET CONSTRAINTS ALL IMMEDIATE");
        for (const auto& def : droppedIndexes) {
            report(options, "index", 0, 0);
            tx.exec(def);
        }
        for (const auto& [table, fks] : droppedFks) {
            report(options, std::string("check references ") + table, 0, 0);
            std::string alter = "ALTER TABLE " + table + " ";
            for (std::size_t i = 0; i < fks.size(); ++i)
                alter += (i ? ", " : "") + std::string("ADD CONSTRAINT ") +
                         quoteIdentifier(fks[i].first) + " " + fks[i].second;
            tx.exec(alter);
        }

        // The change log: per-entity rows for creates and updates, a summary row per kind.
        {
            report(options, "change log", 0, 0);
            CopyIn copy(tx, "change_log",
                                 std::vector<std::string>{"actor", "kind", "name", "action",
                                                          "before", "after", "apply_run_id"});
            std::string runId = std::to_string(result.applyRunId);
            const bool logCreates = plan.creates() <= options.maxCreateLogRows;
            std::string actor;
            detail::copyEscape(actor, options.actor);
            auto row = [&](std::string_view kind, std::string_view name, const char* action,
                           const std::string* before, const std::string* after) {
                line.clear();
                line += actor;
                line += '\t';
                line += kind;
                line += '\t';
                detail::copyEscape(line, name);
                line += '\t';
                line += action;
                line += '\t';
                if (before) detail::copyEscape(line, *before);
                else line += "\\N";
                line += '\t';
                if (after) detail::copyEscape(line, *after);
                else line += "\\N";
                line += '\t';
                line += runId;
                copy.write_raw_line(line);
            };
            for (Kind k : kAllKinds) {
                const KindPlan& kp = plan.of(k);
                if (kp.empty()) continue;
                std::string kind(kindName(k));
                std::string summary = "{\"created\":" + std::to_string(kp.creates.size()) +
                                      ",\"updated\":" + std::to_string(kp.updates.size()) +
                                      ",\"deleted\":" + std::to_string(kp.deletes.size()) + "}";
                row(kind, "*", kp.creates.empty() ? (kp.updates.empty() ? "delete" : "update") : "create",
                    nullptr, &summary);
                if (logCreates)
                    for (const std::string& name : kp.createNames) row(kind, name, "create", nullptr, nullptr);
                for (const Update& u : kp.updates) {
                    std::string before = changesJson(u.changes, false);
                    std::string after = changesJson(u.changes, true);
                    row(kind, u.name, "update", &before, &after);
                }
            }
            copy.complete();
        }

        tx.exec_params(
            "UPDATE apply_runs SET created = $2, updated = $3, deleted = $4, finished_at = now() "
            "WHERE id = $1",
            result.applyRunId, static_cast<long long>(result.created),
            static_cast<long long>(result.updated), static_cast<long long>(result.deleted));
        tx.exec_params(
            "UPDATE inventory_state SET generation = $1, cluster = $2, fabric = $3, "
            "updated_at = now() WHERE id = 1",
            generation + 1, desired.cluster, std::string(fabricTypeName(desired.fabric)));
        result.generation = generation + 1;
        if (options.digests) storeDigests(tx, plan, *options.digests, generation + 1);
        if (const auto& idem = options.idempotency)
            storeIdempotent(tx, idem->actor, idem->key, idem->request, idem->status,
                            idem->body ? idem->body(result) : std::string("{}"));
        notifyLiveChange(tx, "apply");
        report(options, "commit", 0, 0);
        tx.commit();
        // A bulk load leaves the planner's statistics of those tables empty or stale until
        // autovacuum gets to them (up to a minute): meanwhile a filtered list plans as if the
        // table were a tenth of its size and takes 10x longer. Refresh them now, outside the
        // apply's transaction (it has committed; a failure here costs only speed).
        std::string analyze;
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (kp.creates.size() + kp.deletes.size() >= options.bulkForeignKeyRows)
                analyze += std::string(analyze.empty() ? "" : ", ") + tableDef(k).table;
        }
        if (!analyze.empty()) {
            report(options, "analyze", 0, 0);
            try {
                // A small sample (3,000 rows a table instead of 30,000): row counts and the
                // common values are what the list plans need; 553 -> ~60 ms at 24k.
                pqxx::work tx(native(c));
                tx.exec("SET LOCAL default_statistics_target = 10");
                tx.exec("ANALYZE " + analyze);
                tx.commit();
            } catch (const std::exception&) {
            }
        }
        return result;
    } catch (const MissingRef& m) {
        return fail(Error::invalid("apply: " + m.message));
    } catch (const ApplyError& e) {
        return fail(e.error);
    } catch (...) {
        return fail(translateException("apply"));
    }
}

// ---------------------------------------------------------------------------------------
// Loading.

namespace {

using IdNames = std::unordered_map<std::int64_t, std::string_view>;

class TableReader {
public:
    TableReader(pqxx::transaction_base& tx, const char* table, std::vector<std::string> cols)
        : stream_(tx, table, cols), table_(table) {}
    // Calls f(fields) per row.
    template <class F>
    void each(F&& f) {
        std::string line;
        while (stream_.get_raw_line(line)) {
            detail::splitCopyLine(line, storage_, fields_);
            f(fields_);
        }
        stream_.complete();
    }

private:
    pqxx::stream_from stream_;
    const char* table_;
    std::vector<std::string> storage_;
    std::vector<detail::CopyField> fields_;
};

std::string nameOf(const IdNames& m, const detail::CopyField& f) {
    if (f.isNull) return {};
    auto it = m.find(detail::toInt(f.text));
    return it == m.end() ? std::string() : std::string(it->second);
}

template <class T>
IdNames indexNames(const std::vector<T>& v, const std::vector<std::int64_t>& ids) {
    IdNames m;
    m.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) m.emplace(ids[i], v[i].name);
    return m;
}

Labels labelsOf(const detail::CopyField& f) {
    Labels l;
    if (!f.isNull && f.text != "{}") detail::parseLabels(f.text, l);
    return l;
}

std::vector<std::string> cols(std::initializer_list<const char*> names) {
    std::vector<std::string> out;
    for (const char* n : names) out.push_back(quoteIdentifier(n));
    return out;
}

}  // namespace

Result<Snapshot> loadSnapshot(Connection& c) {
    pqxx::connection& conn = native(c);
    try {
        pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>
            tx(conn, "load");
        Snapshot snap;
        Inventory& inv = snap.inventory;
        auto st = tx.exec1("SELECT cluster, fabric, generation FROM inventory_state WHERE id = 1");
        inv.cluster = st[0].c_str();
        inv.fabric = parseFabricType(st[1].c_str()).value_or(FabricType::Roce);
        snap.generation = st[2].as<std::int64_t>();

        // Planner row estimates size every vector once without a count(*) scan per table
        // (-1 = never analysed: no hint).
        std::unordered_map<std::string, std::size_t> estimates;
        for (const auto& row : tx.exec(
                 "SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n "
                 "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"))
            estimates[row[0].c_str()] = row[1].as<double>() > 0 ? static_cast<std::size_t>(row[1].as<double>()) : 0;
        auto count = [&](const char* table) { return estimates[table]; };
        using F = std::vector<detail::CopyField>;
        std::vector<std::int64_t> ids;

        // Sites.
        ids.clear();
        inv.sites.reserve(count("sites"));
        TableReader(tx, "sites", cols({"id", "name", "description", "labels", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                inv.sites.push_back(Site{std::string(f[1].text), std::string(f[2].text),
                                         labelsOf(f[3]), detail::toInt(f[4].text)});
            });
        IdNames siteNames = indexNames(inv.sites, ids);

        ids.clear();
        inv.zones.reserve(count("zones"));
        TableReader(tx, "zones", cols({"id", "name", "site_id", "labels", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                inv.zones.push_back(Zone{std::string(f[1].text), nameOf(siteNames, f[2]),
                                         labelsOf(f[3]), detail::toInt(f[4].text)});
            });
        IdNames zoneNames = indexNames(inv.zones, ids);

        ids.clear();
        inv.rows.reserve(count("rows"));
        TableReader(tx, "rows", cols({"id", "name", "zone_id", "index", "labels", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                inv.rows.push_back(Row{std::string(f[1].text), nameOf(zoneNames, f[2]),
                                       static_cast<int>(detail::toInt(f[3].text)), labelsOf(f[4]),
                                       detail::toInt(f[5].text)});
            });
        IdNames rowNames = indexNames(inv.rows, ids);

        ids.clear();
        inv.racks.reserve(count("racks"));
        TableReader(tx, "racks",
                    cols({"id", "name", "row_id", "zone_id", "position", "model", "labels", "state",
                          "serial", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Rack r;
                r.name = f[1].text;
                r.row = nameOf(rowNames, f[2]);
                r.zone = nameOf(zoneNames, f[3]);
                r.position = static_cast<int>(detail::toInt(f[4].text));
                r.model = f[5].text;
                r.labels = labelsOf(f[6]);
                r.state = f[7].text;
                r.serial = f[8].text;
                r.resourceVersion = detail::toInt(f[9].text);
                inv.racks.push_back(std::move(r));
            });
        IdNames rackNames = indexNames(inv.racks, ids);

        ids.clear();
        inv.hosts.reserve(count("hosts"));
        TableReader(tx, "hosts",
                    cols({"id", "name", "rack_id", "slot", "model", "labels", "state", "serial",
                          "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Host h;
                h.name = f[1].text;
                h.rack = nameOf(rackNames, f[2]);
                h.slot = static_cast<int>(detail::toInt(f[3].text));
                h.model = f[4].text;
                h.labels = labelsOf(f[5]);
                h.state = f[6].text;
                h.serial = f[7].text;
                h.resourceVersion = detail::toInt(f[8].text);
                inv.hosts.push_back(std::move(h));
            });
        IdNames hostNames = indexNames(inv.hosts, ids);

        ids.clear();
        inv.storageNodes.reserve(count("storage_nodes"));
        TableReader(tx, "storage_nodes",
                    cols({"id", "name", "rack_id", "model", "capacity_tb", "labels", "state",
                          "serial", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                StorageNode s;
                s.name = f[1].text;
                s.rack = nameOf(rackNames, f[2]);
                s.model = f[3].text;
                s.capacityTb = detail::toDouble(f[4].text);
                s.labels = labelsOf(f[5]);
                s.state = f[6].text;
                s.serial = f[7].text;
                s.resourceVersion = detail::toInt(f[8].text);
                inv.storageNodes.push_back(std::move(s));
            });
        IdNames storageNames = indexNames(inv.storageNodes, ids);

        ids.clear();
        inv.gpus.reserve(count("gpus"));
        TableReader(tx, "gpus",
                    cols({"id", "name", "host_id", "index", "model", "state", "serial", "uuid",
                          "resource_version"}))
            .each([&](const F& f) {
                Gpu g;
                g.name = f[1].text;
                g.host = nameOf(hostNames, f[2]);
                g.index = static_cast<int>(detail::toInt(f[3].text));
                g.model = f[4].text;
                g.state = f[5].text;
                g.serial = f[6].text;
                g.uuid = f[7].text;
                g.resourceVersion = detail::toInt(f[8].text);
                inv.gpus.push_back(std::move(g));
            });

        ids.clear();
        inv.switches.reserve(count("switches"));
        TableReader(tx, "switches",
                    cols({"id", "name", "role", "model", "zone_id", "rack_id", "port_count",
                          "speed_gbps", "labels", "state", "serial", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Switch s;
                s.name = f[1].text;
                s.role = parseSwitchRole(f[2].text).value_or(SwitchRole::Rtsw);
                s.model = f[3].text;
                s.zone = nameOf(zoneNames, f[4]);
                s.rack = nameOf(rackNames, f[5]);
                s.portCount = static_cast<int>(detail::toInt(f[6].text));
                s.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                s.labels = labelsOf(f[8]);
                s.state = f[9].text;
                s.serial = f[10].text;
                s.resourceVersion = detail::toInt(f[11].text);
                inv.switches.push_back(std::move(s));
            });
        IdNames switchNames = indexNames(inv.switches, ids);

        ids.clear();
        inv.nics.reserve(count("nics"));
        TableReader(tx, "nics",
                    cols({"id", "name", "host_id", "storage_node_id", "index", "network", "model",
                          "speed_gbps", "state", "mac", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Nic n;
                n.name = f[1].text;
                n.host = f[2].isNull ? nameOf(storageNames, f[3]) : nameOf(hostNames, f[2]);
                n.index = static_cast<int>(detail::toInt(f[4].text));
                n.network = parseNetwork(f[5].text).value_or(Network::Backend);
                n.model = f[6].text;
                n.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                n.state = f[8].text;
                n.mac = f[9].text;
                n.resourceVersion = detail::toInt(f[10].text);
                inv.nics.push_back(std::move(n));
            });
        IdNames nicNames = indexNames(inv.nics, ids);

        ids.clear();
        inv.ports.reserve(count("ports"));
        TableReader(tx, "ports",
                    cols({"id", "name", "device_kind", "switch_id", "nic_id", "storage_node_id",
                          "index", "speed_gbps", "state", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Port p;
                p.name = f[1].text;
                p.deviceKind = parseDeviceKind(f[2].text).value_or(DeviceKind::Switch);
                switch (p.deviceKind) {
                    case DeviceKind::Switch: p.device = nameOf(switchNames, f[3]); break;
                    case DeviceKind::Nic: p.device = nameOf(nicNames, f[4]); break;
                    case DeviceKind::StorageNode: p.device = nameOf(storageNames, f[5]); break;
                }
                p.index = static_cast<int>(detail::toInt(f[6].text));
                p.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                p.state = f[8].text;
                p.resourceVersion = detail::toInt(f[9].text);
                inv.ports.push_back(std::move(p));
            });
        IdNames portNames = indexNames(inv.ports, ids);

        inv.links.reserve(count("links"));
        TableReader(tx, "links",
                    cols({"id", "name", "a_port_id", "b_port_id", "network", "medium", "length_m",
                          "speed_gbps", "state", "resource_version"}))
            .each([&](const F& f) {
                Link l;
                l.name = f[1].text;
                l.aPort = nameOf(portNames, f[2]);
                l.bPort = nameOf(portNames, f[3]);
                l.network = parseNetwork(f[4].text).value_or(Network::Backend);
                l.medium = parseMedium(f[5].text).value_or(Medium::Dac);
                l.lengthM = detail::toDouble(f[6].text);
                l.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                l.state = f[8].text;
                l.resourceVersion = detail::toInt(f[9].text);
                inv.links.push_back(std::move(l));
            });
        tx.commit();
        return snap;
    } catch (...) {
        return fail(translateException("loading the inventory"));
    }
}

Result<Inventory> loadInventory(Connection& conn) {
    auto s = loadSnapshot(conn);
    if (!s) return fail(s.error());
    return std::move(s->inventory);
}

Result<std::size_t> countRows(Connection& c, Kind kind) {
    try {
        pqxx::nontransaction tx(native(c));
        return tx.exec(std::string("SELECT count(*) FROM ") + tableDef(kind).table)[0][0]
            .as<std::size_t>();
    } catch (...) {
        return fail(translateException("count"));
    }
}

}  // namespace loom::db
