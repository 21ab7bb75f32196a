// Port counter rates as Prometheus's rate() takes them (issue 34 item 1): every counter of a port
// keeps its own previous value and time, so octets from snmp_exporter and PFC counters from
// another page each use their own interval; a counter reset counts the new value as the
// increase, a 32-bit wrap the distance through 2^32; the same counter from a second source is
// reported (IngestReport::duplicates, /metrics) and never turned into 0 or a spike.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "hub_fixture.hpp"

namespace loom::telemetry {
namespace {

class PortRates : public HubFixture {
protected:
    void SetUp() override {
        makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2});
        p_ = layout_->portByName("z1-r001-rtsw", "p1");
        ASSERT_NE(p_, kNoIndex);
        ASSERT_EQ(layout_->ports()[p_].speedGbps, 400u);
    }
    // snmp_exporter's if_mib page of z1-r001-rtsw, port 1, at `atMs`.
    void octets(std::int64_t atMs, double in, double out, std::string_view source = "snmp") {
        now_ = atMs;
        auto r = hub_->ingestText("ifHCInOctets{ifIndex=\"1\",ifName=\"swp1\"} " + num(in) +
                                      "\nifHCOutOctets{ifIndex=\"1\",ifName=\"swp1\"} " + num(out) +
                                      "\n",
                                  0, {.switchName = "z1-r001-rtsw", .source = source});
        ASSERT_TRUE(r) << r.error().toString();
        last_ = *r;
    }
    // Another page (a switch agent's) with the PFC pause counters of the same port.
    void pfc(std::int64_t atMs, double in, double out, std::string_view source = "agent") {
        now_ = atMs;
        auto r = hub_->ingestText(
            "loom_port_in_pfc_pause_frames_total{switch=\"z1-r001-rtsw\",port=\"p1\"} " + num(in) +
                "\nloom_port_out_pfc_pause_frames_total{switch=\"z1-r001-rtsw\",port=\"p1\"} " +
                num(out) + "\n",
            0, {.source = source});
        ASSERT_TRUE(r) << r.error().toString();
        last_ = *r;
    }
    static std::string num(double v) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.0f", v);
        return buf;
    }
    // 50 % of 400 Gb/s for `seconds`, in bytes.
    static double halfLine(double seconds) { return 400e9 / 8 * 0.5 * seconds; }

    std::uint32_t p_ = kNoIndex;
    IngestReport last_;
};

TEST_F(PortRates, EachCounterUsesItsOwnInterval) {
    // Octets every 2 s, PFC counters from another page in between: the octets' interval is 2 s,
    // not the 1 s since the PFC page (that read 50 % as 100 %).
    octets(kT0, 0, 0);
    pfc(kT0 + 1000, 0, 0);
    octets(kT0 + 2000, halfLine(2), halfLine(2));
    EXPECT_NEAR(hub_->portUtil(p_), 50, 0.5);
    // 42,000 pause frames/s over the PFC page's own 2 s (not the 1 s since the octets).
    pfc(kT0 + 3000, 84000, 0);
    EXPECT_NEAR(hub_->portRate(p_, PortCounter::InPfcPause).perSecond, 42000, 1);
    EXPECT_EQ(hub_->portRate(p_, PortCounter::InPfcPause).atMs, kT0 + 3000);
    octets(kT0 + 4000, halfLine(4), halfLine(4));
    EXPECT_NEAR(hub_->portUtil(p_), 50, 0.5);
}

TEST_F(PortRates, ResetsAndWrapsAreIncreasesNotGaps) {
    octets(kT0, halfLine(100), 0);
    octets(kT0 + 1000, halfLine(101), 0);
    EXPECT_NEAR(hub_->portUtil(p_), 50, 0.5);
    // The switch rebooted: the counter restarted from 0; what it counts since is the increase.
    octets(kT0 + 2000, halfLine(0.5), 0);
    EXPECT_NEAR(hub_->portUtil(p_), 25, 0.5);
    octets(kT0 + 3000, halfLine(1.5), 0);
    EXPECT_NEAR(hub_->portUtil(p_), 50, 0.5);
    // A 32-bit PFC counter wrapping: 1,000 frames/s through 2^32.
    pfc(kT0 + 4000, 4294967296.0 - 400, 0);
    pfc(kT0 + 5000, 600, 0);
    EXPECT_NEAR(hub_->portRate(p_, PortCounter::InPfcPause).perSecond, 1000, 1);
}

TEST_F(PortRates, ASecondSourceOfTheSameCounterIsReportedNotMixedIn) {
    octets(kT0, 0, 0, "snmp-a");
    octets(kT0 + 1000, halfLine(1), halfLine(1), "snmp-a");
    EXPECT_EQ(last_.duplicates, 0u);
    // Another exporter serves the same counters a moment later, with a lagging copy: its values
    // are not taken (that read 0 %, then a spike), and the page says so.
    octets(kT0 + 1300, halfLine(1), halfLine(1), "snmp-b");
    EXPECT_EQ(last_.duplicates, 2u);
    EXPECT_NEAR(hub_->portUtil(p_), 50, 0.5);
    octets(kT0 + 2000, halfLine(2), halfLine(2), "snmp-a");
    EXPECT_NEAR(hub_->portUtil(p_), 50, 0.5);
    std::string metrics;
    hub_->appendMetrics(metrics);
    EXPECT_NE(metrics.find("loom_telemetry_duplicate_samples_total 2"), std::string::npos)
        << metrics.substr(0, 2000);
    // The first source stopped (gone for more than 30 s): the second takes over, from a fresh
    // baseline (no rate across two sources' counters).
    octets(kT0 + 40000, halfLine(40), halfLine(40), "snmp-b");
    EXPECT_EQ(last_.duplicates, 0u);
    octets(kT0 + 41000, halfLine(41), halfLine(41), "snmp-b");
    EXPECT_NEAR(hub_->portUtil(p_), 50, 0.5);
}

TEST_F(PortRates, NoNewSampleIsNotARateOfZero) {
    pfc(kT0, 0, 0);
    pfc(kT0 + 2000, 84000, 0);
    const auto r = hub_->portRate(p_, PortCounter::InPfcPause);
    EXPECT_NEAR(r.perSecond, 42000, 1);
    // Nothing new for a while: the rate of the last two samples, with their time; the reader
    // decides how old is too old.
    now_ = kT0 + 9000;
    hub_->tick(now_);
    EXPECT_NEAR(hub_->portRate(p_, PortCounter::InPfcPause).perSecond, 42000, 1);
    EXPECT_EQ(hub_->portRate(p_, PortCounter::InPfcPause).atMs, kT0 + 2000);
    EXPECT_TRUE(std::isnan(hub_->portRate(p_, PortCounter::InErrors).perSecond)) << "never sent";
}

}  // namespace
}  // namespace loom::telemetry
