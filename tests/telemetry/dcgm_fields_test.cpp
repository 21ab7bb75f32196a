// dcgm-exporter pages in its exact format (HELP/TYPE per field, labels gpu, UUID, pci_bus_id,
// device, modelName, Hostname, DCGM_FI_DRIVER_VERSION and hpc_job from its HPC job mapping):
// clock event reasons under both field names, gpu_throttled, violation counters, profiling
// fields and the GPU's job.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "hub_fixture.hpp"

namespace loom::telemetry {
namespace {

struct GpuRow {
    int gpu;
    double value;
    std::string job;  // empty: no hpc_job label (no mapping file for that GPU)
};

// One field of one host as dcgm-exporter 3.3 writes it (DCGM_FI_DRIVER_VERSION is added by
// its default `--kubernetes-gpu-id-type`-less config when the driver field is in the CSV).
std::string field(std::string_view name, std::string_view type, std::string_view help,
                  std::string_view host, const std::vector<GpuRow>& rows) {
    std::string out = "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
                      std::string(name) + " " + std::string(type) + "\n";
    for (const auto& r : rows) {
        char bus[32];
        std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + r.gpu * 0x10);
        out += std::string(name) + "{gpu=\"" + std::to_string(r.gpu) + "\",UUID=\"GPU-" +
               std::string(host) + "-" + std::to_string(r.gpu) + "\",pci_bus_id=\"" + bus +
               "\",device=\"nvidia" + std::to_string(r.gpu) +
               "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"" + std::string(host) +
               "\",DCGM_FI_DRIVER_VERSION=\"535.129.03\"";
        if (!r.job.empty()) out += ",hpc_job=\"" + r.job + "\"";
        char v[32];
        std::snprintf(v, sizeof v, "%.17g", r.value);
        out += "} " + std::string(v) + "\n";
    }
    return out;
}

std::string reasons(std::string_view fieldName, std::string_view host,
                    const std::vector<GpuRow>& rows) {
    return field(fieldName, "gauge", "Current clock event reasons (bitmask).", host, rows);
}

class DcgmFields : public HubFixture {
protected:
    void SetUp() override {
        HubOptions o;
        o.detection.throttledIntervals = 3;
        makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2}, o);
    }
    std::uint32_t gpu(std::string_view name) const { return layout_->gpuByName(name); }
};

