// node_exporter's InfiniBand byte, wait and error counters at the host end of each backend
// link (issue 20, item 3), on node_exporter 1.5's real page (bench/telemetry/pages/, 8 ConnectX
// ports at 400 Gb/s = rate_bytes_per_second 5e10): utilization = max(rx, tx) rate over the
// port's speed in link.util, received errors over detection.linkErrorsPerSecond open
// link_errors; a counter that restarts from 0 counts its new value as the increase, as
// Prometheus's rate() does, never a negative or huge spike.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "hub_fixture.hpp"

namespace loom::telemetry {
namespace {

std::string recorded() {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) +
                     "/bench/telemetry/pages/node_exporter_infiniband.txt");
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

// `page` with `metric`{device="mlx5_N",port="1"}'s value replaced by `v`.
std::string with(std::string page, const std::string& metric, int nic, double v) {
    const std::string key = metric + "{device=\"mlx5_" + std::to_string(nic) + "\",port=\"1\"} ";
    const auto at = page.find("\n" + key);
    EXPECT_NE(at, std::string::npos) << key;
    if (at == std::string::npos) return page;
    const auto from = at + 1 + key.size();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return page.replace(from, page.find('\n', from) - from, buf);
}

class NodeInfinibandRates : public HubFixture {
protected:
    void SetUp() override { makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2}); }
    IngestReport scrape(const std::string& body) {
        auto rep = ingest(body, {.host = "z1-r002-h0"});
        hub_->tick();
        return rep;
    }
    std::uint32_t linkOf(std::string_view gpu) const {
        const auto g = layout_->gpuByName(gpu);
        for (std::uint32_t l = 0; l < layout_->links().size(); ++l)
            if (layout_->links()[l].gpu == g) return l;
        return kNoIndex;
    }
    std::uint8_t util(std::uint32_t l) const { return hub_->packed(Topic::LinkUtil)[l]; }
};

TEST_F(NodeInfinibandRates, HostEndUtilizationAndErrorsWithResetsAsRateDoes) {
    const auto l0 = linkOf("z1-r002-h0-gpu0"), l3 = linkOf("z1-r002-h0-gpu3");
    ASSERT_NE(l0, kNoIndex);
    ASSERT_NE(l3, kNoIndex);
    const auto page = recorded();
    const std::string tx = "node_infiniband_port_data_transmitted_bytes_total";
    const std::string rx = "node_infiniband_port_data_received_bytes_total";
    const std::string err = "node_infiniband_port_errors_received_total";
    auto rep = scrape(page);
    EXPECT_EQ(rep.unknownTotal(), 0u);
    // 8 ports x (state_id, link_downed, rx, tx, wait, errors, recovery, rate) land on links.
    EXPECT_EQ(rep.applied, 64u);
    EXPECT_EQ(util(l0), kNoData) << "one sample of a counter is no rate";

    // A second later: mlx5_0 sent 25 GB (half of 50 GB/s), mlx5_3 received 5 GB (10 %).
    const double tx0 = 3.249390715628e12, rx3 = 3.249390715628e12;  // any start values
    auto p1 = with(with(page, tx, 0, tx0), rx, 3, rx3);
    scrape(p1);
    auto p2 = with(with(page, tx, 0, tx0 + 25e9), rx, 3, rx3 + 5e9);
    scrape(p2);
    EXPECT_EQ(util(l0), 50);
    EXPECT_EQ(util(l3), 10);

    // The driver reloads: mlx5_0's counter restarts and reads 10 GB a second later. rate()
    // takes 10 GB as the increase (20 %), not a negative rate nor the 3 TB drop.
    scrape(with(page, tx, 0, 10e9));
    EXPECT_EQ(util(l0), 20);

    // Receive errors on mlx5_3: 40/s over the threshold (10/s) opens link_errors on its link,
    // below half of it closes.
    ASSERT_TRUE(events_.empty());
    scrape(with(page, err, 3, 40));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_errors");
    EXPECT_EQ(events_[0].location, layout_->links()[l3].name);
    EXPECT_NE(events_[0].message.find("host NIC receive errors 40/s"), std::string::npos)
        << events_[0].message;
    scrape(with(page, err, 3, 41));
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_EQ(events_[1].kind, "link_errors");
    EXPECT_NE(events_[1].closedAtMs, 0);
    // A reset of the error counter (41 -> 0) is an increase of 0, not a spike: nothing opens.
    scrape(with(page, err, 3, 0));
    EXPECT_EQ(events_.size(), 2u);
}

}  // namespace
}  // namespace loom::telemetry
