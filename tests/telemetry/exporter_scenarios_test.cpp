// Real-world situations played in the exporters' own formats, through the hub's public ingest:
// what a site's switches, GPUs and exporters do on an ordinary day that must neither open a
// false event nor lose a real one. snmp_exporter 0.21 if_mib pages (families sorted by name,
// ifAlias/ifIndex/ifName labels; ifAdminStatus walked as the stock if_mib module does),
// dcgm-exporter 3.3 pages (gpu, UUID, pci_bus_id, device, modelName, Hostname labels) and
// node_exporter 1.5's InfiniBand collector.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "hub_fixture.hpp"

namespace loom::telemetry {
namespace {

struct SnmpIf {
    int ifIndex;
    std::string name, alias;
    int admin;  // ifAdminStatus: 1 up, 2 down, 3 testing
    int oper;   // ifOperStatus: 1 up .. 7 lowerLayerDown
    double inOctets = 1000, inErrors = 0;
};

// One walk of the stock if_mib module as snmp_exporter 0.21 writes it.
std::string snmpPage(const std::vector<SnmpIf>& ifs) {
    std::string out;
    auto family = [&](std::string_view name, std::string_view type, std::string_view help,
                      auto value) {
        out += "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
               std::string(name) + " " + std::string(type) + "\n";
        for (const auto& i : ifs)
            out += std::string(name) + "{ifAlias=\"" + i.alias + "\",ifIndex=\"" +
                   std::to_string(i.ifIndex) + "\",ifName=\"" + i.name + "\"} " + value(i) + "\n";
    };
    auto num = [](double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.17g", v);
        return std::string(b);
    };
    family("ifAdminStatus", "gauge", "The desired state of the interface - 1.3.6.1.2.1.2.2.1.7",
           [](const SnmpIf& i) { return std::to_string(i.admin); });
    family("ifHCInOctets", "counter",
           "The total number of octets received on the interface, including framing characters "
           "- 1.3.6.1.2.1.31.1.1.1.6",
           [&](const SnmpIf& i) { return num(i.inOctets); });
    family("ifHighSpeed", "gauge",
           "An estimate of the interface's current bandwidth in units of 1,000,000 bits per "
           "second - 1.3.6.1.2.1.31.1.1.1.15",
           [](const SnmpIf&) { return std::string("400000"); });
    family("ifInErrors", "counter",
           "The number of inbound packets that contained errors preventing them from being "
           "deliverable to a higher-layer protocol - 1.3.6.1.2.1.2.2.1.14",
           [&](const SnmpIf& i) { return num(i.inErrors); });
    family("ifOperStatus", "gauge",
           "The current operational state of the interface - 1.3.6.1.2.1.2.2.1.8",
           [](const SnmpIf& i) { return std::to_string(i.oper); });
    return out;
}

// One field of one host as dcgm-exporter 3.3 writes it.
std::string dcgmField(std::string_view name, std::string_view type, std::string_view hostLabel,
                      const std::vector<std::pair<int, double>>& rows) {
    std::string out = "# HELP " + std::string(name) + " x\n# TYPE " + std::string(name) + " " +
                      std::string(type) + "\n";
    for (const auto& [gpu, value] : rows) {
        char bus[32];
        std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + gpu * 0x10);
        char v[32];
        std::snprintf(v, sizeof v, "%.17g", value);
        out += std::string(name) + "{gpu=\"" + std::to_string(gpu) + "\",UUID=\"GPU-" +
               std::string(hostLabel) + "-" + std::to_string(gpu) + "\",pci_bus_id=\"" + bus +
               "\",device=\"nvidia" + std::to_string(gpu) +
               "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"" + std::string(hostLabel) +
               "\",DCGM_FI_DRIVER_VERSION=\"535.129.03\"} " + v + "\n";
    }
    return out;
}

// node_exporter's InfiniBand page for a host with one backend ConnectX-7 (mlx5_0).
std::string ibPage(int state, int downed) {
    return "# HELP node_infiniband_info Non-numeric data from /sys/class/infiniband/<device>, "
           "value is always 1.\n"
           "# TYPE node_infiniband_info gauge\n"
           "node_infiniband_info{board_id=\"MT_0000000838\",device=\"mlx5_0\",firmware_version="
           "\"28.39.1002\",hca_type=\"MT4129\"} 1\n"
           "# HELP node_infiniband_link_downed_total Number of times the link failed to recover "
           "from an error state and went down\n"
           "# TYPE node_infiniband_link_downed_total counter\n"
           "node_infiniband_link_downed_total{device=\"mlx5_0\",port=\"1\"} " +
           std::to_string(downed) +
           "\n"
           "# HELP node_infiniband_state_id State of the InfiniBand port (0: no change, 1: down, "
           "2: init, 3: armed, 4: active, 5: act defer)\n"
           "# TYPE node_infiniband_state_id gauge\n"
           "node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} " +
           std::to_string(state) + "\n";
}

class ExporterScenarios : public HubFixture {
protected:
    void SetUp() override {
        makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2, .ctswUplinks = 2, .atsw = 1});
        for (auto& s : inv_.switches) s.portNaming = "cumulus";
        layout_ = std::make_shared<const HallLayout>(HallLayout::build(inv_));
        hub_->setLayout(layout_);
    }
    // The RTSW's ports 1..4 (host NIC links), all up.
    std::vector<SnmpIf> rtswBox() const {
        return {{1, "swp1", "z1-r001-h0 nic0", 1, 1},
                {2, "swp2", "z1-r001-h0 nic1", 1, 1},
                {3, "swp3", "z1-r001-h0 nic2", 1, 1},
                {4, "swp4", "z1-r001-h0 nic3", 1, 1}};
    }
    IngestReport walk(const std::vector<SnmpIf>& ifs, std::string_view sw = "z1-r001-rtsw") {
        auto rep = ingest(snmpPage(ifs), {.switchName = sw, .origin = kSnmpOrigin});
        hub_->tick();
        return rep;
    }
    std::vector<FailureEvent> eventsOf(std::string_view kind) const {
        std::vector<FailureEvent> v;
        for (const auto& e : events_)
            if (e.kind == kind) v.push_back(e);
        return v;
    }
    std::vector<FailureEvent> openOf(std::string_view kind) const {
        std::vector<FailureEvent> v;
        for (const auto& e : hub_->openEvents())
            if (e.kind == kind) v.push_back(e);
        return v;
    }
    std::uint32_t linkAt(std::string_view sw, int port) const {
        const auto p = layout_->portByName(sw, "p" + std::to_string(port));
        EXPECT_NE(p, kNoIndex);
        return p == kNoIndex ? kNoIndex : layout_->ports()[p].linkIndex;
    }
    std::uint8_t health(std::uint32_t link) const { return hub_->packed(Topic::LinkHealth)[link]; }
    std::string linkOfGpu(std::string_view gpu) const {
        const auto g = layout_->gpuByName(gpu);
        for (const auto& l : layout_->links())
            if (l.gpu == g) return l.name;
        return {};
    }
    static constexpr std::string_view kSnmpOrigin = "scrape snmp z1-r001-rtsw";
};

