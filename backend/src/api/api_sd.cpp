// GET /api/v1/telemetry/targets: every exporter target loomd's own scraper pulls (scraper.hpp),
// one by one with its kind, entity, up, last duration and last error.
//
// Prometheus HTTP service discovery: GET /api/v1/sd/prometheus?exporter=dcgm|node|snmp lists
// the exporters of every host (or switch) whose rack is rolled in, from loomd.yaml's
// `telemetry.targets` templates and the live inventory (scrape_targets.hpp), so a site's own
// Prometheus scrapes exactly what Loom knows, with its rack, zone, role and state labels.
#include "loom/backend/router.hpp"
#include "loom/backend/scrape_targets.hpp"
#include "loom/backend/scraper.hpp"
#include "loom/backend/services.hpp"
#include "loom/inventory/model.hpp"

namespace loom::backend {

namespace {

Result<Response> getPrometheusSd(Services& services, const TargetTemplates& templates,
                                 const Request& req) {
    auto name = req.queryParam("exporter");
    if (!name || name->empty())
        return fail(Error::invalid("required: exporter=dcgm|node|snmp", "exporter"));
    auto kind = parseExporterKind(*name);
    if (!kind)
        return fail(Error::invalid(
            "must be dcgm, node or snmp, not '" + std::string(name->substr(0, 64)) + "'",
            "exporter"));
    if (templates.of(*kind).empty())
        return fail(Error::notFound("loomd.yaml has no telemetry.targets." +
                                    std::string(exporterKindName(*kind)) + " template"));
    auto inv = services.inventory();
    if (!inv)
        return fail(Error::unavailable("loomd is still loading its live state; retry shortly"));
    return Response::ofJson(prometheusSd(expandTargets(templates, *inv, *kind), inv->cluster));
}

// ?kind=dcgm|node|snmp|static&up=true|false&entity=NAME
Result<Response> getTargets(const Scraper& scraper, const Request& req) {
    auto kind = req.queryParam("kind");
    if (kind && !kind->empty() && *kind != "static" && !parseExporterKind(*kind))
        return fail(Error::invalid(
            "must be dcgm, node, snmp or static, not '" + std::string(kind->substr(0, 64)) + "'",
            "kind"));
    auto up = req.queryParam("up");
    if (up && *up != "true" && *up != "false")
        return fail(Error::invalid("must be true or false", "up"));
    auto entity = req.queryParam("entity");
    auto items = nlohmann::json::array();
    std::size_t total = 0, upCount = 0;
    for (const auto& t : scraper.status([&](const ScrapeTargetStatus& t) {
             return (!kind || kind->empty() || t.kind == *kind) &&
                    (!up || (*up == "true") == t.up) &&
                    (!entity || entity->empty() || t.entity == *entity);
         })) {
        ++total;
        upCount += t.up ? 1 : 0;
        items.push_back({{"kind", t.kind},
                         {"entity", t.entity},
                         {"url", t.url},
                         {"up", t.up},
                         {"lastScrapeMs", t.lastScrapeMs},
                         {"durationSeconds", t.seconds},
                         {"samples", t.samples},
                         {"scrapes", t.scrapes},
                         {"errors", t.errors},
                         {"lastError", t.lastError}});
    }
    return Response::ofJson({{"items", std::move(items)}, {"total", total}, {"up", upCount}});
}

}  // namespace

void registerTargetRoutes(Router& router, const Scraper& scraper) {
    router.add(
        "GET", "/api/v1/telemetry/targets", Role::Viewer,
        [&scraper](const Request& req) { return getTargets(scraper, req); },
        RouteOptions{.needsDb = false});
}

void registerSdRoutes(Router& router, Services& services, TargetTemplates templates) {
    router.add(
        "GET", "/api/v1/sd/prometheus", Role::Viewer,
        [&services, templates = std::move(templates)](const Request& req) {
            return getPrometheusSd(services, templates, req);
        },
        RouteOptions{.needsDb = false});
}

}  // namespace loom::backend
