// The HTTP router of loomd: every endpoint registers here, in its own backend/src/api/api_*.cpp file.
//
// A route is a method, a path pattern with `{name}` captures, the least role a token needs,
// and a handler. Handlers run on the database thread pool (never on an I/O thread), so they
// may block on libpq through the db module's repositories using `req.db()`. They return a
// Response or a loom::Error; the server turns errors into the one error body of docs/api.md
// (`{"error":{"code","message","path","line"}}`) and renders `Response::json` as JSON or as
// YAML (when the client sent `Accept: application/yaml`), so no handler deals with either.
// Anything a handler throws becomes a logged 500; it never takes the server down.
//
//   void registerMyRoutes(Router& r, Services& s) {
//       r.add("GET", "/api/v1/widgets/{name}", Role::Viewer, [&s](const Request& req)
//               -> Result<Response> {
//           auto w = loadWidget(req.db(), req.param("name"));   // db/ repository
//           if (!w) return fail(w.error());
//           return Response::ofJson({{"name", w->name}});
//       });
//   }
//
// Route modules of other engineers (api_telemetry.cpp, api_provisioning.cpp) define the
// register functions declared at the bottom; `loomd serve` calls each of them once at start.
#pragma once

#include "loom/db/database.hpp"
#include "loom/inventory/error.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::backend {

class Services;

// Token roles, ordered: a role includes every role below it.
enum class Role : std::uint8_t { None = 0, Viewer = 1, Operator = 2, Admin = 3 };
std::string_view roleName(Role r);                    // "none", "viewer", "operator", "admin"
std::optional<Role> parseRole(std::string_view s);    // the three token roles only

// Who sent the request: the token's name and role (Role::None and an empty name when the
// request carried no valid token; only routes with Role::None run then).
struct Principal {
    std::string name;
    Role role = Role::None;
};

using Pairs = std::vector<std::pair<std::string, std::string>>;

// What a handler sees. The views point into the server's request buffers and stay valid for
// the duration of the handler call.
struct Request {
    std::string_view method;       // "GET", "POST", ...
    std::string_view target;       // as sent: "/api/v1/racks?zone=z1&limit=10"
    std::string_view path;         // percent-decoded path without the query: "/api/v1/racks"
    std::string_view route;        // the pattern that matched: "/api/v1/{kind}/{name}"
    std::string_view body;
    Pairs captures;                // {name} values from the pattern, percent-decoded
    Pairs query;                   // query parameters in order, percent-decoded
    Pairs headers;                 // header names lower-cased
    Principal principal;
    db::Connection* connection = nullptr;  // this pool thread's connection; null if none

    // The `{name}` capture; empty if the pattern has none of that name.
    std::string_view param(std::string_view name) const;
    // The first value of a query parameter.
    std::optional<std::string_view> queryParam(std::string_view name) const;
    // A header by (case-insensitive) name.
    std::optional<std::string_view> header(std::string_view name) const;
    // True when Content-Type says YAML (application/yaml, application/x-yaml, text/yaml).
    bool bodyIsYaml() const;
    // The body parsed as JSON, or as YAML when bodyIsYaml(); errors name the line
    // (and for YAML the path) of the problem. An empty body is an error.
    Result<nlohmann::json> jsonBody() const;
    // The database connection of this pool thread (loom/db/database.hpp; repositories take
    // it). Throws if the route declared needsDb = false (a programming error, a 500).
    db::Connection& db() const;
};

struct Response {
    int status = 200;
    // When set, rendered centrally as JSON or YAML (Accept negotiation); `body` is ignored.
    std::optional<nlohmann::json> json;
    // Otherwise sent as is with this content type (Prometheus text, FRR configs, ...).
    std::string body;
    std::string contentType = "text/plain; charset=utf-8";
    Pairs headers;  // extra headers, e.g. {"ETag", "\"42\""}

