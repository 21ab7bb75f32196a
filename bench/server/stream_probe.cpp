// stream_probe: one WebSocket client of a running loomd's stream, for the frame sizes at scale
// (issue 14 item 5). Connects, subscribes to the data topics and reads for N seconds; prints
// one JSON line: the time from the upgrade request to the last first snapshot, each topic's
// snapshot size, and the steady state (message bytes per second, frames per tick). With
// --deflate it offers permessage-deflate (RFC 7692) as a browser does; `wireBytes` is what
// the socket received (TCP_INFO bytes_received), `messageBytes` the decoded frames.
//
//   stream_probe --url 127.0.0.1:8480 --token loom_... [--seconds 10] [--deflate]
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// Bytes the socket received so far (TCP_INFO), i.e. what came over the wire, compressed or
// not (tcp_bytes.cpp: the kernel's tcp_info, which glibc's header lacks the field of).
long long wireBytes(int fd);

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    std::string host = "127.0.0.1", port = "8480", token;
    int seconds = 10;
    bool deflate = false;
    std::string topics = "gpu.util,gpu.temp,gpu.health,link.util,link.health";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--deflate") {
            deflate = true;
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << "stream_probe: " << a << " needs a value\n";
            return 2;
        }
        std::string v = argv[++i];
        if (a == "--url") {
            auto c = v.rfind(':');
            host = v.substr(0, c);
            port = v.substr(c + 1);
        } else if (a == "--token")
            token = v;
        else if (a == "--seconds")
            seconds = std::stoi(v);
        else if (a == "--topics")
            topics = v;
        else {
            std::cerr << "stream_probe: unknown argument " << a << "\n";
            return 2;
        }
    }
    std::vector<std::string> asked;
    for (std::size_t s = 0, e; s <= topics.size(); s = e + 1) {
        e = topics.find(',', s);
        if (e == std::string::npos) e = topics.size();
        asked.push_back(topics.substr(s, e - s));
    }

    net::io_context ioc;
    websocket::stream<beast::tcp_stream> ws(ioc);
    tcp::resolver res(ioc);
    beast::get_lowest_layer(ws).connect(res.resolve(host, port));
    // One read with a time limit: asynchronous, the io_context run until `until` at most (a
    // blocking read would wait for ever on a loomd that sends nothing).
    auto readUntil = [&](beast::flat_buffer& b, std::chrono::steady_clock::time_point until) {
        beast::error_code ec = net::error::timed_out;
        bool done = false;
        ws.async_read(b, [&](beast::error_code e, std::size_t) {
            ec = e;
            done = true;
        });
        ioc.restart();
        ioc.run_until(until);
        if (!done) {
            beast::get_lowest_layer(ws).cancel();
            ioc.restart();
            ioc.run();
            ec = net::error::timed_out;
        }
        return ec;
    };
    const int fd = beast::get_lowest_layer(ws).socket().native_handle();
    if (deflate) {
        websocket::permessage_deflate pmd;
        pmd.client_enable = true;
        ws.set_option(pmd);
    }
    ws.set_option(websocket::stream_base::decorator([&](websocket::request_type& r) {
        r.set(beast::http::field::authorization, "Bearer " + token);
    }));
    ws.read_message_max(256u << 20);
    const long long bytes0 = wireBytes(fd);
    const auto t0 = std::chrono::steady_clock::now();
    websocket::response_type upgrade;
    ws.handshake(upgrade, host, "/api/v1/stream");
    const std::string extensions(upgrade[beast::http::field::sec_websocket_extensions]);
    // Subscribe to the asked topics this loomd offers (hello lists them; one it does not
    // know would be refused with an error frame).
    beast::flat_buffer helloBuf;
    if (auto ec = readUntil(helloBuf, t0 + std::chrono::seconds(10))) {
        std::cerr << "stream_probe: no hello: " << ec.message() << "\n";
        return 1;
    }
    auto hello = nlohmann::json::parse(beast::buffers_to_string(helloBuf.data()), nullptr, false);
    nlohmann::json sub{{"op", "subscribe"}, {"topics", nlohmann::json::array()}};
    for (const auto& t : asked)
        if (hello.is_object() && hello.contains("topics") &&
            std::find(hello["topics"].begin(), hello["topics"].end(), t) != hello["topics"].end())
            sub["topics"].push_back(t);
    const std::size_t wanted = sub["topics"].size();
    ws.write(net::buffer(sub.dump()));

    std::map<std::string, long long> snapshotBytes;
    double allSnapshotsMs = -1;
    long long snapshotWire = -1;
    long long frames = 0, messageBytes = 0, steadyFrames = 0, steadyMessageBytes = 0;
    long long steadyWire0 = 0;
    std::chrono::steady_clock::time_point steady0;
    const auto deadline = t0 + std::chrono::seconds(seconds);
    beast::flat_buffer buf;
    while (std::chrono::steady_clock::now() < deadline) {
        buf.clear();
        auto ec = readUntil(buf, deadline);
        if (ec == net::error::timed_out) break;
        if (ec) {
            std::cerr << "stream_probe: " << ec.message() << "\n";
            break;
        }
        ++frames;
        messageBytes += static_cast<long long>(buf.size());
        std::string_view text(static_cast<const char*>(buf.cdata().data()), buf.size());
        auto head = text.substr(0, 200);
        if (allSnapshotsMs < 0) {
            if (head.find("\"type\":\"snapshot\"") != std::string_view::npos) {
                auto p = head.find("\"topic\":\"");
                if (p != std::string_view::npos) {
                    auto q = head.find('"', p + 9);
                    snapshotBytes.emplace(std::string(head.substr(p + 9, q - p - 9)),
                                          static_cast<long long>(text.size()));
                }
                if (snapshotBytes.size() == wanted) {
                    allSnapshotsMs = msSince(t0);
                    snapshotWire = wireBytes(fd) - bytes0;
                    steady0 = std::chrono::steady_clock::now();
                    steadyWire0 = wireBytes(fd);
                }
            }
            continue;
        }
        ++steadyFrames;
        steadyMessageBytes += static_cast<long long>(text.size());
    }
    const double steadyS = allSnapshotsMs < 0 ? 0 : msSince(steady0) / 1000.0;
    const long long steadyWire = allSnapshotsMs < 0 ? 0 : wireBytes(fd) - steadyWire0;
    nlohmann::json out{{"deflate", deflate},
                       {"topics", sub["topics"]},
                       {"extensions", extensions},
                       {"connectToAllSnapshotsMs", allSnapshotsMs},
                       {"snapshotMessageBytes", snapshotBytes},
                       {"snapshotWireBytes", snapshotWire},
                       {"frames", frames},
                       {"messageBytes", messageBytes},
                       {"steadySeconds", steadyS},
                       {"steadyFrames", steadyFrames},
                       {"steadyMessageBytesPerS", steadyS > 0 ? steadyMessageBytes / steadyS : 0},
                       {"steadyWireBytesPerS", steadyS > 0 ? steadyWire / steadyS : 0}};
    std::cout << out.dump() << std::endl;
    return allSnapshotsMs < 0 ? 1 : 0;
}
