// Phased provisioning over HTTP (docs/api.md, "Provisioning"). The reconciler loop is not
// started here: `loomd serve` owns it (serve_command.cpp), with the executor chosen by
// executorSettings() (provisioning_service.hpp), so registering these routes starts nothing.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "loom/backend/provisioning_service.hpp"
#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/inventory/input_guard.hpp"
#include "loom/provisioning/executor.hpp"
#include "loom/provisioning/reconciler.hpp"

namespace loom::backend {
namespace prov = loom::provisioning;
using nlohmann::json;

namespace {

// The optional body of a rack action or a quarantine: nothing, or {"reason": "..."}. Checked
// whole before anything changes: malformed JSON/YAML, invalid UTF-8, `null`, another type, an
// unknown field or a reason that is not a string (or is too long) is a 400 naming the place.
constexpr std::size_t kMaxReasonChars = 1000;

Result<std::string> bodyReason(const Request& req) {
    if (req.body.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::string();
    auto j = req.jsonBody();
    if (!j) return fail(j.error());
    if (!j->is_object())
        return fail(Error::invalid("the body must be an object like {\"reason\": \"...\"}, not " +
                                   std::string(j->type_name())));
    std::string reason;
    for (auto it = j->begin(); it != j->end(); ++it) {
        if (it.key() != "reason")
            return fail(
                Error::invalid("unknown field '" + it.key() + "'; expected reason", it.key()));
        if (it->is_null()) continue;
        if (!it->is_string()) return fail(Error::invalid("must be a string", "reason"));
        reason = it->get<std::string>();
        // "\u0000" is valid JSON, but PostgreSQL text cannot hold it.
        if (auto ok = checkText(reason, "the reason", "reason"); !ok) return fail(ok.error());
        if (reason.size() > kMaxReasonChars)
            return fail(Error::invalid(
                "must be at most " + std::to_string(kMaxReasonChars) + " characters", "reason"));
    }
    return reason;
}

json phaseJson(const db::ProvisioningPhase& p) {
    return {{"name", p.name},
            {"ordinal", p.ordinal},
            {"status", prov::phaseStatusName(p.view.status)},
            {"message", p.message},
            {"startedAt", p.startedAt.empty() ? json(nullptr) : json(p.startedAt)},
            {"finishedAt", p.finishedAt.empty() ? json(nullptr) : json(p.finishedAt)}};
}

Result<Response> listPhases(const Request& req) {
    db::ProvisioningRepo repo(req.db());
    auto st = repo.load();
    if (!st) return fail(st.error());
    json out{{"plan", st->planName.empty() ? json(nullptr) : json(st->planName)},
             {"phases", json::array()}};
    if (st->planName.empty()) return Response::ofJson(out);
    auto plan = prov::parsePhasePlan(st->planDocument);
    if (!plan) return fail(plan.error());
    prov::State s;
    for (const auto& r : st->racks) s.racks.push_back({r.name, r.phase, r.order, r.state});
    prov::Reconciler rec(*plan);
    for (const auto& p : st->phases) {
        auto j = phaseJson(p);
        const auto pr = rec.progress(s, p.ordinal);
        j["progress"] = {{"total", pr.total},
                         {"inService", pr.inService},
                         {"inFlight", pr.inFlight},
                         {"notStarted", pr.notStarted},
                         {"failed", pr.failed},
                         {"drained", pr.drained},
                         {"inServicePercent", pr.inServicePercent}};
        if (p.ordinal < static_cast<int>(plan->phases.size())) {
            const auto& ph = plan->phases[p.ordinal];
            j["concurrency"] = ph.concurrency;
            j["canary"] = ph.canary;
            j["successThreshold"] = ph.successThreshold;
        }
        json racks = json::array();
        for (const auto& r : st->racks)
            if (r.phase == p.ordinal)
                racks.push_back({{"name", r.name},
                                 {"state", prov::stateName(r.state)},
                                 {"attempts", r.attempts},
                                 {"reason", r.reason}});
        j["racks"] = std::move(racks);
        out["phases"].push_back(std::move(j));
    }
    return Response::ofJson(out);
}

}  // namespace

void registerProvisioningRoutes(Router& router, Services& services) {
    router.add("POST", "/api/v1/phaseplans", Role::Admin, [&services](const Request& req) -> Result<Response> {
        if (req.body.empty()) return fail(Error::invalid("empty body: send a PhasePlan document"));
        // JSON is YAML too: one parser, one set of path/line errors for both.
        const std::string doc(req.body);
        auto plan = prov::parsePhasePlan(doc);
        if (!plan) return fail(plan.error());
        db::ProvisioningRepo repo(req.db());
        auto r = repo.applyPlan(*plan, doc, req.principal.name);
        if (!r) return fail(r.error());
        services.publish("provisioning", {{"type", "phaseplan"}, {"plan", plan->name}});
        return Response::ofJson({{"name", plan->name},
                                 {"phases", r->phases},
                                 {"racksAssigned", r->racksAssigned},
                                 {"replaced", r->replaced}},
                                201);
    });

    router.add("GET", "/api/v1/phases", Role::Viewer, listPhases);

    router.add("POST", "/api/v1/phases/{name}/{op}", Role::Admin, [&services](const Request& req) -> Result<Response> {
        const std::string op(req.param("op"));
        if (op != "start" && op != "pause" && op != "resume" && op != "abort")
            return fail(Error::notFound("no phase operation '" + op + "' (start, pause, resume, abort)"));
        db::ProvisioningRepo repo(req.db());
        auto p = repo.controlPhase(req.param("name"), op, req.principal.name);
        if (!p) return fail(p.error());
        auto j = phaseJson(*p);
        services.publish("provisioning", {{"type", "phase"}, {"phase", j}});
        return Response::ofJson(j);
    });

    router.add("POST", "/api/v1/racks/{name}/{action}", Role::Operator, [&services](const Request& req) -> Result<Response> {
        const std::string action(req.param("action"));
        const std::string rack(req.param("name"));
        db::ProvisioningRepo repo(req.db());
        if (action == "lldp") {
            // {"neighbours": [{"port": "z1-r001-rtsw/p1", "peer": "z1-r001-h0-nic0/p1"}, ...]}
            auto body = req.jsonBody();
            if (!body) return fail(body.error());
            auto it = body->find("neighbours");
            if (!body->is_object() || it == body->end() || !it->is_array())
                return fail(Error::invalid("must be a list of {port, peer}", "neighbours"));
            if (it->size() > 10'000)
                return fail(Error::invalid("at most 10000 neighbours per report", "neighbours"));
            std::vector<prov::ObservedNeighbour> seen;
            for (std::size_t i = 0; i < it->size(); ++i) {
                const auto& n = (*it)[i];
                const auto path = "neighbours[" + std::to_string(i) + "]";
                if (!n.is_object() || !n.contains("port") || !n["port"].is_string())
                    return fail(Error::invalid("needs a string 'port'", path));
                if (n.contains("peer") && !n["peer"].is_string() && !n["peer"].is_null())
                    return fail(Error::invalid("'peer' must be a string", path + ".peer"));
                seen.push_back({n["port"].get<std::string>(),
                                n.contains("peer") && n["peer"].is_string() ? n["peer"].get<std::string>()
                                                                            : std::string()});
            }
            auto r = repo.recordLldp(rack, seen);
            if (!r) return fail(r.error());
            return Response::ofJson({{"rack", rack}, {"neighbours", *r}});
        }
        if (action != "advance" && action != "fail" && action != "drain" && action != "repair")
            return fail(Error::notFound("no rack action '" + action + "' (advance, fail, drain, repair, lldp)"));
        auto reason = bodyReason(req);
        if (!reason) return fail(reason.error());
        // The rack's own cables change state with it, in the same transaction; the links that
        // serve its zone follow from the leader's live-state sync (link_service.hpp).
        auto r =
            repo.rackAction(rack, action, *reason, req.principal.name, services.linksOfRack(rack));
        if (!r) return fail(r.error());
        services.inventoryChanged(Services::Change::States);
        json msg{{"type", "provisioning"},
                 {"rack", r->rack},
                 {"from", prov::stateName(r->from)},
                 {"to", prov::stateName(r->to)},
                 {"actor", req.principal.name}};
        services.publish("provisioning", msg);
        return Response::ofJson({{"rack", r->rack},
                                 {"from", prov::stateName(r->from)},
                                 {"to", prov::stateName(r->to)}});
    });

    router.add("POST", "/api/v1/hosts/{name}/quarantine", Role::Operator,
               [&services](const Request& req) -> Result<Response> {
                   auto reason = bodyReason(req);
                   if (!reason) return fail(reason.error());
                   db::ProvisioningRepo repo(req.db());
                   auto r = repo.quarantineHost(req.param("name"), *reason, req.principal.name);
                   if (!r) return fail(r.error());
                   services.inventoryChanged(Services::Change::States);
                   services.publish("provisioning", {{"type", "provisioning"},
                                                     {"host", r->host},
                                                     {"from", prov::stateName(r->from)},
                                                     {"to", prov::stateName(r->to)}});
                   // Its host_quarantined event, as stored, for the event lists and counters.
                   if (r->openedEvent != 0)
                       if (auto rows = db::getEvents(req.db(), {r->openedEvent}))
                           for (const auto& e : *rows)
                               services.publish("events",
                                                {{"type", "event"}, {"event", eventJson(e)}});
                   return Response::ofJson({{"host", r->host},
                                            {"from", prov::stateName(r->from)},
                                            {"to", prov::stateName(r->to)}});
               });

    router.add("GET", "/api/v1/provisioning/audit", Role::Viewer, [](const Request& req) -> Result<Response> {
        db::ProvisioningRepo repo(req.db());
        std::int64_t after = 0;
        int limit = 1000;
        if (auto a = req.queryParam("after")) after = std::atoll(std::string(*a).c_str());
        if (auto l = req.queryParam("limit")) limit = std::atoi(std::string(*l).c_str());
        auto rows = repo.audit(req.queryParam("entity").value_or(""), std::clamp(limit, 1, 5000), after);
        if (!rows) return fail(rows.error());
        json items = json::array();
        for (const auto& a : *rows)
            items.push_back({{"id", a.id}, {"at", a.at}, {"actor", a.actor}, {"kind", a.entityKind},
                             {"entity", a.entity}, {"from", a.from}, {"to", a.to},
                             {"reason", a.reason}, {"executor", a.executor}, {"output", a.output},
                             {"phase", a.phase}, {"key", a.key}});
        return Response::ofJson({{"items", items}});
    });
}

}  // namespace loom::backend
