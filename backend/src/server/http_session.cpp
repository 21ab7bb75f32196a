// HTTP session: one coroutine per connection on its own strand (Beast's server-flex-awaitable
// shape). It reads a request header under a timeout, picks the route, enforces the route's
// body limit before reading the body, runs authentication and the handler on the database
// pool, and writes the response. A WebSocket upgrade of /api/v1/stream hands the connection to
// a WsSession.
#include "gzip.hpp"
#include "http_target.hpp"
#include "shared_state.hpp"
#include "websocket_session.hpp"

#include "loom/client/yaml_json.hpp"
#include "loom/db/native.hpp"
#include "loom/version.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <spdlog/spdlog.h>

#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace loom::backend {

namespace http = boost::beast::http;
using net::use_awaitable;

namespace {

constexpr std::string_view kStreamPath = "/api/v1/stream";

bool wantsYaml(std::string_view accept) { return accept.find("yaml") != std::string_view::npos; }

struct Rendered {
    int status = 200;
    std::string contentType;
    std::string body;
    Pairs headers;
    bool closeAfter = false;
};

Rendered renderError(const Error& e, bool yaml) {
    nlohmann::json err{{"code", std::string(errcName(e.code))}, {"message", e.message}};
    if (!e.path.empty()) err["path"] = e.path;
    if (e.line > 0) err["line"] = e.line;
    nlohmann::json body{{"error", err}};
    Rendered r;
    r.status = httpStatus(e.code);
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

// A slot of a route with RouteOptions::maxConcurrent, held from before the body is read
// until the response is written.
class RouteSlot {
public:
    RouteSlot() = default;
    RouteSlot(const RouteSlot&) = delete;
    RouteSlot& operator=(const RouteSlot&) = delete;
    ~RouteSlot() { release(); }
    // False when the route is at its limit (nothing is held then).
    bool acquire(const Route& route) {
        if (route.options.maxConcurrent <= 0) return true;
        if (route.inFlight->fetch_add(1) >= route.options.maxConcurrent) {
            route.inFlight->fetch_sub(1);
            return false;
        }
        counter_ = route.inFlight.get();
        return true;
    }
    bool held() const { return counter_ != nullptr; }
    void release() {
        if (counter_) counter_->fetch_sub(1);
        counter_ = nullptr;
    }

private:
    std::atomic<int>* counter_ = nullptr;
};

// Bytes of request bodies held at once across all connections (ServerConfig::
// maxBodyBytesInFlight), reserved before a body is read and given back after the answer is
// written. A body alone is always taken (its route's limit bounds it).
class BodyReservation {
public:
    BodyReservation() = default;
    BodyReservation(const BodyReservation&) = delete;
    BodyReservation& operator=(const BodyReservation&) = delete;
    ~BodyReservation() { release(); }
    // False when `bytes` more would pass `budget` (nothing is held then).
    bool acquire(std::atomic<std::size_t>& inFlight, std::size_t budget, std::size_t bytes) {
        if (bytes == 0) return true;
        std::size_t now = inFlight.load();
        do {
            if (now != 0 && now + bytes > budget) return false;
        } while (!inFlight.compare_exchange_weak(now, now + bytes));
        counter_ = &inFlight;
        bytes_ = bytes;
        return true;
    }
    void release() {
        if (counter_) counter_->fetch_sub(bytes_);
        counter_ = nullptr;
    }

private:
    std::atomic<std::size_t>* counter_ = nullptr;
    std::size_t bytes_ = 0;
};

// Requests with big bodies or big intermediate trees leave freed pages in malloc's arenas;
// give them back so loomd's RSS returns to its baseline after a burst.
constexpr std::size_t kTrimAfterBytes = std::size_t{1} << 20;

struct Job {
    const Route* route = nullptr;
    Pairs captures, query;
    std::string path;
    std::string secret;
    bool yaml = false;
    std::string_view body;  // the request's own string, or a BodyBuffer
};

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

template <class Stream>
net::awaitable<void> writeResponse(Stream& stream, const http::request_header<>& reqHeader,
                                   unsigned version, Rendered&& r, bool keepAlive,
                                   beast::error_code& ec) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::server, "loomd " LOOM_VERSION);
    res.set(http::field::content_type, r.contentType);
    for (auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keepAlive && !r.closeAfter);
    res.body() = std::move(r.body);
    res.prepare_payload();
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(60));
    co_await http::async_write(stream, res, net::redirect_error(use_awaitable, ec));
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

