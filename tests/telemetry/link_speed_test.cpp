// A switch port up below its inventory speed is a degraded link (issue 20: ifHighSpeed, "a 400G
// port up at 200G is a degraded link"): link.health shows it degraded while the port says so, up
// again once it reports its full speed; down stays down. Issue 35 item 6: it is an event,
// link_speed (warning), so REST's health, the stream, the console and the web read the same word
// from it (the stream called it degraded while `loomctl get links` said ok).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace loom::telemetry
