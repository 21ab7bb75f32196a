// Exporter scraping: loomd pulls DCGM text from exporter URLs into the hub (an XID served by a
// fake exporter becomes a stored event); a hanging target times out and a target serving
// garbage is reported down, neither delaying the good one. Config errors name path and line.
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "loom/backend/scraper.hpp"
#include "beast_client.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

// A loopback HTTP server answering every request with `body` (or never, when hang).
class FakeExporter {
public:
    FakeExporter(std::string body, bool hang = false)
        : body_(std::move(body)),
          hang_(hang),
          acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeExporter() {
        stop_ = true;
        beast::error_code ec;
        // close() does not wake a thread blocked in accept(): a connection does.
        net::io_context wake;
        tcp::socket poke(wake);
        poke.connect(acceptor_.local_endpoint(), ec);
        poke.close(ec);  // a serving exporter's read then ends at once
        thread_.join();
        acceptor_.close(ec);
        for (auto& s : held_) s.close(ec);
    }
    std::string url() const {
        return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/metrics";
    }
    int served() const { return served_; }

private:
    void serve() {
        while (!stop_) {
            tcp::socket sock(ioc_);
            beast::error_code ec;
            acceptor_.accept(sock, ec);
            if (ec) return;
            if (hang_) {
                held_.push_back(std::move(sock));  // never answers
                continue;
            }
            beast::flat_buffer buf;
            http::request<http::string_body> req;
            http::read(sock, buf, req, ec);
            if (ec) continue;
            http::response<http::string_body> res{http::status::ok, 11};
            res.set(http::field::content_type, "text/plain; version=0.0.4");
            res.body() = body_;
            res.prepare_payload();
            http::write(sock, res, ec);
            ++served_;
        }
    }
    std::string body_;
    bool hang_;
    net::io_context ioc_;
    tcp::acceptor acceptor_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<int> served_{0};
    std::vector<tcp::socket> held_;
};

class Scrape : public ServerFixture {};

TEST_F(Scrape, ExporterTextReachesTheHubAndBadTargetsAreIsolated) {
    auto& s = startServer({}, Routes::All);
    ASSERT_NE(s.services().hub(), nullptr);
    FakeExporter good(
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",Hostname=\"z1-r001-h0\"} 88\n"
        "DCGM_FI_DEV_XID_ERRORS{gpu=\"2\",Hostname=\"z1-r001-h0\"} 79\n");
    FakeExporter hanging("", /*hang=*/true);
    FakeExporter garbage("this is { not prometheus text\n");
    Scraper scraper(*s.services().hub(),
                    {{.url = good.url(), .interval = 200ms, .timeout = 500ms},
                     {.url = hanging.url(), .interval = 200ms, .timeout = 300ms},
                     {.url = garbage.url(), .interval = 200ms, .timeout = 500ms},
                     {.url = "http://127.0.0.1:1/metrics", .interval = 200ms, .timeout = 300ms}});
    scraper.start();

    // The XID from the good exporter becomes a stored event.
    bool found = false;
    for (int i = 0; i < 100 && !found; ++i) {
        auto r =
            request(s.port(), "GET", "/api/v1/events?location=z1-r001-h0-gpu2", tokens_["viewer"]);
        found = r.status == 200 && r.j()["items"].size() == 1;
        if (!found) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(found) << "the scraped XID never became an event";
    // The hanging target did not hold the good one back: it was scraped many times meanwhile.
    std::this_thread::sleep_for(1s);
    EXPECT_GE(good.served(), 4);

    std::string metrics;
    scraper.appendMetrics(metrics);
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"" + good.url() + "\"} 1"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"" + hanging.url() + "\"} 0"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"" + garbage.url() + "\"} 0"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"http://127.0.0.1:1/metrics\"} 0"),
              std::string::npos)
        << metrics;
    // The hub's view through the server's /metrics too (the scraper is not registered there in
    // this test; loomd serve registers it).
    auto started = std::chrono::steady_clock::now();
    scraper.stop();  // waits for in-flight scrapes: at most one timeout
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