template <class Stream>
net::awaitable<void> handleUpgrade(Server::Impl& s, Stream& stream,
                                   http::request<http::string_body> req, Pairs query) {
    std::string secret = bearerOf(req, query);
    bool offeredV1 = false;
    std::string protocolSecret = bearerOfProtocols(req, offeredV1);
    if (secret.empty()) secret = std::move(protocolSecret);
    if (req.find(http::field::sec_websocket_protocol) != req.end() && !offeredV1) {
        // A browser fails a handshake whose answer names no protocol it offered, and echoing a
        // bearer entry would send the token back: the client must offer loom.v1.
        beast::error_code ec;
        auto r = renderError(Error::invalid("Sec-WebSocket-Protocol must offer 'loom.v1' "
                                            "(with 'loom.bearer.<token>' for the token)",
                                            "Sec-WebSocket-Protocol"),
                             false);
        co_await writeResponse(stream, req, req.version(), std::move(r), false, ec);
        co_return;
    }
    // Authentication may hit the database: on the pool, never on this strand.
    // GCC 12 destroys non-trivial temporaries of a co_await full-expression twice: the
    // callables are named locals, not temporaries.
    auto authorizeOnPool = [&s, secret](db::Connection* conn) {
        return authorize(s, conn, Role::Viewer, secret);
    };
    auto refused = [] { return Result<Principal>(fail(Error::unavailable("server busy"))); };
    auto principal = co_await runOnPool<Result<Principal>>(*s.pool, std::move(authorizeOnPool),
                                                           std::move(refused), use_awaitable);
    if (!principal) {
        beast::error_code ec;
        auto r = renderError(principal.error(), false);
        co_await writeResponse(stream, req, req.version(), std::move(r), false, ec);
        co_return;
    }
    beast::get_lowest_layer(stream).expires_never();
    auto session = std::make_shared<WsSession<Stream>>(s, std::move(stream), *principal,
                                                       offeredV1 ? "loom.v1" : "");
    co_await session->run(std::move(req));
}

// A chunked body goes through the parser; this is its read size (the connection's buffer is
// given back after the request).
constexpr std::size_t kChunkedReadBuffer = std::size_t{64} << 10;
// Content-Length bodies from this size on get a BodyBuffer of their own.
constexpr std::size_t kBigBody = std::size_t{1} << 20;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

// The memory of one big request body: an anonymous mapping of its own with transparent huge
// pages asked for (MADV_HUGEPAGE), so 64 MiB of body cost 32 page faults instead of 16,384
// (a first touch costs ~10 us on this kind of VM; the faults were half of the intake's CPU),
// and all of it goes back to the system (munmap) when the request is done. Pages are touched
// only as bytes arrive: a Content-Length that is a lie costs address space, not memory.
class BodyBuffer {
public:
    BodyBuffer() = default;
    BodyBuffer(const BodyBuffer&) = delete;
    BodyBuffer& operator=(const BodyBuffer&) = delete;
    ~BodyBuffer() { reset(); }

    // Room for `capacity` bytes; false when the mapping fails.
    bool allocate(std::size_t capacity) {
        reset();
        const std::size_t len = (capacity + kHugePage - 1) / kHugePage * kHugePage;
        // Map one huge page more and trim, so the region starts on a huge-page boundary.
        void* raw = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == MAP_FAILED) return false;
        auto base = reinterpret_cast<std::uintptr_t>(raw);
        const std::uintptr_t aligned = (base + kHugePage - 1) & ~(kHugePage - 1);
        if (aligned > base) ::munmap(raw, aligned - base);
        if (const std::uintptr_t tail = base + len + kHugePage - (aligned + len); tail > 0)
            ::munmap(reinterpret_cast<void*>(aligned + len), tail);
        data_ = reinterpret_cast<char*>(aligned);
        mapped_ = len;
        ::madvise(data_, mapped_, MADV_HUGEPAGE);  // advice only: works without it too
        return true;
    }
    char* data() { return data_; }
    std::size_t size() const { return size_; }
    void setSize(std::size_t n) { size_ = n; }
    std::string_view view() const { return {data_, size_}; }
    void reset() {
        if (data_) ::munmap(data_, mapped_);
        data_ = nullptr;
        mapped_ = size_ = 0;
    }

