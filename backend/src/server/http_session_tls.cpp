// TLS HTTP sessions: the handshake, the session coroutine of http_session_run.hpp over a
// beast::ssl_stream, then close_notify.
#include "http_session_run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>

namespace loom::backend {

namespace {

using namespace session;

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

}  // namespace

void launchTlsSession(Server::Impl& s, net::ip::tcp::socket socket) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *s.ssl);
    auto ex = stream.get_executor();
    net::co_spawn(ex, tlsSession(s, std::move(stream)), logFailure);
}

}  // namespace loom::backend
