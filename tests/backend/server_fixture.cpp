// The clients of server_fixture.hpp, compiled once for every test file of loom_server_tests.
#include "beast_client.hpp"

namespace loom::backend::testing {

HttpResult request(std::uint16_t port, const std::string& method, const std::string& target,
                   const std::string& token, const std::string& body,
                   std::vector<std::pair<std::string, std::string>> headers) {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    beast::error_code cec;
    stream.socket().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), cec);
    if (cec) return {};
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    for (auto& [k, v] : headers) req.set(k, v);
    if (!body.empty() || method == "POST" || method == "PATCH") {
        req.body() = body;
        req.prepare_payload();
    }
    beast::error_code wec;
    // A server refusing an oversize body answers and closes before reading it all: the write
    // may fail, the response is still there to read.
    http::write(stream, req, wec);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1u << 30);
    beast::error_code ec;
    http::read(stream, buf, parser, ec);
    HttpResult r;
    if (ec) return r;
    r.status = parser.get().result_int();
    r.body = parser.get().body();
    for (auto& f : parser.get()) r.headers[std::string(f.name_string())] = std::string(f.value());
    return r;
}

std::vector<std::uint8_t> decodeBase64(const std::string& s) {
    auto val = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::vector<std::uint8_t> out;
    unsigned acc = 0;
    int bits = 0;
    for (char c : s) {
        int v = val(c);
        if (v < 0) continue;
        acc = (acc << 6) | unsigned(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(std::uint8_t((acc >> bits) & 0xff));
        }
    }
    return out;
}

WsClient::WsClient() : raw_(std::make_unique<Raw>()) {}
WsClient::~WsClient() = default;

void WsClient::open(std::uint16_t port, const std::string& token) {
    auto& ws = raw_->ws;
    beast::get_lowest_layer(ws).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    ws.set_option(websocket::stream_base::decorator([token](websocket::request_type& r) {
        r.set(http::field::authorization, "Bearer " + token);
    }));
    ws.handshake("127.0.0.1", "/api/v1/stream");
}

json WsClient::read() {
    beast::flat_buffer b;
    raw_->ws.read(b);
    return json::parse(beast::buffers_to_string(b.data()));
}

void WsClient::send(const json& j) { raw_->ws.write(net::buffer(j.dump())); }

std::optional<json> WsClient::readFor(std::chrono::milliseconds timeout) {
    auto& [ioc, ws] = *raw_;
    beast::flat_buffer b;
    bool done = false;
    beast::error_code result;
    ws.async_read(b, [&](beast::error_code ec, std::size_t) {
        done = true;
        result = ec;
    });
    ioc.restart();
    ioc.run_for(timeout);
    if (!done) {
        beast::get_lowest_layer(ws).cancel();
        ioc.restart();
        ioc.run();  // let the cancelled read complete
        return std::nullopt;
    }
    if (result) return std::nullopt;
    return json::parse(beast::buffers_to_string(b.data()), nullptr, false);
}

}  // namespace loom::backend::testing