// An operator shuts a port (`shutdown` / `ip link set swp3 down`): ifAdminStatus down(2) and,
// with it, ifOperStatus down(2). Nothing failed: no link_down, the link reads `drained` (taken
// out of service on purpose) in every view; `no shutdown` brings it back to up. A port whose
// cable fails while it is admin up is still a critical link_down.
TEST_F(ExporterScenarios, AnAdminDownPortIsNoFailure) {
    auto box = rtswBox();
    walk(box);
    walk(box);
    const auto l3 = linkAt("z1-r001-rtsw", 3);
    ASSERT_NE(l3, kNoIndex);
    EXPECT_EQ(health(l3), kLinkUp);

    box[2].admin = 2;
    box[2].oper = 2;
    for (int i = 0; i < 5; ++i) walk(box);
    EXPECT_TRUE(eventsOf("link_down").empty())
        << eventsOf("link_down").size() << " link_down, the first " << events_[0].message;
    EXPECT_EQ(health(l3), kLinkDrained);

    // no shutdown: the PHY trains for a few seconds (lowerLayerDown), then comes up. That is
    // the port starting, not failing: no event, and the shut/no-shut is no flap.
    box[2].admin = 1;
    box[2].oper = 7;
    for (int i = 0; i < 3; ++i) walk(box);
    EXPECT_TRUE(eventsOf("link_down").empty()) << eventsOf("link_down")[0].message;
    box[2].oper = 1;
    walk(box);
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].message;
    EXPECT_EQ(health(l3), kLinkUp);
    // Shut and enabled again, and this time it never comes up: a failure once the port has had
    // its time to train.
    box[2].admin = 2;
    box[2].oper = 2;
    walk(box);
    box[2].admin = 1;
    for (int i = 0; i < 15; ++i) walk(box);
    ASSERT_EQ(openOf("link_down").size(), 1u) << "admin up, never up: a failed link";
    box[2].oper = 1;
    walk(box);
    EXPECT_TRUE(openOf("link_down").empty());
    EXPECT_TRUE(eventsOf("link_flapping").empty());

    // A real failure while admin up: critical link_down as ever.
    box[2].oper = 2;
    walk(box);
    ASSERT_EQ(openOf("link_down").size(), 1u);
    EXPECT_EQ(openOf("link_down")[0].severity, Severity::Critical);
    EXPECT_EQ(health(l3), kLinkDown);
    // Then the operator shuts the failed port to work on it: the failure is closed as an
    // operator's, the link drained.
    box[2].admin = 2;
    walk(box);
    EXPECT_TRUE(openOf("link_down").empty());
    const auto downs = eventsOf("link_down");
    ASSERT_FALSE(downs.empty());
    EXPECT_FALSE(downs.back().open());
    EXPECT_NE(downs.back().closeReason.find("administratively down"), std::string::npos)
        << downs.back().closeReason;
    EXPECT_EQ(health(l3), kLinkDrained);
}

