#include "loom/telemetry/simulator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "loom/telemetry/telemetry_hub.hpp"
#include "synthetic_inventory.hpp"

namespace loom::telemetry {
namespace {

std::shared_ptr<const HallLayout> layout(int zones, int racks) {
    return std::make_shared<const HallLayout>(HallLayout::build(testing::syntheticCluster(
        {.zones = zones, .racksPerZone = racks, .ctswPerZone = 4, .ctswUplinks = 4, .atsw = 4})));
}

TEST(Simulator, DeterministicForASeed) {
    auto L = layout(2, 16);
    SimulatorConfig c;
    c.seed = 42;
    c.xidPerGpuHour = 0.5;  // plenty of failures in a short run
    c.flapPerLinkHour = 0.5;
    Simulator a(L, c), b(L, c);
    std::string ta, tb;
    for (int i = 0; i < 30; ++i) {
        std::int64_t t = 1'700'000'000'000 + i * 1000;
        a.step(t, ta);
        b.step(t, tb);
        ASSERT_EQ(ta, tb) << "step " << i;
    }
    c.seed = 43;
    Simulator d(L, c);
    std::string td;
    for (int i = 0; i < 30; ++i) d.step(1'700'000'000'000 + i * 1000, td);
    EXPECT_NE(ta, td);
}

TEST(Simulator, FeedsTheHubWithALivingCluster) {
    auto L = layout(2, 16);
    SimulatorConfig c;
    c.seed = 7;
    c.xidPerGpuHour = 2;  // ~1 XID per second on 512 GPUs
    c.flapPerLinkHour = 0.05;
    c.rtswDownPerSwitchHour = 0.5;
    Simulator sim(L, c);
    HubOptions o;
    std::int64_t now = 1'700'000'000'000;
    o.clock = [&] { return now; };
    TelemetryHub hub(L, o);
    std::vector<FailureEvent> events;
    hub.addEventListener([&](const FailureEvent& e) { events.push_back(e); });
    std::string body;
    int hot = 0;  // most links above 50 % at one moment (communication phases)
    for (int i = 0; i < 120; ++i, now += 1000) {
        sim.step(now, body);
        auto r = hub.ingestText(body, now);
        ASSERT_TRUE(r) << r.error().toString();
        ASSERT_EQ(r->unknownTotal(), 0u) << r->toJson().dump();
        ASSERT_EQ(r->ignored, 0u);
        hub.tick(now);
        int hotNow = 0;
        for (auto u : hub.packed(Topic::LinkUtil, now)) hotNow += u != kNoData && u > 50;
        hot = std::max(hot, hotNow);
    }
    EXPECT_GT(sim.stats().jobsStarted, 0u);
    EXPECT_GT(sim.stats().gpusBusy, L->gpuCount() / 2);
    auto util = hub.packed(Topic::GpuUtil, now - 1000);
    int busy = 0, nodata = 0;
    for (auto u : util) {
        busy += u != kNoData && u >= 30;
        nodata += u == kNoData;
    }
    EXPECT_EQ(nodata, 0);
    EXPECT_GT(busy, static_cast<int>(L->gpuCount() / 3));
    EXPECT_GT(hot, 16);
    bool xid = false, down = false;
    for (const auto& e : events) {
        xid |= e.kind == "gpu_xid";
        down |= e.kind == "link_down";
    }
    EXPECT_TRUE(xid);
    EXPECT_TRUE(down);
    EXPECT_GT(sim.stats().xids, 0u);
}

// Issue 34 item 5: the simulator's jobs give way to jobs it does not own (an operator's, Slurm's)
// and runs their racks as jobs of its world, unreported; released racks are its again.
TEST(Simulator, ItsJobsGiveWayToHeldRacksWhichRunAsJobsItDoesNotReport) {
    auto L = layout(1, 16);
    SimulatorConfig c;
    c.seed = 5;
    c.fill = 1.0;
    c.xidPerGpuHour = 0.2;  // a fatal XID on a held rack must not end the held job
    Simulator sim(L, c);
    HubOptions o;
    std::int64_t now = 1'700'000'000'000;
    o.clock = [&] { return now; };
    TelemetryHub hub(L, o);
    std::string body;
    auto step = [&] {
        sim.step(now, body);
        ASSERT_TRUE(hub.ingestText(body, now));
        hub.tick(now);
        now += 1000;
    };
    for (int i = 0; i < 3; ++i) step();
    auto onRacks = [&](std::vector<std::uint32_t> racks) {
        int n = 0;
        for (const auto& j : sim.runningJobs())
            for (auto r : j.racks) n += std::count(racks.begin(), racks.end(), r) > 0;
        return n;
    };
    ASSERT_GT(onRacks({0, 1, 2, 5}), 0) << "the simulator fills every rack first";
    sim.setHeldRacks({{0, 1, 2}, {5}});
    EXPECT_EQ(onRacks({0, 1, 2, 5}), 0) << "its jobs there ended at once";
    int busyHeld = 0;
    for (int i = 0; i < 40; ++i) {
        step();
        ASSERT_EQ(onRacks({0, 1, 2, 5}), 0) << "no job of its own starts there (step " << i << ")";
        auto util = hub.packed(Topic::GpuUtil, now - 1000);
        const auto& rk = L->racks()[1];
        for (std::uint32_t g = rk.gpuOffset; g < rk.gpuOffset + rk.gpuCount; ++g)
            busyHeld += util[g] != kNoData && util[g] >= 30;
    }
    EXPECT_GT(busyHeld, 40) << "held racks run as a job";
    EXPECT_GE(sim.stats().gpusBusy, 4 * L->racks()[0].gpuCount) << "held GPUs count as busy";
    sim.setHeldRacks({{0, 1, 2}, {5}});  // the same lists: nothing moves
    EXPECT_EQ(onRacks({0, 1, 2, 5}), 0);
    sim.setHeldRacks({});
    for (int i = 0; i < 5; ++i) step();
    EXPECT_GT(onRacks({0, 1, 2, 5}), 0) << "released racks are the simulator's again";
}

TEST(Simulator, FullFidelityWritesEveryField) {
    auto L = layout(1, 4);
    SimulatorConfig c;
    c.fullFidelity = true;
    Simulator sim(L, c);
    std::string body;
    sim.step(1'700'000'000'000, body);
    std::size_t ports = 0;
    for (const auto& p : L->ports()) ports += p.linkIndex != kNoIndex;
    EXPECT_EQ(sim.stats().samplesLastStep, L->gpuCount() * 20 + ports * 12);
    TelemetryHub hub(L);
    auto r = hub.ingestText(body, 1'700'000'000'000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->ignored, 0u);
    EXPECT_EQ(r->applied, r->samples);
}

// The simulated world is the one the inventory describes: racks not yet powered send nothing,
// drained racks sit idle, only racks in service run jobs; a rack drained later loses its job.
TEST(Simulator, FollowsTheRacksStates) {
    auto inv = testing::syntheticCluster(
        {.zones = 1, .racksPerZone = 8, .ctswPerZone = 4, .ctswUplinks = 4, .atsw = 4});
    inv.racks[0].state = "planned";
    inv.racks[1].state = "drained";
    inv.racks[2].state = "burn_in";
    // Their cables as the live sync stores them (provisioning/link_service.hpp).
    for (auto& l : inv.links) {
        if (l.name.find("z1-r001-") != std::string::npos) l.state = "planned";
        if (l.name.find("z1-r002-") != std::string::npos) l.state = "drained";
        if (l.name.find("z1-r003-") != std::string::npos) l.state = "planned";
    }
    auto L = std::make_shared<const HallLayout>(HallLayout::build(inv));
    SimulatorConfig cfg;
    cfg.fill = 1.0;
    cfg.minJobGpus = cfg.maxJobGpus = 16;  // one rack per job: every serving rack gets one
    cfg.xidPerGpuHour = cfg.eccDbePerGpuHour = cfg.rtswDownPerSwitchHour = 0;  // jobs only
    Simulator sim(L, cfg);
    std::string out;
    std::int64_t t = 1'700'000'000'000;
    for (int i = 0; i < 5; ++i) sim.step(t += 1000, out);
    auto samplesOf = [&](const std::string& host, const std::string& metric) {
        std::vector<double> v;
        std::size_t pos = 0;
        const std::string key = "Hostname=\"" + host + "\"";
        while ((pos = out.find(metric + "{", pos)) != std::string::npos) {
            auto eol = out.find('\n', pos);
            auto line = out.substr(pos, eol - pos);
            pos = eol;
            if (line.find(key) == std::string::npos) continue;
            v.push_back(std::stod(line.substr(line.rfind(' ') + 1)));
        }
        return v;
    };
    EXPECT_TRUE(samplesOf("z1-r001-h0", "DCGM_FI_DEV_GPU_UTIL").empty()) << "planned rack reports";
    EXPECT_FALSE(out.find("switch=\"z1-r001-rtsw\"") != std::string::npos)
        << "planned RTSW reports";
    auto drained = samplesOf("z1-r002-h0", "DCGM_FI_DEV_GPU_UTIL");
    ASSERT_EQ(drained.size(), 8u);
    for (double u : drained) EXPECT_LE(u, 2.0) << "a drained rack is idle";
    for (double u : samplesOf("z1-r003-h1", "DCGM_FI_DEV_GPU_UTIL"))
        EXPECT_GE(u, 90.0) << "burn-in load";
    EXPECT_GT(sim.stats().jobsRunning, 0u);
    // Rack 4 in service runs a job; drained by a new layout, its job ends and it goes idle.
    double busy = 0;
    for (double u : samplesOf("z1-r004-h0", "DCGM_FI_DEV_GPU_UTIL")) busy = std::max(busy, u);
    EXPECT_GT(busy, 30.0);
    inv.racks[3].state = "drained";
    for (auto& l : inv.links)
        if (l.name.find("z1-r004-") != std::string::npos) l.state = "drained";
    auto L2 = std::make_shared<const HallLayout>(HallLayout::build(inv));
    ASSERT_EQ(L2->layoutVersion(), L->layoutVersion());
    ASSERT_NE(L2->stateVersion(), L->stateVersion());
    sim.setLayout(L2);
    sim.step(t += 1000, out);
    for (double u : samplesOf("z1-r004-h0", "DCGM_FI_DEV_GPU_UTIL")) EXPECT_LE(u, 2.0);
}

// The chunked step hands over the whole page in pieces: concatenated they are the page, byte
// for byte, and each piece is whole lines ending at a rack's or a switch's end.
TEST(Simulator, ChunksConcatenateToTheWholePage) {
    auto L = layout(2, 16);
    SimulatorConfig c;
    c.seed = 11;
    c.xidPerGpuHour = 0.5;
    c.flapPerLinkHour = 0.5;
    c.stragglerEverySeconds = 5;
    Simulator whole(L, c), chunked(L, c);
    std::string page;
    constexpr std::size_t kChunk = 4096;
    for (int i = 0; i < 40; ++i) {
        const std::int64_t t = 1'700'000'000'000 + i * 1000;
        whole.step(t, page);
        std::string joined;
        std::size_t pieces = 0, largest = 0;
        chunked.step(
            t,
            [&](std::string_view chunk) {
                ASSERT_FALSE(chunk.empty());
                ASSERT_EQ(chunk.back(), '\n') << "step " << i << " piece " << pieces;
                joined += chunk;
                largest = std::max(largest, chunk.size());
                ++pieces;
            },
            kChunk);
        ASSERT_EQ(joined, page) << "step " << i;
        EXPECT_EQ(chunked.stats().samplesLastStep, whole.stats().samplesLastStep);
        EXPECT_GE(pieces, page.size() / (kChunk + 16 * 1024)) << "step " << i;
        EXPECT_GT(pieces, 4u);
        // A piece is the chunk plus at most one rack's or one switch's lines.
        EXPECT_LT(largest, kChunk + 16 * 1024);
    }
}

// A hub fed the pieces ends in the same state as one fed whole pages: every GPU field and port
// counter, every packed topic, the open events, the rollups and the history.
TEST(Simulator, AHubFedInChunksEndsInTheSameState) {
    auto L = layout(2, 16);
    SimulatorConfig c;
    c.seed = 5;
    c.xidPerGpuHour = 2;
    c.flapPerLinkHour = 0.5;
    c.rtswDownPerSwitchHour = 0.5;
    c.stragglerEverySeconds = 20;
    Simulator simWhole(L, c), simChunked(L, c);
    std::int64_t now = 1'700'000'000'000;
    HubOptions o;
    o.clock = [&] { return now; };
    TelemetryHub whole(L, o), chunked(L, o);
    std::vector<FailureEvent> eventsWhole, eventsChunked;
    // Opens and closes; a link_down sent again with new ends (at most once a sample, so once
    // per chunk here) is the same event and not compared.
    auto keep = [](std::vector<FailureEvent>& to, std::shared_ptr<std::set<std::string>> open) {
        return [&to, open](const FailureEvent& e) {
            if (e.open() && !open->insert(e.key).second) return;
            if (!e.open()) open->erase(e.key);
            to.push_back(e);
        };
    };
    whole.addEventListener(keep(eventsWhole, std::make_shared<std::set<std::string>>()));
    chunked.addEventListener(keep(eventsChunked, std::make_shared<std::set<std::string>>()));
    std::vector<Rollup> rollWhole, rollChunked;
    std::string page;
    std::size_t pieces = 0;
    for (int i = 0; i < 150; ++i, now += 1000) {
        simWhole.step(now, page);
        ASSERT_TRUE(whole.ingestText(page, now));
        simChunked.step(
            now,
            [&](std::string_view chunk) {
                ++pieces;
                auto r = chunked.ingestText(chunk, now);
                ASSERT_TRUE(r) << r.error().toString();
                ASSERT_EQ(r->unknownTotal(), 0u);
            },
            8192);
        whole.tick(now);
        chunked.tick(now);
        for (auto& r : whole.takeRollups()) rollWhole.push_back(std::move(r));
        for (auto& r : chunked.takeRollups()) rollChunked.push_back(std::move(r));
        for (int t = 0; t < kTopicCount; ++t)
            ASSERT_EQ(whole.packed(static_cast<Topic>(t), now),
                      chunked.packed(static_cast<Topic>(t), now))
                << "step " << i << " topic " << topicName(static_cast<Topic>(t));
    }
    EXPECT_GT(pieces, 150u * 4);
    auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
    for (std::uint32_t g = 0; g < L->gpuCount(); ++g)
        for (int f = 0; f < kGpuFieldCount; ++f)
            ASSERT_TRUE(same(whole.gpuValue(g, static_cast<GpuField>(f)),
                             chunked.gpuValue(g, static_cast<GpuField>(f))))
                << "gpu " << g << " field " << f;
    for (std::uint32_t p = 0; p < L->portCount(); ++p)
        for (int k = 0; k < kPortCounterCount; ++k)
            ASSERT_TRUE(same(whole.portValue(p, static_cast<PortCounter>(k)),
                             chunked.portValue(p, static_cast<PortCounter>(k))))
                << "port " << p << " counter " << k;
    ASSERT_EQ(eventsWhole.size(), eventsChunked.size());
    EXPECT_FALSE(eventsWhole.empty());
    for (std::size_t i = 0; i < eventsWhole.size(); ++i) {
        EXPECT_EQ(eventsWhole[i].kind, eventsChunked[i].kind) << i;
        EXPECT_EQ(eventsWhole[i].location, eventsChunked[i].location) << i;
        EXPECT_EQ(eventsWhole[i].openedAtMs, eventsChunked[i].openedAtMs) << i;
        EXPECT_EQ(eventsWhole[i].closedAtMs, eventsChunked[i].closedAtMs) << i;
    }
    ASSERT_EQ(rollWhole.size(), rollChunked.size());
    ASSERT_GE(rollWhole.size(), 2u);
    for (std::size_t i = 0; i < rollWhole.size(); ++i) {
        ASSERT_EQ(rollWhole[i].racks.size(), rollChunked[i].racks.size());
        for (std::size_t r = 0; r < rollWhole[i].racks.size(); ++r) {
            EXPECT_TRUE(same(rollWhole[i].racks[r].utilAvg, rollChunked[i].racks[r].utilAvg));
            EXPECT_TRUE(same(rollWhole[i].racks[r].powerAvgW, rollChunked[i].racks[r].powerAvgW));
        }
        ASSERT_EQ(rollWhole[i].switches.size(), rollChunked[i].switches.size());
        for (std::size_t s = 0; s < rollWhole[i].switches.size(); ++s) {
            EXPECT_TRUE(same(rollWhole[i].switches[s].utilAvg, rollChunked[i].switches[s].utilAvg));
            EXPECT_TRUE(same(rollWhole[i].switches[s].errors, rollChunked[i].switches[s].errors));
        }
    }
    for (std::uint32_t g = 0; g < L->gpuCount(); g += 7) {
        auto a = whole.gpuHistory(g, now), b = chunked.gpuHistory(g, now);
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t m = 0; m < a.size(); ++m) {
            EXPECT_TRUE(same(a[m].utilAvg, b[m].utilAvg)) << "gpu " << g << " minute " << m;
            EXPECT_TRUE(same(a[m].powerAvgW, b[m].powerAvgW)) << "gpu " << g << " minute " << m;
        }
    }
    for (std::uint32_t l = 0; l < L->linkCount(); l += 5) {
        auto a = whole.linkHistory(l, now), b = chunked.linkHistory(l, now);
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t m = 0; m < a.size(); ++m) {
            EXPECT_TRUE(same(a[m].utilMax, b[m].utilMax)) << "link " << l << " minute " << m;
            EXPECT_EQ(a[m].downSamples, b[m].downSamples) << "link " << l << " minute " << m;
            EXPECT_TRUE(same(a[m].errors, b[m].errors)) << "link " << l << " minute " << m;
        }
    }
}

TEST(Simulator, EmptyLayoutDoesNothing) {
    Simulator sim(std::make_shared<const HallLayout>());
    std::string body;
    sim.step(1000, body);
    EXPECT_TRUE(body.empty());
}

}  // namespace
}  // namespace loom::telemetry
