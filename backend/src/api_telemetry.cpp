// Telemetry endpoints: POST /api/v1/telemetry (Prometheus text into the hub), GET
// /api/v1/events (stored failure events, filtered, keyset-paginated) and GET
// /api/v1/telemetry/rollups (one-minute history per rack or switch).
#include <charconv>
#include <chrono>

#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/backend/telemetry_hub.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/event_repo.hpp"

namespace loom::backend {

namespace {

// A full 24k-cluster scrape in one body is ~115 MB; the parser's own limit is 512 MiB.
constexpr std::size_t kTelemetryBodyLimit = std::size_t{256} << 20;

Result<std::optional<std::int64_t>> timeParam(const Request& req, std::string_view name) {
    auto v = req.queryParam(name);
    if (!v || v->empty()) return std::optional<std::int64_t>{};
    auto ms = db::parseIsoTimeMs(*v);
    if (!ms)
        return fail(Error::invalid("must be an ISO 8601 time (2026-11-22T08:00:00Z) or epoch "
                                   "milliseconds, not '" + std::string(v->substr(0, 64)) + "'",
                                   std::string(name)));
    return std::optional<std::int64_t>(*ms);
}

Result<std::optional<std::int64_t>> intParam(const Request& req, std::string_view name,
                                             std::int64_t min, std::int64_t max) {
    auto v = req.queryParam(name);
    if (!v || v->empty()) return std::optional<std::int64_t>{};
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc() || p != v->data() + v->size() || x < min || x > max)
        return fail(Error::invalid("must be an integer from " + std::to_string(min) + " to " +
                                       std::to_string(max),
                                   std::string(name)));
    return std::optional<std::int64_t>(x);
}

std::optional<std::string> strParam(const Request& req, std::string_view name) {
    auto v = req.queryParam(name);
    if (!v || v->empty()) return std::nullopt;
    return std::string(*v);
}

Result<Response> postTelemetry(Services& services, const Request& req) {
    TelemetryHub* hub = services.hub();
    if (!hub) return fail(Error::unavailable("the telemetry hub is not running"));
    auto ct = req.header("content-type");
    if (ct && !ct->empty() && ct->rfind("text/plain", 0) != 0 &&
        ct->rfind("application/openmetrics-text", 0) != 0 && ct->rfind("text/", 0) != 0)
        return fail(Error::invalid("Content-Type must be text/plain (Prometheus text exposition "
                                   "format 0.0.4), not '" + std::string(ct->substr(0, 64)) + "'",
                                   "Content-Type"));
    auto r = hub->ingestText(req.body);
    if (!r) {
        Error e = r.error();
        if (e.path.empty()) e.path = "body";
        return fail(std::move(e));
    }
    return Response::ofJson(r->toJson());
}

Result<Response> getEvents(const Request& req) {
    db::EventFilter f;
    f.severity = strParam(req, "severity");
    if (f.severity && *f.severity != "info" && *f.severity != "warning" && *f.severity != "critical")
        return fail(Error::invalid("must be info, warning or critical", "severity"));
    f.kind = strParam(req, "kind");
    f.location = strParam(req, "location");
    f.rack = strParam(req, "rack");
    f.zone = strParam(req, "zone");
    auto since = timeParam(req, "since");
    if (!since) return fail(since.error());
    auto until = timeParam(req, "until");
    if (!until) return fail(until.error());
    f.sinceMs = *since;
    f.untilMs = *until;
    if (auto open = req.queryParam("open"); open && !open->empty()) {
        if (*open == "true" || *open == "1") f.open = true;
        else if (*open == "false" || *open == "0") f.open = false;
        else return fail(Error::invalid("must be true or false", "open"));
    }
    auto limit = intParam(req, "limit", 1, 5000);
    if (!limit) return fail(limit.error());
    if (*limit) f.limit = static_cast<int>(**limit);
    auto cursor = intParam(req, "cursor", 1, INT64_MAX);
    if (!cursor) return fail(cursor.error());
    f.cursor = *cursor;
    auto page = db::listEvents(req.db(), f);
    if (!page) return fail(page.error());
    nlohmann::json items = nlohmann::json::array();
    for (const auto& e : page->items) items.push_back(eventJson(e));
    nlohmann::json out = {{"items", std::move(items)}};
    if (page->nextCursor) out["nextCursor"] = std::to_string(*page->nextCursor);
    return Response::ofJson(std::move(out));
}

Result<Response> getRollups(const Request& req) {
    auto scope = strParam(req, "scope").value_or("rack");
    if (scope != "rack" && scope != "switch") return fail(Error::invalid("must be rack or switch", "scope"));
    auto name = strParam(req, "name").value_or("");
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    auto since = timeParam(req, "since");
    if (!since) return fail(since.error());
    auto until = timeParam(req, "until");
    if (!until) return fail(until.error());
    std::int64_t s = since->value_or(now - 3600000), u = until->value_or(now + 60000);
    auto rows = db::listRollups(req.db(), scope, name, s, u);
    if (!rows) return fail(rows.error());
    nlohmann::json items = nlohmann::json::array();
    auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    for (const auto& r : *rows) {
        nlohmann::json j = {{"minute", db::isoTimeMs(r.minuteMs)}, {"scope", r.scope}, {"name", r.name},
                            {"utilAvg", opt(r.utilAvg)}, {"utilMax", opt(r.utilMax)}};
        if (r.scope == "rack") {
            j["tempAvg"] = opt(r.tempAvg);
            j["tempMax"] = opt(r.tempMax);
            j["powerAvgW"] = opt(r.powerAvg);
            j["gpusReporting"] = r.gpusReporting;
            j["gpusUnhealthy"] = r.gpusUnhealthy;
        } else {
            j["errors"] = r.errors;
            j["discards"] = r.discards;
            j["pfcPause"] = r.pfcPause;
            j["portsDown"] = r.portsDown;
        }
        items.push_back(std::move(j));
    }
    return Response::ofJson({{"items", std::move(items)}});
}

}  // namespace

void registerTelemetryRoutes(Router& router, Services& services) {
    router.add(
        "POST", "/api/v1/telemetry", Role::Operator,
        [&services](const Request& req) { return postTelemetry(services, req); },
        RouteOptions{.bodyLimit = kTelemetryBodyLimit, .needsDb = false});
    router.add("GET", "/api/v1/events", Role::Viewer, [](const Request& req) { return getEvents(req); });
    router.add("GET", "/api/v1/telemetry/rollups", Role::Viewer,
               [](const Request& req) { return getRollups(req); });
}

}  // namespace loom::backend
