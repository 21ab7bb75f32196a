// The web dashboard, served by loomd itself on its own port and TLS: GET / (index.html) and
// GET /assets/<name>.<hash>.<ext>, compiled into the binary (web_assets.hpp). Public: the page
// holds no data; everything it shows comes from the API with the token the user signs in with.
// Also GET /api/v1/whoami, which the page asks to learn its token's name and role (and to tell a
// 401 from a network failure after a WebSocket handshake failed, which a browser cannot read).
#include <zlib.h>

#include <map>
#include <string>

#include "loom/backend/router.hpp"
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

std::string gzip(std::string_view in) {
    z_stream z{};
    // windowBits 15 + 16: a gzip wrapper (what Content-Encoding: gzip means), not zlib's.
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) return {};
    std::string out(deflateBound(&z, uLong(in.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = uInt(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return rc == Z_STREAM_END ? out : std::string{};
}

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
            if (auto z = gzip(s.body); !z.empty() && z.size() < s.body.size())
                s.gzipped = std::move(z);
            t.emplace(std::string(a.name), std::move(s));
        }
        return t;
    }();
    return table;
}

// True when Accept-Encoding lists gzip without refusing it (q=0).
bool acceptsGzip(const Request& req) {
    auto ae = req.header("accept-encoding");
    if (!ae) return false;
    std::string_view v = *ae;
    for (std::size_t i = 0; i < v.size();) {
        auto j = v.find(',', i);
        if (j == std::string_view::npos) j = v.size();
        auto item = v.substr(i, j - i);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        if (item.starts_with("gzip") || item.starts_with("*")) {
            auto q = item.find("q=");
            if (q == std::string_view::npos) return true;
            // "q=0", "q=0.0", "q=0.000": refused; any other digit makes it acceptable.
            auto num = item.substr(q + 2);
            return num.find_first_of("123456789") != std::string_view::npos;
        }
        i = j + 1;
    }
    return false;
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
    if (!s.gzipped.empty() && acceptsGzip(req)) {
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
