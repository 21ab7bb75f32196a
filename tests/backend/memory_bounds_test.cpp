// Issue 39 item 4: no request of any role raises loomd's RSS by more than 64 MB or leaves memory
// behind. Each route's worst body (16 KB hostlists, 2 KB Slurm bodies, 10^4 made-up method
// names, 10^4 WebSocket subscribe frames) is sent to a real Server over the real PostgreSQL of
// the harness, in this process: its peak (VmHWM, reset through /proc/self/clear_refs before
// each case) and its resident set afterwards are read from /proc/self/status.
#include <malloc.h>

#include <boost/asio/write.hpp>
#include <cstdio>
#include <fstream>
#include <thread>

#include "beast_client.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

constexpr long kPeakBoundKb = 64 * 1024;  // the issue's bound per request
// What may stay: allocated (a holder) at most 16 MB; resident after a trim at most 32 MB (the
// largest job leaves ~6 MB allocated in the jobs view and the replay buffer, ~15 MB resident).
constexpr long kRetainedBoundKb = 16 * 1024;
constexpr long kResidentBoundKb = 32 * 1024;

// Under ASan the resident set holds the shadow memory and the allocator's quarantine of freed
// blocks (256 MB by default), and malloc_trim/mallinfo2 do not see ASan's allocator: a bound in
// bytes there measures ASan, not loomd. The sanitizer stage still runs every route's worst body
// through these tests for memory errors; the byte bounds are checked by the main suite.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

// A bound in bytes: checked unless under ASan (above).
#define EXPECT_WITHIN_BOUND(value, bound) \
    if (kUnderAsan) {                     \
    } else                                \
        EXPECT_LT(value, bound)

long statusKb(const char* key) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key)));
    return -1;
}

// What one case cost this process (the server is in it): the peak above the resident set at
// the start, and what stays resident at the end.
// The test's own client shares the process, so what stays resident is read after a
// malloc_trim here (loomd trims after big requests itself); what is still allocated (mallinfo2)
// is what a holder keeps.
struct Cost {
    long peakKb = 0, retainedKb = 0, inUseKb = 0;
};

template <class F>
Cost measure(F&& f) {
    ::malloc_trim(0);                               // the baseline without what earlier cases freed
    std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS
    const long before = statusKb("VmRSS:");
    const long inUseBefore = long(::mallinfo2().uordblks / 1024);
    f();
    Cost c;
    c.peakKb = statusKb("VmHWM:") - before;
    c.inUseKb = long(::mallinfo2().uordblks / 1024) - inUseBefore;
    ::malloc_trim(0);
    c.retainedKb = statusKb("VmRSS:") - before;
    std::printf("  peak +%ld kB, resident after +%ld kB, malloc in use +%ld kB\n", c.peakKb,
                c.retainedKb, c.inUseKb);
    EXPECT_WITHIN_BOUND(c.inUseKb, kRetainedBoundKb) << "still allocated after the case";
    return c;
}

class MemoryBounds : public ServerFixture {};

// PUT /api/v1/jobs/<name>: a 16 KB hostlist document (16,000 characters times [1-65536]) grew
// loomd to 1 GB before it was refused; a 4 KB one stored a 64 MB job. Both are refused now before
// any name is built, naming the column; the largest job a document may hold is taken and listed
// without growing loomd past the bound.
TEST_F(MemoryBounds, JobHostlistsAreBoundedInBytesBeforeExpansion) {
    auto& s = startServer({}, Routes::All);
    auto doc = [](const std::string& hosts) {
        return "apiVersion: loom/v1\nkind: Job\nmetadata: {name: big}\nspec:\n  owner: mallory\n"
               "  hosts: \"" +
               hosts + "\"\n";
    };
    const std::string yaml = "application/yaml";
    for (auto [literal, range] : {std::pair{16'000, "[1-65536]"}, std::pair{4'000, "[1-16384]"}}) {
        HttpResult r;
        auto cost = measure([&] {
            r = request(s.port(), "PUT", "/api/v1/jobs/big", tokens_["operator"],
                        doc(std::string(literal, 'a') + range), {{"Content-Type", yaml}});
        });
        EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
        EXPECT_EQ(r.j()["error"].value("path", ""), "spec.hosts") << r.body.substr(0, 300);
        EXPECT_NE(r.body.find("more than 128 characters"), std::string::npos)
            << r.body.substr(0, 300);
        EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb)
            << literal << " characters: peak +" << cost.peakKb;
        EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb)
            << literal << ": retained +" << cost.retainedKb;
    }
    // Too many hosts for a job: refused by the count, before expansion.
    auto many = request(s.port(), "PUT", "/api/v1/jobs/big", tokens_["operator"], doc("h[1-16385]"),
                        {{"Content-Type", yaml}});
    EXPECT_EQ(many.status, 413) << many.body;
    EXPECT_NE(many.body.find("more than 16384 hosts"), std::string::npos) << many.body;

    // The largest job a document may name: 16,384 hosts of 128 characters (2 MB of names).
    // Stored, then listed by a viewer: within the bound, and nothing stays behind.
    const std::string longest = std::string(123, 'h') + "[00001-16384]";
    HttpResult put, list;
    auto cost = measure([&] {
        put = request(s.port(), "PUT", "/api/v1/jobs/big", tokens_["operator"], doc(longest),
                      {{"Content-Type", yaml}});
        list = request(s.port(), "GET", "/api/v1/jobs", tokens_["viewer"]);
        put.body.clear();
        put.body.shrink_to_fit();
    });
    ASSERT_EQ(put.status, 201);
    ASSERT_EQ(list.status, 200) << list.body.substr(0, 300);
    EXPECT_EQ(list.j()["items"][0]["hostCount"], 16384);
    list.body.clear();
    list.body.shrink_to_fit();
    EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb) << "largest job: peak +" << cost.peakKb << " kB";
    EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb)
        << "largest job: retained +" << cost.retainedKb;
}

