// ws_fanout: N WebSocket clients subscribe to the data topics of a running loomd and measure
// the server-to-client latency of every data frame (client receive time - the frame's "ts",
// same machine clock). Prints one JSON line of results.
//
//   ws_fanout --url 127.0.0.1:8480 --token loom_... --clients 100 --seconds 30
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string_view>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

int main(int argc, char** argv) {
    std::string host = "127.0.0.1", port = "8480", token;
    int clients = 100, seconds = 30;
    std::string topics = "gpu.util,gpu.health,link.util,link.health";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--url") {
            auto c = v.rfind(':');
            host = v.substr(0, c);
            port = v.substr(c + 1);
        } else if (a == "--token") token = v;
        else if (a == "--clients") clients = std::stoi(v);
        else if (a == "--seconds") seconds = std::stoi(v);
        else if (a == "--topics") topics = v;
    }
    nlohmann::json sub{{"op", "subscribe"}, {"topics", nlohmann::json::array()}};
    for (std::size_t s = 0, e; s <= topics.size(); s = e + 1) {
        e = topics.find(',', s);
        if (e == std::string::npos) e = topics.size();
        sub["topics"].push_back(topics.substr(s, e - s));
    }
    // All clients on ONE thread with asynchronous reads: on a 2-core machine 100 reader threads
    // would measure the scheduler (each frame waking a thread) more than loomd. A real console
    // is on another machine; this is the leanest stand-in for 100 of them.
    std::vector<double> lat;
    long frames = 0, bytes = 0, errors = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    net::io_context ioc;
    struct Client {
        explicit Client(net::io_context& io) : ws(io) {}
        websocket::stream<beast::tcp_stream> ws;
        beast::flat_buffer buf;
    };
    std::vector<std::unique_ptr<Client>> all;
    auto measureFrom = deadline;  // set once every client is connected and subscribed
    const std::string subText = sub.dump();
    std::function<void(Client&)> readNext = [&](Client& c) {
        c.buf.clear();
        c.ws.async_read(c.buf, [&, cp = &c](beast::error_code ec, std::size_t n) {
            if (ec) {
                if (std::chrono::steady_clock::now() < deadline) ++errors;
                return;
            }
            const double now = std::chrono::duration<double, std::milli>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
            ++frames;
            bytes += long(n);
            // Frames that waited in the socket while the other clients were still connecting
            // (connects are synchronous, before the reads start) would measure this client.
            if (std::chrono::steady_clock::now() < measureFrom) {
                if (std::chrono::steady_clock::now() < deadline) readNext(*cp);
                return;
            }
            // "ts" is near the front of every data frame: scan only the first bytes.
            auto data = cp->buf.cdata();
            std::string_view head(static_cast<const char*>(data.data()), std::min<std::size_t>(data.size(), 160));
            if (auto p = head.find("\"ts\":"); p != std::string_view::npos)
                lat.push_back(now - std::strtod(std::string(head.substr(p + 5, 20)).c_str(), nullptr));
            if (std::chrono::steady_clock::now() < deadline) readNext(*cp);
            else beast::get_lowest_layer(cp->ws).cancel();
        });
    };
    tcp::resolver res(ioc);
    auto endpoints = res.resolve(host, port);
    for (int c = 0; c < clients; ++c) {
        auto cl = std::make_unique<Client>(ioc);
        try {
            beast::get_lowest_layer(cl->ws).connect(endpoints);
            cl->ws.set_option(websocket::stream_base::decorator([&](websocket::request_type& r) {
                r.set(beast::http::field::authorization, "Bearer " + token);
            }));
            cl->ws.handshake(host, "/api/v1/stream");
            cl->ws.write(net::buffer(subText));
        } catch (const std::exception&) {
            ++errors;
            continue;
        }
        all.push_back(std::move(cl));
    }
    measureFrom = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (auto& c : all) readNext(*c);
    net::steady_timer stop(ioc, deadline + std::chrono::milliseconds(100));
    stop.async_wait([&](beast::error_code) {
        for (auto& c : all) beast::get_lowest_layer(c->ws).cancel();
    });
    ioc.run();
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double q) { return lat.empty() ? 0.0 : lat[std::size_t(q * (lat.size() - 1))]; };
    nlohmann::json out{{"clients", clients},      {"seconds", seconds},
                       {"frames", frames}, {"bytes", bytes},
                       {"errors", errors}, {"latencyMsP50", pct(0.5)},
                       {"latencyMsP99", pct(0.99)}, {"latencyMsMax", pct(1.0)}};
    std::cout << out.dump() << std::endl;
    return errors ? 1 : 0;
}
