// Telemetry endpoints: POST /api/v1/telemetry (Prometheus text into the hub), GET
// /api/v1/events (stored failure and provisioning events, filtered, keyset-paginated),
// POST /api/v1/events/{id}/ack and /close (operators acknowledge or close an event by hand; the
// updated event is published on the "events" topic), GET /api/v1/telemetry/rollups
// (one-minute history per rack or switch from the database, per GPU or link from the hub) and GET /api/v1/telemetry/gpus/<name> (the hub's
// latest values of one GPU, for the console's detail panel).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iterator>

#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/telemetry/failures.hpp"
#include "loom/telemetry/legends.hpp"
#include "loom/telemetry/link_health_words.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "loom/telemetry/xid_catalog.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/inventory/unix_time.hpp"

namespace loom::backend {
using namespace loom::telemetry;  // the hub, layout and events this service runs

namespace {

// A full 24k-cluster scrape in one body is ~115 MB; the parser's own limit is 512 MiB.
constexpr std::size_t kTelemetryBodyLimit = kMaxBodyLimit;  // 256 MiB, as docs/api.md says
// An acknowledgement comment or a close reason.
constexpr std::size_t kEventTextLimit = 4096;

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
    // Before the live state is loaded every sample would be "unknown": refuse, do not drop.
    if (!services.liveReady())
        return fail(Error::unavailable("loomd is still loading its live state; retry shortly"));
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

// The rules' kinds and rack_transition (kEventKinds), job_degraded of the per-job view and
// straggler of the straggler finder.
// host_quarantined: burn-in or an operator quarantined a host (source provisioning).
constexpr std::string_view kJobDegraded = "job_degraded", kStraggler = "straggler",
                           kLemon = "lemon",  // issue 34 item 6
                           kHostQuarantined = "host_quarantined";

std::string knownKinds() {
    std::string s;
    for (auto k : kEventKinds) {
        if (!s.empty()) s += ", ";
        s += k;
    }
    return s + ", " + std::string(kJobDegraded) + ", " + std::string(kStraggler) + ", " +
           std::string(kLemon) + ", " + std::string(kHostQuarantined);
}

Result<std::optional<bool>> boolParam(const Request& req, std::string_view name) {
    auto v = req.queryParam(name);
    if (!v || v->empty()) return std::optional<bool>{};
    if (*v == "true" || *v == "1") return std::optional<bool>(true);
    if (*v == "false" || *v == "0") return std::optional<bool>(false);
    return fail(Error::invalid("must be true or false", std::string(name)));
}

Result<Response> getEvents(const Request& req) {
    db::EventFilter f;
    f.severity = strParam(req, "severity");
    if (f.severity && *f.severity != "info" && *f.severity != "warning" && *f.severity != "critical")
        return fail(Error::invalid("must be info, warning or critical", "severity"));
    f.kind = strParam(req, "kind");
    if (f.kind && *f.kind != kJobDegraded && *f.kind != kStraggler && *f.kind != kLemon &&
        *f.kind != kHostQuarantined &&
        std::find(std::begin(kEventKinds), std::end(kEventKinds), *f.kind) == std::end(kEventKinds))
        return fail(Error::invalid("unknown event kind '" + f.kind->substr(0, 64) +
                                       "'; known kinds: " + knownKinds(),
                                   "kind"));
    f.source = strParam(req, "source");
    if (f.source && *f.source != "telemetry" && *f.source != "provisioning" &&
        *f.source != "operator" && *f.source != "jobs")
        return fail(Error::invalid("must be telemetry, provisioning, operator or jobs", "source"));
    if (auto state = strParam(req, "state")) {
        if (*state == "open") f.open = true;
        else if (*state == "closed") f.open = false;
        else return fail(Error::invalid("must be open or closed", "state"));
    }
    auto acked = boolParam(req, "acknowledged");
    if (!acked) return fail(acked.error());
    f.acknowledged = *acked;
    f.location = strParam(req, "location");
    f.rack = strParam(req, "rack");
    f.host = strParam(req, "host");
    f.zone = strParam(req, "zone");
    auto since = timeParam(req, "since");
    if (!since) return fail(since.error());
    auto until = timeParam(req, "until");
    if (!until) return fail(until.error());
    f.sinceMs = *since;
    f.untilMs = *until;
    auto open = boolParam(req, "open");
    if (!open) return fail(open.error());
    if (*open) {
        if (f.open && *f.open != **open)
            return fail(Error::invalid("contradicts state=" + std::string(*f.open ? "open" : "closed"),
                                       "open"));
        f.open = *open;
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
    // Open events: how many match in all (the list may be one page of them), counted by the
    // same filter in the same place as a rack's or a host's openEvents (issue 39 item 2).
    if (f.open && *f.open && !f.cursor) {
        auto total = db::countEvents(req.db(), f);
        if (!total) return fail(total.error());
        out["total"] = *total;
    }
    return Response::ofJson(std::move(out));
}

// The event id of the path: a positive integer, else 400 naming the segment.
Result<std::int64_t> eventId(const Request& req) {
    auto v = req.param("id");
    std::int64_t id = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || id < 1)
        return fail(Error::invalid("event id must be a positive integer, not '" +
                                       std::string(v.substr(0, 64)) + "'",
                                   "id"));
    return id;
}

// The optional body of ack/close: {"<field>": "text"}; anything else is a 400 naming it.
Result<std::string> optionalText(const Request& req, const std::string& field) {
    bool blank = req.body.find_first_not_of(" \t\r\n") == std::string_view::npos;
    if (blank) return std::string();
    auto j = req.jsonBody();
    if (!j) return fail(j.error());
    if (!j->is_object()) return fail(Error::invalid("body must be an object {\"" + field + "\": \"...\"}", "body"));
    std::string text;
    for (auto it = j->begin(); it != j->end(); ++it) {
        if (it.key() != field)
            return fail(Error::invalid("unknown field; only \"" + field + "\" is accepted", it.key()));
        if (it->is_null()) continue;
        if (!it->is_string()) return fail(Error::invalid("must be a string", field));
        text = it->get<std::string>();
        if (text.size() > kEventTextLimit)
            return fail(Error::invalid("at most " + std::to_string(kEventTextLimit) + " bytes", field));
    }
    return text;
}

Result<Response> ackOrClose(Services& services, const Request& req, bool close) {
    auto id = eventId(req);
    if (!id) return fail(id.error());
    auto text = optionalText(req, close ? "reason" : "comment");
    if (!text) return fail(text.error());
    const std::string& actor = req.principal.name;
    auto e = close ? db::closeEventByHand(req.db(), *id, actor, *text)
                   : db::ackEvent(req.db(), *id, actor, *text);
    if (!e) return fail(e.error());
    // The detection state of this loomd forgets a hand-closed event, so recovery does not close
    // it again and the condition must clear before it can open a new one.
    if (close && e->source == "telemetry")
        if (auto* hub = services.hub()) hub->closedByHand(e->kind, e->location, e->id);
    auto j = eventJson(*e);
    services.publish("events", {{"type", "event"}, {"event", j}});
    return Response::ofJson(std::move(j));
}

// scope=gpu|link: one GPU's or link's last hour, a minute a point, from this loomd's hub (kept
// in memory, not stored: 24k GPUs and 55k links a minute would be 80k rows a minute).
Result<Response> hubHistory(Services& services, const std::string& scope, const std::string& name,
                            std::int64_t since, std::int64_t until) {
    TelemetryHub* hub = services.hub();
    if (!hub) return fail(Error::unavailable("the telemetry hub is not running"));
    if (name.empty()) return fail(Error::invalid("required for scope " + scope, "name"));
    auto layout = hub->layout();
    const bool gpu = scope == "gpu";
    const std::uint32_t i = !layout ? kNoIndex : gpu ? layout->gpuByName(name) : layout->linkByName(name);
    if (i == kNoIndex)
        return fail(Error::notFound((gpu ? "GPU '" : "link '") + name + "' is not in the live hall"));
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
    nlohmann::json items = nlohmann::json::array();
    if (gpu) {
        for (const auto& m : hub->gpuHistory(i)) {
            if (m.minuteStartMs < since - 59999 || m.minuteStartMs > until) continue;
            items.push_back({{"minute", db::isoTimeMs(m.minuteStartMs)}, {"scope", scope}, {"name", name},
                             {"utilAvg", num(m.utilAvg)}, {"utilMax", num(m.utilMax)},
                             {"tempMax", num(m.tempMax)}, {"powerAvgW", num(m.powerAvgW)},
                             {"fbUsedPct", num(m.fbUsedPct)}, {"samples", m.samples},
                             {"partial", m.partial}});
        }
    } else {
        for (const auto& m : hub->linkHistory(i)) {
            if (m.minuteStartMs < since - 59999 || m.minuteStartMs > until) continue;
            items.push_back({{"minute", db::isoTimeMs(m.minuteStartMs)}, {"scope", scope}, {"name", name},
                             {"utilAvg", num(m.utilAvg)}, {"utilMax", num(m.utilMax)},
                             {"downSamples", m.downSamples}, {"samples", m.samples},
                             {"errors", num(m.errors)}, {"partial", m.partial}});
        }
    }
    return Response::ofJson({{"items", std::move(items)}});
}

Result<Response> getRollups(Services& services, const Request& req) {
    auto scope = strParam(req, "scope").value_or("rack");
    if (scope != "rack" && scope != "switch" && scope != "gpu" && scope != "link")
        return fail(Error::invalid("must be rack, switch, gpu or link", "scope"));
    auto name = strParam(req, "name").value_or("");
    auto now = unixMs();
    auto since = timeParam(req, "since");
    if (!since) return fail(since.error());
    auto until = timeParam(req, "until");
    if (!until) return fail(until.error());
    std::int64_t s = since->value_or(now - 3600000), u = until->value_or(now + 60000);
    if (scope == "gpu" || scope == "link") return hubHistory(services, scope, name, s, u);
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

// The latest sample of one GPU's DCGM fields as the hub holds them (null: never reported).
Result<Response> getGpuTelemetry(Services& services, const Request& req) {
    TelemetryHub* hub = services.hub();
    if (!hub) return fail(Error::unavailable("the telemetry hub is not running"));
    const std::string name(req.param("name"));
    auto layout = hub->layout();
    const std::uint32_t g = layout ? layout->gpuByName(name) : kNoIndex;
    if (g == kNoIndex) return fail(Error::notFound("GPU '" + name + "' is not in the live hall"));
    auto field = [&](GpuField f) {
        const double v = hub->gpuValue(g, f);
        return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
    };
    nlohmann::json reasons;  // null: never reported
    if (const double r = hub->gpuValue(g, GpuField::ClockEventReasons); std::isfinite(r) && r >= 0) {
        const auto mask = static_cast<std::uint32_t>(r);
        reasons = {{"mask", mask},
                   {"names", clockEventReasonNames(mask)},
                   {"throttled", (mask & kThrottleAlarmMask) != 0}};
    }
    const auto job = hub->gpuJob(g);
    // The GPU's NIC cable (rail i = GPU i) and the switch port at its other end, with the link's
    // health word, so a client shows "nic3 -> z1-r001-rtsw/p4: down" without parsing names.
    nlohmann::json nic;
    const auto& links = layout->links();
    for (std::uint32_t l = 0; l < links.size(); ++l) {
        if (links[l].gpu != g) continue;
        const auto health = hub->packed(Topic::LinkHealth);
        const std::uint8_t h = l < health.size() ? health[l] : kNoData;
        const auto peer = links[l].bPort != kNoIndex ? links[l].bPort : links[l].aPort;
        nic = {{"link", links[l].name},
               {"peer", peer != kNoIndex ? nlohmann::json(layout->portName(peer)) : nlohmann::json()},
               {"health", linkHealthWord(h)}};
        break;
    }
    return Response::ofJson({{"name", name},
                             {"nicLink", std::move(nic)},
                             {"job", job.empty() ? nlohmann::json() : nlohmann::json(job)},
                             {"clockEventReasons", std::move(reasons)},
                             {"powerViolationUs", field(GpuField::PowerViolation)},
                             {"thermalViolationUs", field(GpuField::ThermalViolation)},
                             {"smActive", field(GpuField::SmActive)},
                             {"dramActive", field(GpuField::DramActive)},
                             {"pcieTxBytes", field(GpuField::PcieTxBytes)},
                             {"pcieRxBytes", field(GpuField::PcieRxBytes)},
                             {"nvlinkTxBytes", field(GpuField::NvlinkTxBytes)},
                             {"nvlinkRxBytes", field(GpuField::NvlinkRxBytes)},
                             {"util", field(GpuField::Util)},
                             {"temp", field(GpuField::Temp)},
                             {"memTemp", field(GpuField::MemTemp)},
                             {"power", field(GpuField::Power)},
                             {"fbUsedMiB", field(GpuField::FbUsed)},
                             {"fbFreeMiB", field(GpuField::FbFree)},
                             {"smClock", field(GpuField::SmClock)},
                             {"xid", field(GpuField::Xid)},
                             {"eccSbe", field(GpuField::EccSbe)},
                             {"eccDbe", field(GpuField::EccDbe)},
                             {"nvlinkCrc", field(GpuField::NvlinkCrc)},
                             {"pcieReplay", field(GpuField::PcieReplay)}});
}

// Open failures by kind, computed here once for every client (telemetry/failures.hpp): the
// web dashboard's failure counter shows these counts, its hall map marks these items (each
// names the rack and GPU it is drawn on).
Result<Response> getFailures(Services& services) {
    TelemetryHub* hub = services.hub();
    if (!hub) return fail(Error::unavailable("the telemetry hub is not running"));
    auto layout = hub->layout();
    if (!layout) return fail(Error::unavailable("the hall layout is not loaded yet"));
    const auto gpuHealth = hub->packed(Topic::GpuHealth);
    const auto linkHealth = hub->packed(Topic::LinkHealth);
    const auto open = hub->openEvents();
    const FailureSummary sum = summarizeFailures(*layout, gpuHealth, linkHealth, open);
    nlohmann::json counts = nlohmann::json::object();
    for (std::size_t k = 0; k < kFailureKindCount; ++k)
        counts[std::string(failureKindName(static_cast<FailureKind>(k)))] = sum.counts[k];
    // The list is bounded (a hall-wide outage at 98k would be ~100k items); the counts are not.
    constexpr std::size_t kMaxItems = 5000;
    const auto& racks = layout->racks();
    const auto& gpus = layout->gpuNames();
    nlohmann::json items = nlohmann::json::array();
    for (std::size_t i = 0; i < sum.items.size() && i < kMaxItems; ++i) {
        const auto& f = sum.items[i];
        nlohmann::json j{
            {"kind", failureKindName(f.kind)},
            {"name", f.name},
            {"state", f.state},
            {"failed", f.failed},
            {"rack", f.rack < racks.size() ? nlohmann::json(racks[f.rack].name) : nlohmann::json()},
            {"gpu", f.gpu < gpus.size() ? nlohmann::json(gpus[f.gpu]) : nlohmann::json()}};
        if (!f.event.empty()) j["event"] = f.event;
        items.push_back(std::move(j));
    }
    return Response::ofJson({{"layoutVersion", layout->layoutVersion()},
                             {"counts", std::move(counts)},
                             {"total", sum.total()},
                             {"items", std::move(items)},
                             {"truncated", sum.items.size() > kMaxItems}});
}

// The XID catalogue (telemetry/xid_catalog.hpp): what each code means and what to do, for
// clients that explain an XID (the web dashboard's GPU detail).
Response getXidCatalog() {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& x : kXidCatalog)
        items.push_back(
            {{"code", x.code}, {"meaning", x.meaning}, {"action", x.action}, {"hardware", x.hardware}});
    return Response::ofJson({{"items", std::move(items)}});
}

// The hall map's metric scales (telemetry/legends.hpp): ramp ends, ticks and the detection
// thresholds, and every colour of the maps, so every client's legend and colours are loomd's.
Result<Response> getLegends(Services& services) {
    TelemetryHub* hub = services.hub();
    if (!hub) return fail(Error::unavailable("the telemetry hub is not running"));
    nlohmann::json scales = nlohmann::json::object();
    for (const auto& s : legendScales(hub->detection())) {
        nlohmann::json th = nlohmann::json::array();
        for (const auto& t : s.thresholds)
            th.push_back({{"name", t.name}, {"value", t.value}, {"severity", t.severity}});
        scales[s.metric] = {{"unit", s.unit}, {"min", s.min}, {"max", s.max}, {"ticks", s.ticks}, {"thresholds", th}};
    }
    // The words of the packed link.health values, as REST's `health` of a link says them.
    nlohmann::json words = nlohmann::json::object();
    for (const int v : {0, 1, 2, 3, 4, int{kNoData}})
        words[std::to_string(v)] = linkHealthWord(static_cast<std::uint8_t>(v));
    // The colours, defined here once: both clients colour with these (docs/api.md).
    const auto c = legendColours();
    auto swatches = [](const std::vector<LegendSwatch>& v, bool withData) {
        auto a = nlohmann::json::array();
        for (const auto& w : v) {
            nlohmann::json o = {{"value", w.value}, {"name", w.name}, {"colour", w.colour}};
            if (withData) o["reportsData"] = w.reportsData;
            a.push_back(std::move(o));
        }
        return a;
    };
    nlohmann::json colours = {{"ramp", c.ramp},
                              {"health", swatches(c.health, false)},
                              {"linkHealth", swatches(c.linkHealth, false)},
                              {"rackStates", swatches(c.rackStates, true)},
                              {"marks",
                               {{"failed", c.failed},
                                {"degraded", c.degraded},
                                {"quarantined", c.quarantined},
                                {"noData", c.noData},
                                {"floor", c.floor},
                                {"background", c.background},
                                {"jobHighlight", c.jobHighlight}}}};
    return Response::ofJson({{"scales", std::move(scales)},
                             {"words", {{"link.health", words}}},
                             {"colours", std::move(colours)}});
}

// GET /api/v1/telemetry/unknown[?reason=R][&limit=N]: the names telemetry could not place or
// ignored, most recently seen first (docs/telemetry.md, "What Loom ignores").
Result<Response> getUnknown(Services& services, const Request& req) {
    TelemetryHub* hub = services.hub();
    if (!hub) return fail(Error::unavailable("the telemetry hub is not running"));
    auto limit = intParam(req, "limit", 1, 10'000);
    if (!limit) return fail(limit.error());
    const auto reason = strParam(req, "reason").value_or("");
    if (!reason.empty()) {
        bool known = false;
        std::string all;
        for (int i = 0; i < kUnknownReasonCount; ++i) {
            const auto n = unknownReasonName(static_cast<UnknownReason>(i));
            known = known || n == reason;
            all += (all.empty() ? "" : ", ") + std::string(n);
        }
        if (!known)
            return fail(Error::invalid(
                "unknown reason '" + reason.substr(0, 64) + "' (" + all + ")", "reason"));
    }
    auto items = nlohmann::json::array();
    for (const auto& u : hub->unknownNames(reason, limit->value_or(100)))
        items.push_back({{"reason", u.reason},
                         {"name", u.name},
                         {"source", u.source},
                         {"detail", u.detail},
                         {"firstSeen", db::isoTimeMs(u.firstSeenMs)},
                         {"lastSeen", db::isoTimeMs(u.lastSeenMs)},
                         {"samples", u.samples}});
    return Response::ofJson({{"items", std::move(items)}});
}

}  // namespace

void registerTelemetryRoutes(Router& router, Services& services) {
    router.add(
        "GET", "/api/v1/telemetry/unknown", Role::Viewer,
        [&services](const Request& req) { return getUnknown(services, req); },
        RouteOptions{.needsDb = false});
    router.add(
        "POST", "/api/v1/telemetry", Role::Operator,
        [&services](const Request& req) { return postTelemetry(services, req); },
        RouteOptions{.bodyLimit = kTelemetryBodyLimit, .needsDb = false});
    router.add("GET", "/api/v1/events", Role::Viewer, [](const Request& req) { return getEvents(req); });
    router.add("POST", "/api/v1/events/{id}/ack", Role::Operator,
               [&services](const Request& req) { return ackOrClose(services, req, false); });
    router.add("POST", "/api/v1/events/{id}/close", Role::Operator,
               [&services](const Request& req) { return ackOrClose(services, req, true); });
    router.add("GET", "/api/v1/telemetry/rollups", Role::Viewer,
               [&services](const Request& req) { return getRollups(services, req); });
    router.add(
        "GET", "/api/v1/failures", Role::Viewer,
        [&services](const Request&) { return getFailures(services); },
        RouteOptions{.needsDb = false});
    router.add(
        "GET", "/api/v1/legends", Role::Viewer,
        [&services](const Request&) { return getLegends(services); },
        RouteOptions{.needsDb = false});
    router.add(
        "GET", "/api/v1/catalog/xid", Role::Viewer,
        [](const Request&) -> Result<Response> { return getXidCatalog(); },
        RouteOptions{.needsDb = false});
    router.add(
        "GET", "/api/v1/telemetry/gpus/{name}", Role::Viewer,
        [&services](const Request& req) { return getGpuTelemetry(services, req); },
        RouteOptions{.needsDb = false});
}

}  // namespace loom::backend
