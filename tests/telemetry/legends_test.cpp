// The legends' scales (telemetry/legends.hpp) that GET /api/v1/legends serves to the console
// and the web dashboard: the temperature ramp and its marks follow the detection config.
#include "loom/telemetry/legends.hpp"

#include <gtest/gtest.h>

#include "loom/provisioning/lifecycle.hpp"

namespace loom::telemetry {
namespace {

const LegendScale& scale(const std::vector<LegendScale>& all, std::string_view metric) {
    for (const auto& s : all)
        if (s.metric == metric) return s;
    ADD_FAILURE() << "no scale " << metric;
    return all.front();
}

TEST(Legends, DefaultsMarkTheGpuTempThresholdsOnTheRamp) {
    const auto all = legendScales(DetectionConfig{});
    const auto& u = scale(all, "utilization");
    EXPECT_EQ(u.unit, "%");
    EXPECT_EQ(u.min, 0);
    EXPECT_EQ(u.max, 100);
    EXPECT_EQ(u.ticks, (std::vector<double>{0, 25, 50, 75, 100}));
    EXPECT_TRUE(u.thresholds.empty());
    const auto& t = scale(all, "temperature");
    EXPECT_EQ(t.unit, "°C");
    EXPECT_EQ(t.min, 20);
    EXPECT_EQ(t.max, 95);
    EXPECT_EQ(t.ticks, (std::vector<double>{20, 35, 50, 65, 80, 95}));
    ASSERT_EQ(t.thresholds.size(), 2u);
    EXPECT_EQ(t.thresholds[0].value, 85);
    EXPECT_EQ(t.thresholds[0].severity, "warning");
    EXPECT_EQ(t.thresholds[1].value, 92);
    EXPECT_EQ(t.thresholds[1].severity, "critical");
}

TEST(Legends, ASiteWithHotterThresholdsGetsARampThatShowsThem) {
    DetectionConfig d;
    d.tempWarningC = 90;
    d.tempCriticalC = 98;
    const auto all = legendScales(d);
    const auto& t = scale(all, "temperature");
    EXPECT_EQ(t.max, 105);  // 5 °C past critical, on a multiple of 5
    EXPECT_EQ(t.ticks.back(), 105);
    ASSERT_EQ(t.thresholds.size(), 2u);
    EXPECT_EQ(t.thresholds[0].value, 90);
    EXPECT_EQ(t.thresholds[1].value, 98);
    // A threshold off the ramp (below its start) is not marked.
    d.tempWarningC = 10;
    EXPECT_EQ(scale(legendScales(d), "temperature").thresholds.size(), 1u);
}

TEST(Legends, ColoursNameEveryRackStateAndHealthWordOnce) {
    const auto c = legendColours();
    ASSERT_EQ(c.rackStates.size(), std::size_t{provisioning::kRackStateCount});
    for (int i = 0; i < provisioning::kRackStateCount; ++i) {
        EXPECT_EQ(c.rackStates[i].value, i);
        EXPECT_EQ(c.rackStates[i].name,
                  provisioning::stateName(static_cast<provisioning::RackState>(i)));
        EXPECT_EQ(c.rackStates[i].colour.size(), 7u) << c.rackStates[i].colour;
    }
    EXPECT_FALSE(c.rackStates[0].reportsData);  // planned
    EXPECT_TRUE(c.rackStates[7].reportsData);   // in_service
    ASSERT_EQ(c.health.size(), 4u);
    EXPECT_EQ(c.health[2].name, "failed");
    ASSERT_EQ(c.linkHealth.size(), 5u);
    EXPECT_EQ(c.linkHealth[2].name, "down");
    // The failure marks are in none of the swatches: a mark is never read as a state.
    for (const auto* sw : {&c.health, &c.linkHealth, &c.rackStates})
        for (const auto& w : *sw)
            for (const auto& mark : {c.failed, c.degraded, c.quarantined})
                EXPECT_NE(w.colour, mark) << w.name;
    EXPECT_EQ(c.ramp.size(), 6u);
}

}  // namespace
}  // namespace loom::telemetry