// POST /api/v1/jobs/sync/slurm: a 2 KB body stored 134 MB of names; an 8 MB body cost +167 MB
// before its 400. Now: host names at most 128 characters, a job at most 16,384 hosts, an output
// at most 131,072 hosts of 4 MiB together, and only the six fields read are kept while parsing
// (at most 200,000 values).
TEST_F(MemoryBounds, SlurmSyncBodiesAreBoundedWhileParsing) {
    auto& s = startServer({}, Routes::All);
    auto sync = [&](const std::string& body) {
        return request(s.port(), "POST", "/api/v1/jobs/sync/slurm", tokens_["operator"], body,
                       {{"Content-Type", "application/json"}});
    };
    auto job = [](int id, const std::string& nodes) {
        return R"({"job_id": )" + std::to_string(id) +
               R"(, "name": "x", "user_name": "u", "job_state": "RUNNING", "nodes": ")" + nodes +
               "\"}";
    };
    // 2 KB: one job of 65,536 names of ~2,000 characters.
    {
        HttpResult r;
        auto cost = measure([&] {
            r = sync(R"({"jobs": [)" + job(1, std::string(1'990, 'n') + "[1-65536]") + "]}");
        });
        EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
        EXPECT_EQ(r.j()["error"].value("path", ""), "jobs[0].nodes") << r.body.substr(0, 300);
        EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb) << "2 KB body: peak +" << cost.peakKb;
        EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb);
    }
    // ~2 KB: 20 jobs of 16,384 names of 128 characters each (each job is within its own limit;
    // together they pass the output's).
    {
        std::string body = R"({"jobs": [)";
        for (int i = 0; i < 20; ++i)
            body += (i ? "," : "") + job(i + 1, std::string(122, 'n') + "[00001-16384]");
        body += "]}";
        HttpResult r;
        auto cost = measure([&] { r = sync(body); });
        EXPECT_EQ(r.status, 413) << r.body.substr(0, 300);
        EXPECT_NE(r.body.find("in all"), std::string::npos) << r.body.substr(0, 300);
        EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb) << "20 jobs: peak +" << cost.peakKb;
        EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb);
    }
    // 8 MB of values in a field that is not read: skipped while parsing, nothing kept.
    {
        std::string body = R"({"jobs": [{"job_id": 7, "flags": [)";
        while (body.size() < (std::size_t{8} << 20) - 100) body += "1,";
        body += R"(1], "job_state": "PENDING"}]})";
        HttpResult r;
        auto cost = measure([&] { r = sync(body); });
        EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
        body.clear();
        body.shrink_to_fit();
        EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb) << "8 MB body: peak +" << cost.peakKb;
        EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb);
    }
    // 8 MB of values that are kept: the value limit of every body, before the tree is built.
    {
        std::string body = R"({"jobs": [)";
        for (int i = 0; body.size() < (std::size_t{8} << 20) - 100; ++i) body += (i ? ",{}" : "{}");
        body += "]}";
        HttpResult r;
        auto cost = measure([&] { r = sync(body); });
        EXPECT_EQ(r.status, 413) << r.body.substr(0, 300);
        EXPECT_NE(r.body.find("200000 JSON values"), std::string::npos) << r.body.substr(0, 300);
        body.clear();
        body.shrink_to_fit();
        EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb) << "8 MB of values: peak +" << cost.peakKb;
        EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb);
    }
}