private:
    char* data_ = nullptr;
    std::size_t mapped_ = 0;
    std::size_t size_ = 0;
};

// Reads the body of a request whose header is parsed (limits already checked). A body with a
// Content-Length is read straight into its final memory (`big` from 1 MiB, else the request's
// string) in reads as large as the socket gives: through the parser it passed the connection's
// flat_buffer, whose capacity after the header is a few KiB, so each read brought ~1 KiB and a
// copy (8 MiB of telemetry took ~8,000 reads: 40-50 MB/s). Chunked bodies go through the
// parser with a 64 KiB buffer.
template <class Stream>
net::awaitable<void> readBody(Stream& stream, beast::flat_buffer& buffer,
                              http::request_parser<http::string_body>& parser, BodyBuffer& big,
                              beast::error_code& ec) {
    if (parser.is_done()) co_return;
    auto cl = parser.content_length();
    if (!cl || parser.chunked()) {
        if (buffer.capacity() < kChunkedReadBuffer) buffer.reserve(kChunkedReadBuffer);
        co_await http::async_read(stream, buffer, parser, net::redirect_error(use_awaitable, ec));
        co_return;
    }
    const std::size_t want = static_cast<std::size_t>(*cl);
    std::string& small = parser.get().body();
    char* dst = nullptr;
    if (want >= kBigBody && big.allocate(want)) {
        dst = big.data();
    } else {
        small.resize_and_overwrite(want, [](char*, std::size_t n) { return n; });
        dst = small.data();
    }
    // Bytes of the body that arrived with the header.
    std::size_t have = std::min(buffer.size(), want);
    std::memcpy(dst, buffer.data().data(), have);
    buffer.consume(have);
    while (have < want && !ec)
        have += co_await stream.async_read_some(net::buffer(dst + have, want - have),
                                                net::redirect_error(use_awaitable, ec));
    if (ec == net::error::eof) ec = http::error::partial_message;
    if (dst == big.data() && big.data()) {
        big.setSize(have);
    } else {
        small.resize(have);
    }
}

// A refusal sent before the body was read (413, 503): the client may still be sending it, and
// closing now would answer its data with a TCP reset that makes it drop our answer unread. So,
// like nginx's lingering close: stop sending, then read and discard what comes for up to 2 s
// (at most 256 MiB, into one small buffer) until the client stops, and only then close. TLS
// sessions end with close_notify instead.
template <class Stream>
net::awaitable<void> lingerClose(Stream& stream) {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        beast::error_code ec;
        stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
        stream.expires_after(std::chrono::seconds(2));
        std::array<char, 16384> sink;
        for (std::size_t total = 0; total < (std::size_t(256) << 20);) {
            std::size_t n = co_await stream.async_read_some(net::buffer(sink),
                                                            net::redirect_error(use_awaitable, ec));
            if (ec) break;
            total += n;
        }
    }
    co_return;
}

