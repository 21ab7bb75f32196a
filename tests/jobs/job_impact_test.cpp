// Per-job impact (issue 15 item 2): busbw on the current link states, the links a job crosses,
// degradation opened and closed by link failures, and the incremental update equal to a full
// recomputation on random failure sequences.
#include "loom/jobs/job_impact.hpp"

#include <gtest/gtest.h>

#include <random>

#include "loom/fabric/testbed.hpp"

namespace loom::jobs {
namespace {

using fabric::Collective;
using fabric::LinkState;
using fabric::Router;

// 4 racks in one zone; each RTSW: 2 hosts × 2 NICs down, 2 CTSWs × 1 link up (2:1 on purpose,
// as in tests/fabric/impact_test.cpp): a 2-host job across racks runs at 100 % and loses half
// when one uplink of its racks goes.
Router fabric4() {
    fabric::testbed::RoceShape sh{.zones = 1,
                                  .racksPerZone = 4,
                                  .hostsPerRack = 2,
                                  .nicsPerHost = 2,
                                  .ctswPerZone = 2,
                                  .linksPerCtsw = 1};
    auto topo = fabric::buildTopology(fabric::testbed::makeRoce(sh));
    EXPECT_TRUE(topo.has_value());
    return Router(std::move(*topo));
}

std::int32_t link(const Router& r, std::string_view name) {
    auto l = r.topology().findLink(name);
    EXPECT_NE(l, fabric::kNone) << name;
    return l;
}

// Backend NIC k's cable of a host.
std::int32_t nicCable(const Router& r, std::string_view host, int k) {
    const auto& topo = r.topology();
    auto h = topo.findHost(host);
    EXPECT_NE(h, fabric::kNone) << host;
    return topo.nicLink[topo.hostFirstNic[h] + k];
}

// `l` comes back up under job "a": the one change closes its degradation at line rate.
void expectRecovery(Router& r, JobImpactTracker& t, std::int32_t l) {
    r.setLinkState(l, LinkState::Up);
    auto changes = t.linksChanged(r, std::array{l});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].degradation, Degradation::Closed);
    EXPECT_EQ(changes[0].message, "job a recovered to 100% busbw");
    EXPECT_FALSE(t.find("a")->degraded());
}

TEST(JobImpact, AHealthyJobRunsAtLineRateAndListsTheLinksItCrosses) {
    Router r = fabric4();
    JobImpactTracker t;
    auto changes = t.setJobs(r, {{"a", {"z1-r001-h0", "z1-r002-h0"}, Collective::AllReduce}});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].degradation, Degradation::None);
    const auto* j = t.find("a");
    ASSERT_NE(j, nullptr);
    EXPECT_DOUBLE_EQ(j->busBw, 100.0);
    EXPECT_FALSE(j->degraded());
    EXPECT_TRUE(j->error.empty());
    // 4 NIC cables + both uplinks of both racks (the ECMP split uses every branch; the way
    // back down is the same full-duplex cables).
    EXPECT_EQ(j->links.size(), 4u + 4u);
    const auto& topo = r.topology();
    std::vector<std::string> names;
    for (auto l : j->links) names.push_back(topo.linkNames[l]);
    EXPECT_NE(std::find(names.begin(), names.end(), "z1-r002-rtsw/p5--z1-ctsw01/p2"), names.end());
    for (const auto& n : names) EXPECT_EQ(n.find("r003"), std::string::npos) << n;
    EXPECT_EQ(t.find("b"), nullptr);
}

TEST(JobImpact, AFailureUnderAJobOpensADegradationNamingTheLinkAndRecoveryClosesIt) {
    Router r = fabric4();
    JobImpactTracker t;
    t.setJobs(r, {{"a", {"z1-r001-h0", "z1-r002-h0"}, Collective::AllReduce},
                  {"b", {"z1-r003-h0", "z1-r004-h0"}, Collective::AllReduce}});
    const auto before = t.recomputed();
    const auto bVersion = t.find("b")->version;

    auto up = link(r, "z1-r002-rtsw/p5--z1-ctsw01/p2");
    r.setLinkState(up, LinkState::Down);
    auto changes = t.linksChanged(r, std::array{up});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].name, "a");
    EXPECT_EQ(changes[0].degradation, Degradation::Opened);
    EXPECT_EQ(changes[0].message,
              "job a degraded to 50% busbw by link z1-r002-rtsw/p5--z1-ctsw01/p2 down");
    EXPECT_EQ(t.recomputed() - before, 1u) << "job b never crossed the link: not recomputed";
    EXPECT_NEAR(t.find("a")->busBw, 50.0, 1e-6);
    EXPECT_DOUBLE_EQ(t.find("a")->healthyBusBw, 100.0);
    EXPECT_EQ(t.find("a")->downLinks, std::vector<std::int32_t>{up});
    EXPECT_TRUE(t.find("a")->degraded());
    EXPECT_EQ(t.find("b")->version, bVersion);
    EXPECT_DOUBLE_EQ(t.find("b")->busBw, 100.0);

    expectRecovery(r, t, up);
    EXPECT_TRUE(t.find("a")->downLinks.empty());
}