// The switch shut the port, so the host's NIC on that cable goes DOWN too (node_exporter:
// state_id 1): the host end of an administratively shut link is no failure either.
TEST_F(ExporterScenarios, TheHostEndOfAnAdminDownPortIsNoFailure) {
    const auto name = linkOfGpu("z1-r001-h0-gpu0");
    const auto l = layout_->linkByName(name);
    ASSERT_NE(l, kNoIndex);
    // Which RTSW port is that NIC's cable on?
    const auto& link = layout_->links()[l];
    const auto p = link.aPort != kNoIndex ? link.aPort : link.bPort;
    ASSERT_NE(p, kNoIndex);
    const int portNo = static_cast<int>(layout_->ports()[p].number);
    std::vector<SnmpIf> box = {{portNo, "swp" + std::to_string(portNo), "", 1, 1}};
    walk(box);
    ingest(ibPage(4, 0), {.host = "z1-r001-h0", .origin = "scrape node z1-r001-h0"});
    box[0].admin = 2;
    box[0].oper = 2;
    for (int i = 0; i < 3; ++i) {
        walk(box);
        ingest(ibPage(1, 0), {.host = "z1-r001-h0", .origin = "scrape node z1-r001-h0"});
        hub_->tick();
    }
    EXPECT_TRUE(eventsOf("link_down").empty())
        << eventsOf("link_down").size() << " link_down: " << eventsOf("link_down")[0].message;
    EXPECT_EQ(health(l), kLinkDrained);
    // no shutdown, both ends back: nothing was open, nothing to close.
    box[0].admin = 1;
    box[0].oper = 1;
    walk(box);
    ingest(ibPage(4, 0), {.host = "z1-r001-h0", .origin = "scrape node z1-r001-h0"});
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].message;
    EXPECT_EQ(health(l), kLinkUp);
}

// A link that flaps (up/down every couple of seconds: a dirty optic) is held down: one
// link_down and one link_flapping for the episode, however many flaps, not an event per flap;
// both close once the link has stayed up through the flapping hold-down.
TEST_F(ExporterScenarios, AFlappingLinkIsHeldDownNotAnEventPerFlap) {
    auto box = rtswBox();
    walk(box);
    walk(box);
    const auto l2 = linkAt("z1-r001-rtsw", 2);
    for (int flap = 0; flap < 10; ++flap) {
        box[1].oper = 2;
        walk(box);
        box[1].oper = 1;
        walk(box);
    }
    const auto downs = eventsOf("link_down");
    std::size_t opens = 0;
    for (const auto& e : downs) opens += e.open() ? 1 : 0;
    EXPECT_LE(opens, 2u) << opens << " link_down events opened for 10 flaps";
    EXPECT_EQ(eventsOf("link_flapping").size(), 1u);
    // While it flaps the link is not shown up between flaps.
    EXPECT_NE(health(l2), kLinkUp);
    // Quiet (up) past the hold-down: everything closes.
    for (int i = 0; i < 40; ++i) walk(box);
    EXPECT_TRUE(hub_->openEvents().empty()) << hub_->openEvents()[0].kind;
    EXPECT_EQ(health(l2), kLinkUp);
}

