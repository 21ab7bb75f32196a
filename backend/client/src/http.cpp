// Client: HTTP(S) requests and the WebSocket stream over Boost.Beast.
//
// Each call runs its own io_context to completion. The operations are coroutines so that
// Beast's per-operation timeouts (tcp_stream::expires_after) apply; a synchronous Beast call
// would wait forever on a server that accepted the connection and never answered.
#include "loom/client/client.hpp"
#include "loom/version.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <cctype>
#include <exception>

namespace loom::client {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = boost::asio::ssl;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {

Errc errcForStatus(int status) {
    switch (status) {
        case 400: return Errc::InvalidArgument;
        case 401: return Errc::Unauthorized;
        case 403: return Errc::Forbidden;
        case 404: return Errc::NotFound;
        case 409: return Errc::Conflict;
        case 412: return Errc::PreconditionFailed;
        case 413: return Errc::TooLarge;
        case 422: return Errc::InvalidArgument;
        case 502:
        case 503:
        case 504: return Errc::Unavailable;
        default: return status >= 500 ? Errc::Internal : Errc::InvalidArgument;
    }
}

// Transport failures all start with this, so isConnectionError() can tell them from a 503.
constexpr std::string_view kConnectPrefix = "cannot reach ";

Error transportError(const std::string& server, std::string_view what, const std::string& detail) {
    return Error{Errc::Unavailable,
                 std::string(kConnectPrefix) + server + ": " + std::string(what) + detail};
}

std::unique_ptr<ssl::context> makeTlsContext(const ClientConfig& cfg) {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    if (cfg.insecureSkipTlsVerify) {
        ctx->set_verify_mode(ssl::verify_none);
    } else {
        ctx->set_default_verify_paths();
        ctx->set_verify_mode(ssl::verify_peer);
    }
    return ctx;
}

template <class Stream>
void prepareTls(Stream& s, const Url& url, const ClientConfig& cfg) {
    // SNI, so a server with several certificates picks the right one.
    SSL_set_tlsext_host_name(s.native_handle(), url.host.c_str());
    if (!cfg.insecureSkipTlsVerify) s.set_verify_callback(ssl::host_name_verification(url.host));
}

struct Exchange {
    http::request<http::string_body> req;
    HttpResponse resp;
    const ProgressFn* progress = nullptr;
    std::chrono::milliseconds timeout{};
};

template <class Stream>
net::awaitable<void> writeAndRead(Stream& stream, beast::tcp_stream& tcpLayer, Exchange& ex) {
    tcpLayer.expires_after(ex.timeout);
    http::request_serializer<http::string_body> sr{ex.req};
    std::size_t total = ex.req.body().size();
    std::size_t sent = 0;
    std::exception_ptr writeFailure;
    try {
        // Written piecewise so a progress bar can follow a large apply body.
        while (!sr.is_done()) {
            std::size_t n = co_await http::async_write_some(stream, sr, net::use_awaitable);
            sent += n;
            if (ex.progress && *ex.progress && total > 0) (*ex.progress)(std::min(sent, total), total);
        }
    } catch (const boost::system::system_error&) {
        // The server may have refused the body early (413, 401) and said why before closing:
        // try to read that answer before reporting the write failure.
        writeFailure = std::current_exception();
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    try {
        co_await http::async_read(stream, buffer, parser, net::use_awaitable);
    } catch (...) {
        if (writeFailure) std::rethrow_exception(writeFailure);
        throw;
    }
    auto& msg = parser.get();
    ex.resp.status = static_cast<int>(msg.result_int());
    ex.resp.body = std::move(msg.body());
    for (const auto& f : msg) {
        std::string name(f.name_string());
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        ex.resp.headers[name] = std::string(f.value());
    }
}

net::awaitable<void> connectTcp(beast::tcp_stream& s, const Url& url, std::chrono::milliseconds t) {
    auto exec = co_await net::this_coro::executor;
    tcp::resolver resolver(exec);
    auto endpoints = co_await resolver.async_resolve(url.host, url.port, net::use_awaitable);
    s.expires_after(t);
    co_await s.async_connect(endpoints, net::use_awaitable);
}

// Runs a coroutine to completion on a private io_context; an exception becomes an Error.
template <class F>
Result<void> runToCompletion(F&& body, const ClientConfig& cfg, std::string_view phase) {
    net::io_context ioc;
    std::exception_ptr failure;
    net::co_spawn(ioc, std::forward<F>(body)(ioc),
                  [&](std::exception_ptr e) { failure = e; });
    ioc.run();
    if (!failure) return {};
    try {
        std::rethrow_exception(failure);
    } catch (const boost::system::system_error& e) {
        if (e.code() == beast::error::timeout) {
            return fail(transportError(
                cfg.server, phase,
                "timed out after " + std::to_string(cfg.timeout.count() / 1000) + " s"));
        }
        if (e.code() == http::error::body_limit) {
            return fail(Error{Errc::TooLarge, "response from " + cfg.server + " exceeds " +
                                                  std::to_string(kMaxResponseBytes >> 20) +
                                                  " MiB"});
        }
        return fail(transportError(cfg.server, phase, e.code().message()));
    } catch (const std::exception& e) {
        return fail(transportError(cfg.server, phase, e.what()));
    }
}

}  // namespace

std::string HttpResponse::header(const std::string& lowerName) const {
    auto it = headers.find(lowerName);
    return it == headers.end() ? std::string() : it->second;
}

Error errorFromResponse(const HttpResponse& r) {
    Error e{errcForStatus(r.status), {}};
    auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("error")) {
        const auto& err = j["error"];
        if (err.is_object()) {
            if (err.contains("message") && err["message"].is_string()) {
                e.message = err["message"].get<std::string>();
            }
            if (err.contains("path") && err["path"].is_string()) {
                e.path = err["path"].get<std::string>();
            }
            if (err.contains("line") && err["line"].is_number_integer()) {
                e.line = err["line"].get<int>();
            }
        } else if (err.is_string()) {
            e.message = err.get<std::string>();
        }
    }
    if (e.message.empty()) {
        std::string body = r.body.substr(0, 500);
        while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.pop_back();
        e.message = "HTTP " + std::to_string(r.status) +
                    std::string(http::obsolete_reason(static_cast<http::status>(r.status))
                                    .empty()
                                    ? ""
                                    : " ") +
                    std::string(http::obsolete_reason(static_cast<http::status>(r.status))) +
                    (body.empty() ? "" : ": " + body);
    }
    return e;
}

bool isConnectionError(const Error& e) {
    return e.code == Errc::Unavailable && std::string_view(e.message).starts_with(kConnectPrefix);
}

std::string newIdempotencyKey() {
    std::random_device rd;
    char key[33];
    std::snprintf(key, sizeof key, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
    return key;
}

Client::Client(ClientConfig cfg) : cfg_(std::move(cfg)) {
    while (!cfg_.server.empty() && cfg_.server.back() == '/') cfg_.server.pop_back();
    auto u = parseUrl(cfg_.server);
    if (u) url_ = *u;
    else urlError_ = u.error();
}

Result<HttpResponse> Client::send(std::string_view method, std::string_view target,
                                  RequestOptions opts) {
    if (urlError_) return fail(*urlError_);
    Exchange ex;
    ex.req.method_string(std::string(method));
    ex.req.target(url_.basePath + std::string(target));
    ex.req.version(11);
    bool defaultPort = (url_.tls && url_.port == "443") || (!url_.tls && url_.port == "80");
    std::string hostHeader = url_.host.find(':') != std::string::npos ? "[" + url_.host + "]"
                                                                       : url_.host;
    ex.req.set(http::field::host, defaultPort ? hostHeader : hostHeader + ":" + url_.port);
    ex.req.set(http::field::user_agent, "loomctl/" LOOM_VERSION);
    ex.req.set(http::field::accept, opts.accept);
    if (!cfg_.token.empty()) ex.req.set(http::field::authorization, "Bearer " + cfg_.token);
    for (const auto& [k, v] : opts.headers) ex.req.set(k, v);
    if (!opts.body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
        if (!opts.contentType.empty()) ex.req.set(http::field::content_type, opts.contentType);
        ex.req.body() = std::move(opts.body);
        ex.req.prepare_payload();
    }
    ex.progress = &opts.progress;
    ex.timeout = cfg_.timeout;

    auto run = [&](net::io_context& ioc) -> net::awaitable<void> {
        if (url_.tls) {
            auto ctx = makeTlsContext(cfg_);
            beast::ssl_stream<beast::tcp_stream> stream(ioc, *ctx);
            prepareTls(stream, url_, cfg_);
            co_await connectTcp(beast::get_lowest_layer(stream), url_, cfg_.timeout);
            co_await stream.async_handshake(ssl::stream_base::client, net::use_awaitable);
            co_await writeAndRead(stream, beast::get_lowest_layer(stream), ex);
        } else {
            beast::tcp_stream stream(ioc);
            co_await connectTcp(stream, url_, cfg_.timeout);
            co_await writeAndRead(stream, stream, ex);
        }
    };
    auto r = runToCompletion(run, cfg_, "");
    if (!r) return fail(r.error());
    return std::move(ex.resp);
}

Result<nlohmann::json> Client::call(std::string_view method, std::string_view target,
                                    RequestOptions opts) {
    auto r = send(method, target, std::move(opts));
    if (!r) return fail(r.error());
    if (r->status >= 400) return fail(errorFromResponse(*r));
    if (r->body.empty()) return nlohmann::json::object();
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded()) {
        return fail(Error::internal("the server answered " + std::string(target) +
                                    " with a body that is not JSON"));
    }
    return j;
}

Result<nlohmann::json> Client::getJson(std::string_view target) {
    return call("GET", target, {});
}

Result<nlohmann::json> Client::postJson(std::string_view target, const nlohmann::json& body) {
    RequestOptions o;
    o.body = body.dump();
    o.contentType = "application/json";
    return call("POST", target, std::move(o));
}

Result<nlohmann::json> Client::deleteJson(std::string_view target) {
    return call("DELETE", target, {});
}

Result<std::vector<nlohmann::json>> Client::list(
    std::string_view kindPlural, const std::vector<std::pair<std::string, std::string>>& filters,
    std::size_t max, std::size_t pageSize) {
    std::vector<nlohmann::json> items;
    std::string cursor;
    pageSize = std::clamp<std::size_t>(pageSize, 1, 5000);
    // A server that keeps returning the same cursor would loop forever; stop at a bound far
    // above the 24k cluster's largest kind (ports, ~130k rows) at the maximum page size.
    for (int page = 0; page < 100'000; ++page) {
        auto params = filters;
        std::size_t want = max == 0 ? pageSize : std::min(pageSize, max - items.size());
        params.emplace_back("limit", std::to_string(want));
        if (!cursor.empty()) params.emplace_back("cursor", cursor);
        auto j = getJson("/api/v1/" + std::string(kindPlural) + "?" + queryString(params));
        if (!j) return fail(j.error());
        if (!j->is_object() || !j->contains("items") || !(*j)["items"].is_array()) {
            return fail(Error::internal("the server's list of " + std::string(kindPlural) +
                                        " has no items array"));
        }
        for (auto& it : (*j)["items"]) items.push_back(std::move(it));
        if (max != 0 && items.size() >= max) {
            items.resize(max);
            break;
        }
        auto next = j->find("nextCursor");
        if (next == j->end() || !next->is_string() || next->get<std::string>().empty()) break;
        if (next->get<std::string>() == cursor) {
            return fail(Error::internal("the server returned the same cursor twice"));
        }
        cursor = next->get<std::string>();
    }
    return items;
}

Result<void> Client::stream(const std::vector<std::string>& topics,
                            std::optional<std::int64_t> resumeFrom,
                            const std::function<bool(const nlohmann::json&)>& onMessage) {
    if (urlError_) return fail(*urlError_);
    nlohmann::json sub = {{"op", "subscribe"}, {"topics", topics}};
    if (resumeFrom) sub["resumeFrom"] = *resumeFrom;
    std::string subscribe = sub.dump();
    std::optional<Error> streamError;
    std::string target = url_.basePath + "/api/v1/stream";
    std::string host = url_.host + ":" + url_.port;

    auto session = [&](auto& ws) -> net::awaitable<void> {
        ws.set_option(websocket::stream_base::decorator([&](websocket::request_type& req) {
            req.set(http::field::user_agent, "loomctl/" LOOM_VERSION);
            if (!cfg_.token.empty()) req.set(http::field::authorization, "Bearer " + cfg_.token);
        }));
        websocket::response_type res;
        try {
            co_await ws.async_handshake(res, host, target, net::use_awaitable);
        } catch (const boost::system::system_error&) {
            // A refused upgrade (401, 403, 404) carries the server's error body: report that.
            if (res.result_int() >= 300) {
                HttpResponse r;
                r.status = static_cast<int>(res.result_int());
                r.body = res.body();
                streamError = errorFromResponse(r);
                co_return;
            }
            throw;
        }
        // Idle reads may last forever (a quiet cluster); the stream's keep-alive pings notice
        // a dead server instead of a read deadline.
        beast::get_lowest_layer(ws).expires_never();
        ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
        co_await ws.async_write(net::buffer(subscribe), net::use_awaitable);
        beast::flat_buffer buf;
        for (;;) {
            auto [ec, n] = std::pair<boost::system::error_code, std::size_t>{};
            try {
                n = co_await ws.async_read(buf, net::use_awaitable);
            } catch (const boost::system::system_error& e) {
                ec = e.code();
            }
            if (ec == websocket::error::closed) {
                auto reason = ws.reason();
                if (!reason.reason.empty()) {
                    streamError = Error{Errc::Unavailable,
                                        "the server closed the stream: " +
                                            std::string(reason.reason.c_str())};
                }
                co_return;
            }
            if (ec) throw boost::system::system_error(ec);
            if (!ws.got_text()) {
                buf.consume(n);
                continue;
            }
            auto j = nlohmann::json::parse(beast::buffers_to_string(buf.data()), nullptr, false);
            buf.consume(n);
            if (j.is_discarded()) continue;
            if (j.is_object() && j.value("type", "") == "bye") {
                streamError = Error{Errc::Unavailable,
                                    "the server ended the stream: " + j.value("reason", "")};
                co_return;
            }
            if (!onMessage(j)) {
                beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(2));
                try {
                    co_await ws.async_close(websocket::close_code::normal, net::use_awaitable);
                } catch (...) {
                    // Closing politely is best effort; we are leaving anyway.
                }
                co_return;
            }
        }
    };

    auto run = [&](net::io_context& ioc) -> net::awaitable<void> {
        if (url_.tls) {
            auto ctx = makeTlsContext(cfg_);
            websocket::stream<beast::ssl_stream<beast::tcp_stream>> ws(ioc, *ctx);
            prepareTls(ws.next_layer(), url_, cfg_);
            co_await connectTcp(beast::get_lowest_layer(ws), url_, cfg_.timeout);
            co_await ws.next_layer().async_handshake(ssl::stream_base::client,
                                                     net::use_awaitable);
            co_await session(ws);
        } else {
            websocket::stream<beast::tcp_stream> ws(ioc);
            co_await connectTcp(beast::get_lowest_layer(ws), url_, cfg_.timeout);
            co_await session(ws);
        }
    };
    auto r = runToCompletion(run, cfg_, "");
    if (streamError) return fail(*streamError);
    if (!r) return fail(r.error());
    if (streamError) return fail(*streamError);
    return {};
}

}  // namespace loom::client