// 10^4 requests with made-up method names, without a token, made 10^4 series of
// loom_http_requests_total (/metrics 120 MB, +115 MB RSS). Every label is from a closed set: the
// made-up methods are one "other" series.
TEST_F(MemoryBounds, MadeUpMethodsAreOneMetricSeries) {
    auto& s = startServer({}, Routes::All);
    constexpr int kRequests = 10'000, kConnections = 10;
    auto cost = measure([&] {
        // Pipelined on a few keep-alive connections: 10^4 requests in well under a second.
        std::vector<std::thread> senders;
        for (int c = 0; c < kConnections; ++c)
            senders.emplace_back([&, c] {
                net::io_context ioc;
                tcp::socket sock(ioc);
                sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
                std::string out;
                const int n = kRequests / kConnections;
                for (int i = 0; i < n; ++i)
                    out += "X" + std::to_string(c * n + i) +
                           "Y /api/v1/racks HTTP/1.1\r\nHost: x\r\n" +
                           (i + 1 == n ? "Connection: close\r\n" : "") + "\r\n";
                net::write(sock, net::buffer(out));
                beast::error_code ec;
                char buf[65536];
                while (!ec) sock.read_some(net::buffer(buf), ec);
            });
        for (auto& t : senders) t.join();
    });
    auto metrics = request(s.port(), "GET", "/metrics", tokens_["viewer"]);
    ASSERT_EQ(metrics.status, 200);
    // The paths are known, their methods not: a 405 each, all on one series.
    std::size_t methodSeries = 0;
    for (std::size_t at = 0;
         (at = metrics.body.find("loom_http_requests_total{", at)) != std::string::npos; ++at)
        ++methodSeries;
    EXPECT_LT(methodSeries, 20u) << "series of loom_http_requests_total";
    EXPECT_EQ(metrics.body.find("method=\"X1Y\""), std::string::npos);
    EXPECT_NE(metrics.body.find("route=\"unmatched\",method=\"other\",code=\"405\"} " +
                                std::to_string(kRequests)),
              std::string::npos)
        << metrics.body.substr(0, 2000);
    EXPECT_LT(metrics.body.size(), 64u * 1024) << "/metrics bytes";
    EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb) << "peak +" << cost.peakKb;
    EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb) << "retained +" << cost.retainedKb;
}

// 20 WebSocket connections flooding subscribe frames were cut correctly but left +335 MB: each
// subscribe queued a new copy of every topic's snapshot. Now a subscribe replaces the queued
// frames of its topics. 10^4 subscribe frames (20 x 500, every topic each): within the bound,
// and released on close.
TEST_F(MemoryBounds, SubscribeFloodsAreReleasedOnClose) {
    auto& s = startServer({}, Routes::All);
    constexpr int kClients = 20, kFrames = 500;
    std::string token = tokens_["viewer"];
    // The topic list from a hello: every data topic and every message topic.
    json topics;
    {
        WsClient probe;
        probe.open(s.port(), token);
        topics = probe.read()["topics"];
        for (auto t : {"events", "provisioning", "inventory", "phase", "jobs"}) topics.push_back(t);
    }
    const std::string frame = json{{"op", "subscribe"}, {"topics", topics}}.dump();
    auto cost = measure([&] {
        std::vector<std::thread> clients;
        for (int c = 0; c < kClients; ++c)
            clients.emplace_back([&] {
                net::io_context ioc;
                websocket::stream<beast::tcp_stream> ws(ioc);
                beast::error_code ec;
                beast::get_lowest_layer(ws).connect(
                    tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()), ec);
                if (ec) return;
                ws.set_option(websocket::stream_base::decorator([&](websocket::request_type& r) {
                    r.set(http::field::authorization, "Bearer " + token);
                }));
                ws.handshake("127.0.0.1", "/api/v1/stream", ec);
                if (ec) return;
                // Flood without reading: each subscribe replaces the snapshots still queued, so
                // the queue stays one snapshot per topic. Then close (reading what is queued).
                for (int i = 0; i < kFrames && !ec; ++i) ws.write(net::buffer(frame), ec);
                if (!ec) ws.close(websocket::close_code::normal, ec);
            });
        for (auto& t : clients) t.join();
        // Closed on the server's side too.
        EXPECT_TRUE(loom::testing::eventually(
            [&] {
                return request(s.port(), "GET", "/metrics", tokens_["viewer"])
                           .body.find("loom_ws_clients 0") != std::string::npos;
            },
            10s));
    });
    EXPECT_WITHIN_BOUND(cost.peakKb, kPeakBoundKb) << "peak +" << cost.peakKb << " kB";
    EXPECT_WITHIN_BOUND(cost.retainedKb, kResidentBoundKb)
        << "retained +" << cost.retainedKb << " kB";
}

}  // namespace
}  // namespace loom::backend::testing