// Returns true when the connection was handed to a WebSocket session (the stream is then
// moved-from and must not be touched).
template <class Stream>
net::awaitable<bool> runSession(Server::Impl& s, Stream& stream, beast::flat_buffer& buffer) {
    beast::error_code ec;
    bool first = true;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(s.config.headerLimit));
        // The per-route limit is checked after the header; this is the absolute ceiling.
        parser.body_limit(kMaxBodyLimit);
        beast::get_lowest_layer(stream).expires_after(first ? s.config.headerTimeout
                                                            : s.config.idleTimeout);
        first = false;
        co_await http::async_read_header(stream, buffer, parser,
                                         net::redirect_error(use_awaitable, ec));
        if (ec == http::error::end_of_stream || ec == net::error::eof) break;
        if (ec == beast::error::timeout || ec == net::error::operation_aborted) break;
        if (ec) {
            // Malformed request or header too large: answer once, then close.
            Rendered r = renderError(
                ec == http::error::header_limit
                    ? Error{Errc::TooLarge,
                            "request header exceeds the limit of " +
                                std::to_string(s.config.headerLimit) + " bytes"}
                    : Error::invalid("malformed HTTP request: " + ec.message()),
                false);
            if (ec == http::error::header_limit) r.status = 431;
            if (ec == http::error::body_limit) {
                r = renderError(Error{Errc::TooLarge, "request body exceeds the limit of " +
                                                          std::to_string(kMaxBodyLimit) +
                                                          " bytes"},
                                false);
            }
            beast::error_code wec;
            co_await writeResponse(stream, parser.get(), 11, std::move(r), false, wec);
            break;
        }
        auto start = std::chrono::steady_clock::now();
        auto& hdr = parser.get();
        std::string_view target(hdr.target().data(), hdr.target().size());
        auto decoded = splitTarget(target);
        std::string path = std::move(decoded.first);
        Pairs query = std::move(decoded.second);
        std::string method(hdr.method_string());
        bool yaml = false;
        if (auto a = hdr.find(http::field::accept); a != hdr.end())
            yaml = wantsYaml(std::string_view(a->value().data(), a->value().size()));

        if (path == kStreamPath && websocket::is_upgrade(hdr)) {
            co_await http::async_read(stream, buffer, parser, net::redirect_error(use_awaitable, ec));
            if (ec) break;
            auto upgradeRequest = parser.release();  // a named local: see handleUpgrade
            co_await handleUpgrade(s, stream, std::move(upgradeRequest), std::move(query));
            co_return true;
        }

        auto match = s.router.match(method, target.substr(0, target.find('?')));
        std::string routeLabel = match.route ? match.route->pattern : "unmatched";
        Rendered out;
        bool keepAlive = hdr.keep_alive();
        if (!match.route) {
            std::string hint;
            if (path.starts_with("/api/v1/ports/") || path.starts_with("/api/v1/links/"))
                hint = "; a name holding '/' goes in the path as %2F "
                       "(/api/v1/ports/z1-r001-rtsw%2Fp1)";
            out = renderError(Error::notFound("no route for " + method + " " + path + hint), yaml);
            if (match.pathKnown) {
                out = renderError(Error::invalid("method " + method + " is not allowed on " +
                                                 path + "; allowed: " + match.allowed),
                                  yaml);
                out.status = 405;
                out.headers.emplace_back("Allow", match.allowed);
            }
        }
        std::size_t limit = match.route ? match.route->options.bodyLimit : kDefaultBodyLimit;
        RouteSlot slot;
        BodyReservation bodyBytes;
        BodyBuffer bigBody;
        // What the body will hold: its Content-Length, or the route's limit when chunked.
        const std::size_t bodyWants =
            parser.content_length() ? static_cast<std::size_t>(*parser.content_length())
                                    : (parser.chunked() ? limit : 0);
        if (auto bad = checkTarget(path, query)) {
            out = renderError(*bad, yaml);
            out.closeAfter = true;  // the body is not read
            match.route = nullptr;
        } else if (match.route && !slot.acquire(*match.route)) {
            // Refuse before reading the body; the connection closes (body unread).
            out = renderError(Error::unavailable("too many concurrent " + method + " " +
                                                 routeLabel + " requests; retry shortly"),
                              yaml);
            out.headers.emplace_back("Retry-After", "1");
            out.closeAfter = true;
            match.route = nullptr;
        } else if (auto cl = parser.content_length(); cl && *cl > limit) {
            // Refuse before reading: the body is not consumed, so the connection closes.
            out = renderError(Error{Errc::TooLarge, "request body of " + std::to_string(*cl) +
                                                        " bytes exceeds the limit of " +
                                                        std::to_string(limit) + " bytes for " +
                                                        routeLabel},
                              yaml);
            out.closeAfter = true;
            match.route = nullptr;
        } else if (match.route && !bodyBytes.acquire(s.bodyBytesInFlight,
                                                     s.config.maxBodyBytesInFlight, bodyWants)) {
            // Memory is bounded for every caller, whatever its role: refuse before reading.
            out = renderError(
                Error::unavailable("loomd is receiving " +
                                   std::to_string(s.bodyBytesInFlight.load() >> 20) +
                                   " MiB of request bodies already (server.maxBodyMiBInFlight: " +
                                   std::to_string(s.config.maxBodyBytesInFlight >> 20) +
                                   " MiB); retry shortly"),
                yaml);
            out.headers.emplace_back("Retry-After", "1");
            out.closeAfter = true;
            match.route = nullptr;
        } else {
            parser.body_limit(limit);
            beast::get_lowest_layer(stream).expires_after(s.config.bodyTimeout);
            if (auto ex = hdr.find(http::field::expect);
                ex != hdr.end() && beast::iequals(ex->value(), "100-continue") &&
                !parser.is_done()) {
                // The body is wanted: say so now (curl otherwise waits 1 s before sending a
                // big body). Refusals above answer without it and the body is never sent.
                http::response<http::empty_body> cont{http::status::continue_, hdr.version()};
                co_await http::async_write(stream, cont, net::redirect_error(use_awaitable, ec));
                if (ec) break;
            }
            co_await readBody(stream, buffer, parser, bigBody, ec);
            if (ec == http::error::body_limit) {
                out = renderError(Error{Errc::TooLarge, "request body exceeds the limit of " +
                                                            std::to_string(limit) + " bytes for " +
                                                            routeLabel},
                                  yaml);
                out.closeAfter = true;
                match.route = nullptr;
            } else if (ec) {
                break;
            }
        }
        auto& req = parser.get();
        if (match.route) {
            Job job{match.route, std::move(match.captures), std::move(query), path,
                    bearerOf(req, {}), yaml,
                    bigBody.data() ? bigBody.view() : std::string_view(req.body())};
            if (job.secret.empty())
                for (auto& [k, v] : job.query)
                    if (k == "token") job.secret = v;
            out = co_await runOnPool<Rendered>(
                *s.pool,
                [&s, &req, &job](db::Connection* conn) { return runRoute(s, req, job, conn); },
                [yaml] {
                    return renderError(Error::unavailable("server busy: database queue full"),
                                       yaml);
                },
                use_awaitable);
        }
        auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
        s.metrics.observeRequest(routeLabel, method, out.status, elapsed.count());
        bool close = out.closeAfter || !keepAlive;
        const bool bodyUnread = out.closeAfter;
        bool heavy = req.body().size() >= kTrimAfterBytes || slot.held();
        bigBody.reset();
        co_await writeResponse(stream, req, req.version(), std::move(out), !close, ec);
        if (bodyUnread && !ec) co_await lingerClose(stream);
        slot.release();
        bodyBytes.release();
        if (heavy) {
            req.body().clear();
            req.body().shrink_to_fit();
            malloc_trim(0);
        }
        if (buffer.capacity() >= kChunkedReadBuffer) buffer.shrink_to_fit();
        if (ec || close) break;
    }
    co_return false;
}

