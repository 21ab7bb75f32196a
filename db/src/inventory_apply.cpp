// applyPlan: a plan written in one transaction (advisory lock, reserved ids, COPY creates,
// UPDATE ... FROM updates, deletes, dropped and re-added foreign keys and indexes, change log),
// and the stored content digests. Rows are formatted by inventory_rows.hpp.

#include <algorithm>
#include <pqxx/tablewriter>

#include "bulk_load.hpp"
#include "copy_text.hpp"
#include "idempotency_tx.hpp"
#include "inventory_rows.hpp"
#include "live_notify.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/native.hpp"

namespace loom::db {

using namespace loom::inventory;
using namespace loom::db::detail;

namespace {

// Advisory lock key of "apply" ("LAPP"), one bigint namespace per database.
constexpr long long kApplyLockKey = 0x4c415050;
constexpr std::size_t kProgressEvery = 4096;

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

// ports.link / peer_port / peer (0026) as apply keeps them. A created port gets them in its COPY
// row when both ends of its cable are created here (a first apply: every port, no statement
// more); every other port whose cable or far end this apply changes is in `fix`, and one UPDATE
// over the links gives those theirs after the writes.
constexpr std::uint32_t kNoCable = UINT32_MAX;
struct PortCables {
    std::vector<std::uint32_t> link;    // per created port (creates order): its desired link
    std::vector<std::uint32_t> far;     // per created port: the far end's desired port
    std::vector<std::string_view> fix;  // ports (names) the UPDATE after the writes sets
};

PortCables portCables(const Plan& plan, const Inventory& desired, const Resolver& resolver,
                      std::int64_t firstPortId) {
    const KindPlan& ports = plan.of(Kind::Port);
    const KindPlan& links = plan.of(Kind::Link);
    PortCables out;
    out.link.assign(ports.creates.size(), kNoCable);
    out.far.assign(ports.creates.size(), kNoCable);
    const auto created = static_cast<std::int64_t>(ports.creates.size());
    // The created port of `name` (its place in creates), or -1: created ports have the ids
    // reserved for them, in creates order.
    auto createdPort = [&](std::string_view name) -> std::int64_t {
        if (created == 0) return -1;
        auto id = resolver.find(Kind::Port, name);
        if (!id || *id < firstPortId || *id >= firstPortId + created) return -1;
        return *id - firstPortId;
    };
    // Only a created or updated link can end on a created port or change a port's cable.
    const auto& all = entities<Link>(desired);
    auto visit = [&](std::size_t li) {
        const Link& l = all[li];
        const std::string_view a = l.aPort, b = l.bPort;
        const std::int64_t na = createdPort(a), nb = createdPort(b);
        if (na >= 0 && nb >= 0) {
            out.link[na] = out.link[nb] = static_cast<std::uint32_t>(li);
            out.far[na] = static_cast<std::uint32_t>(ports.creates[nb]);
            out.far[nb] = static_cast<std::uint32_t>(ports.creates[na]);
            return;
        }
        out.fix.push_back(a);
        out.fix.push_back(b);
    };
    for (std::size_t li : links.creates) visit(li);
    for (const Update& u : links.updates) visit(u.desiredIndex);
    return out;
}

// Sets link, peer_port and peer of the ports `ids` (bigint array text), `names` (text array)
// and the far ends of the ports `moved` (text array: ports whose device changed), from the
// links as they are now; writes only the rows that change.
void setPortCables(pqxx::work& tx, const std::string& ids, const std::string& names,
                   const std::string& moved) {
    tx.exec_params(
        "WITH target AS ("
        " SELECT unnest($1::bigint[]) AS id"
        " UNION SELECT p.id FROM ports p WHERE p.name = ANY($2::text[])"
        " UNION SELECT l.b_port_id FROM ports p JOIN links l ON l.a_port_id = p.id"
        "  WHERE p.name = ANY($3::text[])"
        " UNION SELECT l.a_port_id FROM ports p JOIN links l ON l.b_port_id = p.id"
        "  WHERE p.name = ANY($3::text[])), "
        "now AS (SELECT t.id, coalesce(la.name, lb.name) AS link, f.name AS peer_port,"
        " coalesce(s.name, n.name, sn.name) AS peer FROM target t"
        " LEFT JOIN links la ON la.a_port_id = t.id LEFT JOIN links lb ON lb.b_port_id = t.id"
        " LEFT JOIN ports f ON f.id = coalesce(la.b_port_id, lb.a_port_id)"
        " LEFT JOIN switches s ON s.id = f.switch_id LEFT JOIN nics n ON n.id = f.nic_id"
        " LEFT JOIN storage_nodes sn ON sn.id = f.storage_node_id) "
        "UPDATE ports p SET link = c.link, peer_port = c.peer_port, peer = c.peer FROM now c "
        "WHERE p.id = c.id AND (p.link, p.peer_port, p.peer) IS DISTINCT FROM "
        "(c.link, c.peer_port, c.peer)",
        ids, names, moved);
}

}  // namespace

namespace {

// The spec's digests as what the inventory now holds (0013): after this apply every kind
// holds the spec's entities with the spec's fields, plus, without prune, what the plan would
// have deleted (exact = false).
void storeDigests(pqxx::work& tx, const Plan& plan, const ContentDigests& d,
                  std::int64_t generation) {
    tx.exec("DELETE FROM inventory_digests");
    std::string sql = "INSERT INTO inventory_digests (kind, digest, exact, generation) VALUES ";
    const std::string gen = std::to_string(generation);
    for (Kind k : kAllKinds) {
        const KindPlan& kp = plan.of(k);
        bool exact = plan.prune || kp.wouldDelete.empty();
        sql += "(" + tx.quote(tableDef(k).table) + "," + tx.quote(d.kinds[static_cast<int>(k)]) +
               "," + (exact ? "true" : "false") + "," + gen + "),";
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
            return fail(Error::invalid("duplicate " + std::string(kindName(kp.kind)) + " name \"" +
                                       kp.duplicates.front() + "\" in the spec"));
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
            return fail(Error::conflict("the inventory changed since it was planned (generation " +
                                        std::to_string(generation) + ", planned against " +
                                        std::to_string(*options.expectedGeneration) +
                                        "); plan and apply again"));
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
            auto last =
                tx.exec_params1("SELECT setval($1::regclass, nextval($1::regclass) + $2 - 1)", seq,
                                static_cast<long long>(kp.creates.size()))[0]
                    .as<std::int64_t>();
            firstId[static_cast<int>(k)] = last - static_cast<std::int64_t>(kp.creates.size()) + 1;
            resolver.reserve(k, kp.creates.size());
            for (std::size_t i = 0; i < kp.creates.size(); ++i)
                resolver.addCreated(k, kp.createNames[i], firstId[static_cast<int>(k)] + i);
        }
        // Names that creates and updates refer to but that are not created here. A first
        // apply needs none: when the plan creates every entity of the spec and leaves nothing
        // stored (and the generation check above proved the store is the one planned against),
        // the only names that exist are the ones created here; a dangling name still fails in
        // LineWriter::ref. Skipping the pass spares a hash lookup per reference (~1.4 M at 98k).
        bool createsEverything = options.expectedGeneration.has_value();
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            const std::size_t n = desired.count(k);
            if (kp.creates.size() != n || !kp.updates.empty() || !kp.deletes.empty() ||
                !kp.wouldDelete.empty())
                createsEverything = false;
            if (std::ranges::any_of(kp.creates, [&](std::size_t i) { return i >= n; }) ||
                std::ranges::any_of(kp.updates,
                                    [&](const Update& u) { return u.desiredIndex >= n; }))
                throw ApplyError{Error::internal("plan does not match the desired inventory")};
        }
        for (Kind k : kAllKinds) {
            if (createsEverything) break;
            const KindPlan& kp = plan.of(k);
            visitKind(k, [&](auto* tag) {
                using T = std::remove_pointer_t<decltype(tag)>;
                const auto& all = entities<T>(desired);
                auto needRefs = [&](std::size_t i) {
                    refs(all[i],
                         [&](std::string_view name, Kind target) { resolver.need(target, name); });
                };
                for (std::size_t i : kp.creates) needRefs(i);
                for (const Update& u : kp.updates) needRefs(u.desiredIndex);
            });
        }
        resolver.fetch(tx);
        const PortCables cables =
            portCables(plan, desired, resolver, firstId[static_cast<int>(Kind::Port)]);

