#include "loom/telemetry/telemetry_hub.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "synthetic_inventory.hpp"

namespace loom::telemetry {
namespace {

constexpr std::int64_t kT0 = 1'700'000'020'000;  // 40 s into a minute

class HubTest : public ::testing::Test {
protected:
    void SetUp() override {
        inv_ = testing::syntheticCluster({.zones = 1, .racksPerZone = 4, .ctswPerZone = 2});
        layout_ = std::make_shared<const HallLayout>(HallLayout::build(inv_));
        HubOptions o;
        o.clock = [this] { return now_; };
        hub_ = std::make_unique<TelemetryHub>(layout_, o);
        hub_->addEventListener([this](const FailureEvent& e) { events_.push_back(e); });
    }
    IngestReport ingest(const std::string& body) {
        auto r = hub_->ingestText(body);
        EXPECT_TRUE(r) << r.error().toString();
        return r ? *r : IngestReport{};
    }
    static std::string gpu(std::string_view metric, std::string_view host, int g, double v) {
        return std::string(metric) + "{gpu=\"" + std::to_string(g) + "\",UUID=\"x\",Hostname=\"" +
               std::string(host) + "\"} " + std::to_string(v) + "\n";
    }
    static std::string port(std::string_view metric, std::string_view sw, int p, double v) {
        return std::string(metric) + "{switch=\"" + std::string(sw) + "\",port=\"Ethernet" +
               std::to_string(p) + "\"} " + std::to_string(v) + "\n";
    }

    inventory::Inventory inv_;
    std::shared_ptr<const HallLayout> layout_;
    std::unique_ptr<TelemetryHub> hub_;
    std::vector<FailureEvent> events_;
    std::int64_t now_ = kT0;
};

TEST_F(HubTest, GpuFieldsLandInPackedArrays) {
    auto rep = ingest(gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r002-h1", 3, 97) +
                      gpu("DCGM_FI_DEV_GPU_TEMP", "z1-r002-h1", 3, 61.4) +
                      gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0.dc1.example", 0, 12.6) +
                      "DCGM_FI_DEV_SOMETHING_NEW{gpu=\"0\",Hostname=\"z1-r001-h0\"} 1\n");
    EXPECT_EQ(rep.samples, 4u);
    EXPECT_EQ(rep.applied, 3u);
    EXPECT_EQ(rep.ignored, 1u);
    auto g = layout_->gpuByName("z1-r002-h1-gpu3");
    auto util = hub_->packed(Topic::GpuUtil);
    ASSERT_EQ(util.size(), 64u);
    EXPECT_EQ(util[g], 97);
    EXPECT_EQ(util[0], 13);
    EXPECT_EQ(util[1], kNoData);
    EXPECT_EQ(hub_->packed(Topic::GpuTemp)[g], 61);
    auto health = hub_->packed(Topic::GpuHealth);
    EXPECT_EQ(health[g], kGpuOk);
    EXPECT_EQ(health[1], kNoData);
    // Stale after 30 s without samples.
    now_ += 31'000;
    EXPECT_EQ(hub_->packed(Topic::GpuUtil)[g], kNoData);
}

TEST_F(HubTest, UnknownEntitiesAreCountedNotFatal) {
    auto rep = ingest(gpu("DCGM_FI_DEV_GPU_UTIL", "z9-r001-h0", 0, 1) +
                      gpu("DCGM_FI_DEV_GPU_UTIL", "z9-r001-h0", 1, 1) +
                      gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0", 9, 1) +
                      "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-nope\"} 1\n"
                      "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1-0-0-5\"} 55\n"
                      "DCGM_FI_DEV_GPU_UTIL 1\n" +
                      port("loom_port_oper_status", "nope-rtsw", 1, 1) +
                      port("loom_port_oper_status", "z1-r001-rtsw", 99, 1) +
                      "loom_port_oper_status{switch=\"z1-r001-rtsw\"} 1\n");
    EXPECT_EQ(rep.applied, 1u);  // the UUID fallback
    EXPECT_EQ(rep.unknown[int(UnknownReason::UnknownHost)], 2u);
    EXPECT_EQ(rep.unknown[int(UnknownReason::UnknownGpu)], 1u);
    EXPECT_EQ(rep.unknown[int(UnknownReason::UnknownUuid)], 1u);
    EXPECT_EQ(rep.unknown[int(UnknownReason::MissingLabels)], 2u);
    EXPECT_EQ(rep.unknown[int(UnknownReason::UnknownSwitch)], 1u);
    EXPECT_EQ(rep.unknown[int(UnknownReason::UnknownPort)], 1u);
    auto j = rep.toJson();
    EXPECT_EQ(j["unknown"]["unknown_host"], 2);
    EXPECT_EQ(j["unknownExamples"][0], "host z9-r001-h0");
    EXPECT_EQ(hub_->packed(Topic::GpuUtil)[5], 55);
    std::string metrics;
    hub_->appendMetrics(metrics);
    // /metrics counts distinct names (issue 35): z9-r001-h0 twice is one.
    EXPECT_NE(metrics.find("loom_telemetry_unknown_total{reason=\"unknown_host\"} 1\n"),
              std::string::npos);
    const auto hosts = hub_->unknownNames("unknown_host");
    ASSERT_EQ(hosts.size(), 1u);
    EXPECT_EQ(hosts[0].name, "z9-r001-h0");
    EXPECT_EQ(hosts[0].samples, 2u);
    EXPECT_EQ(hosts[0].source, "push");
}

TEST_F(HubTest, LinkUtilizationFromOctetRates) {
    // z1-r001-rtsw port 1 is the NIC link of z1-r001-h0 gpu0; 400 Gb/s.
    ingest(port("loom_port_oper_status", "z1-r001-rtsw", 1, 1) +
           port("loom_port_in_octets_total", "z1-r001-rtsw", 1, 1e12) +
           port("loom_port_out_octets_total", "z1-r001-rtsw", 1, 0));
    auto p = layout_->portByName("z1-r001-rtsw", "p1");
    auto l = layout_->ports()[p].linkIndex;
    ASSERT_NE(l, kNoIndex);
    EXPECT_EQ(hub_->packed(Topic::LinkUtil)[l], kNoData);  // one reading: no rate yet
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkUp);
    now_ += 1000;
    // 25 GB in 1 s = 200 Gb/s = 50 % in; 40 GB out = 80 %.
    ingest(port("loom_port_oper_status", "z1-r001-rtsw", 1, 1) +
           port("loom_port_in_octets_total", "z1-r001-rtsw", 1, 1e12 + 25e9) +
           port("loom_port_out_octets_total", "z1-r001-rtsw", 1, 40e9));
    EXPECT_EQ(hub_->packed(Topic::LinkUtil)[l], 80);
    EXPECT_NEAR(hub_->portUtil(p), 80, 1e-3);
    // Counter reset: no rate for that interval, the previous value stays.
    now_ += 1000;
    ingest(port("loom_port_in_octets_total", "z1-r001-rtsw", 1, 5));
    EXPECT_EQ(hub_->packed(Topic::LinkUtil)[l], 80);
    // Links with no data.
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l + 1], kNoData);
}