// The host end flaps (node_exporter: state_id DOWN/ACTIVE, link_downed_total rising at each
// down): held down the same way. A single bounce is one link_down that closes on its up.
TEST_F(ExporterScenarios, AFlappingHostNicIsHeldDownAndASingleBounceIsNot) {
    const auto name = linkOfGpu("z1-r001-h0-gpu0");
    const auto l = layout_->linkByName(name);
    ASSERT_NE(l, kNoIndex);
    const IngestIdentity node{.host = "z1-r001-h0", .origin = "scrape node z1-r001-h0"};
    auto scrape = [&](int state, int downed) {
        ingest(ibPage(state, downed), node);
        hub_->tick();
    };
    scrape(4, 3);
    scrape(4, 3);
    // One bounce, seen down in the page whose link_downed rose: link_down closes on the up.
    scrape(1, 4);
    scrape(4, 4);
    EXPECT_TRUE(openOf("link_down").empty());
    ASSERT_EQ(eventsOf("link_down").size(), 2u);  // its open and its close
    for (int i = 0; i < 35; ++i) scrape(4, 4);
    EXPECT_TRUE(hub_->openEvents().empty());
    const auto before = eventsOf("link_down").size();

    int downed = 4;
    for (int flap = 0; flap < 10; ++flap) {
        scrape(1, ++downed);
        scrape(4, downed);
    }
    std::size_t opens = 0;
    const auto downs = eventsOf("link_down");
    for (std::size_t i = before; i < downs.size(); ++i) opens += downs[i].open() ? 1 : 0;
    EXPECT_LE(opens, 2u) << opens << " link_down events opened for 10 flaps";
    EXPECT_NE(health(l), kLinkUp);
    for (int i = 0; i < 40; ++i) scrape(4, downed);
    EXPECT_TRUE(hub_->openEvents().empty()) << hub_->openEvents()[0].kind;
}

// A port-channel (bond) whose member goes down while the bundle stays up: the member's cable is
// a failed link (link_down on that member's link only); the bundle, no front-panel port, opens
// nothing either way.
TEST_F(ExporterScenarios, APortChannelMemberDownWhileTheBundleIsUp) {
    auto box = rtswBox();
    box.push_back({1001, "bond0", "uplink bundle", 1, 1});
    walk(box);
    box[1].oper = 2;  // swp2, a member
    walk(box);
    ASSERT_EQ(openOf("link_down").size(), 1u);
    EXPECT_EQ(openOf("link_down")[0].location, layout_->links()[linkAt("z1-r001-rtsw", 2)].name);
    box[1].oper = 1;
    box[4].oper = 7;  // the bundle lowerLayerDown (every member gone, LACP): no port of it
    walk(box);
    EXPECT_TRUE(openOf("link_down").empty());
    EXPECT_EQ(eventsOf("link_down").size(), 2u);
}

