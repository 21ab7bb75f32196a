// live_latency: how fast a change reaches the live views of a running loomd (issue 11).
//
//   live_latency --url 127.0.0.1:8480 --token loom_... --pid PID [--zone z1] [--repeats 50]
//
// 1. Phase: every rack of --zone is advanced to `validated` (six operator actions each), then
//    all of them are advanced to in_service at once (4 client threads). Measured: the time from
//    the first of those requests until GET /api/v1/hall shows every one in service AND the
//    stored link states follow (the fabric topology counts every uplink bundle of the zone up),
//    and loomd's CPU (cores, from /proc/PID/stat) over that interval.
// 2. Rack transition -> stream: drain / undrain one rack --repeats times; latency from sending
//    the request to the "inventory" stream message that announces the new stateVersion.
// 3. Link failure -> stream: a port-down sample on an in-service uplink; latency from sending
//    the telemetry to the link_down event on the stream (then the port comes back up).
// Prints one JSON line per part. The server-to-client path is real: HTTP and WebSocket over
// loopback, on this machine's clock.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "loom/client/client.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string gHost = "127.0.0.1", gPort = "8480", gToken;

struct Reply {
    int status = 0;
    std::string body;
};

// HTTP through loom::client (the API client loomctl uses); transport failures are status 0.
std::unique_ptr<loom::client::Client> gClient;

Reply call(const std::string& method, const std::string& target, const std::string& body = "",
           const std::string& contentType = "application/json") {
    loom::client::RequestOptions o;
    o.body = body;
    if (!body.empty()) o.contentType = contentType;
    auto r = gClient->send(method, target, std::move(o));
    if (!r) {
        std::cerr << method << " " << target << ": " << r.error().message << "\n";
        return {};
    }
    return {r->status, std::move(r->body)};
}