// A port reported down while its link was not in service is no failure yet; once the link is
// put in service (a live-state refresh: setLayout), the failure opens at once, without waiting
// for the exporter's next sample (an SNMP scrape may be 10 s or more away).
TEST_F(HubTest, APortDownBeforeItsLinkWasInServiceOpensWhenTheLinkIs) {
    const std::string link = "z1-r001-rtsw/p17--z1-ctsw01/p1";
    auto planned = inv_;
    for (auto& l : planned.links)
        if (l.name == link) l.state = "planned";
    hub_->setLayout(std::make_shared<const HallLayout>(HallLayout::build(planned)));
    ingest(port("loom_port_oper_status", "z1-r001-rtsw", 17, 1));
    ingest(port("loom_port_oper_status", "z1-r001-rtsw", 17, 2));
    EXPECT_TRUE(events_.empty()) << "a planned link being down is not a failure";
    auto active = HallLayout::build(planned).withStates(inv_);
    ASSERT_TRUE(active);
    now_ += 1000;
    hub_->setLayout(std::make_shared<const HallLayout>(std::move(*active)));
    ASSERT_EQ(events_.size(), 1u) << "the down port of a link now in service is a failure";
    EXPECT_EQ(events_[0].kind, "link_down");
    EXPECT_EQ(events_[0].location, link);
    EXPECT_TRUE(events_[0].open());
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[layout_->linkByName(link)], kLinkDown);
    // Another refresh changes nothing: one event, not a second.
    hub_->setLayout(std::make_shared<const HallLayout>(HallLayout::build(inv_)));
    EXPECT_EQ(events_.size(), 1u);
}

TEST_F(HubTest, LinkDownOpensAndClosesOneEvent) {
    auto body = [](int v) {
        return port("loom_port_oper_status", "z1-r001-rtsw", 17, v) +
               port("loom_port_oper_status", "z1-ctsw01", 1, v);
    };
    ingest(body(1));
    EXPECT_TRUE(events_.empty());
    ingest(body(2));  // both ends down in one sample: one event for the link, both ends
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_down");
    EXPECT_EQ(events_[0].downEnds, (std::vector<std::string>{"z1-r001-rtsw/p17", "z1-ctsw01/p1"}));
    EXPECT_EQ(events_[0].severity, Severity::Critical);
    EXPECT_EQ(events_[0].location, "z1-r001-rtsw/p17--z1-ctsw01/p1");
    EXPECT_EQ(events_[0].rack, "z1-r001");
    EXPECT_EQ(events_[0].zone, "z1");
    EXPECT_TRUE(events_[0].open());
    auto l = layout_->linkByName("z1-r001-rtsw/p17--z1-ctsw01/p1");
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDown);
    EXPECT_EQ(hub_->openEvents().size(), 1u);
    // One end up: the link is still down. The open event is sent once more, the same key,
    // with the end still down (what a restarted loomd must hold down).
    now_ += 1000;
    ingest(port("loom_port_oper_status", "z1-r001-rtsw", 17, 1));
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_TRUE(events_[1].open());
    EXPECT_EQ(events_[1].key, events_[0].key);
    EXPECT_EQ(events_[1].openedAtMs, events_[0].openedAtMs);
    EXPECT_EQ(events_[1].downEnds, std::vector<std::string>{"z1-ctsw01/p1"});
    EXPECT_EQ(hub_->openEvents().size(), 1u);
    // The same sample again changes no end: nothing is sent.
    ingest(port("loom_port_oper_status", "z1-r001-rtsw", 17, 1));
    EXPECT_EQ(events_.size(), 2u);
    ingest(port("loom_port_oper_status", "z1-ctsw01", 1, 1));
    ASSERT_EQ(events_.size(), 3u);
    EXPECT_FALSE(events_[2].open());
    EXPECT_EQ(events_[2].key, events_[0].key);
    EXPECT_EQ(events_[2].closedAtMs, now_);
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkUp);
    EXPECT_TRUE(hub_->openEvents().empty());
}

