// HTTP session over a stream: one coroutine per connection on its own strand (Beast's
// server-flex-awaitable shape). It reads a request header under a timeout, picks the route,
// enforces the route's body limit before reading the body, runs authentication and the handler
// on the database pool, and writes the response. A WebSocket upgrade of /api/v1/stream hands
// the connection to a WsSession. Templates over the stream type, instantiated once each by
// http_session_plain.cpp and http_session_tls.cpp (two translation units the build runs in
// parallel; one file holding both was the longest compile of the tree).
#pragma once

#include "http_session.hpp"
#include "http_target.hpp"
#include "websocket_session.hpp"

#include "loom/version.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <malloc.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <type_traits>

namespace loom::backend::session {

using net::use_awaitable;

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
            } else if (ec &&
                       ec.category() == http::make_error_code(http::error::bad_chunk).category() &&
                       ec != http::error::partial_message && ec != http::error::end_of_stream) {
                // A malformed body framing (a bad chunk size, a bad chunk extension): answered,
                // then the connection closes, since where the next request starts is unknown.
                out = renderError(Error::invalid("malformed HTTP request body: " + ec.message()),
                                  yaml);
                out.closeAfter = true;
                match.route = nullptr;
                ec = {};
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
        // A big body or a big answer (a 16,384-host job, a long list): what building it
        // allocated on the pool threads is free now, but stays resident in their malloc
        // arenas (+42 MB after storing and listing such a job) unless trimmed.
        bool heavy = req.body().size() >= kTrimAfterBytes || out.body.size() >= kTrimAfterBytes ||
                     slot.held();
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

}  // namespace loom::backend::session
