// The operator's provisioning actions (provisioning_repo.hpp), each in one transaction: a phase
// started, paused, resumed or aborted; a rack advanced, failed, drained or repaired; link
// states set; a host quarantined. The plan, the reconciler's batches and the reads are in
// provisioning_repo.cpp.
#include <pqxx/pqxx>

#include "live_notify.hpp"
#include "loom/db/native.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/provisioning/link_service.hpp"
#include "provisioning_sql.hpp"

namespace loom::db {
namespace prov = loom::provisioning;
using detail::activePlan;
using detail::arrayOf;
using detail::col;
using detail::openQuarantineEvents;

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
                    return fail(Error::conflict(
                        "phase " + std::string(phase) + " cannot start: the previous phase " +
                        col(prev[0][0]) + " is " + col(prev[0][1]) + " (it must be completed)"));
            }
            // Running at once; the reconciler starts admitting racks on its next pass.
            to = PS::Running;
            sql =
                "UPDATE phases SET start_requested = true, status = 'running', "
                "started_at = coalesce(started_at, now()), updated_at = now(), message = $3 "
                "WHERE plan = $1 AND name = $2";
        } else if (op == "pause") {
            if (cur != PS::Running) return conflict("running");
            to = PS::Paused;
            sql =
                "UPDATE phases SET status = 'paused', updated_at = now(), message = $3 "
                "WHERE plan = $1 AND name = $2";
        } else if (op == "resume") {
            if (cur != PS::Paused && cur != PS::Halted) return conflict("paused or halted");
            to = PS::Running;
            // Resuming a halted phase accepts what halted it (a failed canary, a missed gate
            // once the failed racks were dealt with).
            sql =
                "UPDATE phases SET status = 'running', canary_accepted = canary_accepted OR "
                "status = 'halted', finished_at = NULL, updated_at = now(), message = $3 "
                "WHERE plan = $1 AND name = $2";
        } else if (op == "abort") {
            if (cur == PS::Completed || cur == PS::Aborted)
                return conflict("not completed or aborted");
            to = PS::Aborted;
            sql =
                "UPDATE phases SET status = 'aborted', finished_at = now(), updated_at = now(), "
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
        tx.exec_params(
            "INSERT INTO provisioning_events (severity, kind, phase, message) "
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

Result<ProvisioningRepo::RackActionResult> ProvisioningRepo::rackAction(
    std::string_view rack, std::string_view action, std::string_view reason, std::string_view actor,
    const std::vector<std::string>& rackLinks) {
    using RS = prov::RackState;
    try {
        pqxx::work tx(native(conn_));
        tx.exec_params(
            "INSERT INTO rack_provisioning (rack_id) SELECT id FROM racks WHERE name = $1 "
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
        tx.exec_params(
            "UPDATE rack_provisioning p SET seq = $2, attempts = 0, not_before = NULL, "
            "entered_at = now(), timeout_raised = false, reason = $3 FROM racks r "
            "WHERE r.id = p.rack_id AND r.name = $1",
            std::string(rack), seq, std::string(reason));
        tx.exec_params(
            "UPDATE racks SET state = $2, updated_at = now(), "
            "resource_version = resource_version + 1 WHERE name = $1",
            std::string(rack), std::string(prov::stateName(to)));
        tx.exec_params(
            "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
            "reason, executor, idempotency_key) VALUES ($1, 'rack', $2, $3, $4, $5, 'operator', "
            "$6)",
            std::string(actor), std::string(rack), std::string(prov::stateName(*from)),
            std::string(prov::stateName(to)),
            reason.empty() ? std::string(action) + " by " + std::string(actor)
                           : std::string(reason),
            "rack:" + std::string(rack) + ":" + std::to_string(seq));
        // Its hosts and switches follow it (follow_rack.hpp), and its cables and its zone's
        // cables between switches outside racks, in the same transaction (link_service.hpp).
        detail::followRacks(tx, {std::string(rack)}, {std::string(prov::stateName(to))},
                            {std::to_string(seq)}, std::string(actor));
        if (!rackLinks.empty())
            tx.exec_params(
                "UPDATE links SET state = $1, updated_at = now(), "
                "resource_version = resource_version + 1 "
                "WHERE name = ANY($2::text[]) AND state <> $1",
                std::string(prov::linkStateName(prov::linkServiceFor(to))), arrayOf(rackLinks));
        notifyLiveChange(tx, "rack");
        tx.commit();
        return RackActionResult{std::string(rack), *from, to};
    } catch (...) {
        return fail(translateException("rack " + std::string(action)));
    }
}

namespace {

// Sets each named row of `table` (links or switches: name, state, updated_at, resource_version)
// to its state, where it differs, in `tx`: one statement; returns how many rows changed.
int setStatesIn(pqxx::work& tx, const char* table, const std::vector<std::string>& names,
                const std::vector<std::string>& states) {
    if (names.empty()) return 0;
    auto r = tx.exec_params(std::string("UPDATE ") + table +
                                " t SET state = i.state, updated_at = now(), "
                                "resource_version = t.resource_version + 1 "
                                "FROM unnest($1::text[], $2::text[]) AS i(name, state) "
                                "WHERE t.name = i.name AND t.state <> i.state",
                            arrayOf(names), arrayOf(states));
    return static_cast<int>(r.affected_rows());
}

}  // namespace

Result<int> ProvisioningRepo::setLinkStates(const std::vector<std::string>& names,
                                            const std::vector<std::string>& states) {
    auto r = setFollowStates(names, states, {}, {});
    if (!r) return fail(r.error());
    return r->links;
}

Result<ProvisioningRepo::FollowFixes> ProvisioningRepo::setFollowStates(
    const std::vector<std::string>& linkNames, const std::vector<std::string>& linkStates,
    const std::vector<std::string>& switchNames, const std::vector<std::string>& switchStates) {
    if (linkNames.size() != linkStates.size())
        return fail(Error::invalid("set links states: names and states differ in length"));
    if (switchNames.size() != switchStates.size())
        return fail(Error::invalid("set switches states: names and states differ in length"));
    FollowFixes out;
    if (linkNames.empty() && switchNames.empty()) return out;
    try {
        pqxx::work tx(native(conn_));
        out.links = setStatesIn(tx, "links", linkNames, linkStates);
        out.switches = setStatesIn(tx, "switches", switchNames, switchStates);
        // One NOTIFY for both (a payload per table would be two: NOTIFY folds only equal ones).
        if (out.links > 0 || out.switches > 0)
            notifyLiveChange(tx, out.switches == 0 ? "links"
                                 : out.links == 0  ? "switches"
                                                   : "links,switches");
        tx.commit();
        return out;
    } catch (...) {
        return fail(translateException("set link and switch states"));
    }
}

Result<HostChange> ProvisioningRepo::quarantineHost(std::string_view host, std::string_view reason,
                                                    std::string_view actor) {
    try {
        pqxx::work tx(native(conn_));
        auto r =
            tx.exec_params("SELECT state FROM hosts WHERE name = $1 FOR UPDATE", std::string(host));
        if (r.empty()) return fail(Error::notFound("no host named '" + std::string(host) + "'"));
        auto from = prov::parseHostState(col(r[0][0]));
        if (!from)
            return fail(Error::conflict("host " + std::string(host) + " is in unknown state '" +
                                        col(r[0][0]) + "'"));
        if (auto ok = prov::checkTransition(*from, prov::HostState::Quarantined,
                                            "host " + std::string(host));
            !ok)
            return fail(ok.error());
        tx.exec_params(
            "UPDATE hosts SET state = 'quarantined', updated_at = now(), "
            "resource_version = resource_version + 1 WHERE name = $1",
            std::string(host));
        tx.exec_params(
            "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
            "reason, executor, idempotency_key) VALUES ($1, 'host', $2, $3, 'quarantined', $4, "
            "'operator', 'host:' || $2 || ':op:' || gen_random_uuid())",
            std::string(actor), std::string(host), std::string(prov::stateName(*from)),
            reason.empty() ? "quarantined by " + std::string(actor) : std::string(reason));
        auto opened = openQuarantineEvents(
            tx, {std::string(host)}, {""}, {""},
            {reason.empty() ? std::string() : "operator: " + std::string(reason)},
            std::string(actor));
        notifyLiveChange(tx, "host");
        tx.commit();
        HostChange hc{std::string(host), *from, prov::HostState::Quarantined};
        if (!opened.empty()) hc.openedEvent = opened.front();
        return hc;
    } catch (...) {
        return fail(translateException("host quarantine"));
    }
}

}  // namespace loom::db
