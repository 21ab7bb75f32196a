// The provisioning repository (provisioning_repo.hpp): applying a phase plan, loading the state
// the reconciler steps from, committing its batch (rack and host transitions, gates, links,
// events, configs in one transaction), and the reads (LLDP, configs, audit, events). The
// operator's actions (phase control, rack actions, link states, quarantine) are in
// provisioning_actions.cpp.

#include "loom/db/provisioning_repo.hpp"

#include "copy_text.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "fence.hpp"
#include "live_notify.hpp"
#include "provisioning_sql.hpp"
#include "loom/provisioning/link_service.hpp"
#include "loom/db/native.hpp"

namespace loom::db {
namespace prov = loom::provisioning;
using detail::activePlan;
using detail::arrayOf;
using detail::col;
using detail::openQuarantineEvents;
namespace {

constexpr const char* kIso = "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'";

std::string iso(const char* column) {
    return std::string("coalesce(to_char(") + column + " AT TIME ZONE 'UTC', " + kIso + "), '')";
}

}  // namespace

Result<ProvisioningRepo::ApplyResult> ProvisioningRepo::applyPlan(const prov::PhasePlan& plan,
                                                                  std::string_view document,
                                                                  std::string_view actor) {
    try {
        pqxx::work tx(native(conn_));
        // Serialise plan applies with the reconciler's batches on the same rows.
        tx.exec("LOCK TABLE phase_plans IN SHARE ROW EXCLUSIVE MODE");
        // In natural order (rack-2 before rack-10: 0021's sort_key), the order in which a phase
        // takes its racks.
        auto rows = tx.exec(
            "SELECT r.name, coalesce(z.name, '') FROM racks r LEFT JOIN zones z ON z.id = r.zone_id "
            "ORDER BY r.sort_key");
        std::vector<prov::RackRef> racks;
        racks.reserve(rows.size());
        for (const auto& r : rows) racks.push_back({col(r[0]), col(r[1])});
        auto assigned = prov::assignRacks(plan, racks);
        if (!assigned) return fail(assigned.error());

        ApplyResult res;
        auto prev = tx.exec("SELECT name FROM phase_plans WHERE active");
        res.replaced = !prev.empty() && col(prev[0][0]) != plan.name;
        tx.exec("UPDATE phase_plans SET active = false WHERE active");
        tx.exec_params(
            "INSERT INTO phase_plans (name, document, active, applied_by) VALUES ($1, $2, true, $3) "
            "ON CONFLICT (name) DO UPDATE SET document = EXCLUDED.document, active = true, "
            "applied_by = EXCLUDED.applied_by, applied_at = now(), "
            "generation = phase_plans.generation + 1",
            plan.name, std::string(document), std::string(actor));
        // Phases that no longer exist go; those that remain keep their status.
        std::vector<std::string> names;
        for (const auto& p : plan.phases) names.push_back(p.name);
        tx.exec_params("DELETE FROM phases WHERE plan = $1 AND NOT (name = ANY($2::text[]))",
                       plan.name, arrayOf(names));
        // Ordinals move in two passes so UNIQUE (plan, ordinal) never trips mid-update.
        tx.exec_params("UPDATE phases SET ordinal = -1 - ordinal WHERE plan = $1", plan.name);
        for (std::size_t i = 0; i < plan.phases.size(); ++i)
            tx.exec_params(
                "INSERT INTO phases (plan, name, ordinal) VALUES ($1, $2, $3) "
                "ON CONFLICT (plan, name) DO UPDATE SET ordinal = EXCLUDED.ordinal, updated_at = now()",
                plan.name, plan.phases[i].name, static_cast<int>(i));
        std::vector<std::string> rackNames, ordinals, orders;
        for (std::size_t p = 0; p < assigned->size(); ++p)
            for (std::size_t k = 0; k < (*assigned)[p].size(); ++k) {
                rackNames.push_back(racks[(*assigned)[p][k]].name);
                ordinals.push_back(std::to_string(p));
                orders.push_back(std::to_string(k));
            }
        tx.exec("INSERT INTO rack_provisioning (rack_id) SELECT id FROM racks ON CONFLICT DO NOTHING");
        tx.exec("UPDATE rack_provisioning SET plan = NULL, phase_ordinal = NULL");
        tx.exec_params(
            "UPDATE rack_provisioning p SET plan = $1, phase_ordinal = i.ord, phase_order = i.pos "
            "FROM racks r, unnest($2::text[], $3::int[], $4::int[]) AS i(name, ord, pos) "
            "WHERE r.id = p.rack_id AND r.name = i.name",
            plan.name, arrayOf(rackNames), arrayOf(ordinals), arrayOf(orders));
        tx.exec_params(
            "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
            "reason, idempotency_key) VALUES ($1, 'phase', $2, '', 'applied', $3, "
            "'plan:' || gen_random_uuid())",
            std::string(actor), plan.name,
            std::to_string(plan.phases.size()) + " phases, " + std::to_string(rackNames.size()) +
                " racks");
        notifyLiveChange(tx, "phaseplan");
        tx.commit();
        res.phases = static_cast<int>(plan.phases.size());
        res.racksAssigned = static_cast<int>(rackNames.size());
        return res;
    } catch (...) {
        return fail(translateException("apply phase plan"));
    }
}

Result<ProvisioningState> ProvisioningRepo::load() {
    try {
        ProvisioningState st;
        {
            // Racks created by an apply after the plan get their bookkeeping row here.
            pqxx::work w(native(conn_));
            w.exec("INSERT INTO rack_provisioning (rack_id) SELECT r.id FROM racks r "
                   "WHERE NOT EXISTS (SELECT 1 FROM rack_provisioning p WHERE p.rack_id = r.id) "
                   "ON CONFLICT DO NOTHING");
            w.commit();
        }
        pqxx::read_transaction tx(native(conn_));
        auto plan = tx.exec("SELECT name, document, (extract(epoch FROM now()) * 1000)::bigint "
                            "FROM phase_plans WHERE active");
        if (!plan.empty()) {
            st.planName = col(plan[0][0]);
            st.planDocument = col(plan[0][1]);
        }
        auto ph = tx.exec_params(
            "SELECT name, ordinal, status, start_requested, canary_accepted, message, " +
                iso("started_at") + ", " + iso("finished_at") +
                " FROM phases WHERE plan = $1 ORDER BY ordinal",
            st.planName);
        for (const auto& r : ph) {
            ProvisioningPhase p;
            p.name = col(r[0]);
            p.ordinal = r[1].as<int>();
            p.view.status = prov::parsePhaseStatus(col(r[2])).value_or(prov::PhaseStatus::Pending);
            p.view.startRequested = r[3].as<bool>();
            p.view.canaryAccepted = r[4].as<bool>();
            p.message = col(r[5]);
            p.startedAt = col(r[6]);
            p.finishedAt = col(r[7]);
            st.phases.push_back(std::move(p));
        }
        // The racks in natural order (0021's sort_key), as every list of the API.
        auto rs = tx.exec_params(
            "SELECT r.name, coalesce(z.name, ''), r.state, p.seq, p.attempts, "
            "(extract(epoch FROM p.entered_at) * 1000)::bigint, "
            "coalesce((extract(epoch FROM p.not_before) * 1000)::bigint, 0), p.timeout_raised, "
            "CASE WHEN p.plan = $1 THEN coalesce(p.phase_ordinal, -1) ELSE -1 END, p.phase_order, "
            "p.reason, (extract(epoch FROM now()) * 1000)::bigint "
            "FROM racks r JOIN rack_provisioning p ON p.rack_id = r.id "
            "LEFT JOIN zones z ON z.id = r.zone_id ORDER BY r.sort_key",
            st.planName);
        st.racks.reserve(rs.size());
        for (const auto& r : rs) {
            ProvisioningRack k;
            k.name = col(r[0]);
            k.zone = col(r[1]);
            auto s = prov::parseRackState(col(r[2]));
            // A state outside the lifecycle (written by hand) is left alone: the planner sees
            // it as settled (maintenance) and never moves it.
            k.state = s.value_or(prov::RackState::Maintenance);
            k.seq = r[3].as<std::int64_t>();
            k.attempts = r[4].as<int>();
            k.enteredAtMs = r[5].as<std::int64_t>();
            k.notBeforeMs = r[6].as<std::int64_t>();
            k.timeoutRaised = r[7].as<bool>();
            k.phase = r[8].as<int>();
            k.order = r[9].as<int>();
            k.reason = col(r[10]);
            st.nowMs = r[11].as<std::int64_t>();
            st.racks.push_back(std::move(k));
        }
        if (st.nowMs == 0) {
            auto n = tx.exec("SELECT (extract(epoch FROM now()) * 1000)::bigint");
            st.nowMs = n[0][0].as<std::int64_t>();
        }
        return st;
    } catch (...) {
        return fail(translateException("load provisioning state"));
    }
}

Result<BatchResult> ProvisioningRepo::commit(const Batch& b) {
    BatchResult res;
    res.rackApplied.assign(b.racks.size(), false);
    res.phaseApplied.assign(b.phases.size(), false);
    try {
        pqxx::work tx(native(conn_));
        // Transitions: one statement for the whole batch. The CAS is the WHERE clause: the
        // rack must still be in `from` with the seq the decision was based on.
        std::vector<std::size_t> idx;
        std::vector<std::string> names, froms, seqs, tos, reasons, executors, outputs, phases, actors;
        for (std::size_t i = 0; i < b.racks.size(); ++i) {
            const auto& c = b.racks[i];
            if (!c.transition) continue;
            idx.push_back(i);
            names.push_back(c.rack);
            froms.emplace_back(prov::stateName(c.from));
            seqs.push_back(std::to_string(c.seq));
            tos.emplace_back(prov::stateName(c.to));
            reasons.push_back(c.reason);
            executors.push_back(c.executor);
            outputs.push_back(c.output);
            phases.push_back(c.phase);
            actors.push_back(c.actor);
        }
        std::unordered_map<std::string, std::int64_t> appliedSeq;
        if (!idx.empty()) {
            auto r = tx.exec_params(
                "WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], "
                "  $5::text[], $6::text[], $7::text[], $8::text[], $9::text[]) "
                "  AS t(rack, from_state, seq, to_state, reason, executor, output, phase, actor)), "
                "cas AS (UPDATE rack_provisioning p SET seq = p.seq + 1, attempts = 0, "
                "  not_before = NULL, entered_at = now(), timeout_raised = false, reason = i.reason "
                "  FROM racks r, i WHERE r.id = p.rack_id AND r.name = i.rack "
                "  AND r.state = i.from_state AND p.seq = i.seq "
                "  RETURNING p.rack_id, p.seq AS new_seq, i.*), "
                "upd AS (UPDATE racks r SET state = cas.to_state, updated_at = now(), "
                "  resource_version = r.resource_version + 1 FROM cas WHERE r.id = cas.rack_id) "
                "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
                "  reason, executor, output, phase, idempotency_key) "
                "SELECT actor, 'rack', rack, from_state, to_state, reason, executor, output, phase, "
                "  'rack:' || rack || ':' || new_seq FROM cas RETURNING entity, "
                "  split_part(idempotency_key, ':', 3)::bigint",
                arrayOf(names), arrayOf(froms), arrayOf(seqs), arrayOf(tos), arrayOf(reasons),
                arrayOf(executors), arrayOf(outputs), arrayOf(phases), arrayOf(actors));
            for (const auto& row : r) appliedSeq[col(row[0])] = row[1].as<std::int64_t>();
            res.transitions += static_cast<int>(r.size());
        }
        // Retry bookkeeping (no state change), CAS on the same (state, seq).
        for (std::size_t i = 0; i < b.racks.size(); ++i) {
            const auto& c = b.racks[i];
            if (c.transition) {
                res.rackApplied[i] = appliedSeq.contains(c.rack);
                continue;
            }
            auto r = tx.exec_params(
                "UPDATE rack_provisioning p SET attempts = $4, reason = $5, "
                "not_before = CASE WHEN $6::bigint = 0 THEN NULL "
                "  ELSE to_timestamp($6::bigint / 1000.0) END "
                "FROM racks r WHERE r.id = p.rack_id AND r.name = $1 AND r.state = $2 AND p.seq = $3",
                c.rack, std::string(prov::stateName(c.from)), c.seq, c.attempts, c.reason,
                c.notBeforeMs);
            res.rackApplied[i] = r.affected_rows() == 1;
        }
        // What goes with an applied change: hosts, GPUs, links, events.
        std::vector<std::string> hNames, hFrom, hTo, hKey, hReason, gNames, gFrom, gTo, gKey;
        std::vector<std::string> qNames, qGpus, qDiag, qThreshold;
        std::vector<std::string> evKind, evRack, evPhase, evMsg;
        std::map<std::string, std::vector<std::string>> linksByState;
        for (std::size_t i = 0; i < b.racks.size(); ++i) {
            if (!res.rackApplied[i]) continue;
            const auto& c = b.racks[i];
            const std::string tag =
                c.transition ? std::to_string(appliedSeq[c.rack]) : "retry" + std::to_string(c.attempts);
            for (const auto& h : c.hosts) {
                hNames.push_back(h.host);
                hFrom.emplace_back(prov::stateName(h.from));
                hTo.emplace_back(prov::stateName(h.to));
                hKey.push_back("host:" + h.host + ":" + c.rack + ":" + tag);
                hReason.push_back(c.reason);
                if (h.to == prov::HostState::Quarantined) {
                    qNames.push_back(h.host);
                    qGpus.push_back(h.gpus);
                    qDiag.push_back(h.diagnostic);
                    qThreshold.push_back(h.threshold);
                }
            }
            for (const auto& g : c.gpus) {
                gNames.push_back(g.gpu);
                gFrom.emplace_back(prov::stateName(g.from));
                gTo.emplace_back(prov::stateName(g.to));
                gKey.push_back("gpu:" + g.gpu + ":" + c.rack + ":" + tag);
            }
            if (!c.linkState.empty()) {
                auto& links = linksByState[c.linkState];
                links.insert(links.end(), c.linkNames.begin(), c.linkNames.end());
            }
            if (c.event) {
                evKind.push_back(c.eventKind);
                evRack.push_back(c.rack);
                evPhase.push_back(c.phase);
                evMsg.push_back(*c.event);
            }
        }
        if (!hNames.empty()) {
            auto r = tx.exec_params(
                "WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], "
                "  $5::text[]) AS t(name, from_state, to_state, key, reason)), "
                "u AS (UPDATE hosts h SET state = i.to_state, updated_at = now(), "
                "  resource_version = h.resource_version + 1 FROM i "
                "  WHERE h.name = i.name AND h.state = i.from_state RETURNING i.*) "
                "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
                "  reason, idempotency_key) SELECT 'reconciler', 'host', name, from_state, "
                "  to_state, reason, key FROM u",
                arrayOf(hNames), arrayOf(hFrom), arrayOf(hTo), arrayOf(hKey), arrayOf(hReason));
            res.transitions += static_cast<int>(r.affected_rows());
            res.openedEvents =
                openQuarantineEvents(tx, qNames, qGpus, qDiag, qThreshold, "burn-in");
            // Hosts that left quarantine: their events were closed by migration 0030's trigger
            // in this transaction (closed_at is its now()); their ids go on the events topic.
            std::vector<std::string> leftQuarantine;
            for (std::size_t i = 0; i < hNames.size(); ++i)
                if (hFrom[i] == prov::stateName(prov::HostState::Quarantined) && hTo[i] != hFrom[i])
                    leftQuarantine.push_back(hNames[i]);
            if (!leftQuarantine.empty()) {
                auto closed = tx.exec_params(
                    "SELECT id FROM events WHERE kind = 'host_quarantined' AND "
                    "location = ANY($1::text[]) AND closed_at >= now()",
                    arrayOf(leftQuarantine));
                for (const auto& row : closed)
                    res.closedEvents.push_back(row[0].as<std::int64_t>());
            }
        }
        if (!gNames.empty()) {
            auto r = tx.exec_params(
                "WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) "
                "  AS t(name, from_state, to_state, key)), "
                "u AS (UPDATE gpus g SET state = i.to_state, updated_at = now(), "
                "  resource_version = g.resource_version + 1 FROM i "
                "  WHERE g.name = i.name AND g.state = i.from_state RETURNING i.*) "
                "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
                "  reason, idempotency_key) SELECT 'reconciler', 'gpu', name, from_state, "
                "  to_state, 'failed burn-in diagnostics', key FROM u",
                arrayOf(gNames), arrayOf(gFrom), arrayOf(gTo), arrayOf(gKey));
            res.transitions += static_cast<int>(r.affected_rows());
        }
        // Hosts follow their racks (after the explicit host changes above, which
        // CAS on the hosts' states: a quarantined host then keeps its own).
        {
            std::vector<std::string> fr, fs, ft;
            for (std::size_t i = 0; i < b.racks.size(); ++i) {
                const auto& c = b.racks[i];
                if (!res.rackApplied[i] || !c.transition) continue;
                fr.push_back(c.rack);
                fs.emplace_back(prov::stateName(c.to));
                ft.push_back(std::to_string(appliedSeq[c.rack]));
            }
            detail::followRacks(tx, fr, fs, ft, "reconciler");
        }
        for (const auto& [state, links] : linksByState)
            if (!links.empty())
                tx.exec_params("UPDATE links SET state = $1, updated_at = now(), "
                               "resource_version = resource_version + 1 "
                               "WHERE name = ANY($2::text[]) AND state <> $1",
                               state, arrayOf(links));
        for (const auto& t : b.timeouts) {
            auto r = tx.exec_params(
                "UPDATE rack_provisioning p SET timeout_raised = true FROM racks r "
                "WHERE r.id = p.rack_id AND r.name = $1 AND p.seq = $2 AND NOT p.timeout_raised",
                t.rack, t.seq);
            if (r.affected_rows() == 1) {
                evKind.emplace_back("state_timeout");
                evRack.push_back(t.rack);
                evPhase.push_back(t.phase);
                evMsg.push_back(t.message);
            }
        }
        // Phases: CAS on status.
        std::string plan;
        if (!b.phases.empty()) {
            auto p = activePlan(tx);
            if (!p) return fail(p.error());
            plan = *p;
        }
        for (std::size_t i = 0; i < b.phases.size(); ++i) {
            const auto& c = b.phases[i];
            const std::string to(prov::phaseStatusName(c.to)), from(prov::phaseStatusName(c.from));
            auto r = tx.exec_params(
                "UPDATE phases SET status = $3, message = $5, updated_at = now(), "
                "started_at = CASE WHEN $3 = 'running' THEN coalesce(started_at, now()) "
                "  ELSE started_at END, "
                "finished_at = CASE WHEN $3 IN ('completed', 'halted', 'aborted') THEN now() "
                "  ELSE NULL END "
                "WHERE plan = $1 AND name = $2 AND status = $4",
                plan, c.phase, to, from, c.message);
            if (r.affected_rows() != 1) continue;
            res.phaseApplied[i] = true;
            tx.exec_params(
                "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
                "reason, phase, idempotency_key) VALUES ($1, 'phase', $2, $3, $4, $5, $2, "
                "'phase:' || gen_random_uuid())",
                c.actor, c.phase, from, to, c.message);
            ++res.transitions;
            if (c.to == prov::PhaseStatus::Halted || c.to == prov::PhaseStatus::Completed ||
                c.to == prov::PhaseStatus::Running) {
                evKind.emplace_back("phase_" + to);
                evRack.emplace_back();
                evPhase.push_back(c.phase);
                evMsg.push_back("phase " + c.phase + " " + to + ": " + c.message);
            }
        }
        if (!evKind.empty()) {
            std::vector<std::string> sev;
            for (const auto& k : evKind)
                sev.emplace_back(k == "phase_halted" ? "critical"
                                 : k.starts_with("phase_") ? "info"
                                                           : "warning");
            tx.exec_params(
                "INSERT INTO provisioning_events (severity, kind, rack, phase, message) "
                "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])",
                arrayOf(sev), arrayOf(evKind), arrayOf(evRack), arrayOf(evPhase), arrayOf(evMsg));
        }
        if (!b.configs.empty()) {
            res.configSet = tx.exec("SELECT nextval('fabric_config_sets')")[0][0].as<std::int64_t>();
            std::vector<std::string> sw, cfg, diff;
            for (const auto& c : b.configs) {
                sw.push_back(c.switchName);
                cfg.push_back(c.config);
                diff.push_back(c.diff);
            }
            tx.exec_params(
                "INSERT INTO fabric_config_versions (switch_name, version, config_set, config, "
                "diff, reason) "
                "SELECT i.sw, coalesce((SELECT max(version) FROM fabric_config_versions v "
                "  WHERE v.switch_name = i.sw), 0) + 1, $4, i.cfg, i.diff, $5 "
                "FROM unnest($1::text[], $2::text[], $3::text[]) AS i(sw, cfg, diff)",
                arrayOf(sw), arrayOf(cfg), arrayOf(diff), res.configSet, b.configReason);
        }
        if (res.transitions > 0) notifyLiveChange(tx, "reconciler");
        // Last, so the lease row is locked only for the commit (leader.hpp).
        if (b.fence) checkFence(tx, *b.fence);
        tx.commit();
        return res;
    } catch (const FencedOut& f) {
        return fail(Error::conflict(f.what()));
    } catch (...) {
        return fail(translateException("provisioning commit"));
    }
}

Result<int> ProvisioningRepo::recordLldp(std::string_view rack,
                                         const std::vector<prov::ObservedNeighbour>& seen) {
    try {
        pqxx::work tx(native(conn_));
        auto r = tx.exec_params("SELECT id FROM racks WHERE name = $1", std::string(rack));
        if (r.empty()) return fail(Error::notFound("no rack named '" + std::string(rack) + "'"));
        const auto id = r[0][0].as<std::int64_t>();
        tx.exec_params("DELETE FROM lldp_observations WHERE rack_id = $1", id);
        std::vector<std::string> ports, peers;
        for (const auto& s : seen) {
            ports.push_back(s.port);
            peers.push_back(s.peer);
        }
        tx.exec_params("INSERT INTO lldp_observations (rack_id, port, peer) "
                       "SELECT $1, port, peer FROM unnest($2::text[], $3::text[]) AS t(port, peer) "
                       "ON CONFLICT (rack_id, port) DO UPDATE SET peer = EXCLUDED.peer",
                       id, arrayOf(ports), arrayOf(peers));
        tx.commit();
        return static_cast<int>(seen.size());
    } catch (...) {
        return fail(translateException("record LLDP"));
    }
}

Result<std::vector<std::pair<std::string, std::vector<prov::ObservedNeighbour>>>>
ProvisioningRepo::lldpAll() {
    try {
        pqxx::read_transaction tx(native(conn_));
        auto r = tx.exec("SELECT r.name, o.port, o.peer FROM lldp_observations o "
                         "JOIN racks r ON r.id = o.rack_id ORDER BY r.name, o.port");
        std::vector<std::pair<std::string, std::vector<prov::ObservedNeighbour>>> out;
        for (const auto& row : r) {
            auto name = col(row[0]);
            if (out.empty() || out.back().first != name) out.push_back({name, {}});
            out.back().second.push_back({col(row[1]), col(row[2])});
        }
        return out;
    } catch (...) {
        return fail(translateException("load LLDP"));
    }
}

Result<std::vector<std::pair<std::string, std::pair<int, std::string>>>>
ProvisioningRepo::latestConfigs() {
    try {
        pqxx::read_transaction tx(native(conn_));
        auto r = tx.exec("SELECT DISTINCT ON (switch_name) switch_name, version, config "
                         "FROM fabric_config_versions ORDER BY switch_name, version DESC");
        std::vector<std::pair<std::string, std::pair<int, std::string>>> out;
        for (const auto& row : r) out.push_back({col(row[0]), {row[1].as<int>(), col(row[2])}});
        return out;
    } catch (...) {
        return fail(translateException("load fabric configs"));
    }
}

Result<std::vector<AuditRecord>> ProvisioningRepo::audit(std::string_view entity, int limit,
                                                         std::int64_t afterId) {
    try {
        pqxx::read_transaction tx(native(conn_));
        auto r = tx.exec_params(
            "SELECT id, " + iso("at") +
                ", actor, entity_kind, entity, from_state, to_state, reason, executor, output, "
                "phase, idempotency_key FROM provisioning_audit "
                "WHERE id > $1 AND ($2 = '' OR entity = $2) ORDER BY id LIMIT $3",
            afterId, std::string(entity), std::clamp(limit, 1, 1'000'000));
        std::vector<AuditRecord> out;
        out.reserve(r.size());
        for (const auto& row : r)
            out.push_back({row[0].as<std::int64_t>(), col(row[1]), col(row[2]), col(row[3]),
                           col(row[4]), col(row[5]), col(row[6]), col(row[7]), col(row[8]),
                           col(row[9]), col(row[10]), col(row[11])});
        return out;
    } catch (...) {
        return fail(translateException("read audit"));
    }
}

Result<std::vector<ProvisioningEvent>> ProvisioningRepo::events(std::int64_t afterId, int limit) {
    try {
        pqxx::read_transaction tx(native(conn_));
        auto r = tx.exec_params("SELECT id, " + iso("at") +
                                    ", severity, kind, rack, phase, message FROM provisioning_events "
                                    "WHERE id > $1 ORDER BY id LIMIT $2",
                                afterId, std::clamp(limit, 1, 100'000));
        std::vector<ProvisioningEvent> out;
        for (const auto& row : r)
            out.push_back({row[0].as<std::int64_t>(), col(row[1]), col(row[2]), col(row[3]),
                           col(row[4]), col(row[5]), col(row[6])});
        return out;
    } catch (...) {
        return fail(translateException("read provisioning events"));
    }
}

Result<std::vector<std::pair<std::string, std::string>>> ProvisioningRepo::hostStates() {
    try {
        pqxx::read_transaction tx(native(conn_));
        auto r = tx.exec("SELECT name, state FROM hosts");
        std::vector<std::pair<std::string, std::string>> out;
        out.reserve(r.size());
        for (const auto& row : r) out.emplace_back(col(row[0]), col(row[1]));
        return out;
    } catch (...) {
        return fail(translateException("load host states"));
    }
}

Result<std::vector<std::pair<std::string, std::string>>> ProvisioningRepo::hostStatesOfRacks(
    const std::vector<std::string>& racks) {
    std::vector<std::pair<std::string, std::string>> out;
    if (racks.empty()) return out;
    try {
        pqxx::read_transaction tx(native(conn_));
        auto r = tx.exec_params(
            "SELECT h.name, h.state FROM hosts h JOIN racks r ON r.id = h.rack_id "
            "WHERE r.name = ANY($1::text[])",
            detail::pgTextArray(racks));
        out.reserve(r.size());
        for (const auto& row : r) out.emplace_back(col(row[0]), col(row[1]));
        return out;
    } catch (...) {
        return fail(translateException("load host states"));
    }
}

Result<std::int64_t> ProvisioningRepo::inventoryGeneration() {
    try {
        pqxx::read_transaction tx(native(conn_));
        auto r = tx.exec("SELECT generation FROM inventory_state");
        return r.empty() ? std::int64_t{0} : r[0][0].as<std::int64_t>();
    } catch (...) {
        return fail(translateException("inventory generation"));
    }
}

}  // namespace loom::db
