// HTTP session, the stream-independent half (see http_session.hpp): answers and errors
// rendered as JSON or YAML, bearer tokens, authorization, gzip of large answers, and a route
// run on a pool thread with its exceptions turned into 500s.
#include "http_session.hpp"

#include "gzip.hpp"
#include "http_target.hpp"

#include "loom/client/yaml_json.hpp"
#include "loom/db/native.hpp"

#include <spdlog/spdlog.h>

#include <cctype>

namespace loom::backend::session {

Rendered renderError(const Error& e, bool yaml) {
    nlohmann::json err{{"code", std::string(errcName(e.code))}, {"message", e.message}};
    if (!e.path.empty()) err["path"] = e.path;
    if (e.line > 0) err["line"] = e.line;
    nlohmann::json body{{"error", err}};
    Rendered r;
    r.status = httpStatus(e.code);
    // Every 503 is temporary (the database away or failing over, a limit of the moment):
    // say when to come back, as kubectl's and browsers' retries expect.
    if (r.status == 503) r.headers.emplace_back("Retry-After", "1");
    if (yaml) {
        r.contentType = "application/yaml";
        r.body = client::jsonToYaml(body);
    } else {
        r.contentType = "application/json";
        // Messages may quote the offending input; bytes that are not UTF-8 become U+FFFD
        // rather than an exception (a 500) while reporting a 400.
        r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        r.body += '\n';
    }
    return r;
}

Rendered render(Response&& resp, bool yaml) {
    Rendered r;
    r.status = resp.status;
    r.headers = std::move(resp.headers);
    if (resp.json) {
        if (yaml) {
            r.contentType = "application/yaml";
            r.body = client::jsonToYaml(*resp.json);
        } else {
            r.contentType = "application/json";
            r.body = resp.json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            r.body += '\n';
        }
    } else {
        r.contentType = std::move(resp.contentType);
        r.body = std::move(resp.body);
    }
    return r;
}

std::string bearerOf(const http::request<http::string_body>& req, const Pairs& query) {
    auto it = req.find(http::field::authorization);
    if (it != req.end()) {
        std::string_view v(it->value().data(), it->value().size());
        if (v.size() > 7 && (v.substr(0, 7) == "Bearer " || v.substr(0, 7) == "bearer "))
            return std::string(v.substr(7));
        return std::string(v);  // malformed: fails authentication with a clear message
    }
    for (auto& [k, v] : query)
        if (k == "token") return v;
    return {};
}

// Authentication and authorization of a route (on a pool thread). Empty principal name and
// Role::None when the route needs no token.
Result<Principal> authorize(Server::Impl& s, db::Connection* conn, Role needed,
                            const std::string& secret) {
    if (needed == Role::None && secret.empty()) return Principal{};
    if (secret.empty())
        return fail(Error{Errc::Unauthorized,
                          "this endpoint needs a token with role " +
                              std::string(roleName(needed)) +
                              "; send 'Authorization: Bearer <token>'"});
    auto p = s.authenticate(conn, secret);
    if (!p) {
        if (needed == Role::None) return Principal{};
        return fail(p.error());
    }
    if (p->role < needed)
        return fail(Error{Errc::Forbidden, "this endpoint needs role " +
                                               std::string(roleName(needed)) + "; token '" +
                                               p->name + "' has " +
                                               std::string(roleName(p->role))});
    return p;
}

// Large answers (GET /api/v1/hall: 2.9 MB of JSON at 24k) go gzipped to a client that accepts
// it (browsers, Qt's network access manager), at the fastest level: ~10x smaller for a few ms
// of a pool thread. Answers a handler encoded itself (the dashboard's assets) are left alone.
namespace {
constexpr std::size_t kGzipFromBytes = std::size_t{8} << 10;

void gzipIfWorthIt(Rendered& out, const Request& req) {
    if (out.status != 200 || out.body.size() < kGzipFromBytes) return;
    for (auto& [k, v] : out.headers)
        if (beast::iequals(k, "content-encoding")) return;
    auto ae = req.header("accept-encoding");
    if (!ae || !acceptsGzip(*ae)) return;
    auto z = gzip(out.body, 1);
    if (z.empty() || z.size() >= out.body.size()) return;
    out.body = std::move(z);
    out.headers.emplace_back("Content-Encoding", "gzip");
    out.headers.emplace_back("Vary", "Accept-Encoding");
}

}  // namespace

Rendered runRoute(Server::Impl& s, const http::request<http::string_body>& req, Job& job,
                  db::Connection* conn) {
    const Route& route = *job.route;
    auto principal = authorize(s, conn, route.role, job.secret);
    if (!principal) return renderError(principal.error(), job.yaml);
    if (route.options.needsDb && !conn)
        return renderError(Error::unavailable("the database is unreachable; retry shortly"),
                           job.yaml);
    Request r;
    r.method = std::string_view(req.method_string().data(), req.method_string().size());
    r.target = std::string_view(req.target().data(), req.target().size());
    r.path = job.path;
    r.route = route.pattern;
    r.body = job.body;
    r.captures = std::move(job.captures);
    r.query = std::move(job.query);
    for (auto& f : req) {
        std::string name(f.name_string());
        for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        r.headers.emplace_back(std::move(name), std::string(f.value()));
    }
    r.principal = std::move(*principal);
    r.connection = conn;
    try {
        auto result = route.handler(r);
        if (!result && result.error().code == Errc::Unavailable && r.method == "GET" && conn &&
            !db::native(*conn).is_open()) {
            // The pool thread's connection died under this read (PostgreSQL restarted): a
            // read is safe to repeat, once, on a fresh connection. The pool replaces its own
            // connection before its next job.
            if (auto fresh = s.pool->database().connect()) {
                r.connection = &*fresh;
                result = route.handler(r);
                r.connection = conn;
            }
        }
        if (!result) {
            if (result.error().code == Errc::Internal)
                spdlog::error("{} {}: {}", r.method, r.target, result.error().message);
            return renderError(result.error(), job.yaml);
        }
        auto out = render(std::move(*result), job.yaml);
        gzipIfWorthIt(out, r);
        return out;
    } catch (const std::exception& e) {
        spdlog::error("{} {}: handler threw: {}", r.method, r.target, e.what());
        return renderError(Error::internal("internal error; see the server log"), job.yaml);
    } catch (...) {
        spdlog::error("{} {}: handler threw a non-exception", r.method, r.target);
        return renderError(Error::internal("internal error; see the server log"), job.yaml);
    }
}

// The token of a browser's WebSocket, which cannot set Authorization: as an entry of
// Sec-WebSocket-Protocol, the way Kubernetes takes it (`loom.v1, loom.bearer.<token>`). The
// answer names `loom.v1` only, so the token is never echoed. Sets `v1` when loom.v1 was offered.
std::string bearerOfProtocols(const http::request<http::string_body>& req, bool& v1) {
    v1 = false;
    std::string token;
    for (auto it = req.find(http::field::sec_websocket_protocol);
         it != req.end() && it->name() == http::field::sec_websocket_protocol; ++it) {
        std::string_view v(it->value().data(), it->value().size());
        for (std::size_t i = 0; i <= v.size();) {
            auto j = v.find(',', i);
            if (j == std::string_view::npos) j = v.size();
            auto item = v.substr(i, j - i);
            while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
                item.remove_prefix(1);
            while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
            if (item == "loom.v1") v1 = true;
            constexpr std::string_view kBearer = "loom.bearer.";
            if (item.starts_with(kBearer)) token = std::string(item.substr(kBearer.size()));
            i = j + 1;
        }
    }
    return token;
}

void logFailure(std::exception_ptr e) {
    if (!e) return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        spdlog::warn("session ended with an exception: {}", x.what());
    }
}

}  // namespace loom::backend::session
