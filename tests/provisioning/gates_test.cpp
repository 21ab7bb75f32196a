#include "loom/provisioning/gates.hpp"

#include <gtest/gtest.h>

using namespace loom::provisioning;

TEST(Cabling, AllMatchingIsOk) {
    std::vector<PlannedLink> planned = {{"sw/p1", "h0/nic0/p1"}, {"sw/p2", "h0/nic1/p1"}};
    std::vector<ObservedNeighbour> seen = {{"sw/p2", "h0/nic1/p1"}, {"sw/p1", "h0/nic0/p1"}};
    auto r = checkCabling(planned, seen);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.matched, 2u);
    EXPECT_EQ(r.summary(), "all 2 planned ports match");
}

TEST(Cabling, EveryMismatchIsListedPerPort) {
    std::vector<PlannedLink> planned = {
        {"sw/p1", "a"}, {"sw/p2", "b"}, {"sw/p3", "c"}, {"sw/p4", "d"}};
    std::vector<ObservedNeighbour> seen = {
        {"sw/p1", "a"}, {"sw/p2", "c"}, {"sw/p3", "b"}, {"sw/p9", "x"}, {"sw/p4", ""}};
    auto r = checkCabling(planned, seen);
    ASSERT_EQ(r.mismatches.size(), 4u);
    EXPECT_EQ(r.matched, 1u);
    EXPECT_EQ(r.mismatches[0].port, "sw/p2");
    EXPECT_EQ(r.mismatches[0].kind, MismatchKind::Miswired);
    EXPECT_EQ(r.mismatches[0].expected, "b");
    EXPECT_EQ(r.mismatches[0].observed, "c");
    EXPECT_EQ(r.mismatches[1].port, "sw/p3");
    EXPECT_EQ(r.mismatches[2].port, "sw/p4");
    EXPECT_EQ(r.mismatches[2].kind, MismatchKind::Missing);
    EXPECT_EQ(r.mismatches[3].port, "sw/p9");
    EXPECT_EQ(r.mismatches[3].kind, MismatchKind::Unexpected);
    EXPECT_EQ(r.summary(2),
              "4 of 4 ports mismatched: sw/p2 miswired (expected b, observed c); sw/p3 miswired "
              "(expected c, observed b); and 2 more");
}

TEST(BurnIn, PassesWithHealthyHostsAndBandwidth) {
    BurnInPolicy p;
    p.minBusBwGBps = 40;
    BurnInResult r{{{"h0", true, {}, ""}, {"h1", true, {}, ""}}, 47.5, ""};
    auto v = judgeBurnIn(r, p);
    EXPECT_TRUE(v.passed);
    EXPECT_TRUE(v.quarantineHosts.empty());
}

TEST(BurnIn, OneBadHostIsQuarantinedAndTheRackGoesOn) {
    BurnInPolicy p;
    p.maxQuarantinedHosts = 1;
    BurnInResult r{{{"h0", false, {"h0-gpu3"}, ""}, {"h1", true, {}, ""}}, 47.5, ""};
    auto v = judgeBurnIn(r, p);
    EXPECT_TRUE(v.passed);
    EXPECT_EQ(v.quarantineHosts, std::vector<std::string>{"h0"});
    EXPECT_EQ(v.quarantineGpus, std::vector<std::string>{"h0-gpu3"});
    EXPECT_NE(v.reason.find("quarantined h0"), std::string::npos);
}

TEST(BurnIn, FailsOnLowBandwidthTooManyBadHostsOrNoHealthyHost) {
    BurnInPolicy p;
    p.minBusBwGBps = 40;
    p.maxQuarantinedHosts = 0;
    auto lowBw = judgeBurnIn({{{"h0", true, {}, ""}}, 21.0, ""}, p);
    EXPECT_FALSE(lowBw.passed);
    EXPECT_EQ(lowBw.reason, "rack all_reduce bus bandwidth 21.0 GB/s below threshold 40.0 GB/s");
    auto bad = judgeBurnIn({{{"h0", false, {}, ""}, {"h1", true, {}, ""}}, 47.0, ""}, p);
    EXPECT_FALSE(bad.passed);
    EXPECT_EQ(bad.quarantineHosts, std::vector<std::string>{"h0"});
    p.maxQuarantinedHosts = 4;
    auto none = judgeBurnIn({{{"h0", false, {}, ""}, {"h1", false, {}, ""}}, 47.0, ""}, p);
    EXPECT_FALSE(none.passed);
    EXPECT_NE(none.reason.find("all 2 hosts"), std::string::npos);
}
