// HallLayout on the real reference cluster specs (configs/clusters), parsed by the inventory
// module: every backend link must resolve to its switch ports and, for NIC links, its GPU.
#include <gtest/gtest.h>

#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "loom/inventory/spec.hpp"

namespace loom::telemetry {
namespace {

HallLayout load(const std::string& file) {
    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + file);
    EXPECT_TRUE(inv) << (inv ? "" : inv.error().toString());
    return inv ? HallLayout::build(*inv) : HallLayout{};
}

void expectResolved(const HallLayout& L) {
    std::size_t nicLinks = 0;
    for (const auto& l : L.links()) {
        ASSERT_NE(l.bPort, kNoIndex) << l.name;
        if (l.tier == 0) {
            ++nicLinks;
            ASSERT_NE(l.gpu, kNoIndex) << l.name;
            ASSERT_NE(l.rackIndex, kNoIndex) << l.name;
        } else {
            ASSERT_NE(l.aPort, kNoIndex) << l.name;
        }
    }
    EXPECT_EQ(nicLinks, L.gpuCount());
    // RoCE racks have their RTSW; InfiniBand racks are cabled rail-optimized to shared leaves.
    for (const auto& r : L.racks())
        if (r.gpuCount && L.fabric() == inventory::FabricType::Roce) {
            EXPECT_FALSE(r.rtsw.empty()) << r.name;
        }
}

TEST(ReferenceLayout, DevSmall) {
    auto L = load("dev-small.yaml");
    EXPECT_EQ(L.gpuCount(), 64u);
    expectResolved(L);
    EXPECT_EQ(L.gpuNames()[0], "z1-r001-h0-gpu0");
}

TEST(ReferenceLayout, Meta24kRoce) {
    auto L = load("meta-24k-roce.yaml");
    EXPECT_EQ(L.gpuCount(), 24576u);
    EXPECT_EQ(L.linkCount(), 55680u);
    expectResolved(L);
    // One simulated scrape of the real cluster is fully understood by the hub.
    auto shared = std::make_shared<const HallLayout>(std::move(L));
    Simulator sim(shared);
    TelemetryHub hub(shared);
    std::string body;
    sim.step(1'700'000'000'000, body);
    auto r = hub.ingestText(body, 1'700'000'000'000);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->unknownTotal(), 0u);
    EXPECT_EQ(r->ignored, 0u);
    EXPECT_EQ(r->applied, r->samples);
}

TEST(ReferenceLayout, Meta24kInfiniband) {
    auto L = load("meta-24k-ib.yaml");
    EXPECT_EQ(L.gpuCount(), 24576u);
    expectResolved(L);
}

}  // namespace
}  // namespace loom::telemetry