        auto run = tx.exec_params1(
            "INSERT INTO apply_runs (actor, started_at, generation, cluster, pruned) "
            "VALUES ($1, now(), $2, $3, $4) RETURNING id",
            options.actor, generation + 1, desired.cluster, plan.prune);
        result.applyRunId = run[0].as<std::int64_t>();

        std::string line;
        LineWriter w(line, resolver);

        // Bulk writes (bulk_load.hpp): a table receiving many rows gets its foreign keys and
        // plain indexes dropped and re-created after the load, in this same transaction:
        // re-adding validates every row with one set-based join instead of one deferred
        // trigger per row (the per-row checks were the largest part of a 250k-entity first
        // apply), and an index is one sorted build instead of one insertion per row. An empty
        // table (first apply) is also truncated, which spares the WAL of the load under
        // wal_level = minimal, and gets its keys and unique constraints built after the load.
        // References were already resolved above, so the checks only guard against a
        // concurrent writer. A table losing more than a few hundred rows gets the foreign keys
        // that point at it (NO ACTION ones: cascades must still fire) dropped: each deleted
        // row's check scans the referencing table (no index on the referencing columns,
        // 0001), which made shrinking the 24k cluster to dev-small take 60 s. Cost: the tables
        // are locked ACCESS EXCLUSIVE until commit (readers wait).
        BulkLoad bulk(tx);
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (!kp.creates.empty() && kp.creates.size() >= options.bulkForeignKeyRows) {
                report(options, std::string("prepare ") + tableDef(k).table, 0, 0);
                bulk.forCreates(tableDef(k).table);
            }
        }
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (!kp.deletes.empty() && kp.deletes.size() >= options.bulkDeleteForeignKeyRows)
                bulk.forDeletes(tableDef(k).table);
        }

        // Creates, parents first.
        for (Kind k : kAllKinds) {
            const KindPlan& kp = plan.of(k);
            if (kp.creates.empty()) continue;
            const TableDef& def = tableDef(k);
            std::string stage = std::string("create ") + def.table;
            report(options, stage, 0, kp.creates.size());
            auto columns = copyColumns(def);
            if (k == Kind::Port) columns.insert(columns.end(), {"link", "peer_port", "peer"});
            CopyIn copy(tx, def.table, columns);
            visitKind(k, [&](auto* tag) {
                using T = std::remove_pointer_t<decltype(tag)>;
                const auto& all = entities<T>(desired);
                std::int64_t id = firstId[static_cast<int>(k)];
                for (std::size_t n = 0; n < kp.creates.size(); ++n) {
                    const T& e = all[kp.creates[n]];
                    w.begin(id++, e.name);
                    writeRow(w, e);
                    if constexpr (std::is_same_v<T, Port>) {
                        if (cables.link[n] == kNoCable) {
                            w.null();
                            w.null();
                            w.null();
                        } else {
                            const Port& far = all[cables.far[n]];
                            w.text(entities<Link>(desired)[cables.link[n]].name);
                            w.text(far.name);
                            w.text(far.device);
                        }
                    }
                    copy.line(line);
                    if ((n + 1) % kProgressEvery == 0)
                        report(options, stage, n + 1, kp.creates.size());
                }
            });
            copy.complete();
            report(options, stage, kp.creates.size(), kp.creates.size());
            result.created += kp.creates.size();
        }

        // The ports that the links about to be updated or deleted end on: their cable changes.
        std::string cableIds = "{";  // a bigint[] literal
        {
            std::vector<std::string_view> names;
            for (const Update& u : plan.of(Kind::Link).updates) names.push_back(u.name);
            for (const std::string& name : plan.of(Kind::Link).deletes) names.push_back(name);
            if (!names.empty())
                for (const auto& row : tx.exec_params(
                         "SELECT a_port_id, b_port_id FROM links WHERE name = ANY($1::text[])",
                         detail::pgTextArray(names)))
                    cableIds += (cableIds.size() > 1 ? "," : "") + std::string(row[0].c_str()) +
                                "," + row[1].c_str();
        }
        cableIds += "}";

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
                        copy.line(line);
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
                std::string("WITH d AS (DELETE FROM ") + def.table +
                    " t WHERE t.name = ANY($1::text[]) "
                    "RETURNING t.name, to_jsonb(t) - 'id' - 'sort_key' AS before) "
                    "INSERT INTO change_log (actor, kind, name, action, before, apply_run_id) "
                    "SELECT $2, $3, name, 'delete', before, $4 FROM d",
                detail::pgTextArray(names), options.actor, std::string(kindName(*it)),
                result.applyRunId);
            result.deleted += r.affected_rows();
            report(options, std::string("delete ") + def.table, kp.deletes.size(),
                   kp.deletes.size());
        }

        // The stored cable ends of the ports this apply recabled, or whose far end moved to
        // another device (a created port whose far end is created too has them already).
        {
            std::vector<std::string_view> moved;
            for (const Update& u : plan.of(Kind::Port).updates) moved.push_back(u.name);
            if (cableIds != "{}" || !cables.fix.empty() || !moved.empty()) {
                report(options, "cables", 0, 0);
                setPortCables(tx, cableIds, detail::pgTextArray(cables.fix),
                              detail::pgTextArray(moved));
            }
        }

        bulk.restore([&](std::string_view stage) { report(options, stage, 0, 0); });

        // The change log: per-entity rows for creates and updates, a summary row per kind.
        {
            report(options, "change log", 0, 0);
            CopyIn copy(tx, "change_log",
                        std::vector<std::string>{"actor", "kind", "name", "action", "before",
                                                 "after", "apply_run_id"});
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
                if (before)
                    detail::copyEscape(line, *before);
                else
                    line += "\\N";
                line += '\t';
                if (after)
                    detail::copyEscape(line, *after);
                else
                    line += "\\N";
                line += '\t';
                line += runId;
                copy.line(line);
            };
            for (Kind k : kAllKinds) {
                const KindPlan& kp = plan.of(k);
                if (kp.empty()) continue;
                std::string kind(kindName(k));
                std::string summary = "{\"created\":" + std::to_string(kp.creates.size()) +
                                      ",\"updated\":" + std::to_string(kp.updates.size()) +
                                      ",\"deleted\":" + std::to_string(kp.deletes.size()) + "}";
                row(kind, "*",
                    kp.creates.empty() ? (kp.updates.empty() ? "delete" : "update") : "create",
                    nullptr, &summary);
                if (logCreates)
                    for (std::string_view name : kp.createNames)
                        row(kind, name, "create", nullptr, nullptr);
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

}  // namespace loom::db
