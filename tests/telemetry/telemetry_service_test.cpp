#include "loom/backend/telemetry_service.hpp"

#include <mutex>

#include <gtest/gtest.h>

#include <chrono>

#include "loom/backend/services.hpp"
#include "loom/db/event_repo.hpp"
#include "synthetic_inventory.hpp"

namespace loom::backend {
using namespace loom::telemetry;  // the hub, layout and events this service runs
namespace {

// Services as the loop sees it, without a server: records what is published.
class FakeServices final : public Services {
public:
    explicit FakeServices(std::shared_ptr<const HallLayout> l) : layout_(std::move(l)) {}
    void publish(std::string_view topic, nlohmann::json message) override {
        std::lock_guard lk(m_);
        published.emplace_back(std::string(topic), std::move(message));
    }
    void publishLocal(std::string_view topic, nlohmann::json message) override {
        publish(topic, std::move(message));
    }
    void inventoryChanged(Change) override {}
    bool liveReady() const override { return true; }
    std::vector<std::string> linksOfRack(std::string_view) const override { return {}; }
    void onLiveChange(std::function<void()> hook) override { hooks.push_back(std::move(hook)); }
    void onPublish(std::string, std::function<void(const nlohmann::json&)>) override {}
    std::vector<std::function<void()>> hooks;
    std::shared_ptr<const HallLayout> layout() const override {
        std::lock_guard lk(m_);
        return layout_;
    }
    std::shared_ptr<const inventory::Inventory> inventory() const override { return nullptr; }
    TelemetryHub* hub() override { return nullptr; }
    bool isLeader() const override { return leader; }
    std::string databaseUrl() const override { return "postgresql:///nowhere"; }
    void addMetricsSource(std::function<void(std::string&)> s) override { metrics.push_back(std::move(s)); }

    void setLayout(std::shared_ptr<const HallLayout> l) {
        std::lock_guard lk(m_);
        layout_ = std::move(l);
    }
    std::vector<std::pair<std::string, nlohmann::json>> published;
    std::vector<std::function<void(std::string&)>> metrics;
    bool leader = true;

private:
    mutable std::mutex m_;
    std::shared_ptr<const HallLayout> layout_;
};

TEST(TelemetryService, SimulatesOnlyAsLeaderAndFollowsTheLayout) {
    auto inv = testing::syntheticCluster({.zones = 1, .racksPerZone = 8, .ctswPerZone = 2});
    auto L = std::make_shared<const HallLayout>(HallLayout::build(inv));
    FakeServices services(L);
    services.leader = false;
    TelemetryServiceOptions o;
    o.simulate = true;
    o.persist = false;
    TelemetryService svc(services, o);
    // The wall clock, not a fixed epoch: topic() judges freshness against the current time,
    // so samples stamped years ago would read as stale (no data).
    std::int64_t t = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    svc.runOnce(t);
    std::vector<std::uint8_t> util;
    ASSERT_TRUE(svc.topic("gpu.util", util));
    EXPECT_EQ(util.size(), 128u);
    EXPECT_EQ(util[0], kNoData);  // not the leader: no simulator
    services.leader = true;
    svc.runOnce(t += 1000);
    svc.topic("gpu.util", util);
    EXPECT_NE(util[0], kNoData);
    EXPECT_FALSE(svc.topic("gpu.nope", util));
    EXPECT_EQ(TelemetryService::topics().size(), 5u);

    inv.racks.pop_back();
    services.setLayout(std::make_shared<const HallLayout>(HallLayout::build(inv)));
    svc.runOnce(t += 1000);
    svc.topic("gpu.util", util);
    EXPECT_EQ(util.size(), 112u);
    ASSERT_EQ(services.metrics.size(), 1u);
    std::string m;
    services.metrics[0](m);
    EXPECT_NE(m.find("loom_telemetry_samples_total"), std::string::npos);
    EXPECT_NE(m.find("loom_event_writer_queue 0"), std::string::npos);
}

TEST(TelemetryService, EventsArePublishedInOrderByTheWriter) {
    auto inv = testing::syntheticCluster({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2});
    auto L = std::make_shared<const HallLayout>(HallLayout::build(inv));
    FakeServices services(L);
    TelemetryServiceOptions o;
    o.persist = false;
    o.tickSeconds = 0.05;
    TelemetryService svc(services, o);
    svc.start();
    auto body = [](int xid) {
        return "DCGM_FI_DEV_XID_ERRORS{gpu=\"1\",Hostname=\"z1-r001-h0\"} " + std::to_string(xid) + "\n";
    };
    ASSERT_TRUE(svc.hub().ingestText(body(79)));
    ASSERT_TRUE(svc.hub().ingestText(body(0)));
    svc.stop();  // drains the writer queue
    ASSERT_EQ(services.published.size(), 2u);
    EXPECT_EQ(services.published[0].first, "events");
    const auto& e0 = services.published[0].second["event"];
    EXPECT_EQ(services.published[0].second["type"], "event");
    EXPECT_EQ(e0["kind"], "gpu_xid");
    EXPECT_EQ(e0["severity"], "critical");
    EXPECT_EQ(e0["location"], "z1-r001-h0-gpu1");
    EXPECT_EQ(e0["rack"], "z1-r001");
    EXPECT_TRUE(e0["closedAt"].is_null());
    EXPECT_EQ(e0["labels"]["xid"], "79");
    EXPECT_FALSE(services.published[1].second["event"]["closedAt"].is_null());
}

TEST(TelemetryService, EventJsonTimes) {
    db::EventRecord r;
    r.id = 5;
    r.kind = "link_down";
    r.severity = "critical";
    r.openedAtMs = 1'700'000'000'123;
    auto j = eventJson(r);
    EXPECT_EQ(j["openedAt"], "2023-11-14T22:13:20.123Z");
    EXPECT_TRUE(j["closedAt"].is_null());
    EXPECT_EQ(j["id"], 5);
}

}  // namespace
}  // namespace loom::backend