double cpuSeconds(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), {});
    auto close = s.rfind(')');
    std::istringstream in(s.substr(close + 2));
    std::string x;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15; ++i) {
        in >> x;
        if (i == 14) utime = std::stol(x);
        if (i == 15) stime = std::stol(x);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Reads the stream on its own thread and hands each message to the waiting side.
struct Stream {
    net::io_context ioc;
    websocket::stream<beast::tcp_stream> ws{ioc};
    std::mutex m;
    std::condition_variable cv;
    std::vector<std::pair<Clock::time_point, json>> inbox;
    std::thread reader;
    std::atomic<bool> stop{false};

    void open() {
        tcp::resolver res(ioc);
        beast::get_lowest_layer(ws).connect(res.resolve(gHost, gPort));
        ws.set_option(websocket::stream_base::decorator([](websocket::request_type& r) {
            r.set(http::field::authorization, "Bearer " + gToken);
        }));
        ws.handshake(gHost, "/api/v1/stream");
        ws.write(net::buffer(json{{"op", "subscribe"}, {"topics", {"inventory", "events"}}}.dump()));
        reader = std::thread([this] {
            while (!stop) {
                beast::flat_buffer b;
                beast::error_code ec;
                ws.read(b, ec);
                if (ec) return;
                auto j = json::parse(beast::buffers_to_string(b.data()), nullptr, false);
                std::lock_guard lk(m);
                inbox.emplace_back(Clock::now(), std::move(j));
                cv.notify_all();
            }
        });
    }
    void clear() {
        std::lock_guard lk(m);
        inbox.clear();
    }
    // The arrival time of the first message `want` accepts, or nullopt after 10 s.
    template <class F>
    std::optional<Clock::time_point> await(F want) {
        std::unique_lock lk(m);
        std::size_t seen = 0;
        auto deadline = Clock::now() + std::chrono::seconds(10);
        for (;;) {
            for (; seen < inbox.size(); ++seen)
                if (want(inbox[seen].second)) return inbox[seen].first;
            if (cv.wait_until(lk, deadline) == std::cv_status::timeout) return std::nullopt;
        }
    }
};

struct Stats {
    std::vector<double> ms;
    json toJson(const char* what) {
        std::sort(ms.begin(), ms.end());
        auto q = [&](double p) { return ms.empty() ? -1.0 : ms[std::min(ms.size() - 1, std::size_t(p * ms.size()))]; };
        return {{"what", what}, {"n", ms.size()}, {"p50_ms", q(0.5)}, {"p99_ms", q(0.99)},
                {"max_ms", ms.empty() ? -1.0 : ms.back()}};
    }
};

double msSince(Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    int pid = 0, repeats = 50;
    std::string zone = "z1";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--url") {
            auto c = v.rfind(':');
            gHost = v.substr(0, c);
            gPort = v.substr(c + 1);
        } else if (a == "--token") gToken = v;
        else if (a == "--pid") pid = std::stoi(v);
        else if (a == "--zone") zone = v;
        else if (a == "--repeats") repeats = std::stoi(v);
        else {
            std::cerr << "usage: live_latency --url HOST:PORT --token T --pid PID [--zone z1] [--repeats 50]\n";
            return 2;
        }
    }
    loom::client::ClientConfig cfg;
    cfg.server = "http://" + gHost + ":" + gPort;
    cfg.token = gToken;
    gClient = std::make_unique<loom::client::Client>(cfg);
    auto hall = json::parse(call("GET", "/api/v1/hall").body, nullptr, false);
    if (!hall.is_object()) {
        std::cerr << "live_latency: cannot read /api/v1/hall from " << cfg.server << "\n";
        return 1;
    }
    std::vector<std::string> racks;
    for (const auto& r : hall["racks"])
        if (r.value("zone", "") == zone && r.value("gpuCount", 0) > 0) racks.push_back(r["name"]);
    if (racks.empty()) {
        std::cerr << "live_latency: no compute racks in zone " << zone << "\n";
        return 1;
    }
    auto parallel = [&](const std::string& action) {
        std::atomic<std::size_t> next{0};
        std::atomic<int> bad{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < 4; ++t)
            ts.emplace_back([&] {
                for (std::size_t i; (i = next++) < racks.size();)
                    if (call("POST", "/api/v1/racks/" + racks[i] + "/" + action).status != 200) ++bad;
            });
        for (auto& t : ts) t.join();
        return bad.load();
    };

    // 1. The phase.
    for (int k = 0; k < 6; ++k)
        if (int bad = parallel("advance"); bad) std::cerr << "advance " << k << ": " << bad << " refused\n";
    const double cpu0 = pid ? cpuSeconds(pid) : 0;
    const auto t0 = Clock::now();
    int refused = parallel("advance");
    const auto sent = Clock::now();
    auto consistent = [&] {
        auto h = json::parse(call("GET", "/api/v1/hall").body, nullptr, false);
        std::size_t in = 0;
        for (const auto& r : h["racks"])
            if (r.value("zone", "") == zone && r.value("state", "") == "in_service") ++in;
        if (in < racks.size()) return false;
        auto topo = json::parse(call("GET", "/api/v1/fabric/topology").body, nullptr, false);
        for (const auto& b : topo["bundles"]) {
            const std::string a = b.value("a", "");
            if (a.rfind(zone + "-r", 0) == 0 && b.value("up", 0) != b.value("links", 0)) return false;
        }
        return true;
    };
    while (!consistent() && Clock::now() - t0 < std::chrono::seconds(30))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto t1 = Clock::now();
    const double cpu1 = pid ? cpuSeconds(pid) : 0;
    std::cout << json{{"what", "phase_into_service"},
                      {"racks", racks.size()},
                      {"refused", refused},
                      {"requests_ms", msSince(t0, sent)},
                      {"consistent_after_ms", msSince(t0, t1)},
                      {"loomd_cores", pid ? (cpu1 - cpu0) / std::chrono::duration<double>(t1 - t0).count() : -1}}
                     .dump()
              << std::endl;

    Stream s;
    s.open();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));

    // 2. Rack transition -> stream.
    Stats rack;
    const std::string r = racks[racks.size() / 2];
    for (int i = 0; i < repeats; ++i) {
        for (const char* action : {"drain", "advance", "advance"}) {  // draining, drained, in_service
            s.clear();
            const auto a = Clock::now();
            auto rep = call("POST", "/api/v1/racks/" + r + "/" + action);
            if (rep.status != 200) {
                std::cerr << r << " " << action << ": " << rep.status << " " << rep.body << "\n";
                return 1;
            }
            auto got = s.await([](const json& m) { return m.value("type", "") == "inventory" && m.contains("stateVersion"); });
            if (got) rack.ms.push_back(msSince(a, *got));
        }
    }
    std::cout << rack.toJson("rack_transition_to_stream").dump() << std::endl;

    // 3. Link failure -> stream (an RTSW uplink of an in-service rack).
    Stats link;
    const std::string sw = r + "-rtsw";
    for (int i = 0; i < repeats; ++i) {
        const std::string port = "p" + std::to_string(17 + i % 18);
        call("POST", "/api/v1/telemetry",
             "loom_port_oper_status{switch=\"" + sw + "\",port=\"" + port + "\"} 1\n", "text/plain");
        s.clear();
        const auto a = Clock::now();
        call("POST", "/api/v1/telemetry",
             "loom_port_oper_status{switch=\"" + sw + "\",port=\"" + port + "\"} 0\n", "text/plain");
        auto got = s.await([&](const json& m) {
            return m.value("type", "") == "event" && m["event"].value("kind", "") == "link_down" &&
                   m["event"].value("location", "").find(sw + "/" + port) != std::string::npos;
        });
        if (got) link.ms.push_back(msSince(a, *got));
        call("POST", "/api/v1/telemetry",
             "loom_port_oper_status{switch=\"" + sw + "\",port=\"" + port + "\"} 1\n", "text/plain");
    }
    std::cout << link.toJson("link_failure_to_stream").dump() << std::endl;
    s.stop = true;
    beast::error_code ec;
    beast::get_lowest_layer(s.ws).socket().shutdown(tcp::socket::shutdown_both, ec);
    s.reader.join();
    return 0;
}
