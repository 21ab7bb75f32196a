// Prometheus HTTP service discovery: GET /api/v1/sd/prometheus?exporter=dcgm|node|snmp lists
// the exporters of every host (or switch) whose rack is rolled in, from loomd.yaml's
// `telemetry.targets` templates and the live inventory (scrape_targets.hpp), so a site's own
// Prometheus scrapes exactly what Loom knows, with its rack, zone, role and state labels.
#include "loom/backend/router.hpp"
#include "loom/backend/scrape_targets.hpp"
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

}  // namespace

void registerSdRoutes(Router& router, Services& services, TargetTemplates templates) {
    router.add(
        "GET", "/api/v1/sd/prometheus", Role::Viewer,
        [&services, templates = std::move(templates)](const Request& req) {
            return getPrometheusSd(services, templates, req);
        },
        RouteOptions{.needsDb = false});
}

}  // namespace loom::backend