// A link_down whose ends change is sent again once per sample at most, with the ends down at
// the end of the sample: two changes in one sample (one end down, the other back up) are one
// update, not two (issue 39: the writer stores the ends, a restart holds them down).
TEST_F(HubTest, ALinkEventIsSentOnceASampleWhateverItsEndsDo) {
    const auto a = [](int v) { return port("loom_port_oper_status", "z1-r001-rtsw", 17, v); };
    const auto b = [](int v) { return port("loom_port_oper_status", "z1-ctsw01", 1, v); };
    // The link_down messages (the ends' changes also count towards link_flapping, not here).
    auto downs = [&] {
        std::vector<FailureEvent> v;
        for (const auto& e : events_)
            if (e.kind == "link_down") v.push_back(e);
        return v;
    };
    ingest(a(1) + b(1));
    ingest(a(2));
    ASSERT_EQ(downs().size(), 1u);
    EXPECT_EQ(downs()[0].downEnds, std::vector<std::string>{"z1-r001-rtsw/p17"});
    ingest(b(2) + a(1));  // the far end down, then the near end up: one update
    ASSERT_EQ(downs().size(), 2u);
    EXPECT_TRUE(downs()[1].open());
    EXPECT_EQ(downs()[1].key, downs()[0].key);
    EXPECT_EQ(downs()[1].downEnds, std::vector<std::string>{"z1-ctsw01/p1"});
    ingest(a(2) + b(1));
    ASSERT_EQ(downs().size(), 3u);
    EXPECT_EQ(downs()[2].downEnds, std::vector<std::string>{"z1-r001-rtsw/p17"});
    ingest(a(2) + b(1));  // nothing moved: nothing sent
    EXPECT_EQ(downs().size(), 3u);
    ingest(a(1));
    ASSERT_EQ(downs().size(), 4u);
    EXPECT_FALSE(downs()[3].open());
    EXPECT_EQ(downs()[3].key, downs()[0].key);
}

TEST_F(HubTest, FlappingWithinWindowThenQuiet) {
    DetectionConfig d;
    d.linkDown = false;  // only flapping here
    HubOptions o;
    o.detection = d;
    o.clock = [this] { return now_; };
    hub_ = std::make_unique<TelemetryHub>(layout_, o);
    hub_->addEventListener([this](const FailureEvent& e) { events_.push_back(e); });
    // p17: an uplink to a CTSW (both ends are switch ports).
    for (int i = 0; i < 3; ++i) {
        ingest(port("loom_port_oper_status", "z1-r002-rtsw", 17, i % 2 ? 2 : 1));
        now_ += 5000;
    }
    EXPECT_TRUE(events_.empty());  // 2 transitions
    ingest(port("loom_port_oper_status", "z1-r002-rtsw", 17, 2));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_flapping");
    EXPECT_EQ(events_[0].severity, Severity::Warning);
    auto l = layout_->ports()[layout_->portByName("z1-r002-rtsw", "p17")].linkIndex;
    ingest(port("loom_port_oper_status", "z1-r002-rtsw", 17, 1));
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kLinkDegraded);
    now_ += 20'000;
    hub_->tick();
    EXPECT_EQ(events_.size(), 1u);  // 20 s quiet: the hold-down (3 x 10 s) is not over
    // A change on the peer end of the link restarts the hold-down.
    const auto& link = layout_->links()[l];
    auto peer = link.aPort == layout_->portByName("z1-r002-rtsw", "p17") ? link.bPort : link.aPort;
    const auto& peerSw = layout_->switches()[layout_->ports()[peer].switchIndex].name;
    ingest(
        port("loom_port_oper_status", peerSw, static_cast<int>(layout_->ports()[peer].number), 1));
    ingest(
        port("loom_port_oper_status", peerSw, static_cast<int>(layout_->ports()[peer].number), 2));
    now_ += 20'000;
    hub_->tick();
    EXPECT_EQ(events_.size(), 1u) << "the peer changed 20 s ago";
    now_ += 10'000;
    hub_->tick();
    ASSERT_EQ(events_.size(), 2u);  // 30 s without a change on either end: closed
    EXPECT_FALSE(events_.back().open());
    EXPECT_EQ(events_.back().kind, "link_flapping");
    now_ += 31'000;
    hub_->tick();
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l], kNoData);  // and its data went stale
}

