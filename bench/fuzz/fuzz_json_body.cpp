// Request bodies through the router, without the network: the input is "METHOD TARGET\n"
// followed by a body; the first byte picks JSON or YAML. Router::match picks the route, the
// handler parses the body (Request::jsonBody: JSON or YAML with node, depth and UTF-8
// limits) and the response is rendered as JSON and as YAML, as the server does.
#include "http_target.hpp"
#include "loom/backend/router.hpp"
#include "loom/client/yaml_json.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

using namespace loom;
using namespace loom::backend;

Router& router() {
    static Router r = [] {
        Router rt;
        // The route shapes loomd registers (patterns with captures, literal segments).
        auto echo = [](const Request& req) -> Result<Response> {
            auto body = req.jsonBody();
            if (!body) return fail(body.error());
            nlohmann::json out{{"route", std::string(req.route)}, {"body", *body}};
            for (auto& [k, v] : req.captures) out["captures"][k] = v;
            return Response::ofJson(std::move(out));
        };
        for (const char* p : {"/api/v1/fabric/impact", "/api/v1/tokens", "/api/v1/apply",
                              "/api/v1/phaseplans", "/api/v1/racks/{name}/{action}",
                              "/api/v1/hosts/{name}/quarantine", "/api/v1/phases/{name}/{op}",
                              "/api/v1/telemetry"})
            rt.add("POST", p, Role::Viewer, echo);
        for (const char* p : {"/api/v1/racks/{name}", "/api/v1/hosts/{name}", "/api/v1/gpus/{name}"})
            rt.add("PATCH", p, Role::Viewer, echo);
        return rt;
    }();
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
    bool yaml = data[0] & 1;
    auto nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    std::string_view body = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    auto sp = line.find(' ');
    std::string method(line.substr(0, sp));
    std::string_view target = sp == std::string_view::npos ? "/" : line.substr(sp + 1);
    auto [path, query] = splitTarget(target);
    if (checkTarget(path, query)) return 0;
    auto m = router().match(method, target.substr(0, target.find('?')));
    if (!m.route) return 0;
    Request req;
    req.method = method;
    req.target = target;
    req.path = path;
    req.route = m.route->pattern;
    req.body = body;
    req.captures = std::move(m.captures);
    req.query = std::move(query);
    if (yaml) req.headers.emplace_back("content-type", "application/yaml");
    auto res = m.route->handler(req);
    if (res && res->json) {
        (void)res->json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        (void)loom::client::jsonToYaml(*res->json);
    } else if (!res) {
        nlohmann::json e{{"message", res.error().message}, {"path", res.error().path}};
        (void)e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    return 0;
}