// snmp_exporter answers HTTP 500 or times out (the switch's agent is busy): no page for a
// minute. A scrape gap is no evidence: an open link_down stays open (not closed because
// nobody said down), nothing new opens, and the next walk picks up where it was. Counters that
// restarted meanwhile (the agent rebooted: octets and errors from 0) give no spike and no
// link_errors.
TEST_F(ExporterScenarios, AScrapeGapAndAnAgentRestartChangeNoEvent) {
    auto box = rtswBox();
    for (auto& i : box) {
        i.inOctets = 9e14;
        i.inErrors = 123456;
    }
    walk(box);
    box[0].oper = 2;
    box[0].inOctets += 1e9;
    walk(box);
    ASSERT_EQ(openOf("link_down").size(), 1u);
    const auto before = events_.size();
    for (int i = 0; i < 60; ++i) {
        now_ += 1000;
        hub_->tick();
    }
    EXPECT_EQ(events_.size(), before);
    EXPECT_EQ(openOf("link_down").size(), 1u);
    // The agent restarted: counters from 0, port 1 still down.
    for (auto& i : box) {
        i.inOctets = 0;
        i.inErrors = 0;
    }
    walk(box);
    for (auto& i : box) {
        i.inOctets += 5e9;
        i.inErrors += 2;
    }
    walk(box);
    EXPECT_EQ(events_.size(), before) << events_.back().kind << " " << events_.back().message;
    EXPECT_TRUE(eventsOf("link_errors").empty());
    EXPECT_EQ(openOf("link_down").size(), 1u);
}

// DCGM_FI_DEV_XID_ERRORS is the last XID seen, a gauge that stays (NVIDIA/DCGM#277): a GPU
// with a warning XID open that then falls off the bus (79) is failed, not left at warning.
TEST_F(ExporterScenarios, ACriticalXidAfterAWarningXidFailsTheGpu) {
    const auto g = layout_->gpuByName("z1-r001-h1-gpu3");
    auto xid = [&](double v) {
        ingest(dcgmField("DCGM_FI_DEV_XID_ERRORS", "gauge", "z1-r001-h1", {{3, v}}),
               {.host = "z1-r001-h1", .origin = "scrape dcgm z1-r001-h1"});
    };
    xid(0);
    xid(92);  // high single-bit ECC rate: a warning
    ASSERT_EQ(openOf("gpu_xid").size(), 1u);
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuWarning);
    xid(92);
    xid(79);
    ASSERT_EQ(openOf("gpu_xid").size(), 1u);
    EXPECT_EQ(openOf("gpu_xid")[0].severity, Severity::Critical);
    EXPECT_EQ(openOf("gpu_xid")[0].labels.at(0).second, "79");
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuFailed);
    // The gauge stays at 79, then an application's XID 13 overwrites it: the GPU is still
    // failed (13 is no recovery), and no event moves.
    const auto n = events_.size();
    xid(79);
    xid(13);
    xid(43);
    EXPECT_EQ(events_.size(), n);
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuFailed);
}

// A GPU falls off the bus: DCGM often cannot report XID 79 at all (NVIDIA/DCGM#162), and
// dcgm-exporter's page just stops carrying that GPU while the host's other seven go on. After
// detection.staleAfterSeconds it is gpu_missing (critical, the GPU failed); back on the page,
// the event closes. A whole host gone quiet (its exporter down: `up == 0`) is no evidence and
// opens nothing.
TEST_F(ExporterScenarios, AGpuGoneFromItsHostsPageIsMissingAHostGoneQuietIsNot) {
    const IngestIdentity dcgm{.host = "z1-r001-h1", .origin = "scrape dcgm z1-r001-h1"};
    auto page = [&](bool withGpu5) {
        std::vector<std::pair<int, double>> util, temp;
        for (int i = 0; i < 8; ++i)
            if (i != 5 || withGpu5) {
                util.push_back({i, 93});
                temp.push_back({i, 61});
            }
        ingest(dcgmField("DCGM_FI_DEV_GPU_TEMP", "gauge", "z1-r001-h1", temp) +
                   dcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "z1-r001-h1", util),
               dcgm);
        hub_->tick();
    };
    const auto g5 = layout_->gpuByName("z1-r001-h1-gpu5");
    for (int i = 0; i < 5; ++i) page(true);
    for (int i = 0; i < 25; ++i) page(false);
    EXPECT_TRUE(events_.empty()) << "not yet: " << events_[0].message;
    for (int i = 0; i < 10; ++i) page(false);
    ASSERT_EQ(openOf("gpu_missing").size(), 1u);
    const auto missing = openOf("gpu_missing")[0];
    EXPECT_EQ(missing.location, "z1-r001-h1-gpu5");
    EXPECT_EQ(missing.severity, Severity::Critical);
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g5], kGpuFailed);
    EXPECT_EQ(events_.size(), 1u) << "the other seven are fine";
    // Reported again (a reset brought it back): closed.
    page(true);
    EXPECT_TRUE(openOf("gpu_missing").empty());
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g5], kGpuOk);
    // The exporter goes down for two minutes (every GPU of the host silent): nothing opens.
    const auto n = events_.size();
    for (int i = 0; i < 120; ++i) {
        now_ += 1000;
        hub_->tick();
    }
    EXPECT_EQ(events_.size(), n) << events_.back().kind << " " << events_.back().message;
    page(true);
    EXPECT_EQ(events_.size(), n);
}

