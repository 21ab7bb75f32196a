// The hub's value columns (telemetry/src/hub_columns.hpp): blocks allocated on the first
// value, port counters as 4-byte codes while small whole numbers. Every value must read back
// exactly as stored (NaN as NaN), in the columns themselves, under a concurrent reader, and
// through the hub: every port slot's counters and utilization after hand-written scrapes
// (resets, NaN, odd values, unknown and silent ports) and after simulator steps equal what
// a plain last-value-per-port model of the pages says (the dense layout the columns replace).
#include "../../telemetry/src/hub_columns.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../../telemetry/src/hub_state.hpp"
#include "loom/telemetry/prom_text.hpp"
#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "synthetic_inventory.hpp"

namespace loom::telemetry {
namespace {

using detail::CounterColumn;
using detail::FloatColumn;
using detail::kColumnBlock;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The same double, or both NaN.
bool same(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;  // -0 is not 0
}

const double kOdd[] = {
    0,    1,        2,         4294967294.0, 4294967295.0,       4294967296.0, 1.5,   -1,     -0.0,
    kNaN, INFINITY, -INFINITY, 1e300,        9007199254740992.0, 4e11,         4.5e5, 400000, 7};

TEST(HubColumns, CounterValuesReadBackExactly) {
    for (double unit : {1.0, 1e6})
        for (bool wideFirst : {false, true}) {
            SCOPED_TRACE("unit " + std::to_string(unit) + (wideFirst ? " wide first" : ""));
            const std::size_t n = 3 * kColumnBlock + 17;
            CounterColumn col(n, unit, wideFirst);
            std::vector<double> ref(n, kNaN);
            std::mt19937 rng(42);
            for (int round = 0; round < 6; ++round) {
                for (int k = 0; k < 400; ++k) {
                    const auto i = rng() % n;
                    // Early rounds: small whole numbers only (4-byte blocks), then anything.
                    const double v = round < 2 ? static_cast<double>(rng() % 1000) * unit
                                               : kOdd[rng() % std::size(kOdd)];
                    col.store(i, v);
                    ref[i] = v;
                }
                for (std::size_t i = 0; i < n; ++i)
                    ASSERT_TRUE(same(col.load(i), ref[i]))
                        << "slot " << i << " round " << round << ": " << col.load(i) << " vs "
                        << ref[i];
            }
        }
}

TEST(HubColumns, BlocksAreAllocatedOnTheFirstValueAndSizedByIt) {
    const std::size_t n = 4 * kColumnBlock;
    CounterColumn col(n, 1, false);
    const auto empty = col.bytes();
    col.store(5, kNaN);  // what an absent block reads: nothing allocated
    EXPECT_EQ(col.bytes(), empty);
    EXPECT_TRUE(std::isnan(col.load(5)));
    col.store(5, 3);
    EXPECT_EQ(col.bytes(), empty + kColumnBlock * 4);  // one block of 4-byte codes
    col.store(6, 4294967294.0);
    EXPECT_EQ(col.bytes(), empty + kColumnBlock * 4);
    col.store(7, 4294967295.0);  // past 2^32-2: the block moves to doubles
    EXPECT_EQ(col.bytes(), empty + kColumnBlock * 12);
    EXPECT_EQ(col.load(5), 3);
    EXPECT_EQ(col.load(6), 4294967294.0);
    EXPECT_EQ(col.load(7), 4294967295.0);
    EXPECT_TRUE(std::isnan(col.load(8)));
    EXPECT_TRUE(std::isnan(col.load(kColumnBlock)));  // another block, never written

    // ifHighSpeed's unit: whole Mb/s stay 4-byte codes.
    CounterColumn speed(n, 1e6, false);
    const auto e2 = speed.bytes();
    speed.store(0, 4e11);
    speed.store(1, 1e11);
    EXPECT_EQ(speed.bytes(), e2 + kColumnBlock * 4);
    EXPECT_EQ(speed.load(0), 4e11);
    speed.store(2, 4.5e5);  // not whole Mb/s
    EXPECT_EQ(speed.load(2), 4.5e5);
    EXPECT_EQ(speed.load(0), 4e11);
    EXPECT_EQ(speed.bytes(), e2 + kColumnBlock * 12);

    // Octet counters: doubles from the first value.
    CounterColumn octets(n, 1, true);
    const auto e3 = octets.bytes();
    octets.store(3 * kColumnBlock + 1, 12);
    EXPECT_EQ(octets.bytes(), e3 + kColumnBlock * 8);
    EXPECT_EQ(octets.load(3 * kColumnBlock + 1), 12);

    FloatColumn f(n);
    const auto e4 = f.bytes();
    f.store(9, NAN);
    EXPECT_EQ(f.bytes(), e4);
    f.store(9, 61.5f);
    f.store(kColumnBlock * 2, -0.0f);
    EXPECT_EQ(f.bytes(), e4 + 2 * kColumnBlock * 4);
    EXPECT_EQ(f.load(9), 61.5f);
    EXPECT_TRUE(std::signbit(f.load(kColumnBlock * 2)));
    EXPECT_TRUE(std::isnan(f.load(10)));
    EXPECT_TRUE(std::isnan(f.load(kColumnBlock)));
}

// One writer (the ingest) stores rising values, small then past 2^32 (every block moves to
// doubles while the reader reads): the reader sees, per slot, NaN or values that were stored,
// never going back.
TEST(HubColumns, AConcurrentReaderSeesOnlyStoredValuesInOrder) {
    const std::size_t n = 2 * kColumnBlock;
    CounterColumn col(n, 1, false);
    std::atomic<bool> done{false};
    std::atomic<std::uint64_t> bad{0}, reads{0};
    std::thread reader([&] {
        std::vector<double> last(n, -1);
        while (!done.load()) {
            for (std::size_t i = 0; i < n; ++i) {
                const double v = col.load(i);
                reads.fetch_add(1, std::memory_order_relaxed);
                if (std::isnan(v)) {
                    if (last[i] >= 0) bad.fetch_add(1);  // a value, then NaN again
                    continue;
                }
                // Stored: k * 1000 + i (k < 4000) or 2^33 + k * 1000 + i.
                const double r = v >= 8589934592.0 ? v - 8589934592.0 : v;
                if (std::fmod(r, 1000) != static_cast<double>(i % 1000) || v < last[i])
                    bad.fetch_add(1);
                last[i] = v;
            }
        }
    });
    for (int k = 0; k < 4000; ++k)
        for (std::size_t i = 0; i < n; ++i)
            col.store(i, (k >= 2000 ? 8589934592.0 : 0) + k * 1000.0 + static_cast<double>(i));
    done = true;
    reader.join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_GT(reads.load(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Through the hub: a model of the dense layout (the last value per port slot and counter, the
// last sample time per rated counter, utilization from the octet counters' rate), fed the same
// pages, must give the same answer for every slot.
class HubPortModel {
public:
    explicit HubPortModel(const HallLayout& L)
        : L_(L),
          val_(L.portCount() * kPortCounterCount, kNaN),
          at_(L.portCount() * detail::kRatedSlots, 0),
          util_(L.portCount() * 2, NAN) {}

    // The page's samples, as the hub applies them (the switch from `switch` or the identity).
    void apply(std::string_view body, std::int64_t t, std::string_view identitySwitch = {}) {
        const auto& table = detail::metricTable();
        auto r = parsePromText(body, [&](const PromSample& s) {
            auto it = table.find(s.name);
            if (it == table.end() || it->second.type != detail::MetricInfo::Port) return;
            std::string_view sw = s.label("switch");
            if (sw.empty()) sw = identitySwitch;
            std::string_view port = s.label("port");
            if (port.empty()) port = s.label("ifName");
            const auto si = L_.switchByName(sw);
            if (si == kNoIndex) return;
            const auto p = L_.portBySwitch(si, port);
            if (p == kNoIndex) return;
            sample(p, it->second.id, s.value * it->second.scale, t);
        });
        ASSERT_TRUE(r) << r.error().toString();
    }
    // Each rated counter on its own (issue 34): its own last time; a sample older than it is
    // not taken, one at the same instant gives no rate; a value below the last is a reset (or a
    // 32-bit wrap), whose increase counts.
    void sample(std::uint32_t p, int c, double v, std::int64_t t) {
        double& slot = val_[p * kPortCounterCount + c];
        const double old = slot;
        const int rated = detail::ratedSlot(static_cast<PortCounter>(c));
        if (rated < 0) {
            slot = v;
            return;
        }
        auto& at = at_[p * detail::kRatedSlots + static_cast<std::size_t>(rated)];
        if (at != 0 && t < at) return;
        slot = v;
        if (at != 0 && t == at) return;
        const std::int64_t prevT = at;
        at = t;
        const bool in = c == static_cast<int>(PortCounter::InOctets);
        if (!in && c != static_cast<int>(PortCounter::OutOctets)) return;
        if (!std::isfinite(old) || !std::isfinite(v) || prevT == 0) return;
        const double rate =
            detail::counterIncrease(old, v) * 1000.0 / static_cast<double>(t - prevT);
        double speed = val_[p * kPortCounterCount + static_cast<int>(PortCounter::SpeedBps)];
        if (!(std::isfinite(speed) && speed > 0))
            speed = (L_.ports()[p].speedGbps ? L_.ports()[p].speedGbps : 400) * 1e9;
        util_[p * 2 + (in ? 0 : 1)] = static_cast<float>(std::min(100.0, rate * 8 / speed * 100));
    }
    void expectHub(const TelemetryHub& hub, const std::string& when) const {
        std::size_t reported = 0;
        for (std::uint32_t p = 0; p < L_.portCount(); ++p) {
            for (int c = 0; c < kPortCounterCount; ++c) {
                const double want = val_[p * kPortCounterCount + c];
                reported += !std::isnan(want);
                ASSERT_TRUE(same(hub.portValue(p, static_cast<PortCounter>(c)), want))
                    << when << ": " << L_.portName(p) << " counter " << c << ": "
                    << hub.portValue(p, static_cast<PortCounter>(c)) << ", want " << want;
            }
            const float a = util_[p * 2], b = util_[p * 2 + 1];
            const double want = std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b);
            ASSERT_TRUE(same(hub.portUtil(p), want))
                << when << ": " << L_.portName(p) << " utilization " << hub.portUtil(p) << ", want "
                << want;
        }
        EXPECT_GT(reported, 0u) << when;
    }

private:
    const HallLayout& L_;
    std::vector<double> val_;
    std::vector<std::int64_t> at_;
    std::vector<float> util_;
};

class HubPortValues : public ::testing::Test {
protected:
    void SetUp() override {
        inv_ = loom::testing::syntheticCluster({.zones = 1, .racksPerZone = 4, .ctswPerZone = 4});
        for (auto& l : inv_.links) l.state = "active";
        layout_ = std::make_shared<const HallLayout>(HallLayout::build(inv_));
        hub_ = std::make_unique<TelemetryHub>(layout_);
        model_ = std::make_unique<HubPortModel>(*layout_);
    }
    void feed(const std::string& body, std::string_view sw = {}) {
        auto r = hub_->ingestText(body, t_, {.switchName = sw});
        ASSERT_TRUE(r) << r.error().toString();
        model_->apply(body, t_, sw);
    }

    inventory::Inventory inv_;
    std::shared_ptr<const HallLayout> layout_;
    std::unique_ptr<TelemetryHub> hub_;
    std::unique_ptr<HubPortModel> model_;
    std::int64_t t_ = 1'700'000'020'000;
};

TEST_F(HubPortValues, HandWrittenScrapesWithResetsOddValuesAndSilentPorts) {
    const auto& sws = layout_->switches();
    ASSERT_GE(sws.size(), 3u);
    const char* counters[] = {"loom_port_oper_status",
                              "loom_port_in_octets_total",
                              "loom_port_out_octets_total",
                              "loom_port_in_packets_total",
                              "loom_port_out_packets_total",
                              "loom_port_in_errors_total",
                              "loom_port_out_errors_total",
                              "loom_port_in_discards_total",
                              "loom_port_out_discards_total",
                              "loom_port_in_pfc_pause_frames_total",
                              "loom_port_out_pfc_pause_frames_total",
                              "loom_port_fec_uncorrectable_total",
                              "loom_port_speed_bps"};
    std::mt19937_64 rng(7);
    std::vector<double> octets(8, 0);
    for (int round = 0; round < 8; ++round) {
        t_ += round == 5 ? 15000 : 1000;
        std::string body;
        // Switch 0: every counter of ports 1..8, octets rising then (round 4) reset; errors
        // wrapping a 32-bit counter; odd values from round 6.
        for (int p = 1; p <= 8; ++p) {
            for (int c = 0; c < kPortCounterCount; ++c) {
                std::string v;
                if (c == 1 || c == 2) {
                    octets[p - 1] = round == 4 ? 1000.0 * p : octets[p - 1] + 3e9 + p * 1e7;
                    v = std::to_string(static_cast<long long>(octets[p - 1] * (c == 2 ? 0.9 : 1)));
                } else if (c == 5) {
                    v = std::to_string(round < 3 ? 4294967290ull + round * 2 : round);  // wraps
                } else if (c == 12) {
                    v = p % 2 ? "400000000000" : "200000000000";
                } else if (round >= 6 && (p + c) % 3 == 0) {
                    const char* odd[] = {"NaN", "-1", "1.5", "+Inf", "-0", "1e300", "4294967296"};
                    v = odd[rng() % 7];
                } else {
                    v = std::to_string(rng() % (c == 0 ? 3 : 100000));
                }
                body += std::string(counters[c]) + "{switch=\"" + sws[0].name + "\",port=\"p" +
                        std::to_string(p) + "\"} " + v + "\n";
            }
        }
        // Switch 1: a few counters on a few ports, some rounds only; a port number past the
        // switch's slots and an unknown switch (neither stored).
        if (round % 2 == 0)
            for (int p : {2, 17, 33})
                body += std::string("loom_port_in_errors_total{switch=\"") + sws[1].name +
                        "\",port=\"p" + std::to_string(p) + "\"} " + std::to_string(round * p) +
                        "\n";
        body += std::string("loom_port_in_errors_total{switch=\"") + sws[1].name +
                "\",port=\"p9999\"} 5\n";
        body += "loom_port_in_errors_total{switch=\"no-such-switch\",port=\"p1\"} 5\n";
        feed(body);
        // Switch 2 through snmp_exporter's IF-MIB names (the target's identity, ifHighSpeed
        // in Mb/s; rounds 0-3 only: then it stops reporting).
        if (round < 4) {
            std::string snmp;
            for (int p = 1; p <= 6; ++p) {
                const auto lbl = "{ifIndex=\"" + std::to_string(p) + "\",ifName=\"swp" +
                                 std::to_string(p) + "\"} ";
                snmp += "ifOperStatus" + lbl + (p == 3 ? "2\n" : "1\n");
                snmp +=
                    "ifHCInOctets" + lbl + std::to_string(81234567890123ull + round * 4e12) + "\n";
                snmp +=
                    "ifHCOutOctets" + lbl + std::to_string(71234567890123ull + round * 1e12) + "\n";
                snmp += "ifInErrors" + lbl + std::to_string(p * round) + "\n";
                snmp += "ifHighSpeed" + lbl + (p == 4 ? "100000\n" : "400000\n");
            }
            feed(snmp, sws[2].name);
        }
        model_->expectHub(*hub_, "round " + std::to_string(round));
        if (HasFatalFailure()) return;
    }
}

TEST_F(HubPortValues, SimulatorStepsLiveAndFullFidelity) {
    for (bool full : {false, true}) {
        SimulatorConfig c;
        c.fullFidelity = full;
        c.seed = full ? 11 : 3;  // the second simulator's counters restart below the first's
        Simulator sim(layout_, c);
        for (int i = 0; i < 6; ++i) {
            t_ += 1000;
            std::string body;
            sim.step(t_, body);
            feed(body);
            hub_->tick(t_);
            model_->expectHub(*hub_,
                              std::string(full ? "full" : "live") + " step " + std::to_string(i));
            if (HasFatalFailure()) return;
        }
    }
}

}  // namespace
}  // namespace loom::telemetry