void finish(beast::tcp_stream& stream) {
    beast::error_code ec;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
}

struct ConnectionCount {
    Metrics& m;
    explicit ConnectionCount(Metrics& metrics) : m(metrics) { m.httpConnections.fetch_add(1); }
    ~ConnectionCount() { m.httpConnections.fetch_sub(1); }
};

net::awaitable<void> plainSession(Server::Impl& s, beast::tcp_stream stream) {
    ConnectionCount count(s.metrics);
    beast::flat_buffer buffer;
    bool handedOff = co_await runSession(s, stream, buffer);
    if (!handedOff && stream.socket().is_open()) finish(stream);
}

net::awaitable<void> tlsSession(Server::Impl& s, beast::ssl_stream<beast::tcp_stream> stream) {
    ConnectionCount count(s.metrics);
    beast::flat_buffer buffer;
    beast::error_code ec;
    beast::get_lowest_layer(stream).expires_after(s.config.headerTimeout);
    co_await stream.async_handshake(net::ssl::stream_base::server,
                                    net::redirect_error(use_awaitable, ec));
    if (ec) co_return;
    bool handedOff = co_await runSession(s, stream, buffer);
    if (handedOff || !beast::get_lowest_layer(stream).socket().is_open()) co_return;
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(5));
    co_await stream.async_shutdown(net::redirect_error(use_awaitable, ec));
}

void logFailure(std::exception_ptr e) {
    if (!e) return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        spdlog::warn("session ended with an exception: {}", x.what());
    }
}

}  // namespace

void launchPlainSession(Server::Impl& s, net::ip::tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    auto ex = stream.get_executor();
    net::co_spawn(ex, plainSession(s, std::move(stream)), logFailure);
}

void launchTlsSession(Server::Impl& s, net::ip::tcp::socket socket) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *s.ssl);
    auto ex = stream.get_executor();
    net::co_spawn(ex, tlsSession(s, std::move(stream)), logFailure);
}

}  // namespace loom::backend
