// Lemons (issue 34 item 6): which causes strike a host or GPU, and the rule — three different
// jobs within seven days — counted once per job, aged out of the window.
#include "loom/jobs/lemon.hpp"

#include <gtest/gtest.h>

namespace loom::jobs {
namespace {

constexpr std::int64_t kDay = 24 * 3600 * 1000;

StragglerSuspect suspect(std::string location, std::string gpu, std::string cause) {
    return {0, std::move(location), std::move(gpu), std::move(cause), 10, "evidence"};
}

TEST(Lemons, GpuCausesStrikeGpuAndHostHostCausesTheHostFabricCausesNothing) {
    auto s = lemonStrikes("a", suspect("z1-r001-h0-gpu3", "z1-r001-h0-gpu3", "thermal_throttle"),
                          "z1-r001-h0", 5);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0],
              (LemonStrike{"z1-r001-h0-gpu3", "gpu", "z1-r001-h0", "a", "thermal_throttle", 5}));
    EXPECT_EQ(s[1], (LemonStrike{"z1-r001-h0", "host", "z1-r001-h0", "a", "thermal_throttle", 5}));
    s = lemonStrikes("a", suspect("z1-r001-h0", "", "host_contention"), "z1-r001-h0", 5);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].kind, "host");
    s = lemonStrikes("a", suspect("nic-cable", "z1-r001-h0-gpu1", "slow_nic"), "z1-r001-h0", 5);
    ASSERT_EQ(s.size(), 1u) << "a NIC trained down: the host's NIC";
    EXPECT_EQ(s[0].entity, "z1-r001-h0");
    for (const char* c : {"pfc_storm", "link_errors", "flapping_link", "congested_link"})
        EXPECT_TRUE(
            lemonStrikes("a", suspect("cable", "z1-r001-h0-gpu1", c), "z1-r001-h0", 5).empty())
            << c;
    EXPECT_TRUE(lemonStrikes("a", suspect("g", "g", "xid"), "", 5).empty()) << "host unknown";

    EXPECT_EQ(failureStrikes("a", "gpu_xid", "critical", "g", "h", 1).size(), 2u);
    EXPECT_TRUE(failureStrikes("a", "gpu_xid", "warning", "g", "h", 1).empty())
        << "an application XID (13, 31) is the job's";
    EXPECT_EQ(failureStrikes("a", "gpu_ecc_dbe", "critical", "g", "h", 1).size(), 2u);
    EXPECT_TRUE(failureStrikes("a", "gpu_temp", "critical", "g", "h", 1).empty());
}

TEST(Lemons, ThreeDifferentJobsWithinTheWindowMakeALemon) {
    const std::int64_t now = 100 * kDay;
    std::vector<LemonStrike> s{
        {"h1", "host", "h1", "a", "thermal_throttle", now - 6 * kDay},
        {"h1", "host", "h1", "a", "xid", now - 5 * kDay},  // the same job again: one
        {"h1", "host", "h1", "b", "host_slow", now - 2 * kDay},
        {"h2", "host", "h2", "a", "host_slow", now - 1 * kDay},
        {"h2", "host", "h2", "b", "host_slow", now - 1 * kDay},
        {"h2", "host", "h2", "c", "host_slow", now - 8 * kDay},  // out of the window
    };
    auto l = countLemons(s, now);
    ASSERT_EQ(l.size(), 2u);
    EXPECT_FALSE(l[0].lemon);
    EXPECT_EQ(l[0].jobs, 2);
    s.push_back({"h1", "host", "h1", "c", "gpu_xid", now - 1000});
    l = countLemons(s, now);
    ASSERT_EQ(l.size(), 2u);
    EXPECT_EQ(l[0].entity, "h1");
    EXPECT_TRUE(l[0].lemon);
    EXPECT_EQ(l[0].jobs, 3);
    EXPECT_EQ(l[0].list, (std::vector<std::string>{"c (gpu_xid)", "b (host_slow)", "a (xid)"}));
    EXPECT_EQ(l[0].lastMs, now - 1000);
    EXPECT_FALSE(l[1].lemon);
    EXPECT_EQ(lemonMessage(l[0]),
              "h1 is a lemon: the suspect or a failure in 3 jobs in 7 days: c (gpu_xid), b "
              "(host_slow), a (xid)");
    // A week later it has aged out.
    EXPECT_TRUE(countLemons(s, now + 7 * kDay).empty());
    EXPECT_FALSE(countLemons(s, now + 5 * kDay)[0].lemon) << "two of its jobs aged out";
}

}  // namespace
}  // namespace loom::jobs