    static Response ofJson(nlohmann::json value, int status = 200) {
        Response r;
        r.status = status;
        r.json = std::move(value);
        return r;
    }
    static Response text(std::string body, std::string contentType = "text/plain; charset=utf-8",
                         int status = 200) {
        Response r;
        r.status = status;
        r.body = std::move(body);
        r.contentType = std::move(contentType);
        return r;
    }
};

using Handler = std::function<Result<Response>(const Request&)>;

inline constexpr std::size_t kDefaultBodyLimit = std::size_t{8} << 20;  // 8 MiB
inline constexpr std::size_t kApplyBodyLimit = std::size_t{64} << 20;   // 64 MiB
// The largest body any route may take (POST /api/v1/telemetry, docs/api.md); Router::add
// refuses a route asking for more. The server's header-time ceiling is this value.
inline constexpr std::size_t kMaxBodyLimit = std::size_t{256} << 20;  // 256 MiB

struct RouteOptions {
    std::size_t bodyLimit = kDefaultBodyLimit;  // larger bodies get 413 naming this limit
    bool needsDb = true;  // false: runs even when the database is down (health, metrics)
    // Heavy routes (apply, impact): at most this many requests at once across the server,
    // body reading included; beyond that 503 with Retry-After before the body is read.
    // 0 = unbounded. Bounds what a burst of big bodies can cost in memory.
    int maxConcurrent = 0;
};

struct Route {
    std::string method;
    std::string pattern;
    Role role = Role::Viewer;
    Handler handler;
    RouteOptions options;
    std::vector<std::string> segments;  // pattern split on '/'; "{x}" marks a capture
    std::shared_ptr<std::atomic<int>> inFlight = std::make_shared<std::atomic<int>>(0);
};

class Router {
public:
    // Registers a route. Patterns start with '/'; a segment "{name}" captures one path
    // segment. Literal segments win over captures, so "/api/v1/racks/{name}/advance" and
    // "/api/v1/racks/{name}" coexist. Registering the same method and pattern twice throws.
    void add(std::string method, std::string pattern, Role role, Handler handler,
             RouteOptions options = {});

    struct Match {
        const Route* route = nullptr;  // null: no route for this method and path
        Pairs captures;
        bool pathKnown = false;        // the path matched some route of another method (405)
        std::string allowed;           // "GET, PATCH" for the Allow header of a 405
    };
    // `rawPath`: the path as sent, still percent-encoded. It is split at '/' first and each
    // segment decoded after, so a name holding '/' (ports, links: "z1-r005-rtsw/p20") is one
    // segment when sent as "z1-r005-rtsw%2Fp20".
    Match match(std::string_view method, std::string_view rawPath) const;

    const std::vector<Route>& routes() const { return routes_; }

private:
    std::vector<Route> routes_;
};

// Route modules. Each is defined in its own backend/src/api/api_*.cpp.
void registerInventoryRoutes(Router& router, Services& services);     // api_inventory.cpp
void registerFabricRoutes(Router& router, Services& services);        // api_fabric.cpp
void registerAuthRoutes(Router& router, Services& services);          // api_auth.cpp
void registerTelemetryRoutes(Router& router, Services& services);     // api_telemetry.cpp
void registerProvisioningRoutes(Router& router, Services& services);  // api_provisioning.cpp
void registerJobRoutes(Router& router, Services& services);           // api_jobs.cpp
// The web dashboard (GET /, GET /assets/{file}) and GET /api/v1/whoami (api_web.cpp); every
// Server registers them itself.
void registerWebRoutes(Router& router);
struct TargetTemplates;                                               // scrape_targets.hpp
// GET /api/v1/sd/prometheus from loomd.yaml's telemetry.targets (api_sd.cpp).
void registerSdRoutes(Router& router, Services& services, TargetTemplates templates);
class Scraper;  // scraper.hpp
// GET /api/v1/telemetry/targets: the scraper's targets with up, duration, errors (api_sd.cpp).
void registerTargetRoutes(Router& router, const Scraper& scraper);

}  // namespace loom::backend
