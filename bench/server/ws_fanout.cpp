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

#include <algorithm>
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
    std::mutex mu;
    std::vector<double> lat;
    std::atomic<long> frames{0}, bytes{0}, errors{0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&] {
            try {
                net::io_context ioc;
                tcp::resolver res(ioc);
                websocket::stream<beast::tcp_stream> ws(ioc);
                beast::get_lowest_layer(ws).connect(res.resolve(host, port));
                ws.set_option(websocket::stream_base::decorator([&](websocket::request_type& r) {
                    r.set(beast::http::field::authorization, "Bearer " + token);
                }));
                ws.handshake(host, "/api/v1/stream");
                ws.write(net::buffer(sub.dump()));
                std::vector<double> mine;
                beast::flat_buffer b;
                while (std::chrono::steady_clock::now() < deadline) {
                    beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(5));
                    b.clear();
                    ws.read(b);
                    auto now = std::chrono::duration<double, std::milli>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
                    std::string text = beast::buffers_to_string(b.data());
                    frames++;
                    bytes += long(text.size());
                    auto p = text.find("\"ts\":");
                    if (p != std::string::npos) mine.push_back(now - std::stod(text.substr(p + 5, 20)));
                }
                std::lock_guard l(mu);
                lat.insert(lat.end(), mine.begin(), mine.end());
            } catch (const std::exception& e) {
                errors++;
            }
        });
    }
    for (auto& t : threads) t.join();
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double q) { return lat.empty() ? 0.0 : lat[std::size_t(q * (lat.size() - 1))]; };
    nlohmann::json out{{"clients", clients},      {"seconds", seconds},
                       {"frames", frames.load()}, {"bytes", bytes.load()},
                       {"errors", errors.load()}, {"latencyMsP50", pct(0.5)},
                       {"latencyMsP99", pct(0.99)}, {"latencyMsMax", pct(1.0)}};
    std::cout << out.dump() << std::endl;
    return errors.load() ? 1 : 0;
}
