// node_exporter 1.5's InfiniBand collector (recorded in its exact format, as run with
// --path.sysfs on a fixture tree): a host's mlx5_N is its backend NIC N, so the host end of
// that NIC's link. state_id not 4 (ACTIVE) -> link_down; link_downed_total rising ->
// link_flapping; a counter reset counts nothing; a device it cannot match is reported.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "hub_fixture.hpp"

namespace loom::telemetry {
namespace {

std::string page(int state0, int downed0, int state1 = 4, int downed1 = 0) {
    return "# HELP node_infiniband_info Non-numeric data from /sys/class/infiniband/<device>, "
           "value "
           "is always 1.\n"
           "# TYPE node_infiniband_info gauge\n"
           "node_infiniband_info{board_id=\"MT_0000000838\",device=\"mlx5_0\",firmware_version="
           "\"28.39.1002\",hca_type=\"MT4129\"} 1\n"
           "# HELP node_infiniband_link_downed_total Number of times the link failed to recover "
           "from an error state and went down\n"
           "# TYPE node_infiniband_link_downed_total counter\n"
           "node_infiniband_link_downed_total{device=\"mlx5_0\",port=\"1\"} " +
           std::to_string(downed0) +
           "\n"
           "node_infiniband_link_downed_total{device=\"mlx5_1\",port=\"1\"} " +
           std::to_string(downed1) +
           "\n"
           "# HELP node_infiniband_state_id State of the InfiniBand port (0: no change, 1: down, "
           "2: init, 3: armed, 4: active, 5: act defer)\n"
           "# TYPE node_infiniband_state_id gauge\n"
           "node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} " +
           std::to_string(state0) +
           "\n"
           "node_infiniband_state_id{device=\"mlx5_1\",port=\"1\"} " +
           std::to_string(state1) + "\n";
}

class NodeInfiniband : public HubFixture {
protected:
    void SetUp() override { makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2}); }
    // A scrape of `host`'s node_exporter, then the hub's tick.
    IngestReport scrape(const std::string& body, std::string_view host = "z1-r002-h0") {
        auto rep = ingest(body, {.host = host});
        hub_->tick();
        return rep;
    }
    std::string linkOf(std::string_view gpu) const {
        const auto g = layout_->gpuByName(gpu);
        for (const auto& l : layout_->links())
            if (l.gpu == g) return l.name;
        return {};
    }
};

TEST_F(NodeInfiniband, StateAndLinkDownedOnTheHostsBackendLink) {
    const auto nic0 = linkOf("z1-r002-h0-gpu0");
    ASSERT_FALSE(nic0.empty());
    auto rep = scrape(page(4, 7));
    EXPECT_EQ(rep.applied, 4u);
    EXPECT_EQ(rep.ignored, 1u);  // node_infiniband_info
    EXPECT_TRUE(events_.empty()) << "a first link_downed value of 7 is history, not a flap";

    // The port goes to state 1 (DOWN): link_down on the host's backend link.
    scrape(page(1, 7));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_down");
    EXPECT_EQ(events_[0].location, nic0);
    EXPECT_EQ(events_[0].severity, Severity::Critical);
    EXPECT_NE(events_[0].message.find("host NIC port state 1"), std::string::npos)
        << events_[0].message;
    const auto l = layout_->linkByName(nic0);
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDown);
    // ACTIVE again, and link_downed rose 7 -> 8 (the page lists link_downed first): flapping
    // opens on the same link, link_down closes.
    scrape(page(4, 8));
    ASSERT_EQ(events_.size(), 3u);
    EXPECT_EQ(events_[1].kind, "link_flapping");
    EXPECT_EQ(events_[1].location, nic0);
    EXPECT_TRUE(events_[1].open());
    EXPECT_EQ(events_[2].kind, "link_down");
    EXPECT_FALSE(events_[2].open());
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDegraded);

    // A reset (driver reload: 8 -> 0) is no rise; then quiet past the hold-down closes it.
    for (int i = 0; i < 35; ++i) scrape(page(4, 0));
    ASSERT_EQ(events_.size(), 4u);
    EXPECT_EQ(events_[3].kind, "link_flapping");
    EXPECT_FALSE(events_[3].open());
    // Rising from the reset value opens it again (1 more down).
    scrape(page(4, 1));
    ASSERT_EQ(events_.size(), 5u);
    EXPECT_EQ(events_[4].kind, "link_flapping");
    EXPECT_NE(events_[4].message.find("went down 1 time(s)"), std::string::npos);
}

