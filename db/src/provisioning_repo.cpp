// Why over 600 lines: commit() writes a whole reconciler batch (rack and host transitions,
// gates, links, events, configs) in one transaction, statement after statement; it is split
// by table when the batch is reworked (with provisioning_service's runOnce, issue 10 later).

#include "loom/db/provisioning_repo.hpp"

#include "copy_text.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "fence.hpp"
#include "live_notify.hpp"
#include "loom/provisioning/link_service.hpp"
#include "loom/db/native.hpp"

namespace loom::db {
namespace prov = loom::provisioning;
namespace {

std::string col(const pqxx::field& f) { return f.is_null() ? std::string() : f.c_str(); }

// A text[] parameter (copy_text.hpp).
std::string arrayOf(const std::vector<std::string>& v) { return detail::pgTextArray(v); }

constexpr const char* kIso = "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'";

std::string iso(const char* column) {
    return std::string("coalesce(to_char(") + column + " AT TIME ZONE 'UTC', " + kIso + "), '')";
}

Result<std::string> activePlan(pqxx::transaction_base& tx) {
    auto r = tx.exec("SELECT name FROM phase_plans WHERE active");
    if (r.empty()) return fail(Error::notFound("no phase plan has been applied"));
    return col(r[0][0]);
}

}  // namespace

Result<ProvisioningRepo::ApplyResult> ProvisioningRepo::applyPlan(const prov::PhasePlan& plan,
                                                                  std::string_view document,
                                                                  std::string_view actor) {
    try {
        pqxx::work tx(native(conn_));
        // Serialise plan applies with the reconciler's batches on the same rows.
        tx.exec("LOCK TABLE phase_plans IN SHARE ROW EXCLUSIVE MODE");
        auto rows = tx.exec(
            "SELECT r.name, coalesce(z.name, '') FROM racks r LEFT JOIN zones z ON z.id = r.zone_id "
            "ORDER BY r.name");
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
        auto rs = tx.exec_params(
            "SELECT r.name, coalesce(z.name, ''), r.state, p.seq, p.attempts, "
            "(extract(epoch FROM p.entered_at) * 1000)::bigint, "
            "coalesce((extract(epoch FROM p.not_before) * 1000)::bigint, 0), p.timeout_raised, "
            "CASE WHEN p.plan = $1 THEN coalesce(p.phase_ordinal, -1) ELSE -1 END, p.phase_order, "
            "p.reason, (extract(epoch FROM now()) * 1000)::bigint "
            "FROM racks r JOIN rack_provisioning p ON p.rack_id = r.id "
            "LEFT JOIN zones z ON z.id = r.zone_id ORDER BY r.name",
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

Result<ProvisioningPhase> ProvisioningRepo::controlPhase(std::string_view phase,
                                                         std::string_view op,
                                                         std::string_view actor) {
    using PS = prov::PhaseStatus;
    try {
        pqxx::work tx(native(conn_));
        auto plan = activePlan(tx);
        if (!plan) return fail(plan.error());
        auto r = tx.exec_params(
            "SELECT status, start_requested, canary_accepted, ordinal FROM phases "
            "WHERE plan = $1 AND name = $2 FOR UPDATE",
            *plan, std::string(phase));
        if (r.empty())
            return fail(Error::notFound("phase '" + std::string(phase) + "' is not in plan '" +
                                        *plan + "'"));
        const auto cur = prov::parsePhaseStatus(col(r[0][0])).value_or(PS::Pending);
        const int ordinal = r[0][3].as<int>();
        auto conflict = [&](std::string allowed) {
            return fail(Error::conflict("phase " + std::string(phase) + " is " +
                                        std::string(prov::phaseStatusName(cur)) + "; " +
                                        std::string(op) + " applies only when it is " + allowed));
        };
        std::string sql;
        PS to = cur;
        if (op == "start") {
            if (cur != PS::Pending) return conflict("pending");
            if (ordinal > 0) {
                auto prev = tx.exec_params(
                    "SELECT name, status FROM phases WHERE plan = $1 AND ordinal = $2", *plan,
                    ordinal - 1);
                if (!prev.empty() && col(prev[0][1]) != "completed")
                    return fail(Error::conflict("phase " + std::string(phase) +
                                                " cannot start: the previous phase " +
                                                col(prev[0][0]) + " is " + col(prev[0][1]) +
                                                " (it must be completed)"));
            }
            // Running at once; the reconciler starts admitting racks on its next pass.
            to = PS::Running;
            sql = "UPDATE phases SET start_requested = true, status = 'running', "
                  "started_at = coalesce(started_at, now()), updated_at = now(), message = $3 "
                  "WHERE plan = $1 AND name = $2";
        } else if (op == "pause") {
            if (cur != PS::Running) return conflict("running");
            to = PS::Paused;
            sql = "UPDATE phases SET status = 'paused', updated_at = now(), message = $3 "
                  "WHERE plan = $1 AND name = $2";
        } else if (op == "resume") {
            if (cur != PS::Paused && cur != PS::Halted) return conflict("paused or halted");
            to = PS::Running;
            // Resuming a halted phase accepts what halted it (a failed canary, a missed gate
            // once the failed racks were dealt with).
            sql = "UPDATE phases SET status = 'running', canary_accepted = canary_accepted OR "
                  "status = 'halted', finished_at = NULL, updated_at = now(), message = $3 "
                  "WHERE plan = $1 AND name = $2";
        } else if (op == "abort") {
            if (cur == PS::Completed || cur == PS::Aborted) return conflict("not completed or aborted");
            to = PS::Aborted;
            sql = "UPDATE phases SET status = 'aborted', finished_at = now(), updated_at = now(), "
                  "message = $3 WHERE plan = $1 AND name = $2";
        } else {
            return fail(Error::invalid("unknown phase operation '" + std::string(op) +
                                       "' (start, pause, resume, abort)"));
        }
        const std::string msg = std::string(op) + " by " + std::string(actor);
        tx.exec_params(sql, *plan, std::string(phase), msg);
        tx.exec_params(
            "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
            "reason, phase, idempotency_key) VALUES ($1, 'phase', $2, $3, $4, $5, $2, "
            "'phase:' || gen_random_uuid())",
            std::string(actor), std::string(phase), std::string(prov::phaseStatusName(cur)),
            std::string(prov::phaseStatusName(to)), msg);
        tx.exec_params("INSERT INTO provisioning_events (severity, kind, phase, message) "
                       "VALUES ('info', $1, $2, $3)",
                       "phase_" + std::string(op), std::string(phase),
                       "phase " + std::string(phase) + ": " + msg);
        notifyLiveChange(tx, "phase");
        tx.commit();
        ProvisioningPhase p;
        p.name = std::string(phase);
        p.ordinal = ordinal;
        p.view.status = to;
        p.message = msg;
        return p;
    } catch (...) {
        return fail(translateException("phase " + std::string(op)));
    }
}

Result<ProvisioningRepo::RackActionResult> ProvisioningRepo::rackAction(std::string_view rack,
                                                                        std::string_view action,
                                                                        std::string_view reason,
                                                                        std::string_view actor,
                                                                        const std::vector<std::string>& rackLinks) {
    using RS = prov::RackState;
    try {
        pqxx::work tx(native(conn_));
        tx.exec_params("INSERT INTO rack_provisioning (rack_id) SELECT id FROM racks WHERE name = $1 "
                       "ON CONFLICT DO NOTHING",
                       std::string(rack));
        auto r = tx.exec_params(
            "SELECT r.state, p.seq FROM racks r JOIN rack_provisioning p ON p.rack_id = r.id "
            "WHERE r.name = $1 FOR UPDATE",
            std::string(rack));
        if (r.empty()) return fail(Error::notFound("no rack named '" + std::string(rack) + "'"));
        const auto from = prov::parseRackState(col(r[0][0]));
        if (!from)
            return fail(Error::conflict("rack " + std::string(rack) + " is in unknown state '" +
                                        col(r[0][0]) + "'"));
        RS to = *from;
        if (action == "advance") {
            // The one way forward that is not a failure or a side trip.
            if (auto n = prov::nextOnPath(*from))
                to = *n;
            else if (*from == RS::Repair || *from == RS::Maintenance)
                to = RS::Racked;
            else if (*from == RS::Drained)
                to = RS::InService;
            else if (*from == RS::Draining)
                to = RS::Drained;
            else if (*from == RS::Failed)
                to = RS::Repair;
            else
                to = *from;  // refused below with the allowed states
        } else if (action == "fail") {
            to = RS::Failed;
        } else if (action == "drain") {
            to = RS::Draining;
        } else if (action == "repair") {
            to = RS::Repair;
        } else {
            return fail(Error::invalid("unknown rack action '" + std::string(action) +
                                       "' (advance, fail, drain, repair)"));
        }
        if (auto ok = prov::checkTransition(*from, to, "rack " + std::string(rack)); !ok)
            return fail(ok.error());
        if (action == "fail" && reason.empty())
            return fail(Error::invalid("a reason is required to fail a rack", "reason"));
        const auto seq = r[0][1].as<std::int64_t>() + 1;
        tx.exec_params("UPDATE rack_provisioning p SET seq = $2, attempts = 0, not_before = NULL, "
                       "entered_at = now(), timeout_raised = false, reason = $3 FROM racks r "
                       "WHERE r.id = p.rack_id AND r.name = $1",
                       std::string(rack), seq, std::string(reason));
        tx.exec_params("UPDATE racks SET state = $2, updated_at = now(), "
                       "resource_version = resource_version + 1 WHERE name = $1",
                       std::string(rack), std::string(prov::stateName(to)));
        tx.exec_params(
            "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
            "reason, executor, idempotency_key) VALUES ($1, 'rack', $2, $3, $4, $5, 'operator', $6)",
            std::string(actor), std::string(rack), std::string(prov::stateName(*from)),
            std::string(prov::stateName(to)),
            reason.empty() ? std::string(action) + " by " + std::string(actor) : std::string(reason),
            "rack:" + std::string(rack) + ":" + std::to_string(seq));
        // The rack's cables follow it in the same transaction (link_service.hpp); the links
        // that serve its zone are the leader's live-state sync's to fix.
        if (!rackLinks.empty())
            tx.exec_params("UPDATE links SET state = $1, updated_at = now(), "
                           "resource_version = resource_version + 1 "
                           "WHERE name = ANY($2::text[]) AND state <> $1",
                           std::string(prov::linkStateName(prov::linkServiceFor(to))),
                           arrayOf(rackLinks));
        notifyLiveChange(tx, "rack");
        tx.commit();
        return RackActionResult{std::string(rack), *from, to};
    } catch (...) {
        return fail(translateException("rack " + std::string(action)));
    }
}

Result<int> ProvisioningRepo::setLinkStates(const std::vector<std::string>& names,
                                            const std::vector<std::string>& states) {
    if (names.size() != states.size())
        return fail(Error::invalid("setLinkStates: names and states differ in length"));
    if (names.empty()) return 0;
    try {
        pqxx::work tx(native(conn_));
        auto r = tx.exec_params(
            "UPDATE links l SET state = i.state, updated_at = now(), "
            "resource_version = l.resource_version + 1 "
            "FROM unnest($1::text[], $2::text[]) AS i(name, state) "
            "WHERE l.name = i.name AND l.state <> i.state",
            arrayOf(names), arrayOf(states));
        const int changed = static_cast<int>(r.affected_rows());
        if (changed > 0) notifyLiveChange(tx, "links");
        tx.commit();
        return changed;
    } catch (...) {
        return fail(translateException("set link states"));
    }
}

Result<HostChange> ProvisioningRepo::quarantineHost(std::string_view host, std::string_view reason,
                                                    std::string_view actor) {
    try {
        pqxx::work tx(native(conn_));
        auto r = tx.exec_params("SELECT state FROM hosts WHERE name = $1 FOR UPDATE", std::string(host));
        if (r.empty()) return fail(Error::notFound("no host named '" + std::string(host) + "'"));
        auto from = prov::parseHostState(col(r[0][0]));
        if (!from)
            return fail(Error::conflict("host " + std::string(host) + " is in unknown state '" +
                                        col(r[0][0]) + "'"));
        if (auto ok = prov::checkTransition(*from, prov::HostState::Quarantined,
                                            "host " + std::string(host));
            !ok)
            return fail(ok.error());
        tx.exec_params("UPDATE hosts SET state = 'quarantined', updated_at = now(), "
                       "resource_version = resource_version + 1 WHERE name = $1",
                       std::string(host));
        tx.exec_params(
            "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
            "reason, executor, idempotency_key) VALUES ($1, 'host', $2, $3, 'quarantined', $4, "
            "'operator', 'host:' || $2 || ':op:' || gen_random_uuid())",
            std::string(actor), std::string(host), std::string(prov::stateName(*from)),
            reason.empty() ? "quarantined by " + std::string(actor) : std::string(reason));
        notifyLiveChange(tx, "host");
        tx.commit();
        return HostChange{std::string(host), *from, prov::HostState::Quarantined};
    } catch (...) {
        return fail(translateException("host quarantine"));
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
