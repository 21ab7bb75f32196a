// Exporter scraping: loomd pulls DCGM text from exporter URLs into the hub (an XID served by a
// fake exporter becomes a stored event); a hanging target times out and a target serving
// garbage is reported down, neither delaying the good one. Config errors name path and line.
#include "server_fixture.hpp"

#include "loom/backend/scraper.hpp"

#include <atomic>

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

// A loopback HTTP server answering every request with `body` (or never, when hang).
class FakeExporter {
public:
    FakeExporter(std::string body, bool hang = false)
        : body_(std::move(body)), hang_(hang), acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
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
    std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/metrics"; }
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
    FakeExporter good("DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",Hostname=\"z1-r001-h0\"} 88\n"
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
        auto r = request(s.port(), "GET", "/api/v1/events?location=z1-r001-h0-gpu2", tokens_["viewer"]);
        found = r.status == 200 && r.j()["items"].size() == 1;
        if (!found) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(found) << "the scraped XID never became an event";
    // The hanging target did not hold the good one back: it was scraped many times meanwhile.
    std::this_thread::sleep_for(1s);
    EXPECT_GE(good.served(), 4);

    std::string metrics;
    scraper.appendMetrics(metrics);
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"" + good.url() + "\"} 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"" + hanging.url() + "\"} 0"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"" + garbage.url() + "\"} 0"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("loom_scrape_up{target=\"http://127.0.0.1:1/metrics\"} 0"), std::string::npos) << metrics;
    // The hub's view through the server's /metrics too (the scraper is not registered there in
    // this test; loomd serve registers it).
    auto started = std::chrono::steady_clock::now();
    scraper.stop();  // waits for in-flight scrapes: at most one timeout
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

}  // namespace
}  // namespace loom::backend::testing
