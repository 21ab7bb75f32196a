// What the end-to-end tests of loomd's server share: a real Server on 127.0.0.1 port 0 over a
// real PostgreSQL (tests/support harness) with a sample cluster applied and one token per
// role, a synchronous HTTP client and a synchronous WebSocket client. No Beast here: the
// clients are compiled once (server_fixture.cpp); a test that needs Beast itself includes
// beast_client.hpp (issue 10: each test file compiled Beast's client templates again, ~20 s).
#pragma once

#include "loom/backend/auth.hpp"
#include "loom/backend/router.hpp"
#include "loom/backend/scraper.hpp"
#include "loom/backend/server.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/notify.hpp"
#include "loom/db/token_repo.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/eventually.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace loom::backend::testing {

using nlohmann::json;

struct HttpResult {
    int status = 0;  // 0: no response (connection refused or closed)
    std::string body;
    std::map<std::string, std::string> headers;
    json j() const { return json::parse(body, nullptr, false); }
};

// One request on a fresh connection to 127.0.0.1:port (server_fixture.cpp).
HttpResult request(std::uint16_t port, const std::string& method, const std::string& target,
                   const std::string& token = "", const std::string& body = "",
                   std::vector<std::pair<std::string, std::string>> headers = {});

// Standard base64 (the stream's packed arrays); characters outside the alphabet are skipped.
std::vector<std::uint8_t> decodeBase64(const std::string& s);

// A minimal synchronous WebSocket client of /api/v1/stream. Its Beast stream lives in
// beast_client.hpp (`raw()`), so that a test which only opens, reads and sends does not compile
// Beast's WebSocket templates again: they are compiled once, in server_fixture.cpp.
class WsClient {
public:
    struct Raw;  // beast_client.hpp: the io_context and the websocket::stream
    WsClient();
    ~WsClient();
    WsClient(const WsClient&) = delete;
    WsClient& operator=(const WsClient&) = delete;

    void open(std::uint16_t port, const std::string& token);
    json read();
    void send(const json& j);
    // One message, or nullopt after `timeout` (sync reads of a tcp_stream have no timeout).
    std::optional<json> readFor(std::chrono::milliseconds timeout);
    Raw& raw() { return *raw_; }

private:
    std::unique_ptr<Raw> raw_;
};

// The route modules a test server registers. Core: inventory, fabric, auth. All: what
// `loomd serve` has, with a telemetry service (hub, detection, event writer) behind it (no
// provisioning reconciler: serve starts that, not the routes).
enum class Routes { Core, All };

class ServerFixture : public loom::testing::PostgresTest {
protected:
    // The sample cluster (1 zone, `racks` racks) is applied before each test; 0 = none.
    virtual int sampleRacks() const { return 4; }

    void SetUp() override {
        PostgresTest::SetUp();
        auto conn = connect();
        inventory::Inventory desired;
        if (sampleRacks() > 0) desired = loom::testing::sampleCluster(1, sampleRacks());
        auto snap = db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        auto p = inventory::plan(desired, snap->inventory);
        if (!p.empty()) {
            auto applied = db::applyPlan(conn, p, desired, {.actor = "test"});
            ASSERT_TRUE(applied) << applied.error().toString();
        }
        for (auto role : {"viewer", "operator", "admin"}) {
            auto secret = generateTokenSecret();
            auto t = db::createToken(conn, std::string(role) + "-token", role, hashToken(secret),
                                     "test");
            ASSERT_TRUE(t) << t.error().toString();
            tokens_[role] = secret;
        }
    }
    void TearDown() override {
        for (auto& n : notifiers_) n->stop();  // first: they deliver into the servers
        notifiers_.clear();
        for (auto& sc : scrapers_) sc->stop();  // before the hubs it feeds
        for (auto& t : telemetry_) t->stop();
        for (auto& s : servers_) s->stop();
        telemetry_.clear();
        servers_.clear();
        scrapers_.clear();  // after the servers: their reloads call followInventory's hook
        PostgresTest::TearDown();
    }

    Server& startServer(ServerConfig cfg = {}, Routes routes = Routes::Core) {
        cfg.host = "127.0.0.1";
        cfg.port = 0;
        cfg.dbThreads = 2;
        cfg.ioThreads = 1;
        auto s = std::make_unique<Server>(cfg, database());
        registerInventoryRoutes(s->router(), s->services());
        registerFabricRoutes(s->router(), s->services());
        registerAuthRoutes(s->router(), s->services());
        registerJobRoutes(s->router(), s->services());
        TelemetryService* telemetry = nullptr;
        if (routes == Routes::All) {
            registerTelemetryRoutes(s->router(), s->services());
            registerProvisioningRoutes(s->router(), s->services());
            telemetry = telemetry_.emplace_back(std::make_unique<TelemetryService>(
                s->services(), telemetryOptions_)).get();
            s->setHub(&telemetry->hub());
            // loomd's exporter routes: SD and the scraper's targets (telemetry.targets from
            // targetTemplates_, followed over the live inventory, scraped every scrapeOptions_).
            registerSdRoutes(s->router(), s->services(), targetTemplates_);
            auto& sc = *scrapers_.emplace_back(
                std::make_unique<Scraper>(telemetry->hub(), std::vector<ScrapeTarget>{}, scrapeOptions_));
            registerTargetRoutes(s->router(), sc);
            followInventory(sc, s->services(), targetTemplates_);
            sc.start();
            s->setTopicSource(TelemetryService::topics(),
                              [telemetry](std::string_view t, std::vector<std::uint8_t>& out) {
                                  return telemetry->topic(t, out);
                              });
        } else if (topicSource_) {
            s->setTopicSource({"gpu.util"}, topicSource_);
        }
        auto r = s->start();
        EXPECT_TRUE(r) << r.error().toString();
        if (telemetry) telemetry->start();
        servers_.push_back(std::move(s));
        auto& srv = *servers_.back();
        // Wait for the live state (inventory, hall layout, link sync, hub): /readyz is 200.
        for (int i = 0; i < 1000 && !srv.services().liveReady(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return srv;
    }

    // Wires `s` to the other loomds on this database as `loomd serve` does: a Notifier
    // LISTENing on `channel` delivers their messages (and the commits' `live` NOTIFYs on the
    // stream channel), and `s` publishes through it. Waits up to 5 s for it to listen.
    db::Notifier& linkPeers(Server& s, const std::string& channel = std::string(db::kStreamChannel)) {
        auto* sp = &s;
        auto& n = *notifiers_.emplace_back(std::make_unique<db::Notifier>(
            database(), channel, [sp](std::string_view t, std::string_view p) {
                sp->deliverFromPeer(std::string(t), std::string(p));
            }));
        s.setPeerPublisher([&n](const std::string& t, const std::string& j) { n.publish(t, j); });
        for (int i = 0; i < 500 && !n.connected(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return n;
    }

    std::map<std::string, std::string> tokens_;
    Server::TopicSource topicSource_;
    TelemetryServiceOptions telemetryOptions_;  // for Routes::All (detection settings, ...)
    TargetTemplates targetTemplates_;  // for Routes::All: telemetry.targets
    ScraperOptions scrapeOptions_;
    std::vector<std::unique_ptr<Scraper>> scrapers_;  // one per Routes::All server
    std::vector<std::unique_ptr<Server>> servers_;
    std::vector<std::unique_ptr<TelemetryService>> telemetry_;
    std::vector<std::unique_ptr<db::Notifier>> notifiers_;
};

}  // namespace loom::backend::testing