TEST_F(NodeInfiniband, UnmatchedNamesAreReportedNotGuessed) {
    std::string odd =
        "node_infiniband_state_id{device=\"mlx5_9\",port=\"1\"} 4\n"   // no NIC 9 on a host
        "node_infiniband_state_id{device=\"ibp12s0\",port=\"1\"} 1\n"  // not an mlx5_N name
        "node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 1\n";
    auto rep = scrape(odd, "z1-r002-h0");
    EXPECT_EQ(rep.unknown[static_cast<int>(UnknownReason::UnknownPort)], 2u);
    EXPECT_EQ(rep.applied, 1u);
    EXPECT_EQ(events_.size(), 1u);
    auto stranger = scrape(odd, "z9-r001-h0");
    EXPECT_EQ(stranger.unknown[static_cast<int>(UnknownReason::UnknownHost)], 3u);
    // Pushed without a target: the page's `instance` names the host; without one it is missing.
    now_ += 1000;
    auto pushed = hub_->ingestText(
        "node_infiniband_state_id{device=\"mlx5_1\",instance=\"z1-r001-h1:9100\",port=\"1\"} 1\n"
        "node_infiniband_state_id{device=\"mlx5_1\",port=\"1\"} 1\n");
    ASSERT_TRUE(pushed);
    EXPECT_EQ(pushed->applied, 1u);
    EXPECT_EQ(pushed->unknown[static_cast<int>(UnknownReason::MissingLabels)], 1u);
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_EQ(events_[1].location, linkOf("z1-r001-h1-gpu1"));
}

// Issue 35 item 4: on a Grand Teton the frontend ConnectX-6 Dx is an mlx5 device too, and can
// enumerate first (mlx5_0), shifting every backend ConnectX-7 by one. The hosts' NICs declare
// their hca_type (the spec's NIC models): devices are told apart by it, and a host whose devices
// do not match its model is reported under `unknown`, never guessed.
class NicIdentity : public NodeInfiniband {
protected:
    void SetUp() override {
        NodeInfiniband::SetUp();
        // What apply stores for dev-small's grand-teton (ConnectX-7 backend, ConnectX-6 Dx
        // frontend): each NIC's hca_type, and one frontend NIC per host.
        std::vector<inventory::Nic> frontend;
        for (auto& n : inv_.nics) {
            n.hcaType = "MT4129";
            if (n.index == 0) {
                inventory::Nic fe;
                fe.name = std::string(n.host) + "-fe0";
                fe.host = n.host;
                fe.network = inventory::Network::Frontend;
                fe.hcaType = "MT4125";
                frontend.push_back(fe);
            }
        }
        for (auto& fe : frontend) inv_.nics.push_back(std::move(fe));
        layout_ = std::make_shared<const HallLayout>(HallLayout::build(inv_));
        HubOptions options;
        options.clock = [this] { return now_; };
        hub_ = std::make_unique<TelemetryHub>(layout_, options);
        hub_->addEventListener([this](const FailureEvent& e) { events_.push_back(e); });
    }
    // node_exporter 1.5's page of `devices` (name, hca_type), in its order (sorted by name, as
    // node_exporter sorts them), `down` not ACTIVE.
    static std::string page(const std::vector<std::pair<std::string, std::string>>& devices,
                            const std::string& down = {}) {
        std::string out =
            "# HELP node_infiniband_info Non-numeric data from /sys/class/infiniband/<device>, "
            "value is always 1.\n# TYPE node_infiniband_info gauge\n";
        for (const auto& [d, t] : devices)
            out += "node_infiniband_info{board_id=\"" +
                   std::string(t == "MT4125" ? "MT_0000000359" : "MT_0000000838") + "\",device=\"" +
                   d + "\",firmware_version=\"28.39.1002\",hca_type=\"" + t + "\"} 1\n";
        out +=
            "# HELP node_infiniband_state_id State of the InfiniBand port (0: no change, 1: down, "
            "2: init, 3: armed, 4: active, 5: act defer)\n# TYPE node_infiniband_state_id gauge\n";
        for (const auto& [d, t] : devices)
            out += "node_infiniband_state_id{device=\"" + d + "\",port=\"1\"} " +
                   (d == down ? "1" : "4") + "\n";
        return out;
    }
    static std::vector<std::pair<std::string, std::string>> frontendFirst() {
        std::vector<std::pair<std::string, std::string>> d = {{"mlx5_0", "MT4125"}};
        for (int i = 1; i <= 8; ++i) d.emplace_back("mlx5_" + std::to_string(i), "MT4129");
        return d;
    }
};