TEST(JobImpact, ANicCableDownCutsTheJobToZeroAndIsNamed) {
    Router r = fabric4();
    JobImpactTracker t;
    t.setJobs(r, {{"a", {"z1-r001-h0", "z1-r002-h0"}, Collective::AllReduce}});
    const auto& topo = r.topology();
    auto nic = nicCable(r, "z1-r002-h0", 1);
    r.setLinkState(nic, LinkState::Drained);
    auto changes = t.linksChanged(r, std::array{nic});
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].degradation, Degradation::Opened);
    EXPECT_EQ(changes[0].message,
              "job a degraded to 0% busbw by link " + topo.linkNames[nic] + " drained");
    EXPECT_GT(t.find("a")->unroutedFlows, 0);
}

// A job written onto hosts whose cables are already down (racks not in service yet, a NIC
// cable out) has no route for some of its traffic: it is degraded from its first computation,
// with its event, not "ok" at 0 % because it never had a better value to compare with.
TEST(JobImpact, AJobPlacedOnABrokenFabricIsDegradedFromTheStart) {
    Router r = fabric4();
    const auto& topo = r.topology();
    auto nic = nicCable(r, "z1-r002-h0", 0);
    r.setLinkState(nic, LinkState::NotInService);
    JobImpactTracker t;
    auto changes = t.setJobs(r, {{"a", {"z1-r001-h0", "z1-r002-h0"}, Collective::AllReduce},
                                 {"b", {"z1-r003-h0", "z1-r004-h0"}, Collective::AllReduce}});
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_EQ(changes[0].name, "a");
    EXPECT_EQ(changes[0].degradation, Degradation::Opened);
    EXPECT_EQ(changes[0].message,
              "job a degraded to 0% busbw by link " + topo.linkNames[nic] + " not in service");
    EXPECT_EQ(changes[1].degradation, Degradation::None);
    const auto* a = t.find("a");
    EXPECT_TRUE(a->degraded());
    EXPECT_DOUBLE_EQ(a->busBw, 0.0);
    EXPECT_GT(a->unroutedFlows, 0);
    EXPECT_EQ(a->downLinks, std::vector<std::int32_t>{nic});
    EXPECT_FALSE(t.find("b")->degraded());

    // The cable comes into service: the job recovers to line rate and the event closes.
    expectRecovery(r, t, nic);
    EXPECT_DOUBLE_EQ(t.find("a")->healthyBusBw, 100.0);

    // A job the model refuses (no host in the fabric) is not "degraded": it has an error.
    t.setJobs(r, {{"e", {"nowhere-h1"}, Collective::AllReduce}});
    EXPECT_FALSE(t.find("e")->degraded());
    EXPECT_FALSE(t.find("e")->error.empty());
}

// The one word every client shows (health.status): "ok" only when nothing is wrong, and the
// worst thing first — a degraded job that also has a failed GPU and a link down is "degraded".
TEST(JobImpact, TheHealthWordIsOkOnlyWhenNothingIsWrongAndNamesTheWorstFirst) {
    EXPECT_EQ(jobHealthStatus({}), "ok");
    EXPECT_EQ(jobHealthStatus({.degraded = true, .gpusFailed = 1, .linksDown = 2}), "degraded");
    EXPECT_EQ(jobHealthStatus({.modelError = true, .gpusFailed = 1}), "gpu-failed");
    EXPECT_EQ(jobHealthStatus({.modelError = true, .linksDown = 1}), "unknown");
    EXPECT_EQ(jobHealthStatus({.gpusWarning = 3, .linksDown = 1}), "links-down");
    EXPECT_EQ(jobHealthStatus({.gpusWarning = 1}), "gpu-warning");
    EXPECT_EQ(jobHealthStatus({.gpusQuarantined = 1}), "gpu-warning");
}