// A template's interval (`intervalMs` in telemetry.targets) is its targets' own: a switch walked
// every 5 s beside a host scraped every 200 ms, on one scraper. Pages are ingested on the
// scraper's second thread and still land (samples counted per target).
TEST_F(Scrape, EachTargetKeepsItsTemplatesInterval) {
    auto& s = startServer({}, Routes::All);
    FakeExporter host("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 55\n");
    FakeExporter sw("ifOperStatus{ifIndex=\"3\",ifName=\"swp3\"} 1\n");
    Scraper scraper(*s.services().hub(), {}, {.interval = 200ms, .timeout = 1s});
    scraper.setTargets({{.kind = ExporterKind::Dcgm, .entity = "z1-r001-h0", .url = host.url()},
                        {.kind = ExporterKind::Snmp,
                         .entity = "z1-r001-rtsw",
                         .url = sw.url(),
                         .interval = 5000ms}});
    scraper.start();
    std::this_thread::sleep_for(2500ms);
    auto rows = scraper.status();
    scraper.stop();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_GE(rows[0].scrapes, 6u) << "the dcgm target at the scraper's 200 ms";
    EXPECT_EQ(rows[0].samples, 1u);
    EXPECT_TRUE(rows[0].up) << rows[0].lastError;
    EXPECT_LE(rows[1].scrapes, 1u) << "the snmp target at its template's 5 s";
    EXPECT_GE(host.served(), 6);
    EXPECT_LE(sw.served(), 2);  // one scrape (and its one retry on a fresh connection)
    auto gpu =
        request(s.port(), "GET", "/api/v1/telemetry/gpus/z1-r001-h0-gpu1", tokens_["viewer"]);
    EXPECT_EQ(gpu.j()["util"], 55.0) << gpu.body;
}

// An exporter farm on one loopback port: the page depends on the request's `?host=` or
// `?target=` (what the target templates put there), connections are kept alive (one thread
// per connection), and it counts connections and requests per entity.
class FarmExporter {
public:
    using Page = std::function<std::string(const std::string& entity)>;
    explicit FarmExporter(Page page)
        : page_(std::move(page)),
          acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
        thread_ = std::thread([this] { accept(); });
    }
    ~FarmExporter() {
        stop_ = true;
        beast::error_code ec;
        net::io_context wake;
        tcp::socket poke(wake);
        poke.connect(acceptor_.local_endpoint(), ec);
        poke.close(ec);
        thread_.join();
        {
            std::lock_guard lk(mutex_);
            for (auto* s : open_) s->shutdown(tcp::socket::shutdown_both, ec);
        }
        for (auto& t : conns_) t.join();
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    int connections() const { return connections_; }
    int requests(const std::string& entity) const {
        std::lock_guard lk(mutex_);
        auto it = requests_.find(entity);
        return it == requests_.end() ? 0 : it->second;
    }
    int totalRequests() const {
        std::lock_guard lk(mutex_);
        int n = 0;
        for (const auto& [k, v] : requests_) n += v;
        return n;
    }

private:
    void accept() {
        while (!stop_) {
            tcp::socket sock(ioc_);
            beast::error_code ec;
            acceptor_.accept(sock, ec);
            if (ec || stop_) return;
            ++connections_;
            conns_.emplace_back([this, s = std::move(sock)]() mutable { serve(s); });
        }
    }
    void serve(tcp::socket& sock) {
        {
            std::lock_guard lk(mutex_);
            open_.insert(&sock);
        }
        beast::flat_buffer buf;
        while (!stop_) {
            http::request<http::string_body> req;
            beast::error_code ec;
            http::read(sock, buf, req, ec);
            if (ec) break;
            std::string target(req.target());
            std::string entity;
            for (const char* key : {"host=", "target="})
                if (auto at = target.find(key); at != std::string::npos) {
                    entity = target.substr(at + std::strlen(key));
                    entity = entity.substr(0, entity.find('&'));
                }
            {
                std::lock_guard lk(mutex_);
                ++requests_[entity];
            }
            http::response<http::string_body> res{http::status::ok, 11};
            res.set(http::field::content_type, "text/plain; version=0.0.4");
            res.body() = page_(entity);
            res.keep_alive(req.keep_alive());
            res.prepare_payload();
            http::write(sock, res, ec);
            if (ec || !req.keep_alive()) break;
        }
        std::lock_guard lk(mutex_);
        open_.erase(&sock);
    }
    Page page_;
    net::io_context ioc_;
    tcp::acceptor acceptor_;
    std::thread thread_;
    std::vector<std::thread> conns_;
    std::atomic<bool> stop_{false};
    std::atomic<int> connections_{0};
    mutable std::mutex mutex_;
    std::map<std::string, int> requests_;
    std::set<tcp::socket*> open_;
};

