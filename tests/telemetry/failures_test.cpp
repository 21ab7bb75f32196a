// The failure summary (telemetry/failures.hpp) that GET /api/v1/failures serves: counts by kind
// and where each failure is drawn, on a small synthetic RoCE hall.
#include "loom/telemetry/failures.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "synthetic_inventory.hpp"

namespace loom::telemetry {
namespace {

const Failure* find(const FailureSummary& s, std::string_view name) {
    auto it = std::find_if(s.items.begin(), s.items.end(),
                           [&](const Failure& f) { return f.name == name; });
    return it == s.items.end() ? nullptr : &*it;
}

int count(const FailureSummary& s, FailureKind k) { return s.counts[static_cast<std::size_t>(k)]; }

TEST(Failures, CountsEachKindAndSaysWhereToDrawIt) {
    auto inv = testing::syntheticCluster(
        {.zones = 2, .racksPerZone = 3, .ctswPerZone = 2, .ctswUplinks = 2, .atsw = 2});
    for (auto& r : inv.racks)
        if (r.name == "z2-r003") r.state = "failed";
    auto L = HallLayout::build(inv);
    std::vector<std::uint8_t> gpu(L.gpuCount(), 0), link(L.linkCount(), 0);
    gpu[L.gpuByName("z1-r002-h0-gpu3")] = 2;                            // failed
    gpu[L.gpuByName("z1-r001-h1-gpu0")] = 1;                            // warning
    for (int g = 0; g < 8; ++g) gpu[L.gpuByHost("z2-r001-h1", g)] = 3;  // one quarantined host

    // A NIC cable down marks its GPU and its rack.
    std::uint32_t nic = kNoIndex;
    for (std::uint32_t l = 0; l < L.linkCount(); ++l)
        if (L.links()[l].gpu == L.gpuByName("z1-r003-h1-gpu5")) nic = l;
    ASSERT_NE(nic, kNoIndex);
    link[nic] = 2;

    // Every link of z2-r002's RTSW down: that switch is a failure, and each link one too.
    const auto sw = L.switchByName("z2-r002-rtsw");
    ASSERT_NE(sw, kNoIndex);
    int swLinks = 0;
    const auto& S = L.switches()[sw];
    for (auto p = S.portOffset; p < S.portOffset + S.portSlots; ++p)
        if (auto l = L.ports()[p].linkIndex; l != kNoIndex) {
            link[l] = 2;
            ++swLinks;
        }
    ASSERT_GE(swLinks, 2);
    // Planned or drained is a state, not a failure.
    link[L.linkCount() - 1] = 3;
    link[L.linkCount() - 2] = 4;

    FailureEvent hostEvent;
    hostEvent.kind = "host_unreachable";
    hostEvent.severity = Severity::Critical;
    hostEvent.location = "z1-r001-h0";
    FailureEvent info = hostEvent;
    info.location = "z1-r002-h1";
    info.severity = Severity::Info;
    std::vector<FailureEvent> events{hostEvent, info};

    auto s = summarizeFailures(L, gpu, link, events);
    EXPECT_EQ(count(s, FailureKind::Gpu), 2);
    EXPECT_EQ(count(s, FailureKind::Host), 2);  // the quarantined one and the event's
    EXPECT_EQ(count(s, FailureKind::Link), 1 + swLinks);
    EXPECT_EQ(count(s, FailureKind::Switch), 1);
    EXPECT_EQ(count(s, FailureKind::Rack), 1);
    EXPECT_EQ(s.total(), 2 + 2 + 1 + swLinks + 1 + 1);

    const auto* failed = find(s, "z1-r002-h0-gpu3");
    ASSERT_TRUE(failed);
    EXPECT_TRUE(failed->failed);
    EXPECT_EQ(L.racks()[failed->rack].name, "z1-r002");
    EXPECT_FALSE(find(s, "z1-r001-h1-gpu0")->failed);

    const auto* cable = find(s, L.links()[nic].name);
    ASSERT_TRUE(cable);
    EXPECT_EQ(cable->state, "down");
    EXPECT_EQ(L.racks()[cable->rack].name, "z1-r003");
    EXPECT_EQ(L.gpuNames()[cable->gpu], "z1-r003-h1-gpu5");

    const auto* q = find(s, "z2-r001-h1");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->state, "quarantined");
    EXPECT_EQ(L.racks()[q->rack].name, "z2-r001");
    EXPECT_EQ(find(s, "z1-r001-h0")->event, "host_unreachable");
    EXPECT_FALSE(find(s, "z1-r002-h1"));  // info is not a failure

    const auto* swf = find(s, "z2-r002-rtsw");
    ASSERT_TRUE(swf);
    EXPECT_EQ(L.racks()[swf->rack].name, "z2-r002");
    EXPECT_TRUE(find(s, "z2-r003"));

    // Items are grouped by kind, in the order of the counter.
    EXPECT_TRUE(std::is_sorted(s.items.begin(), s.items.end(),
                               [](const Failure& a, const Failure& b) { return a.kind < b.kind; }));
}

TEST(Failures, ShortArraysReadAsNoData) {
    auto inv = testing::syntheticCluster({.zones = 1, .racksPerZone = 2});
    auto L = HallLayout::build(inv);
    auto s = summarizeFailures(L, {}, {}, {});
    EXPECT_EQ(s.total(), 0);
    EXPECT_TRUE(s.items.empty());
}

}  // namespace
}  // namespace loom::telemetry