TEST_F(HubTest, RestoredOpenEventsAreOpenWithoutBeingAnnounced) {
    // Restored before the layout arrives (loomd start), then the layout: the GPU is failed.
    HubOptions o;
    o.clock = [this] { return now_; };
    hub_ = std::make_unique<TelemetryHub>(nullptr, o);
    hub_->addEventListener([this](const FailureEvent& e) { events_.push_back(e); });
    FailureEvent stored;
    stored.id = 42;
    stored.key = "old-run:7";
    stored.kind = "gpu_xid";
    stored.severity = Severity::Critical;
    stored.location = "z1-r002-h1-gpu3";
    stored.openedAtMs = kT0 - 3'600'000;
    FailureEvent flap = stored;
    flap.id = 43;
    flap.kind = "link_flapping";
    flap.severity = Severity::Warning;
    auto l = layout_->ports()[layout_->portByName("z1-r002-rtsw", "p3")].linkIndex;
    flap.location = layout_->links()[l].name;
    FailureEvent down = flap;
    down.id = 44;
    down.kind = "link_down";
    down.severity = Severity::Critical;
    auto l17 = layout_->ports()[layout_->portByName("z1-r003-rtsw", "p17")].linkIndex;
    down.location = layout_->links()[l17].name;
    EXPECT_EQ(hub_->restoreOpenEvents({stored, flap, down}), 3u);
    EXPECT_EQ(hub_->restoreOpenEvents({stored}), 0u);  // a second restore adds nothing
    hub_->setLayout(layout_);
    auto g = layout_->gpuByName("z1-r002-h1-gpu3");
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuFailed);
    EXPECT_TRUE(events_.empty());
    EXPECT_EQ(hub_->openEvents().size(), 3u);
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l17], kLinkDown);  // no sample yet: the event says
    ingest(port("loom_port_oper_status", "z1-r003-rtsw", 17, 1));
    ASSERT_EQ(events_.size(), 1u);  // up: the stored link_down closes, by its id
    EXPECT_EQ(events_[0].id, 44);
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l17], kLinkUp);
    events_.clear();
    // The condition still reported: nothing new. Recovery: the stored row closes, by its id.
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r002-h1", 3, 79));
    EXPECT_TRUE(events_.empty());
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r002-h1", 3, 0));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_FALSE(events_[0].open());
    EXPECT_EQ(events_[0].id, 42);
    EXPECT_EQ(events_[0].key, "old-run:7");
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuOk);
    // The restored flapping event holds down from the restore, then closes.
    now_ += 29'000;
    hub_->tick();
    EXPECT_EQ(events_.size(), 1u);
    now_ += 2'000;
    hub_->tick();
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_EQ(events_[1].id, 43);
}

TEST_F(HubTest, ClosedByHandHoldsBackUntilTheConditionClears) {
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h0", 2, 79));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_FALSE(events_[0].key.empty());
    auto g = layout_->gpuByName("z1-r001-h0-gpu2");
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuFailed);
    EXPECT_TRUE(hub_->closedByHand("gpu_xid", "z1-r001-h0-gpu2", 0));
    // The listeners hear the close (a view that mirrors the open events drops it: issue 39).
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_FALSE(events_[1].open());
    EXPECT_EQ(events_[1].key, events_[0].key);
    EXPECT_EQ(events_[1].closeReason, "closed by hand");
    EXPECT_FALSE(hub_->closedByHand("gpu_xid", "z1-r001-h0-gpu2", 0));  // not open any more
    EXPECT_EQ(events_.size(), 2u);
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuOk);
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h0", 2, 79));  // still there: held back
    EXPECT_EQ(events_.size(), 2u);
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h0", 2, 0));  // clears: no close to announce
    EXPECT_EQ(events_.size(), 2u);
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h0", 2, 79));  // returns: a new event
    ASSERT_EQ(events_.size(), 3u);
    EXPECT_TRUE(events_[2].open());
    EXPECT_NE(events_[2].key, events_[0].key);
}

TEST_F(HubTest, XidEccRowRemapRules) {
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h1", 2, 13));  // ignored (application)
    EXPECT_TRUE(events_.empty());
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h1", 2, 79));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "gpu_xid");
    EXPECT_EQ(events_[0].severity, Severity::Critical);
    EXPECT_EQ(events_[0].location, "z1-r001-h1-gpu2");
    EXPECT_EQ(events_[0].message, "z1-r001-h1-gpu2: XID 79");
    EXPECT_EQ(events_[0].labels.at(0).second, "79");
    auto g = layout_->gpuByName("z1-r001-h1-gpu2");
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuFailed);
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h1", 2, 79));  // still: no second event
    EXPECT_EQ(events_.size(), 1u);
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h1", 2, 0));
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_FALSE(events_[1].open());
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuOk);
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h1", 2, 31));
    ingest(gpu("DCGM_FI_DEV_XID_ERRORS", "z1-r001-h1", 2, 92));  // not critical: warning
    ASSERT_EQ(events_.size(), 3u);
    EXPECT_EQ(events_[2].severity, Severity::Warning);
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuWarning);
    ingest(gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "z1-r001-h1", 2, 2) +
           gpu("DCGM_FI_DEV_ROW_REMAP_FAILURE", "z1-r001-h1", 2, 1));
    ASSERT_EQ(events_.size(), 5u);
    EXPECT_EQ(events_[3].kind, "gpu_ecc_dbe");
    EXPECT_EQ(events_[4].kind, "gpu_row_remap_failure");
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[g], kGpuFailed);
    EXPECT_EQ(hub_->openEvents().size(), 3u);
}

TEST_F(HubTest, TemperatureHysteresisAndHoldDown) {
    auto temp = [&](double c) { ingest(gpu("DCGM_FI_DEV_GPU_TEMP", "z1-r003-h0", 4, c)); };
    temp(84);
    EXPECT_TRUE(events_.empty());
    temp(86);
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "gpu_temp");
    EXPECT_EQ(events_[0].severity, Severity::Warning);
    temp(82);  // above 85-5: stays open
    temp(84.9);
    temp(80.5);
    EXPECT_EQ(events_.size(), 1u);
    temp(79);  // below 80: the hold-down starts (60 s by default), still open
    EXPECT_EQ(events_.size(), 1u);
    now_ += 60'000;
    temp(78);  // clear for the hold-down: closes
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_FALSE(events_[1].open());
    temp(93);  // straight to critical
    ASSERT_EQ(events_.size(), 3u);
    EXPECT_EQ(events_[2].severity, Severity::Critical);
    temp(88);  // 92-5 = 87: stays critical
    temp(86);  // cooling to the warning band: the open event stays as it is (no step down)
    temp(93);
    temp(86);
    temp(93);
    EXPECT_EQ(events_.size(), 3u) << "one hot GPU, one event";
    temp(70);  // clear: the hold-down starts
    now_ += 30'000;
    temp(95);  // hot again within it: starts over
    temp(70);
    now_ += 30'000;
    temp(70);
    EXPECT_EQ(events_.size(), 3u);
    now_ += 30'000;
    temp(70);
    ASSERT_EQ(events_.size(), 4u);
    EXPECT_FALSE(events_[3].open());
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[layout_->gpuByName("z1-r003-h0-gpu4")], kGpuOk);
}

