// A TelemetryHub over a synthetic cluster for the hub's exporter tests: its clock is the
// test's (now_, a second later per ingest), and every event it raises is kept in events_, in
// order.
//
//   class MyTest : public HubFixture {
//       void SetUp() override { makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2}); }
//   };
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "loom/telemetry/telemetry_hub.hpp"
#include "synthetic_inventory.hpp"

namespace loom::telemetry {

class HubFixture : public ::testing::Test {
protected:
    static constexpr std::int64_t kT0 = 1'700'000'020'000;  // 40 s into a minute

    void makeHub(const loom::testing::SyntheticShape& shape, HubOptions options = {}) {
        inv_ = loom::testing::syntheticCluster(shape);
        layout_ = std::make_shared<const HallLayout>(HallLayout::build(inv_));
        options.clock = [this] { return now_; };
        hub_ = std::make_unique<TelemetryHub>(layout_, options);
        hub_->addEventListener([this](const FailureEvent& e) { events_.push_back(e); });
    }
    // One exposition body a second after the last one (a body the hub rejects fails the test).
    IngestReport ingest(std::string_view body, IngestIdentity identity = {}) {
        now_ += 1000;
        auto r = hub_->ingestText(body, 0, identity);
        EXPECT_TRUE(r) << r.error().toString();
        return r ? *r : IngestReport{};
    }

    inventory::Inventory inv_;
    std::shared_ptr<const HallLayout> layout_;
    std::unique_ptr<TelemetryHub> hub_;
    std::vector<FailureEvent> events_;
    std::int64_t now_ = kT0;
};

}  // namespace loom::telemetry