TEST_F(NicIdentity, AFrontendNicEnumeratedFirstPutsNoEventOnTheWrongCable) {
    auto rep = scrape(page(frontendFirst()));
    EXPECT_EQ(rep.applied, 8u);  // the eight backend ports' state
    EXPECT_EQ(rep.unknownTotal(), 0u);
    EXPECT_TRUE(events_.empty());
    // mlx5_4 is the fourth ConnectX-7: backend NIC 3, GPU 3's cable (not GPU 4's).
    scrape(page(frontendFirst(), "mlx5_4"));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_down");
    EXPECT_EQ(events_[0].location, linkOf("z1-r002-h0-gpu3"));
    // The frontend NIC down opens nothing: it is no backend cable. Listed as ignored.
    scrape(page(frontendFirst(), "mlx5_0"));
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_FALSE(events_[1].open());
    auto ignored = hub_->unknownNames("not_a_port", 10);
    ASSERT_EQ(ignored.size(), 1u);
    EXPECT_EQ(ignored[0].name, "z1-r002-h0/mlx5_0");
    EXPECT_EQ(ignored[0].detail, "frontend NIC (MT4125)");
}

TEST_F(NicIdentity, AHostWhoseDevicesDoNotMatchIsReportedNotGuessed) {
    // Seven ConnectX-7 and the frontend: which rail is missing cannot be known, so no device of
    // the host is believed -- not even the one that went down.
    auto devices = frontendFirst();
    devices.pop_back();
    auto rep = scrape(page(devices, "mlx5_2"), "z1-r001-h1");
    EXPECT_EQ(rep.applied, 0u);
    EXPECT_EQ(rep.unknown[static_cast<int>(UnknownReason::NicIdentity)], 8u);
    EXPECT_TRUE(events_.empty());
    auto listed = hub_->unknownNames("nic_identity", 10);
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].name, "z1-r001-h1");
    EXPECT_NE(listed[0].detail.find("8 backend NICs (MT4129) to place, the host reports 7"),
              std::string::npos)
        << listed[0].detail;
    // An RDMA device of a type the host model does not have: that device only.
    devices = frontendFirst();
    devices.emplace_back("mlx5_9", "MT4123");
    rep = scrape(page(devices, "mlx5_9"), "z1-r001-h1");
    EXPECT_EQ(rep.applied, 8u);
    EXPECT_EQ(rep.unknown[static_cast<int>(UnknownReason::UnknownPort)], 1u);
    EXPECT_TRUE(events_.empty());
}

}  // namespace
}  // namespace loom::telemetry
