// TelemetryHub's internals, shared by its source files (not a public header): the helpers,
// the per-layout State (value arrays, detection state, rollup accumulators) and the
// hub-lifetime Shared part (open events, listeners, counters).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hub_columns.hpp"
#include "hub_history.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "unknown_catalog.hpp"

namespace loom::telemetry {
namespace detail {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr auto kRelaxed = std::memory_order_relaxed;

// What readers see, shared by the States of one structure (a state refresh hands the same
// arrays to the new State instead of copying them: ~114 MB at 98k GPUs).
template <class T>
using AtomicArray = std::shared_ptr<std::atomic<T>[]>;

template <class T>
std::unique_ptr<std::atomic<T>[]> atomicArray(std::size_t n, T init) {
    auto p = std::make_unique<std::atomic<T>[]>(n);
    for (std::size_t i = 0; i < n; ++i) p[i].store(init, kRelaxed);
    return p;
}

// The port counters whose rates the hub keeps, one slot each (-1: not rated). Slots 0 and 1
// (octets) become utilIn/utilOut; 2.. keep their rate in PortDet::rate.
inline constexpr int kRatedSlots = 8;
constexpr int ratedSlot(PortCounter c) {
    switch (c) {
        case PortCounter::InOctets:
            return 0;
        case PortCounter::OutOctets:
            return 1;
        case PortCounter::InErrors:
            return 2;
        case PortCounter::OutErrors:
            return 3;
        case PortCounter::InDiscards:
            return 4;
        case PortCounter::OutDiscards:
            return 5;
        case PortCounter::InPfcPause:
            return 6;
        case PortCounter::OutPfcPause:
            return 7;
        default:
            return -1;
    }
}
// A sample time as 32 bits: ms since 2023-11-14, wrapping every 49.7 days; 0 means "none", so
// the one ms in 49 days that maps to 0 is stored as 1. The gap between two samples of one
// counter is (now - then) in uint32 arithmetic: right for any gap under 49 days.
inline std::uint32_t rateClock(std::int64_t ms) {
    const auto v = static_cast<std::uint32_t>(static_cast<std::uint64_t>(ms - 1'700'000'000'000));
    return v ? v : 1;
}
// The 8-bit tag of a source (IngestIdentity::source): 0 for none, else 1..255. Two sources
// with the same tag (1 in 255) are taken for one, as before there were tags.
inline std::uint8_t sourceTag(std::string_view source) {
    if (source.empty()) return 0;
    return static_cast<std::uint8_t>(1 + std::hash<std::string_view>{}(source) % 255);
}
// The increase of a counter from `old` to `v`: a value below the last one is a counter that
// restarted from 0 (its increase is the value itself, as rate() takes it), unless the last was
// in the upper half of 32 bits and the new one below it: a 32-bit counter that wrapped; or in
// the upper half of 64 bits (ifHCInOctets, which snmp_exporter writes as a float near 1.8e19)
// and the new one in the lower half: a 64-bit counter that wrapped.
inline double counterIncrease(double old, double v) {
    if (v >= old) return v - old;
    constexpr double k32 = 4294967296.0;
    if (old < k32 && old >= k32 / 2) return k32 - old + v;
    constexpr double k64 = 18446744073709551616.0;
    if (old <= k64 && old >= k64 / 2 && v < k64 / 2) return k64 - old + v;
    return v;
}

// What a metric name means to the hub.
struct MetricInfo {
    enum Type : std::uint8_t { Ignored, Gpu, Port, Nic } type = Ignored;
    std::uint8_t id = 0;  // GpuField, PortCounter or NicCounter
    double scale = 1;     // ifHighSpeed is in Mb/s
};

// node_exporter's InfiniBand collector: the host end of a backend link.
enum NicCounter : std::uint8_t {
    kNicStateId = 0,
    kNicLinkDowned = 1,
    // Counters whose rates Loom keeps (rate() semantics: a value below the last one is a
    // counter that restarted from 0, its increase is the value itself).
    kNicRxBytes = 2,
    kNicTxBytes = 3,
    kNicXmitWait = 4,
    kNicRcvErrors = 5,
    kNicErrRecovery = 6,
    kNicRateBytes = 7,  // node_infiniband_rate_bytes_per_second: the port's speed
    // node_infiniband_info{device, hca_type}: no value, which NIC the device is (issue 35).
    kNicInfo = 255,
};
inline constexpr int kNicRateCount = 5;  // kNicRxBytes .. kNicErrRecovery

// IF-MIB ifAdminStatus (and loom_port_admin_status): a port's MetricInfo id beside the
// PortCounter values. Not stored as a counter: it decides whether the port being down is a
// failure (PortDet::adminDown).
inline constexpr std::uint8_t kPortAdminStatus = 200;

// Metric name -> what the hub does with it (metric_table.cpp).
const std::unordered_map<std::string_view, MetricInfo, NameHash, std::equal_to<>>& metricTable();

// Event kinds, as bits in the per-entity open masks.
enum GpuKind : std::uint8_t {
    kXid = 1,
    kEccDbe = 2,
    kRowRemap = 4,
    kTemp = 8,
    kNvlink = 16,
    kThrottled = 32,
    kMissing = 64,  // gpu_missing: gone from its host's page (HubWork::tickGpus)
};
constexpr std::uint8_t kLastGpuKind = kMissing;
// kSlow: a port up below its inventory speed (link_speed, issue 35 item 6).
enum LinkKind : std::uint8_t { kDown = 1, kFlap = 2, kErrors = 4, kPfc = 8, kSlow = 16 };
inline constexpr std::uint8_t kLastLinkKind = kSlow;
// Not a kind: beside kDown in a link's open bits, that link_down opened while link_flapping was
// open, and is held down until the flapping closes (HubWork::heldByFlapping).
inline constexpr std::uint8_t kDownHeldByFlap = 0x80;
inline constexpr std::uint8_t kDownBits = kDown | kDownHeldByFlap;
constexpr std::string_view gpuKindName(std::uint8_t k) {
    switch (k) {
        case kXid:
            return "gpu_xid";
        case kEccDbe:
            return "gpu_ecc_dbe";
        case kRowRemap:
            return "gpu_row_remap_failure";
        case kTemp:
            return "gpu_temp";
        case kThrottled:
            return "gpu_throttled";
        case kMissing:
            return "gpu_missing";
        default:
            return "gpu_nvlink_errors";
    }
}
constexpr std::string_view linkKindName(std::uint8_t k) {
    switch (k) {
        case kDown:
            return "link_down";
        case kFlap:
            return "link_flapping";
        case kErrors:
            return "link_errors";
        case kSlow:
            return "link_speed";
        default:
            return "link_pfc_storm";
    }
}

// What kind of source reported an event (IngestIdentity::origin), 2 bits per event kind in the
// per-entity origin words (gpuOrigin, linkOrigin, PortDet::origin). Any: not known (an event
// stored before origins were recorded, or opened by the hub's own clock): any sample may close
// it. The high bit of a field is set for the real sources (push, scrape).
enum OriginClass : std::uint8_t {
    kOriginAny = 0,
    kOriginSim = 1,
    kOriginPush = 2,
    kOriginScrape = 3
};
constexpr std::uint16_t kGpuRealMask = 0x2AAA;  // 7 GPU kinds
constexpr std::uint16_t kLinkRealMask = 0x2AA;  // 5 link kinds
inline std::uint8_t originClass(std::string_view origin) {
    if (origin == "simulator") return kOriginSim;
    if (origin == "push") return kOriginPush;
    if (origin.starts_with("scrape")) return kOriginScrape;
    return kOriginAny;
}
// The shift of an event kind's field in an origin word (kinds are single bits).
constexpr int originShift(std::uint8_t kind) { return 2 * std::countr_zero(kind); }
template <class W>
std::uint8_t originOf(W word, std::uint8_t kind) {
    return static_cast<std::uint8_t>((word >> originShift(kind)) & 3);
}
template <class W>
void storeOrigin(W& word, std::uint8_t kind, std::uint8_t cls) {
    word = static_cast<W>((word & ~(W{3} << originShift(kind))) | (W(cls) << originShift(kind)));
}

inline bool parseSmallInt(std::string_view s, int& out) {
    if (s.empty() || s.size() > 4) return false;
    int v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    out = v;
    return true;
}

inline std::string formatNumber(double v) {
    if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// State: everything sized by one layout. Atomics are what readers see; the rest belongs to the
// ingest mutex.
struct TelemetryHub::State {
    std::shared_ptr<const HallLayout> L;
    std::size_t nG = 0, nP = 0, nL = 0;

    // GPU values, a column per field; NaN = never reported (hub_columns.hpp: blocks of 512
    // GPUs allocated on a field's first value).
    std::shared_ptr<detail::ColumnSet<detail::FloatColumn>> gpu;
    detail::AtomicArray<std::int64_t> gpuSeen;
    detail::AtomicArray<std::uint8_t> gpuEventHealth;  // 0 ok, 1 warning, 2 failed
    std::vector<std::uint8_t> gpuOpen, gpuCrit, tempLevel;
    // GpuKind bits of events closed by hand while their condition held: no new event of that
    // kind opens until the condition clears (then the bit clears).
    std::vector<std::uint8_t> gpuSuppressed;
    // The origin class of each open event of a GPU (2 bits per GpuKind, OriginClass).
    std::vector<std::uint16_t> gpuOrigin;
    std::vector<float> nvPrev;
    std::vector<std::int64_t> nvPrevMs;
    std::vector<float> nvRate;
    std::vector<std::uint8_t> throttleRun;  // consecutive samples with an alarming reason
    // Since when the condition of an open threshold event has been clear (hold-down), by
    // (GPU << 8 | GpuKind): only GPUs whose open event is cooling down have an entry.
    std::unordered_map<std::uint64_t, std::int64_t> clearSince;
    // The correctable ECC counter's last value and time, and its rate over its last two
    // samples (NaN: fewer): what the straggler finder reads (issue 34 item 1).
    std::vector<double> sbePrev;
    std::vector<std::int64_t> sbePrevMs;
    std::vector<float> sbeRate;
    // The source (detail::sourceTag, 0 = unnamed) that sends the GPU and when its last page
    // came (detail::rateClock of the arrival): a second dcgm-exporter of the same GPU is counted,
    // not taken, while the first still sends it (HubWork::gpuSourceTakes).
    std::vector<std::uint8_t> gpuSrc;
    std::vector<std::uint32_t> gpuSrcAt;
    // dcgm-exporter's hpc_job per GPU: written under the ingest lock and jobMutex, read by the
    // API under jobMutex (only when it changes, so ingest rarely takes it).
    std::vector<std::string> gpuJob;
    mutable std::mutex jobMutex;

    // Port values, a column per counter; NaN = never reported (hub_columns.hpp: blocks of
    // 512 port slots allocated on a counter's first value, 4-byte codes while the values are
    // small whole numbers).
    std::shared_ptr<detail::ColumnSet<detail::CounterColumn>> port;
    detail::AtomicArray<float> utilIn, utilOut;
    detail::AtomicArray<std::int64_t> portSeen;
    // 1 oper down (a failed end); 2 down on purpose: shut (ifAdminStatus down) or still training
    // after it was enabled (HubWork::adminStatus). 0 up or unknown.
    detail::AtomicArray<std::uint8_t> portDown;
    struct PortDet {
        // The rated counters (detail::ratedSlot: octets, errors, discards and PFC pause frames,
        // in and out), each on its own, as Prometheus's rate() takes them (issue 34 item 1):
        // the time of its last sample (detail::rateClock: ms, wrapping every 49 days; 0 =
        // none), the source that sends it (detail::sourceTag; 0 = unnamed) and, but for the
        // octets (utilIn/utilOut), its rate over its last two samples (NaN: fewer).
        std::uint32_t at[detail::kRatedSlots] = {};
        std::uint8_t src[detail::kRatedSlots] = {};
        float rate[detail::kRatedSlots - 2] = {};  // slots 2.. (errors, discards, PFC)
        std::int64_t flapWindowStart = 0, lastTransition = 0;
        std::uint16_t flapCount = 0;
        std::int8_t lastOper = -1;    // -1 unknown, 0 down, 1 up
        std::uint8_t open = 0;        // LinkKind bits, for ports without a backend link
        std::uint8_t suppressed = 0;  // LinkKind bits closed by hand, ports without a link
        std::uint16_t origin = 0;     // origin classes of open events, ports without a link
        std::uint16_t downBy = 0;     // who reported it down: originNames[downBy - 1]; 0: none
        // ifAdminStatus down (an operator shut it), and when it was last enabled (0: not since
        // the port came up): a port shut, or training after `no shutdown`, is down but no
        // failure (HubWork::adminStatus).
        bool adminDown = false;
        std::int64_t adminUpAt = 0;
        PortDet() {
            for (auto& r : rate) r = static_cast<float>(detail::kNaN);
        }
        float rateOf(int slot) const {
            return slot >= 2 ? rate[slot - 2] : static_cast<float>(detail::kNaN);
        }
    };
    std::vector<PortDet> pdet;
    // GPU -> the backend link of its NIC (kNoIndex: none). The same for every State of one
    // structure (shared, not moved: readers of an older State look links up through it).
    std::shared_ptr<const std::vector<std::uint32_t>> gpuLink;
    // The host (NIC) end of a backend link, from node_exporter's InfiniBand collector, kept
    // per GPU: the NIC of GPU g ends the link gpuLink[g] (nicOfLink). Links between two
    // switches have no NIC end and take no room (at 98k 98,304 NIC ends of 222,720 links).
    // -1 unknown, 0 not ACTIVE, 1 ACTIVE; link_downed_total's last value; its last rise.
    std::vector<std::int8_t> nicUp;
    std::vector<double> nicDowned;
    std::vector<std::int64_t> nicFlapAt;
    // Per NIC end, its counters: last value and time (NaN/0: none yet), the rate over the last
    // two samples (NaN: none), and the port speed in bytes/s (NaN: not reported).
    struct NicRates {
        double last[detail::kNicRateCount];
        std::int64_t at[detail::kNicRateCount] = {};
        float rate[detail::kNicRateCount];
        float speedBytes;
        NicRates() {
            for (auto& v : last) v = detail::kNaN;
            for (auto& v : rate) v = static_cast<float>(detail::kNaN);
            speedBytes = static_cast<float>(detail::kNaN);
        }
    };
    std::vector<NicRates> nicRates;
    // Utilization 0..100 at the host end (max of rx, tx over the speed), read by packing;
    // per NIC end, as above.
    detail::AtomicArray<float> nicUtil;
    detail::AtomicArray<std::int64_t> nicSeen;
    // Who reported each NIC down (originNames[i - 1]; 0: none): a link that goes into service
    // after that opens its link_down with that origin (openDownLinksInService).
    std::vector<std::uint16_t> nicDownBy;
    // The origins that reported an end down ("push", "scrape <target>", "simulator"), named
    // once; shared by every State of a hub (carried by pointer). Its size is capped: an origin
    // past the cap is not recorded (its downs open with no origin, as before).
    std::shared_ptr<std::vector<std::string>> originNames =
        std::make_shared<std::vector<std::string>>();
    std::vector<std::uint8_t> linkOpen;        // LinkKind bits per link
    std::vector<std::uint8_t> linkSuppressed;  // closed by hand, per link
    std::vector<std::uint16_t> linkOrigin;     // origin classes of open events (2 bits a kind)
    // 2 while link_down is open, else 1 while a warning is open, else 0: what link.health shows
    // when no fresh sample says otherwise (a restored event before the first scrape).
    detail::AtomicArray<std::uint8_t> linkDegraded;

    // Rollup accumulators for the current minute.
    std::int64_t minuteStart = 0;
    std::uint32_t rollSamples = 0;
    std::vector<double> rackUtilSum, rackTempSum, rackPowerSum;
    std::vector<float> rackUtilMax, rackTempMax;
    std::vector<std::uint32_t> rackUtilN, rackTempN, rackPowerN, rackUnhealthyMax, rackReporting;
    std::vector<double> swUtilSum, swErrStart, swDiscStart, swPfcStart;
    std::vector<float> swUtilMax;
    std::vector<std::uint32_t> swUtilN, swDownMax;

    // The last hour per GPU and link (hub_history.hpp). Shared by the layouts of one structure
    // (a state refresh keeps it); set by the hub, not by this constructor, so a refresh does
    // not allocate a ring it would throw away.
    std::shared_ptr<detail::HubHistory> history;

    // Fresh: every array allocated, nothing known. Carried: sizes only; carryByIndex fills the
    // arrays from the State this one replaces (telemetry_hub.cpp).
    enum class Fill { Fresh, Carried };
    explicit State(std::shared_ptr<const HallLayout> layout, Fill fill = Fill::Fresh)
        : L(std::move(layout)) {
        nG = L->gpuCount();
        nP = L->portCount();
        nL = L->linkCount();
        if (fill == Fill::Carried) return;
        gpu = std::make_shared<detail::ColumnSet<detail::FloatColumn>>(
            kGpuFieldCount, [&](int) { return std::make_unique<detail::FloatColumn>(nG); });
        gpuSeen = detail::atomicArray<std::int64_t>(nG, 0);
        gpuEventHealth = detail::atomicArray<std::uint8_t>(nG, 0);
        gpuOpen.assign(nG, 0);
        gpuCrit.assign(nG, 0);
        tempLevel.assign(nG, 0);
        gpuSuppressed.assign(nG, 0);
        gpuOrigin.assign(nG, 0);
        nvPrev.assign(nG, static_cast<float>(detail::kNaN));
        nvPrevMs.assign(nG, 0);
        nvRate.assign(nG, 0);
        throttleRun.assign(nG, 0);
        sbePrev.assign(nG, detail::kNaN);
        sbePrevMs.assign(nG, 0);
        sbeRate.assign(nG, static_cast<float>(detail::kNaN));
        gpuSrc.assign(nG, 0);
        gpuSrcAt.assign(nG, 0);
        gpuJob.assign(nG, {});
        port = std::make_shared<detail::ColumnSet<detail::CounterColumn>>(
            kPortCounterCount, [&](int c) { return portColumn(static_cast<PortCounter>(c), nP); });
        utilIn = detail::atomicArray<float>(nP, static_cast<float>(detail::kNaN));
        utilOut = detail::atomicArray<float>(nP, static_cast<float>(detail::kNaN));
        portSeen = detail::atomicArray<std::int64_t>(nP, 0);
        portDown = detail::atomicArray<std::uint8_t>(nP, 0);
        pdet.assign(nP, PortDet{});
        auto gl = std::make_shared<std::vector<std::uint32_t>>(nG, kNoIndex);
        for (std::uint32_t l = 0; l < nL; ++l)
            if (auto g = L->links()[l].gpu; g != kNoIndex && g < nG) (*gl)[g] = l;
        gpuLink = std::move(gl);
        nicUp.assign(nG, -1);
        nicDownBy.assign(nG, 0);
        nicDowned.assign(nG, detail::kNaN);
        nicFlapAt.assign(nG, 0);
        nicRates.assign(nG, NicRates{});
        nicUtil = detail::atomicArray<float>(nG, static_cast<float>(detail::kNaN));
        nicSeen = detail::atomicArray<std::int64_t>(nG, 0);
        linkOpen.assign(nL, 0);
        linkSuppressed.assign(nL, 0);
        linkOrigin.assign(nL, 0);
        linkDegraded = detail::atomicArray<std::uint8_t>(nL, 0);
        auto nR = L->racks().size(), nS = L->switches().size();
        rackUtilSum.assign(nR, 0);
        rackTempSum.assign(nR, 0);
        rackPowerSum.assign(nR, 0);
        rackUtilMax.assign(nR, 0);
        rackTempMax.assign(nR, 0);
        rackUtilN.assign(nR, 0);
        rackTempN.assign(nR, 0);
        rackPowerN.assign(nR, 0);
        rackUnhealthyMax.assign(nR, 0);
        rackReporting.assign(nR, 0);
        swUtilSum.assign(nS, 0);
        swErrStart.assign(nS, detail::kNaN);
        swDiscStart.assign(nS, detail::kNaN);
        swPfcStart.assign(nS, detail::kNaN);
        swUtilMax.assign(nS, 0);
        swUtilN.assign(nS, 0);
        swDownMax.assign(nS, 0);
    }

    // The NIC end of link l (an index of the per-NIC arrays), kNoIndex when it has none.
    std::uint32_t nicOfLink(std::uint32_t l) const {
        const auto g = L->links()[l].gpu;
        return g < nG && (*gpuLink)[g] == l ? g : kNoIndex;
    }
    // A port counter's column: octet and packet counters pass 2^32 within seconds on a 400G
    // port (8-byte values from the start); the speed is whole Mb/s (ifHighSpeed).
    static std::unique_ptr<detail::CounterColumn> portColumn(PortCounter c, std::size_t n) {
        const bool wide = c == PortCounter::InOctets || c == PortCounter::OutOctets ||
                          c == PortCounter::InPackets || c == PortCounter::OutPackets;
        return std::make_unique<detail::CounterColumn>(n, c == PortCounter::SpeedBps ? 1e6 : 1,
                                                       wide);
    }
    float gpuVal(GpuField f, std::uint32_t g) const {
        return (*gpu)[static_cast<std::size_t>(f)].load(g);
    }
    double portVal(PortCounter c, std::uint32_t p) const {
        return (*port)[static_cast<std::size_t>(c)].load(p);
    }
    double speedBps(std::uint32_t p) const {
        double s = portVal(PortCounter::SpeedBps, p);
        if (std::isfinite(s) && s > 0) return s;
        auto g = L->ports()[p].speedGbps;
        return (g ? g : 400) * 1e9;
    }
    // Adds a port's error, discard and PFC pause counters (both directions) to the sums;
    // counters never reported (NaN) add nothing.
    void addErrorCounters(std::uint32_t p, double& err, double& disc, double& pfc) const {
        auto add = [&](double& acc, PortCounter c) {
            double v = portVal(c, p);
            if (std::isfinite(v)) acc += v;
        };
        add(err, PortCounter::InErrors);
        add(err, PortCounter::OutErrors);
        add(disc, PortCounter::InDiscards);
        add(disc, PortCounter::OutDiscards);
        add(pfc, PortCounter::InPfcPause);
        add(pfc, PortCounter::OutPfcPause);
    }
    bool fresh(std::int64_t seen, std::int64_t now, std::int64_t staleMs) const {
        return seen != 0 && now - seen <= staleMs;
    }
    std::size_t bytes() const {
        return gpu->bytes() + nG * (8 + 1 + 3 + 4 + 8 + 4 + 2) + port->bytes() +
               nP * (4 + 4 + 8 + 1 + sizeof(PortDet)) + nG * (8 + 8 + 4) +
               nG * (4 + 1 + 8 + 8 + sizeof(NicRates) + 4 + 8) + nL * 5 + L->racks().size() * 64 +
               L->switches().size() * 48 + (history ? history->bytes() : 0);
    }
};

// ---------------------------------------------------------------------------------------------
struct TelemetryHub::Shared {
    std::unordered_map<std::string, FailureEvent> open;
    std::vector<EventListener> listeners;
    std::vector<RestoreListener> restoreListeners;
    std::vector<Rollup> rollups;
    std::mutex deliverMutex;
    // Cumulative counters for /metrics.
    std::atomic<std::uint64_t> bodies{0}, badBodies{0}, samples{0}, applied{0}, ignored{0},
        opened{0}, closed{0};
    // Samples of a rated port counter that a second source sent while the first still does
    // (not taken: issue 34 item 1).
    std::atomic<std::uint64_t> duplicates{0};
    std::atomic<std::uint64_t> unknown[kUnknownReasonCount] = {};
    std::atomic<std::uint64_t> ingestMicros{0};
    // Event keys: a random prefix per hub (per loomd run) and a sequence.
    std::string keyPrefix = randomKeyPrefix();
    std::atomic<std::uint64_t> keySeq{0};
    std::atomic<std::uint64_t> closedByHand{0}, restored{0}, closedElsewhere{0};
    // Names the hub could not place or ignored; `unknown` above counts the distinct ones.
    detail::UnknownCatalog unknownNames;

    static std::string randomKeyPrefix() {
        std::random_device rd;
        std::uint64_t a = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
        std::uint64_t b = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
        char buf[40];
        std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                      static_cast<unsigned long long>(b));
        return buf;
    }
};

}  // namespace loom::telemetry