TEST_F(HubTest, ErrorRateRuleWithHysteresis) {
    auto errs = [&](double v) {
        ingest(port("loom_port_in_errors_total", "z1-r004-rtsw", 17, v) +
               port("loom_port_out_errors_total", "z1-r004-rtsw", 17, 0));
        now_ += 1000;
    };
    errs(0);
    errs(5);  // 5/s: below 10
    EXPECT_TRUE(events_.empty());
    errs(25);  // 20/s
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].kind, "link_errors");
    errs(32);  // 7/s: above 5 (half): stays open
    EXPECT_EQ(events_.size(), 1u);
    errs(33);  // 1/s
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_FALSE(events_[1].open());
}

TEST_F(HubTest, RollupsPerMinute) {
    ingest(gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0", 0, 90) +
           gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0", 1, 50) +
           gpu("DCGM_FI_DEV_GPU_TEMP", "z1-r001-h0", 0, 70) +
           port("loom_port_in_errors_total", "z1-r001-rtsw", 1, 100) +
           port("loom_port_oper_status", "z1-r001-rtsw", 2, 2));
    hub_->tick();
    EXPECT_TRUE(hub_->takeRollups().empty());
    now_ += 10'000;
    ingest(port("loom_port_in_errors_total", "z1-r001-rtsw", 1, 130));
    hub_->tick();
    now_ += 15'000;  // next minute
    hub_->tick();
    auto r = hub_->takeRollups();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].minuteStartMs, kT0 - 40'000);
    ASSERT_EQ(r[0].racks.size(), 1u);
    EXPECT_EQ(r[0].racks[0].rack, 0u);
    EXPECT_FLOAT_EQ(r[0].racks[0].utilAvg, 70);
    EXPECT_FLOAT_EQ(r[0].racks[0].utilMax, 90);
    EXPECT_FLOAT_EQ(r[0].racks[0].tempMax, 70);
    EXPECT_EQ(r[0].racks[0].gpusReporting, 2u);
    ASSERT_GE(r[0].switches.size(), 1u);
    EXPECT_EQ(layout_->switches()[r[0].switches[0].sw].name, "z1-r001-rtsw");
    EXPECT_EQ(r[0].switches[0].errors, 30);
    EXPECT_EQ(r[0].switches[0].portsDown, 1u);
}