// Two dcgm-exporters scraped for one host (a DaemonSet beside a host service): the same GPUs on
// two pages. One restarted and says XID 0 (the gauge resets with the exporter), the other
// still says 79: the first source keeps the GPU while it sends it, the second's samples are
// counted as duplicates and not taken — no gpu_xid opening and closing at every scrape.
TEST_F(ExporterScenarios, TwoExportersOfOneGpuAreOneSourceNotAnEventStorm) {
    const auto g = layout_->gpuByName("z1-r001-h1-gpu2");
    auto page = [&](double xid) {
        return dcgmField("DCGM_FI_DEV_XID_ERRORS", "gauge", "z1-r001-h1", {{2, xid}});
    };
    const IngestIdentity a{.host = "z1-r001-h1",
                           .origin = "scrape dcgm z1-r001-h1",
                           .source = "http://z1-r001-h1:9400/metrics"};
    const IngestIdentity b{.host = "z1-r001-h1",
                           .origin = "scrape dcgm z1-r001-h1",
                           .source = "http://z1-r001-h1:9401/metrics"};
    ingest(page(79), a);
    ASSERT_EQ(openOf("gpu_xid").size(), 1u);
    std::uint64_t duplicates = 0;
    for (int i = 0; i < 10; ++i) {
        duplicates += ingest(page(0), b).duplicates;
        ingest(page(79), a);
    }
    EXPECT_EQ(eventsOf("gpu_xid").size(), 1u) << eventsOf("gpu_xid").size() << " gpu_xid events";
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuFailed);
    EXPECT_EQ(duplicates, 10u);
    // The first source goes quiet for 30 s: the second takes the GPU over, and its XID 0 is
    // that source's word on it.
    now_ += 31'000;
    ingest(page(0), b);
    EXPECT_TRUE(openOf("gpu_xid").empty());
}

// dcgm-exporter's Hostname label is the node's hostname as the OS gives it: fully qualified,
// or in capitals where the provisioning system set it so. Host names are case-insensitive
// (RFC 4343): every form finds the GPU.
TEST_F(ExporterScenarios, HostnamesInAnyCaseAndQualifiedFindTheirGpus) {
    for (std::string_view host :
         {"z1-r002-h0", "z1-r002-h0.cluster.example.com", "Z1-R002-H0", "Z1-R002-H0.CLUSTER"}) {
        auto rep = ingest(dcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", host, {{5, 77}}));
        EXPECT_EQ(rep.applied, 1u) << host;
        EXPECT_EQ(rep.unknownTotal(), 0u) << host;
    }
    EXPECT_EQ(hub_->gpuValue(layout_->gpuByName("z1-r002-h0-gpu5"), GpuField::Util), 77);
    auto rep = ingest(dcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "z9-r002-h0", {{5, 77}}));
    EXPECT_EQ(rep.unknown[static_cast<int>(UnknownReason::UnknownHost)], 1u);
}