// telemetry.targets expanded over the live inventory: the hosts of racks in service are
// scraped (dcgm and node templates), their pages carry no Hostname and land on the target's
// host; an snmp_exporter-style page (ifName only) lands on the target's switch and a port
// down there opens link_down on its link; a drained rack's targets stop; per-target status in
// GET /api/v1/telemetry/targets, sums per kind in /metrics; keep-alive connections.
TEST_F(Scrape, TemplatedTargetsFollowTheInventoryAndPagesTakeTheTargetsIdentity) {
    ASSERT_TRUE(connect().exec("UPDATE racks SET state = 'in_service'"));
    FarmExporter farm([](const std::string& entity) {
        if (entity.find("rtsw") != std::string::npos)  // snmp_exporter 0.21's IF-MIB page
            return std::string(
                       "# HELP ifOperStatus The current operational state of the interface. - "
                       "1.3.6.1.2.1.2.2.1.8\n"
                       "# TYPE ifOperStatus gauge\n"
                       "ifOperStatus{ifAlias=\"\",ifDescr=\"swp3\",ifIndex=\"5\",ifName=\"swp3\"}"
                       " ") +
                   (entity == "z1-r003-rtsw" ? "2" : "1") + "\n";
        // dcgm-exporter without Hostname (e.g. run with --no-hostname): identity from the target.
        std::string page =
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
        for (int g = 0; g < 8; ++g)
            page += "DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(g) + "\",device=\"nvidia" +
                    std::to_string(g) + "\"} 77\n";
        if (entity == "z1-r002-h1")
            page += "DCGM_FI_DEV_XID_ERRORS{gpu=\"6\",device=\"nvidia6\"} 79\n";
        return page;
    });
    const std::string base = "http://127.0.0.1:" + std::to_string(farm.port());
    targetTemplates_.dcgm = base + "/metrics?host={host}";
    targetTemplates_.snmp = "http://{exporter}/snmp?target={switch}&module=if_mib";
    targetTemplates_.snmpExporter = "127.0.0.1:" + std::to_string(farm.port());
    scrapeOptions_.interval = 200ms;
    scrapeOptions_.timeout = 2s;
    scrapeOptions_.maxInFlight = 4;
    auto& s = startServer({}, Routes::All);
    const auto viewer = tokens_["viewer"];
    auto targets = [&](const std::string& q) {
        auto r = request(s.port(), "GET", "/api/v1/telemetry/targets" + q, viewer);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.j();
    };

    // 8 hosts (dcgm) + every switch (snmp), all up.
    ASSERT_TRUE(
        loom::testing::eventually([&] { return targets("?kind=dcgm&up=true")["total"] == 8; }, 10s))
        << targets("").dump(1);
    auto sw = targets("?kind=snmp");
    ASSERT_GE(sw["total"].get<int>(), 5) << sw.dump(1);
    ASSERT_TRUE(loom::testing::eventually([&] { return targets("?up=false")["total"] == 0; }, 10s))
        << targets("?up=false").dump(1);
    auto h = targets("?entity=z1-r002-h1")["items"];
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0]["kind"], "dcgm");
    EXPECT_EQ(h[0]["url"], base + "/metrics?host=z1-r002-h1");
    EXPECT_EQ(h[0]["samples"], 9);
    EXPECT_EQ(h[0]["lastError"], "");

    // The pages named no host: the GPUs are the target's.
    auto gpu = [&](const std::string& name) {
        return request(s.port(), "GET", "/api/v1/telemetry/gpus/" + name, viewer).j();
    };
    EXPECT_EQ(gpu("z1-r004-h0-gpu7")["util"], 77.0);
    ASSERT_TRUE(loom::testing::eventually(
        [&] {
            auto r = request(s.port(), "GET", "/api/v1/events?kind=gpu_xid&state=open", viewer).j();
            return r["items"].size() == 1 && r["items"][0]["location"] == "z1-r002-h1-gpu6";
        },
        10s));
    // The IF-MIB page named no switch: swp3 of z1-r003-rtsw is its port 3, its link is down.
    ASSERT_TRUE(loom::testing::eventually(
        [&] {
            auto r =
                request(s.port(), "GET", "/api/v1/events?kind=link_down&state=open", viewer).j();
            return r["items"].size() == 1 && r["items"][0]["location"].get<std::string>().find(
                                                 "z1-r003-rtsw/p3") != std::string::npos;
        },
        10s))
        << request(s.port(), "GET", "/api/v1/events", viewer).body;

    // Keep-alive: far fewer connections than requests.
    std::this_thread::sleep_for(1s);
    EXPECT_GT(farm.totalRequests(), 3 * farm.connections())
        << farm.totalRequests() << " requests over " << farm.connections() << " connections";

    // /metrics sums per kind.
    std::string m;  // loomd serve adds these to /metrics (a metrics source)
    scrapers_.back()->appendMetrics(m);
    EXPECT_NE(m.find("loom_scrape_targets{kind=\"dcgm\"} 8"), std::string::npos) << m;
    EXPECT_NE(m.find("loom_scrape_targets_up{kind=\"dcgm\"} 8"), std::string::npos) << m;
    EXPECT_NE(m.find("loom_scrape_targets{kind=\"node\"} 0"), std::string::npos) << m;

    // Drain z1-r001: its hosts and RTSW leave the targets, and are no longer asked.
    auto act = [&](const std::string& what) {
        return request(s.port(), "POST", "/api/v1/racks/z1-r001/" + what, tokens_["operator"],
                       "{}");
    };
    ASSERT_EQ(act("drain").status, 200);
    ASSERT_EQ(act("advance").status, 200);  // draining -> drained
    ASSERT_TRUE(loom::testing::eventually([&] { return targets("?kind=dcgm")["total"] == 6; }, 10s))
        << targets("?kind=dcgm").dump(1);
    EXPECT_EQ(targets("?entity=z1-r001-h0")["total"], 0);
    EXPECT_EQ(targets("?entity=z1-r001-rtsw")["total"], 0);
    std::this_thread::sleep_for(300ms);  // a scrape in flight at the drain finishes
    const int before = farm.requests("z1-r001-h0");
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(farm.requests("z1-r001-h0"), before) << "a drained rack's host is still scraped";
    EXPECT_GE(farm.requests("z1-r002-h0"), 3);
    // Back into service: scraped again.
    ASSERT_EQ(act("advance").status, 200);  // drained -> in_service
    ASSERT_TRUE(loom::testing::eventually(
        [&] { return targets("?kind=dcgm&up=true")["total"] == 8; }, 10s));
    EXPECT_GT(farm.requests("z1-r001-h0"), before);
    EXPECT_EQ(request(s.port(), "GET", "/api/v1/telemetry/targets?kind=bogus", viewer).status, 400);
}

}  // namespace
}  // namespace loom::backend::testing
