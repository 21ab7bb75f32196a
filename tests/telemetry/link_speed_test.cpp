// A switch port up below its inventory speed is a degraded link (issue 20: ifHighSpeed, "a 400G
// port up at 200G is a degraded link"): link.health shows it degraded while the port says so, up
// again once it reports its full speed; down stays down. Issue 35 item 6: it is an event,
// link_speed (warning), so REST's health, the stream, the console and the web read the same word
// from it (the stream called it degraded while `loomctl get links` said ok). The host end says
// its own speed (node_exporter's node_infiniband_rate_bytes_per_second): a NIC negotiated below
// its rated speed opens the same event, one per link whichever end saw it, open while either end
// is slow.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "hub_fixture.hpp"

namespace loom::telemetry {
namespace {

class LinkSpeed : public HubFixture {
protected:
    void SetUp() override { makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2}); }
    // snmp_exporter's if_mib page of z1-r001-rtsw for port 1 (swp1).
    void snmp(int oper, double highSpeedMbps) {
        ingest("ifOperStatus{ifIndex=\"1\",ifName=\"swp1\"} " + std::to_string(oper) +
                   "\nifHighSpeed{ifIndex=\"1\",ifName=\"swp1\"} " + std::to_string(highSpeedMbps) +
                   "\n",
               {.switchName = "z1-r001-rtsw"});
    }
};

TEST_F(LinkSpeed, APortUpBelowItsInventorySpeedIsADegradedLink) {
    const auto p = layout_->portByName("z1-r001-rtsw", "p1");
    ASSERT_NE(p, kNoIndex);
    const auto l = layout_->ports()[p].linkIndex;
    ASSERT_NE(l, kNoIndex);
    ASSERT_EQ(layout_->ports()[p].speedGbps, 400u);
    snmp(1, 400000);
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkUp);
    EXPECT_TRUE(events_.empty());
    snmp(1, 200000);  // up at 200G
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDegraded);
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l + 1], kNoData) << "only that link";
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_speed");
    EXPECT_EQ(events_[0].severity, Severity::Warning);
    EXPECT_EQ(events_[0].location, layout_->links()[l].name);
    EXPECT_NE(events_[0].message.find("up at 200 Gb/s, rated 400 Gb/s"), std::string::npos)
        << events_[0].message;
    snmp(1, 200000);  // still: the one event
    EXPECT_EQ(events_.size(), 1u);
    snmp(2, 200000);  // down: down wins
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDown);
    snmp(1, 400000);  // back at full speed: both close
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkUp);
    ASSERT_EQ(events_.size(), 4u);
    EXPECT_EQ(events_[1].kind, "link_down");
    for (std::size_t i = 2; i < 4; ++i) EXPECT_FALSE(events_[i].open()) << events_[i].kind;
    EXPECT_TRUE(hub_->openEvents().empty());
}

// node_exporter 1.5's InfiniBand page of z1-r001-h0 (bench/telemetry/pages/, 8 ConnectX ports
// at 400 Gb/s = 5e10 bytes/s) with mlx5_0's rate set to `bytesPerSecond`.
std::string nodePage(double bytesPerSecond) {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) +
                     "/bench/telemetry/pages/node_exporter_infiniband.txt");
    std::string page((std::istreambuf_iterator<char>(in)), {});
    const std::string key =
        "\nnode_infiniband_rate_bytes_per_second{device=\"mlx5_0\",port=\"1\"} ";
    const auto at = page.find(key);
    EXPECT_NE(at, std::string::npos) << "the recorded page has mlx5_0's rate";
    if (at == std::string::npos) return page;
    const auto from = at + key.size();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", bytesPerSecond);
    return page.replace(from, page.find('\n', from) - from, buf);
}

TEST_F(LinkSpeed, ANicBelowItsRatedSpeedOpensTheLinksOneEventWhicheverEndSawIt) {
    const auto p = layout_->portByName("z1-r001-rtsw", "p1");
    ASSERT_NE(p, kNoIndex);
    const auto l = layout_->ports()[p].linkIndex;
    ASSERT_NE(l, kNoIndex);
    ASSERT_EQ(layout_->links()[l].gpu, layout_->gpuByName("z1-r001-h0-gpu0"))
        << "mlx5_0 of z1-r001-h0 is the host end of swp1's link";
    auto node = [&](double bytesPerSecond) {
        auto rep = ingest(nodePage(bytesPerSecond), {.host = "z1-r001-h0"});
        EXPECT_EQ(rep.unknownTotal(), 0u);
    };
    auto openSpeed = [&] {
        std::size_t n = 0;
        for (const auto& e : hub_->openEvents()) n += e.kind == "link_speed";
        return n;
    };
    node(5e10);  // 400 Gb/s: nothing
    EXPECT_TRUE(events_.empty());

    // The NIC negotiated 200 Gb/s (2.5e10 bytes/s); the switch end has not said anything.
    node(2.5e10);
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_speed");
    EXPECT_EQ(events_[0].severity, Severity::Warning);
    EXPECT_EQ(events_[0].location, layout_->links()[l].name);
    EXPECT_NE(events_[0].message.find("host NIC up at 200 Gb/s, rated 400 Gb/s"), std::string::npos)
        << events_[0].message;
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDegraded);
    node(2.5e10);     // every scrape says so: still the one event
    snmp(1, 200000);  // the switch end sees it too: still the one event
    EXPECT_EQ(events_.size(), 1u);
    EXPECT_EQ(openSpeed(), 1u);

    // One end back at full speed while the other is not: the link stays degraded.
    node(5e10);
    EXPECT_EQ(events_.size(), 1u) << "the switch end still says 200G";
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDegraded);
    snmp(1, 400000);
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_FALSE(events_[1].open());
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkUp);

    // The other way round: the switch end first, the NIC's full speed does not close it.
    snmp(1, 200000);
    node(5e10);
    EXPECT_EQ(openSpeed(), 1u);
    node(2.5e10);
    snmp(1, 400000);
    EXPECT_EQ(openSpeed(), 1u) << "the NIC end still says 200G";
    node(5e10);
    EXPECT_EQ(openSpeed(), 0u);
    EXPECT_EQ(events_.size(), 4u) << "two opens, two closes: one event at a time per link";
}

}  // namespace
}  // namespace loom::telemetry
