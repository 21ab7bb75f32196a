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