// dcgm-exporter in Kubernetes without NODE_NAME names its pod as Hostname
// ("nvidia-dcgm-exporter-cwbcm", NVIDIA/dcgm-exporter#78), a cloud VM its own name: a page Loom
// scraped from a host's target is that host's (as Prometheus's `instance`), so its GPUs are
// found; the same page pushed, with no target to say whose it is, is unknown_host as before.
TEST_F(ExporterScenarios, APodNameAsHostnameOnAScrapedPageIsTheTargetsHost) {
    const std::string page = dcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge",
                                       "nvidia-dcgm-exporter-cwbcm", {{0, 41}, {6, 88}});
    auto rep = ingest(page, {.host = "z1-r002-h1", .origin = "scrape dcgm z1-r002-h1"});
    EXPECT_EQ(rep.applied, 2u);
    EXPECT_EQ(rep.unknownTotal(), 0u) << rep.unknownExamples.at(0);
    EXPECT_EQ(hub_->gpuValue(layout_->gpuByName("z1-r002-h1-gpu6"), GpuField::Util), 88);
    rep = ingest(page);
    EXPECT_EQ(rep.unknown[static_cast<int>(UnknownReason::UnknownHost)], 2u);
    // A Hostname naming another host of the inventory still wins over the target.
    ingest(dcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "z1-r001-h0", {{6, 12}}),
           {.host = "z1-r002-h1", .origin = "scrape dcgm z1-r002-h1"});
    EXPECT_EQ(hub_->gpuValue(layout_->gpuByName("z1-r001-h0-gpu6"), GpuField::Util), 12);
    EXPECT_EQ(hub_->gpuValue(layout_->gpuByName("z1-r002-h1-gpu6"), GpuField::Util), 88);
}

// A pusher whose clock is off (Prometheus federation and Loom's own pushes carry sample
// timestamps): a GPU's age is counted from when its sample arrived, so a page stamped 2 min
// behind loomd's clock is fresh, and one stamped 10 min ahead is no data once nothing has
// arrived for detection.staleAfterSeconds.
TEST_F(ExporterScenarios, AGpuPageStampedByASkewedClockAgesFromItsArrival) {
    const auto g = layout_->gpuByName("z1-r002-h1-gpu6");
    auto stamped = [&](std::int64_t skewMs) {
        ingest("DCGM_FI_DEV_GPU_UTIL{gpu=\"6\",Hostname=\"z1-r002-h1\"} 55 " +
               std::to_string(now_ + 1000 + skewMs) + "\n");
        hub_->tick();
        return hub_->packed(Topic::GpuUtil)[g];
    };
    EXPECT_NE(stamped(-120'000), kNoData) << "reported a second ago";
    EXPECT_NE(stamped(600'000), kNoData);
    now_ += 31'000;
    EXPECT_EQ(hub_->packed(Topic::GpuUtil)[g], kNoData) << "silent for 31 s";
}

// The exposition format's corners, as real exporters write them: a sample timestamp, NaN
// (dcgm-exporter for a field the GPU cannot read), +Inf, escaped label values (an ifAlias with
// quotes and a backslash), HELP text with escapes. NaN and +Inf are no state and no rate.
TEST_F(ExporterScenarios, NaNInfinityTimestampsAndEscapedLabelsSayNothingFalse) {
    auto box = rtswBox();
    walk(box);
    const std::string page =
        "# HELP ifOperStatus The current operational state \\\\ of the interface\n"
        "# TYPE ifOperStatus gauge\n"
        "ifOperStatus{ifAlias=\"to \\\"z1-r001-h0\\\" nic0\\\\a\",ifIndex=\"1\",ifName=\"swp1\"} "
        "NaN\n"
        "ifOperStatus{ifAlias=\"line\\nbreak\",ifIndex=\"2\",ifName=\"swp2\"} +Inf\n"
        "# HELP ifInErrors x\n# TYPE ifInErrors counter\n"
        "ifInErrors{ifAlias=\"\",ifIndex=\"3\",ifName=\"swp3\"} +Inf\n"
        "ifInErrors{ifAlias=\"\",ifIndex=\"4\",ifName=\"swp4\"} NaN " +
        std::to_string(now_ + 1000) + "\n";
    auto rep = ingest(page, {.switchName = "z1-r001-rtsw", .origin = kSnmpOrigin});
    EXPECT_EQ(rep.unknownTotal(), 0u);
    hub_->tick();
    walk(box);
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].message;
    for (int port : {1, 2, 3, 4}) EXPECT_EQ(health(linkAt("z1-r001-rtsw", port)), kLinkUp) << port;
    // dcgm-exporter's NaN temperature and XID: no event, no value taken as 0.
    ingest(dcgmField("DCGM_FI_DEV_GPU_TEMP", "gauge", "z1-r001-h0", {{0, std::nan("")}}) +
           dcgmField("DCGM_FI_DEV_XID_ERRORS", "gauge", "z1-r001-h0", {{0, std::nan("")}}));
    EXPECT_TRUE(events_.empty());
}

}  // namespace
}  // namespace loom::telemetry