TEST(ClockEventReasons, DecodedByName) {
    EXPECT_EQ(clockEventReasonNames(0), std::vector<std::string>{});
    EXPECT_EQ(clockEventReasonNames(0x1), std::vector<std::string>{"gpu_idle"});
    EXPECT_EQ(clockEventReasonNames(0x4 | 0x8 | 0x20 | 0x40 | 0x80),
              (std::vector<std::string>{"sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                                        "hw_power_brake"}));
    EXPECT_EQ(clockEventReasonNames(0x44 | 0x1000),
              (std::vector<std::string>{"sw_power_cap", "hw_thermal", "0x1000"}));
}

TEST_F(DcgmFields, ThrottledOpensAfterNIntervalsUnderBothFieldNames) {
    const std::string h = "z1-r001-h0";
    // GPU 0: sw_power_cap alone (normal under load): never an event. GPU 1: hw_thermal (new
    // field name). GPU 2: hw_power_brake + sw_power_cap (old field name, from an exporter
    // before DCGM 3.3). GPU 3: hw_slowdown for two samples only, then clear.
    for (int i = 0; i < 2; ++i) {
        ingest(reasons("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", h,
                       {{0, 0x4, ""}, {1, 0x40, ""}, {3, 0x8, ""}}) +
               reasons("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", h, {{2, 0x84, ""}}));
    }
    EXPECT_TRUE(events_.empty()) << "two samples are fewer than throttledIntervals=3";
    auto rep = ingest(reasons("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", h,
                              {{0, 0x4, ""}, {1, 0x40, ""}, {3, 0x0, ""}}) +
                      reasons("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", h, {{2, 0x84, ""}}));
    EXPECT_EQ(rep.applied, 4u);
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_EQ(events_[0].kind, "gpu_throttled");
    EXPECT_EQ(events_[0].location, "z1-r001-h0-gpu1");
    EXPECT_EQ(events_[0].severity, Severity::Warning);
    EXPECT_EQ(events_[0].message, "z1-r001-h0-gpu1: clocks throttled (hw_thermal) for 3 samples");
    EXPECT_EQ(events_[0].labels.at(0),
              (std::pair<std::string, std::string>{"reasons", "hw_thermal"}));
    EXPECT_EQ(events_[1].location, "z1-r001-h0-gpu2");
    EXPECT_EQ(events_[1].labels.at(0).second, "hw_power_brake");  // sw_power_cap is not a cause
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[gpu("z1-r001-h0-gpu1")], kGpuWarning);
    EXPECT_EQ(hub_->gpuValue(gpu("z1-r001-h0-gpu2"), GpuField::ClockEventReasons), 0x84);

    // Held: no second event. Then GPU 1's reason clears: closed once it has stayed clear for
    // the hold-down (detection.thresholdHoldDownSeconds, 60 s); GPU 0 never alarmed.
    ingest(reasons("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", h, {{0, 0x4, ""}, {1, 0x40, ""}}));
    EXPECT_EQ(events_.size(), 2u);
    ingest(reasons("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", h, {{0, 0x4, ""}, {1, 0x1, ""}}));
    EXPECT_EQ(events_.size(), 2u);
    now_ += 60'000;
    ingest(reasons("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", h, {{0, 0x4, ""}, {1, 0x1, ""}}));
    ASSERT_EQ(events_.size(), 3u);
    EXPECT_FALSE(events_[2].open());
    EXPECT_EQ(events_[2].location, "z1-r001-h0-gpu1");
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[gpu("z1-r001-h0-gpu1")], kGpuOk);
    EXPECT_EQ(hub_->openEvents().size(), 1u);

    // An interrupted run starts over: thermal, clear, thermal, thermal -> no event yet.
    for (double v : {32.0, 0.0, 32.0, 32.0})
        ingest(reasons("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", h, {{5, v, ""}}));
    EXPECT_EQ(events_.size(), 3u);
    ingest(reasons("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", h, {{5, 32, ""}}));
    ASSERT_EQ(events_.size(), 4u);
    EXPECT_EQ(events_[3].labels.at(0).second, "sw_thermal");
}

TEST_F(DcgmFields, ViolationProfilingAndJobFromARecordedPage) {
    const std::string h = "z1-r002-h1";
    std::string page =
        field("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", h,
              {{0, 1980, "slurm-4242"}, {1, 1140, "slurm-4242"}}) +
        field("DCGM_FI_DEV_POWER_VIOLATION", "counter",
              "Throttling duration due to power constraints (in us).", h,
              {{0, 0, "slurm-4242"}, {1, 81234567, "slurm-4242"}}) +
        field("DCGM_FI_DEV_THERMAL_VIOLATION", "counter",
              "Throttling duration due to thermal constraints (in us).", h,
              {{0, 0, "slurm-4242"}, {1, 5000000, "slurm-4242"}}) +
        field("DCGM_FI_PROF_SM_ACTIVE", "gauge",
              "The ratio of cycles an SM has at least 1 warp assigned.", h,
              {{0, 0.93, "slurm-4242"}, {1, 0.61, "slurm-4242"}}) +
        field("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
              "Ratio of cycles the device memory interface is active sending or receiving data.", h,
              {{0, 0.42, "slurm-4242"}, {1, 0.2, "slurm-4242"}}) +
        field("DCGM_FI_PROF_PCIE_TX_BYTES", "counter",
              "The number of bytes of active pcie tx data including both header and payload.", h,
              {{0, 123456789, "slurm-4242"}}) +
        field("DCGM_FI_PROF_NVLINK_RX_BYTES", "counter",
              "The number of bytes of active NvLink rx data including both header and payload.", h,
              {{1, 987654321, "slurm-4242"}}) +
        field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", h,
              {{2, 0, ""}});  // GPU 2: no job mapping file
    auto rep = ingest(page);
    EXPECT_EQ(rep.samples, 13u);
    EXPECT_EQ(rep.applied, 13u);
    EXPECT_EQ(rep.unknownTotal(), 0u);
    const auto g0 = gpu("z1-r002-h1-gpu0"), g1 = gpu("z1-r002-h1-gpu1"),
               g2 = gpu("z1-r002-h1-gpu2");
    EXPECT_EQ(hub_->gpuValue(g1, GpuField::PowerViolation), 81234568);  // float storage
    EXPECT_EQ(hub_->gpuValue(g1, GpuField::ThermalViolation), 5000000);
    EXPECT_NEAR(hub_->gpuValue(g0, GpuField::SmActive), 0.93, 1e-6);
    EXPECT_NEAR(hub_->gpuValue(g1, GpuField::DramActive), 0.2, 1e-6);
    EXPECT_NEAR(hub_->gpuValue(g0, GpuField::PcieTxBytes), 123456789, 8);
    EXPECT_NEAR(hub_->gpuValue(g1, GpuField::NvlinkRxBytes), 987654321, 64);
    EXPECT_TRUE(std::isnan(hub_->gpuValue(g0, GpuField::NvlinkRxBytes)));
    EXPECT_EQ(hub_->gpuJob(g0), "slurm-4242");
    EXPECT_EQ(hub_->gpuJob(g1), "slurm-4242");
    EXPECT_EQ(hub_->gpuJob(g2), "");

    // The job moves on: a new mapping names another job; then the file goes, and the label.
    ingest(field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", h,
                 {{0, 99, "slurm-5001"}}));
    EXPECT_EQ(hub_->gpuJob(g0), "slurm-5001");
    ingest(field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", h, {{0, 1, ""}}));
    EXPECT_EQ(hub_->gpuJob(g0), "");
    EXPECT_EQ(hub_->gpuJob(g1), "slurm-4242");

    // Carried over a layout change by name.
    ingest(field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", h,
                 {{3, 50, "slurm-77"}}));
    auto inv2 = testing::syntheticCluster({.zones = 1, .racksPerZone = 3, .ctswPerZone = 2});
    auto l2 = std::make_shared<const HallLayout>(HallLayout::build(inv2));
    hub_->setLayout(l2);
    EXPECT_EQ(hub_->gpuJob(l2->gpuByName("z1-r002-h1-gpu3")), "slurm-77");
    EXPECT_EQ(hub_->gpuValue(l2->gpuByName("z1-r002-h1-gpu1"), GpuField::PowerViolation), 81234568);
}

}  // namespace
}  // namespace loom::telemetry
