// The web dashboard, served by loomd itself on its own port and TLS: GET / (index.html) and
// GET /assets/<name>.<hash>.<ext>, compiled into the binary (web_assets.hpp). Public: the page
// holds no data; everything it shows comes from the API with the token the user signs in with.
// Also GET /api/v1/whoami, which the page asks to learn its token's name and role (and to tell a
// 401 from a network failure after a WebSocket handshake failed, which a browser cannot read).
#include <map>
#include <string>

#include "loom/backend/router.hpp"
#include "server/gzip.hpp"
#include "web_assets.hpp"

namespace loom::backend {

namespace {

// No inline script or style anywhere: the page's code is its own files ('self'), data is
// fetched from the same origin (connect-src 'self' covers ws:/wss: to it), and nothing may
// frame it, post forms elsewhere, or change the base URL.
constexpr const char* kCsp =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'none'";

struct Served {
    std::string body;
    std::string gzipped;  // empty when gzip would not make it smaller
    std::string contentType;
    std::string etag;
    bool immutable = false;
};

// Built once, on first use: compressed at the highest level since it is done once per process.
const std::map<std::string, Served, std::less<>>& served() {
    static const auto table = [] {
        std::map<std::string, Served, std::less<>> t;
        for (const auto& a : webAssets()) {
            Served s;
            s.body.assign(reinterpret_cast<const char*>(a.data), a.size);
            s.contentType = a.contentType;
            s.immutable = a.immutable;
            s.etag = "\"" + std::string(webAssetsHash()) + "\"";
            if (auto z = gzip(s.body, 9); !z.empty() && z.size() < s.body.size())
                s.gzipped = std::move(z);
            t.emplace(std::string(a.name), std::move(s));
        }
        return t;
    }();
    return table;
}

Result<Response> serve(const Request& req, std::string_view name) {
    const auto& t = served();
    auto it = t.find(name);
    if (it == t.end())
        return fail(Error::notFound("no dashboard asset named '" + std::string(name) + "'"));
    const Served& s = it->second;
    Response r;
    r.contentType = s.contentType;
    r.headers = {
        {"Cache-Control", s.immutable ? "public, max-age=31536000, immutable" : "no-cache"},
        {"ETag", s.etag},
        {"Vary", "Accept-Encoding"},
        {"Content-Security-Policy", kCsp},
        {"X-Content-Type-Options", "nosniff"},
        {"Referrer-Policy", "no-referrer"},
        {"X-Frame-Options", "DENY"},
    };
    if (auto inm = req.header("if-none-match");
        inm && inm->find(s.etag) != std::string_view::npos) {
        r.status = 304;
        return r;
    }
    if (auto ae = req.header("accept-encoding"); !s.gzipped.empty() && ae && acceptsGzip(*ae)) {
        r.body = s.gzipped;
        r.headers.emplace_back("Content-Encoding", "gzip");
    } else {
        r.body = s.body;
    }
    return r;
}

}  // namespace

void registerWebRoutes(Router& router) {
    const RouteOptions noDb{.needsDb = false};
    router.add(
        "GET", "/", Role::None,
        [](const Request& req) -> Result<Response> { return serve(req, "index.html"); }, noDb);
    router.add(
        "GET", "/assets/{file}", Role::None,
        [](const Request& req) -> Result<Response> { return serve(req, req.param("file")); }, noDb);
    router.add("GET", "/api/v1/whoami", Role::Viewer, [](const Request& req) -> Result<Response> {
        return Response::ofJson(
            {{"name", req.principal.name}, {"role", std::string(roleName(req.principal.role))}});
    });
}

}  // namespace loom::backend
