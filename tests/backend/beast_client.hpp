// Beast for the tests that drive HTTP or WebSocket themselves (raw frames, TLS, a fake
// exporter, a test's own async reads): the namespace names the tests use and the WsClient's
// own stream (`WsClient::raw()`). Tests that only use request() and WsClient need only
// server_fixture.hpp, and compile without Beast.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "server_fixture.hpp"

namespace loom::backend::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct WsClient::Raw {
    net::io_context ioc;
    websocket::stream<beast::tcp_stream> ws{ioc};
};

}  // namespace loom::backend::testing
