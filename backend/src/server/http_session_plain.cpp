// Plain-TCP HTTP sessions: the session coroutine of http_session_run.hpp over a
// beast::tcp_stream.
#include "http_session_run.hpp"

#include <boost/asio/co_spawn.hpp>

namespace loom::backend {

namespace {

using namespace session;

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

}  // namespace

void launchPlainSession(Server::Impl& s, net::ip::tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    auto ex = stream.get_executor();
    net::co_spawn(ex, plainSession(s, std::move(stream)), logFailure);
}

}  // namespace loom::backend