TEST(JobImpact, SetJobsKeepsUnchangedJobsAndClosesTheDegradationOfAJobThatEnds) {
    Router r = fabric4();
    JobImpactTracker t;
    t.setJobs(r, {{"a", {"z1-r001-h0", "z1-r002-h0"}, Collective::AllReduce},
                  {"b", {"z1-r003-h0", "z1-r004-h0"}, Collective::AllReduce}});
    auto up = link(r, "z1-r002-rtsw/p5--z1-ctsw01/p2");
    r.setLinkState(up, LinkState::Down);
    t.linksChanged(r, std::array{up});
    const auto n = t.recomputed();
    auto changes = t.setJobs(r, {{"b", {"z1-r003-h0", "z1-r004-h0"}, Collective::AllReduce},
                                 {"c", {"z1-r001-h1"}, Collective::AllReduce}});
    EXPECT_EQ(t.recomputed() - n, 1u) << "only the new job c is computed";
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_EQ(changes[0].name, "c");
    EXPECT_EQ(changes[1].name, "a");
    EXPECT_EQ(changes[1].degradation, Degradation::Closed);
    EXPECT_EQ(t.find("a"), nullptr);
    EXPECT_DOUBLE_EQ(t.find("c")->busBw, 100.0);  // one host: no fabric traffic
    // Unknown hosts are listed, not fatal; a job with none in the fabric is 0 with a reason.
    t.setJobs(r, {{"d", {"z1-r001-h0", "nowhere-h0", "z1-r004-h1"}, Collective::AllReduce},
                  {"e", {"nowhere-h1"}, Collective::AllReduce}});
    EXPECT_EQ(t.find("d")->unknownHosts, std::vector<std::string>{"nowhere-h0"});
    EXPECT_DOUBLE_EQ(t.find("e")->busBw, 0.0);
    EXPECT_EQ(t.find("e")->error, "no host of the job is in the backend fabric");
}

// The incremental rule (a down link moves only the jobs that crossed it) against computing
// every job from scratch, on random failure and repair sequences of a two-zone fabric.
TEST(JobImpact, IncrementalUpdatesEqualAFullRecomputation) {
    fabric::testbed::RoceShape sh{.zones = 2,
                                  .racksPerZone = 6,
                                  .hostsPerRack = 2,
                                  .nicsPerHost = 2,
                                  .ctswPerZone = 3,
                                  .linksPerCtsw = 1,
                                  .atsws = 2,
                                  .ctswUplinks = 2};
    auto topo = fabric::buildTopology(fabric::testbed::makeRoce(sh));
    ASSERT_TRUE(topo.has_value()) << topo.error().toString();
    Router r(std::move(*topo));
    const auto& T = r.topology();
    std::mt19937 rng(11);
    std::vector<JobImpactInput> jobs;
    std::vector<std::string> hosts = T.hostNames;
    std::shuffle(hosts.begin(), hosts.end(), rng);
    for (std::size_t i = 0, k = 0; i + 3 <= hosts.size(); i += 3, ++k)
        jobs.push_back({"j" + std::to_string(k),
                        {hosts[i], hosts[i + 1], hosts[i + 2]},
                        k % 3 == 2 ? Collective::AllToAll : Collective::AllReduce});
    JobImpactTracker t;
    t.setJobs(r, jobs);
    int degradedSeen = 0;
    for (int step = 0; step < 200; ++step) {
        auto l = static_cast<std::int32_t>(rng() % T.linkCount());
        auto s = T.linkState[l] == LinkState::Up ? LinkState::Down : LinkState::Up;
        r.setLinkState(l, s);
        t.linksChanged(r, std::array{l});
        JobImpactTracker fresh;
        fresh.setJobs(r, jobs);
        for (const auto& j : fresh.jobs()) {
            const auto* inc = t.find(j.name);
            ASSERT_NE(inc, nullptr);
            ASSERT_NEAR(inc->busBw, j.busBw, 1e-9) << j.name << " at step " << step;
            ASSERT_EQ(inc->links, j.links) << j.name << " at step " << step;
            degradedSeen += inc->degraded();
        }
    }
    EXPECT_GT(degradedSeen, 0) << "the sequence never degraded a job: the test proves nothing";
}

}  // namespace
}  // namespace loom::jobs