// The console's sparklines: a GPU's and a link's last hour, a minute a point, the minute in
// progress last; it survives a state refresh and a structural change (rows move by name).
TEST_F(HubTest, HistoryPerGpuAndLinkOverTheLastHour) {
    const std::int64_t minute0 = kT0 - 40'000;
    auto sample = [&](double util, double temp, double errors, int oper) {
        ingest(gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r002-h0", 5, util) +
               gpu("DCGM_FI_DEV_GPU_TEMP", "z1-r002-h0", 5, temp) +
               gpu("DCGM_FI_DEV_POWER_USAGE", "z1-r002-h0", 5, 700) +
               gpu("DCGM_FI_DEV_FB_USED", "z1-r002-h0", 5, 20000) +
               gpu("DCGM_FI_DEV_FB_FREE", "z1-r002-h0", 5, 60000) +
               port("loom_port_in_errors_total", "z1-r002-rtsw", 17, errors) +
               port("loom_port_oper_status", "z1-r002-rtsw", 17, oper) +
               port("loom_port_oper_status", "z1-ctsw01", 2, oper));
        hub_->tick();
    };
    sample(80, 60, 5, 1);
    now_ += 10'000;
    sample(40, 71, 25, 2);  // the link goes down, 20 errors later
    auto g = layout_->gpuByName("z1-r002-h0-gpu5");
    auto l = layout_->linkByName("z1-r002-rtsw/p17--z1-ctsw01/p2");
    ASSERT_NE(l, kNoIndex);
    auto h = hub_->gpuHistory(g);
    ASSERT_EQ(h.size(), 1u);  // only the minute in progress
    EXPECT_TRUE(h[0].partial);
    EXPECT_FLOAT_EQ(h[0].utilAvg, 60);
    now_ += 15'000;  // the next minute
    sample(10, 50, 25, 1);
    h = hub_->gpuHistory(g);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[0].minuteStartMs, minute0);
    EXPECT_FALSE(h[0].partial);
    EXPECT_FLOAT_EQ(h[0].utilAvg, 60);
    EXPECT_FLOAT_EQ(h[0].utilMax, 80);
    EXPECT_FLOAT_EQ(h[0].tempMax, 71);
    EXPECT_FLOAT_EQ(h[0].powerAvgW, 700);
    EXPECT_FLOAT_EQ(h[0].fbUsedPct, 25);
    EXPECT_EQ(h[0].samples, 2u);
    EXPECT_TRUE(h[1].partial);
    EXPECT_EQ(h[1].minuteStartMs, minute0 + 60'000);
    EXPECT_FLOAT_EQ(h[1].utilAvg, 10);
    // A GPU that never reported has minutes with no values.
    auto none = hub_->gpuHistory(0);
    ASSERT_EQ(none.size(), 2u);
    EXPECT_TRUE(std::isnan(none[0].utilAvg));
    auto lh = hub_->linkHistory(l);
    ASSERT_EQ(lh.size(), 2u);
    EXPECT_EQ(lh[0].downSamples, 1u);
    EXPECT_EQ(lh[0].samples, 2u);
    EXPECT_DOUBLE_EQ(lh[0].errors, 20);
    EXPECT_FLOAT_EQ(lh[0].utilAvg, 0);  // down counts as 0; the up sample had no octet rate
    EXPECT_EQ(lh[1].downSamples, 0u);
    EXPECT_TRUE(hub_->gpuHistory(static_cast<std::uint32_t>(layout_->gpuCount())).empty());

    // A structural change keeps the history by name.
    inv_.racks.erase(inv_.racks.begin());
    auto L2 = std::make_shared<const HallLayout>(HallLayout::build(inv_));
    hub_->setLayout(L2);
    h = hub_->gpuHistory(L2->gpuByName("z1-r002-h0-gpu5"));
    ASSERT_EQ(h.size(), 2u);
    EXPECT_FLOAT_EQ(h[0].utilMax, 80);
    lh = hub_->linkHistory(L2->linkByName("z1-r002-rtsw/p17--z1-ctsw01/p2"));
    ASSERT_EQ(lh.size(), 2u);
    EXPECT_DOUBLE_EQ(lh[0].errors, 20);

    // An hour later the first minute has left the ring; nothing reported since: no values.
    for (int i = 0; i < 60; ++i) {
        now_ += 60'000;
        hub_->tick();
    }
    h = hub_->gpuHistory(L2->gpuByName("z1-r002-h0-gpu5"));
    ASSERT_EQ(h.size(), 61u);
    EXPECT_GT(h.front().minuteStartMs, minute0);
    for (const auto& m : h)
        EXPECT_TRUE(std::isnan(m.utilAvg) || m.minuteStartMs == minute0 + 60'000);
}

// Every GPU and link of the hall reports, as with the whole hall in service: each one's minutes
// read back as sampled, to the stated resolution (1 % utilization and frame buffer, 1 degree,
// 4 W, whole error counts and down samples), whether a minute's column was kept whole (values
// that vary from GPU to GPU) or as the few entities that differ from the rest (down samples,
// errors, a frame buffer only some GPUs report) — and after a structural change, by name.
TEST_F(HubTest, HistoryOfEveryGpuAndLinkReadsBackAsSampled) {
    const HallLayout& L = *layout_;
    const auto nG = static_cast<std::uint32_t>(L.gpuCount());
    const auto nL = static_cast<std::uint32_t>(L.linkCount());
    const std::int64_t minute0 = kT0 - 40'000 + 60'000;
    constexpr int kMinutes = 3, kPerMinute = 3;
    auto util = [](std::uint32_t g, int m, int k) {
        return double((g * 7 + m * 13 + k * 29) % 101);
    };
    auto temp = [](std::uint32_t g, int m, int k) { return 30.0 + (g + m) % 50 + k * 0.4; };
    auto power = [](std::uint32_t g, int m, int k) { return 100.0 + (g * 3 + m * 11) % 600 + k; };
    // Frame buffer: every tenth GPU (a sparse column), all from minute 2 (a whole one; the hub
    // keeps a GPU's last values, so a GPU that reported once has them from then on).
    auto fbReports = [](std::uint32_t g, int m) { return m == 2 || g % 10 == 0; };
    auto fbUsed = [](std::uint32_t g, int m) { return 1000.0 * ((g + m) % 80); };
    // One switch end of each link speaks for it.
    auto endOf = [&](std::uint32_t l) {
        return L.links()[l].aPort != kNoIndex ? L.links()[l].aPort : L.links()[l].bPort;
    };
    auto down = [](std::uint32_t l, int m, int k) { return k > 0 && (l + m) % 37 == 0; };
    // Error counters: every eighth link from minute 0 (sparse), every other one from minute 1
    // (a whole column); they move at the middle sample of a minute.
    auto errReports = [](std::uint32_t l, int m) { return l % 8 == 0 || (m >= 1 && l % 2 == 0); };
    auto errInc = [](std::uint32_t l, int m) { return l % 7 == 0 ? double(m + 1 + l % 5) : 0.0; };
    auto errCounter = [&](std::uint32_t l, int m, int k) {
        double c = 10.0 * l;
        for (int j = 0; j < m; ++j) c += errInc(l, j);
        return k >= 1 ? c + errInc(l, m) : c;
    };
    now_ = minute0;
    for (int m = 0; m <= kMinutes; ++m) {
        for (int k = 0; k < kPerMinute; ++k) {
            const bool last = m == kMinutes;  // the first sample of the minute after completes
            std::string body;
            for (std::uint32_t g = 0; g < nG && !last; ++g) {
                const auto& host = L.gpuHost()[g];
                const auto& name = L.gpuNames()[g];  // "<host>-gpu<N>"
                const int slot = std::stoi(name.substr(name.rfind("-gpu") + 4));
                body += gpu("DCGM_FI_DEV_GPU_UTIL", host, slot, util(g, m, k));
                body += gpu("DCGM_FI_DEV_GPU_TEMP", host, slot, temp(g, m, k));
                body += gpu("DCGM_FI_DEV_POWER_USAGE", host, slot, power(g, m, k));
                if (fbReports(g, m)) {
                    body += gpu("DCGM_FI_DEV_FB_USED", host, slot, fbUsed(g, m));
                    body += gpu("DCGM_FI_DEV_FB_FREE", host, slot, 80000 - fbUsed(g, m));
                }
            }
            for (std::uint32_t l = 0; l < nL; ++l) {
                const auto p = endOf(l);
                const auto& sw = L.switches()[L.ports()[p].switchIndex].name;
                const int number = L.ports()[p].number;
                if (!last) body += port("loom_port_oper_status", sw, number, down(l, m, k) ? 2 : 1);
                if (errReports(l, std::min(m, kMinutes - 1)))
                    body += port("loom_port_in_errors_total", sw, number,
                                 last ? errCounter(l, m - 1, 2) : errCounter(l, m, k));
            }
            ingest(body);
            hub_->tick();
            if (last) break;
            now_ += 20'000;
        }
        if (m < kMinutes) now_ = minute0 + (m + 1) * 60'000;
    }
    auto check = [&](std::uint32_t g0, std::uint32_t g) {
        const auto h = hub_->gpuHistory(g);
        ASSERT_EQ(h.size(), static_cast<std::size_t>(kMinutes + 1)) << "gpu " << g0;
        for (int m = 0; m < kMinutes; ++m) {
            const auto& x = h[m];
            EXPECT_EQ(x.minuteStartMs, minute0 + m * 60'000);
            EXPECT_EQ(x.samples, static_cast<std::uint32_t>(kPerMinute));
            double sum = 0, max = 0, tmax = 0, psum = 0;
            for (int k = 0; k < kPerMinute; ++k) {
                sum += util(g0, m, k);
                max = std::max(max, util(g0, m, k));
                tmax = std::max(tmax, temp(g0, m, k));
                psum += power(g0, m, k);
            }
            EXPECT_NEAR(x.utilAvg, sum / kPerMinute, 0.5) << "gpu " << g0 << " minute " << m;
            EXPECT_NEAR(x.utilMax, max, 0.5) << "gpu " << g0 << " minute " << m;
            EXPECT_NEAR(x.tempMax, tmax, 0.5) << "gpu " << g0 << " minute " << m;
            EXPECT_NEAR(x.powerAvgW, psum / kPerMinute, 2.0) << "gpu " << g0 << " minute " << m;
            if (fbReports(g0, m))
                EXPECT_NEAR(x.fbUsedPct, fbUsed(g0, m) / 800.0, 0.5) << "gpu " << g0;
            else
                EXPECT_TRUE(std::isnan(x.fbUsedPct)) << "gpu " << g0 << " minute " << m;
        }
    };
    for (std::uint32_t g = 0; g < nG; ++g) check(g, g);
    for (std::uint32_t l = 0; l < nL; ++l) {
        const auto h = hub_->linkHistory(l);
        ASSERT_EQ(h.size(), static_cast<std::size_t>(kMinutes + 1)) << "link " << l;
        for (int m = 0; m < kMinutes; ++m) {
            int downs = 0;
            for (int k = 0; k < kPerMinute; ++k) downs += down(l, m, k);
            EXPECT_EQ(h[m].downSamples, static_cast<std::uint32_t>(downs)) << "link " << l;
            if (downs)
                EXPECT_FLOAT_EQ(h[m].utilAvg, 0) << "link " << l;  // down counts as 0
            else
                EXPECT_TRUE(std::isnan(h[m].utilAvg)) << "link " << l;  // no octet counters
            if (errReports(l, m))
                EXPECT_DOUBLE_EQ(h[m].errors, errInc(l, m)) << "link " << l << " minute " << m;
            else
                EXPECT_TRUE(std::isnan(h[m].errors)) << "link " << l << " minute " << m;
        }
    }
    // A structural change (the first rack removed): the rest keep their minutes, by name.
    auto inv2 = inv_;
    inv2.racks.erase(inv2.racks.begin());
    auto L2 = std::make_shared<const HallLayout>(HallLayout::build(inv2));
    ASSERT_LT(L2->gpuCount(), L.gpuCount());
    hub_->setLayout(L2);
    std::size_t carried = 0;
    for (std::uint32_t g = 0; g < nG; ++g) {
        const auto g2 = L2->gpuByName(L.gpuNames()[g]);
        if (g2 == kNoIndex) continue;
        check(g, g2);
        ++carried;
    }
    EXPECT_EQ(carried, L2->gpuCount());
    for (std::uint32_t l = 0; l < nL; ++l) {
        const auto l2 = L2->linkByName(L.links()[l].name);
        if (l2 == kNoIndex) continue;
        const auto h = hub_->linkHistory(l2);
        ASSERT_EQ(h.size(), static_cast<std::size_t>(kMinutes + 1));
        for (int m = 0; m < kMinutes; ++m)
            if (errReports(l, m)) {
                EXPECT_DOUBLE_EQ(h[m].errors, errInc(l, m)) << "link " << l;
            }
    }
}

TEST_F(HubTest, DrainedAndPlannedLinksAndQuarantinedGpus) {
    inv_.links[0].state = "drained";
    inv_.links[1].state = "planned";
    inv_.gpus[2].state = "quarantined";
    auto L = std::make_shared<const HallLayout>(HallLayout::build(inv_));
    TelemetryHub hub(L);
    auto lh = hub.packed(Topic::LinkHealth);
    EXPECT_EQ(lh[L->linkByName(inv_.links[0].name)], kLinkDrained);
    EXPECT_EQ(lh[L->linkByName(inv_.links[1].name)], kLinkNotInService);
    EXPECT_EQ(hub.packed(Topic::GpuHealth)[L->gpuByName(inv_.gpus[2].name)], kGpuQuarantined);
}

TEST_F(HubTest, MalformedBodyReportsLineAndKeepsEarlierSamples) {
    auto r = hub_->ingestText(gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0", 0, 40) + "oops{\n");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().line, 2);
    EXPECT_EQ(hub_->packed(Topic::GpuUtil)[0], 40);
}

TEST_F(HubTest, SetLayoutCarriesValuesByName) {
    ingest(gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r002-h0", 5, 77));
    inv_.racks.erase(inv_.racks.begin());  // z1-r001 leaves: indices shift by 16
    auto L2 = std::make_shared<const HallLayout>(HallLayout::build(inv_));
    hub_->setLayout(L2);
    auto util = hub_->packed(Topic::GpuUtil);
    ASSERT_EQ(util.size(), 48u);
    EXPECT_EQ(util[L2->gpuByName("z1-r002-h0-gpu5")], 77);
}

// A state refresh (same structure, new states: HallLayout::withStates) hands the new layout
// the values, the rules' state and the minute in progress by index, sharing the arrays readers
// see rather than copying them: what was known before is known after, an open event closes
// once, the rollup of the minute counts samples from both sides, and readers running through
// many refreshes never see a blank value.
TEST_F(HubTest, AStateRefreshCarriesValuesRulesAndTheMinute) {
    const std::string link = "z1-r001-rtsw/p17--z1-ctsw01/p1";
    ingest(gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0", 0, 90) +
           gpu("DCGM_FI_DEV_GPU_TEMP", "z1-r001-h0", 0, 70) +
           port("loom_port_oper_status", "z1-r001-rtsw", 17, 1) +
           port("loom_port_oper_status", "z1-ctsw01", 1, 1));
    ingest(port("loom_port_oper_status", "z1-r001-rtsw", 17, 2) +
           port("loom_port_oper_status", "z1-ctsw01", 1, 2));
    ASSERT_EQ(events_.size(), 1u);
    ASSERT_TRUE(events_[0].open());
    hub_->tick();  // the minute's first sample: GPU 0 alone, 90

    std::atomic<bool> stop{false};
    std::atomic<int> blanks{0};
    const auto g0 = layout_->gpuByName("z1-r001-h0-gpu0");
    std::thread reader([&] {
        std::vector<std::uint8_t> buf;
        while (!stop) {
            hub_->packedInto(Topic::GpuUtil, buf);
            if (buf.size() <= g0 || buf[g0] != 90) blanks.fetch_add(1);
        }
    });
    auto changed = inv_;
    for (int i = 0; i < 20; ++i) {
        changed.gpus[5].state = i % 2 ? "quarantined" : "ok";  // the last: quarantined
        auto L = HallLayout::build(inv_).withStates(changed);
        ASSERT_TRUE(L);
        hub_->setLayout(std::make_shared<const HallLayout>(std::move(*L)));
    }
    stop = true;
    reader.join();
    EXPECT_EQ(blanks.load(), 0) << "a reader saw GPU 0's value missing during a refresh";
    EXPECT_EQ(hub_->packed(Topic::GpuUtil)[g0], 90);
    EXPECT_EQ(hub_->packed(Topic::GpuHealth)[layout_->gpuByName(changed.gpus[5].name)],
              kGpuQuarantined);
    EXPECT_EQ(events_.size(), 1u) << "a refresh opens no second event for the same link";
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[layout_->linkByName(link)], kLinkDown);

    // The rule state carried: both ends up closes the event opened before the refreshes.
    now_ += 1000;
    ingest(gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0", 1, 50) +
           port("loom_port_oper_status", "z1-r001-rtsw", 17, 1) +
           port("loom_port_oper_status", "z1-ctsw01", 1, 1));
    ASSERT_EQ(events_.size(), 2u);
    EXPECT_FALSE(events_[1].open());
    EXPECT_EQ(events_[1].location, link);
    // The minute's rollup holds the samples from before the refreshes (90) and after (90, 50).
    hub_->tick();
    now_ += 25'000;  // next minute
    hub_->tick();
    auto r = hub_->takeRollups();
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].racks.size(), 1u);
    EXPECT_FLOAT_EQ(r[0].racks[0].utilMax, 90);
    EXPECT_FLOAT_EQ(r[0].racks[0].utilAvg, 230.0f / 3);
    EXPECT_EQ(r[0].racks[0].gpusReporting, 2u);
}

TEST_F(HubTest, ConcurrentIngestAndReaders) {
    std::atomic<bool> stop{false};
    std::thread reader([&] {
        std::vector<std::uint8_t> buf;
        while (!stop) {
            for (int t = 0; t < kTopicCount; ++t) hub_->packedInto(static_cast<Topic>(t), buf);
        }
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w)
        writers.emplace_back([&, w] {
            for (int i = 0; i < 200; ++i)
                (void)hub_->ingestText(
                    gpu("DCGM_FI_DEV_GPU_UTIL", "z1-r001-h0", w, i % 100) +
                    port("loom_port_in_octets_total", "z1-r001-rtsw", 1, i * 1e6));
        });
    for (auto& t : writers) t.join();
    stop = true;
    reader.join();
    EXPECT_EQ(hub_->packed(Topic::GpuUtil)[0], 99);
}

}  // namespace
}  // namespace loom::telemetry
