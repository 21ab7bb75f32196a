#include "loom/backend/telemetry_hub.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

namespace loom::backend {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr auto kRelaxed = std::memory_order_relaxed;

template <class T>
std::unique_ptr<std::atomic<T>[]> atomicArray(std::size_t n, T init) {
    auto p = std::make_unique<std::atomic<T>[]>(n);
    for (std::size_t i = 0; i < n; ++i) p[i].store(init, kRelaxed);
    return p;
}

std::int64_t systemNowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What a metric name means to the hub.
struct MetricInfo {
    enum Type : std::uint8_t { Ignored, Gpu, Port } type = Ignored;
    std::uint8_t id = 0;  // GpuField or PortCounter
    double scale = 1;     // ifHighSpeed is in Mb/s
};

const std::unordered_map<std::string_view, MetricInfo, NameHash, std::equal_to<>>& metricTable() {
    static const auto table = [] {
        std::unordered_map<std::string_view, MetricInfo, NameHash, std::equal_to<>> t;
        auto gpu = [&](std::string_view n, GpuField f) {
            t[n] = {MetricInfo::Gpu, static_cast<std::uint8_t>(f)};
        };
        auto port = [&](std::string_view n, PortCounter c, double scale = 1) {
            t[n] = {MetricInfo::Port, static_cast<std::uint8_t>(c), scale};
        };
        gpu("DCGM_FI_DEV_GPU_UTIL", GpuField::Util);
        gpu("DCGM_FI_DEV_GPU_TEMP", GpuField::Temp);
        gpu("DCGM_FI_DEV_MEMORY_TEMP", GpuField::MemTemp);
        gpu("DCGM_FI_DEV_POWER_USAGE", GpuField::Power);
        gpu("DCGM_FI_DEV_SM_CLOCK", GpuField::SmClock);
        gpu("DCGM_FI_DEV_MEM_CLOCK", GpuField::MemClock);
        gpu("DCGM_FI_DEV_FB_USED", GpuField::FbUsed);
        gpu("DCGM_FI_DEV_FB_FREE", GpuField::FbFree);
        gpu("DCGM_FI_DEV_XID_ERRORS", GpuField::Xid);
        gpu("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", GpuField::EccSbe);
        gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GpuField::EccDbe);
        gpu("DCGM_FI_DEV_ROW_REMAP_FAILURE", GpuField::RowRemapFailure);
        gpu("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", GpuField::UncorrectableRemappedRows);
        gpu("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", GpuField::CorrectableRemappedRows);
        gpu("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", GpuField::NvlinkCrc);
        gpu("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", GpuField::PcieReplay);
        gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", GpuField::Energy);
        gpu("DCGM_FI_DEV_MEM_COPY_UTIL", GpuField::MemCopyUtil);
        gpu("DCGM_FI_PROF_GR_ENGINE_ACTIVE", GpuField::GrEngineActive);
        gpu("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", GpuField::TensorActive);
        port("loom_port_oper_status", PortCounter::OperStatus);
        port("loom_port_in_octets_total", PortCounter::InOctets);
        port("loom_port_out_octets_total", PortCounter::OutOctets);
        port("loom_port_in_packets_total", PortCounter::InPackets);
        port("loom_port_out_packets_total", PortCounter::OutPackets);
        port("loom_port_in_errors_total", PortCounter::InErrors);
        port("loom_port_out_errors_total", PortCounter::OutErrors);
        port("loom_port_in_discards_total", PortCounter::InDiscards);
        port("loom_port_out_discards_total", PortCounter::OutDiscards);
        port("loom_port_in_pfc_pause_frames_total", PortCounter::InPfcPause);
        port("loom_port_out_pfc_pause_frames_total", PortCounter::OutPfcPause);
        port("loom_port_fec_uncorrectable_total", PortCounter::FecUncorrectable);
        port("loom_port_speed_bps", PortCounter::SpeedBps);
        port("ifOperStatus", PortCounter::OperStatus);
        port("ifHCInOctets", PortCounter::InOctets);
        port("ifHCOutOctets", PortCounter::OutOctets);
        port("ifHCInUcastPkts", PortCounter::InPackets);
        port("ifHCOutUcastPkts", PortCounter::OutPackets);
        port("ifInErrors", PortCounter::InErrors);
        port("ifOutErrors", PortCounter::OutErrors);
        port("ifInDiscards", PortCounter::InDiscards);
        port("ifOutDiscards", PortCounter::OutDiscards);
        port("ifHighSpeed", PortCounter::SpeedBps, 1e6);
        return t;
    }();
    return table;
}

// Event kinds, as bits in the per-entity open masks.
enum GpuKind : std::uint8_t { kXid = 1, kEccDbe = 2, kRowRemap = 4, kTemp = 8, kNvlink = 16 };
enum LinkKind : std::uint8_t { kDown = 1, kFlap = 2, kErrors = 4, kPfc = 8 };
constexpr std::string_view gpuKindName(std::uint8_t k) {
    switch (k) {
        case kXid: return "gpu_xid";
        case kEccDbe: return "gpu_ecc_dbe";
        case kRowRemap: return "gpu_row_remap_failure";
        case kTemp: return "gpu_temp";
        default: return "gpu_nvlink_errors";
    }
}
constexpr std::string_view linkKindName(std::uint8_t k) {
    switch (k) {
        case kDown: return "link_down";
        case kFlap: return "link_flapping";
        case kErrors: return "link_errors";
        default: return "link_pfc_storm";
    }
}

bool parseSmallInt(std::string_view s, int& out) {
    if (s.empty() || s.size() > 4) return false;
    int v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    out = v;
    return true;
}

std::string formatNumber(double v) {
    if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

}  // namespace

std::string_view topicName(Topic t) {
    switch (t) {
        case Topic::GpuUtil: return "gpu.util";
        case Topic::GpuTemp: return "gpu.temp";
        case Topic::GpuHealth: return "gpu.health";
        case Topic::LinkUtil: return "link.util";
        case Topic::LinkHealth: return "link.health";
    }
    return "";
}

std::optional<Topic> parseTopic(std::string_view s) {
    for (int i = 0; i < kTopicCount; ++i)
        if (topicName(static_cast<Topic>(i)) == s) return static_cast<Topic>(i);
    return std::nullopt;
}

std::string_view unknownReasonName(UnknownReason r) {
    switch (r) {
        case UnknownReason::UnknownHost: return "unknown_host";
        case UnknownReason::UnknownGpu: return "unknown_gpu";
        case UnknownReason::UnknownUuid: return "unknown_uuid";
        case UnknownReason::UnknownSwitch: return "unknown_switch";
        case UnknownReason::UnknownPort: return "unknown_port";
        case UnknownReason::MissingLabels: return "missing_labels";
    }
    return "unknown";
}

std::uint64_t IngestReport::unknownTotal() const {
    std::uint64_t n = 0;
    for (auto u : unknown) n += u;
    return n;
}

nlohmann::json IngestReport::toJson() const {
    nlohmann::json unk = nlohmann::json::object();
    for (int i = 0; i < kUnknownReasonCount; ++i)
        if (unknown[i]) unk[std::string(unknownReasonName(static_cast<UnknownReason>(i)))] = unknown[i];
    nlohmann::json j = {{"samples", samples}, {"applied", applied}, {"ignored", ignored},
                        {"unknown", std::move(unk)}, {"ms", std::round(ms * 1000) / 1000}};
    if (!unknownExamples.empty()) j["unknownExamples"] = unknownExamples;
    return j;
}

// ---------------------------------------------------------------------------------------------
// State: everything sized by one layout. Atomics are what readers see; the rest belongs to the
// ingest mutex.
struct TelemetryHub::State {
    std::shared_ptr<const HallLayout> L;
    std::size_t nG = 0, nP = 0, nL = 0;

    // GPU values, field-major (field * nG + gpu); NaN = never reported.
    std::unique_ptr<std::atomic<float>[]> gpu;
    std::unique_ptr<std::atomic<std::int64_t>[]> gpuSeen;
    std::unique_ptr<std::atomic<std::uint8_t>[]> gpuEventHealth;  // 0 ok, 1 warning, 2 failed
    std::vector<std::uint8_t> gpuOpen, gpuCrit, tempLevel;
    // GpuKind bits of events closed by hand while their condition held: no new event of that
    // kind opens until the condition clears (then the bit clears).
    std::vector<std::uint8_t> gpuSuppressed;
    std::vector<float> nvPrev;
    std::vector<std::int64_t> nvPrevMs;
    std::vector<float> nvRate;

    // Port values, counter-major; NaN = never reported.
    std::unique_ptr<std::atomic<double>[]> port;
    std::unique_ptr<std::atomic<float>[]> utilIn, utilOut;
    std::unique_ptr<std::atomic<std::int64_t>[]> portSeen;
    std::unique_ptr<std::atomic<std::uint8_t>[]> portDown;  // 1 oper down
    struct PortDet {
        std::int64_t scrapeMs = 0, prevScrapeMs = 0;
        std::int64_t flapWindowStart = 0, lastTransition = 0;
        float errRateIn = 0, errRateOut = 0, pfcRateIn = 0, pfcRateOut = 0;
        std::uint16_t flapCount = 0;
        std::int8_t lastOper = -1;  // -1 unknown, 0 down, 1 up
        std::uint8_t open = 0;      // LinkKind bits, for ports without a backend link
        std::uint8_t suppressed = 0;  // LinkKind bits closed by hand, ports without a link
    };
    std::vector<PortDet> pdet;
    std::vector<std::uint8_t> linkOpen;                        // LinkKind bits per link
    std::vector<std::uint8_t> linkSuppressed;                  // closed by hand, per link
    // 2 while link_down is open, else 1 while a warning is open, else 0: what link.health shows
    // when no fresh sample says otherwise (a restored event before the first scrape).
    std::unique_ptr<std::atomic<std::uint8_t>[]> linkDegraded;

    // Rollup accumulators for the current minute.
    std::int64_t minuteStart = 0;
    std::uint32_t rollSamples = 0;
    std::vector<double> rackUtilSum, rackTempSum, rackPowerSum;
    std::vector<float> rackUtilMax, rackTempMax;
    std::vector<std::uint32_t> rackUtilN, rackTempN, rackPowerN, rackUnhealthyMax, rackReporting;
    std::vector<double> swUtilSum, swErrStart, swDiscStart, swPfcStart;
    std::vector<float> swUtilMax;
    std::vector<std::uint32_t> swUtilN, swDownMax;

    explicit State(std::shared_ptr<const HallLayout> layout) : L(std::move(layout)) {
        nG = L->gpuCount();
        nP = L->portCount();
        nL = L->linkCount();
        gpu = atomicArray<float>(nG * kGpuFieldCount, static_cast<float>(kNaN));
        gpuSeen = atomicArray<std::int64_t>(nG, 0);
        gpuEventHealth = atomicArray<std::uint8_t>(nG, 0);
        gpuOpen.assign(nG, 0);
        gpuCrit.assign(nG, 0);
        tempLevel.assign(nG, 0);
        gpuSuppressed.assign(nG, 0);
        nvPrev.assign(nG, static_cast<float>(kNaN));
        nvPrevMs.assign(nG, 0);
        nvRate.assign(nG, 0);
        port = atomicArray<double>(nP * kPortCounterCount, kNaN);
        utilIn = atomicArray<float>(nP, static_cast<float>(kNaN));
        utilOut = atomicArray<float>(nP, static_cast<float>(kNaN));
        portSeen = atomicArray<std::int64_t>(nP, 0);
        portDown = atomicArray<std::uint8_t>(nP, 0);
        pdet.assign(nP, PortDet{});
        linkOpen.assign(nL, 0);
        linkSuppressed.assign(nL, 0);
        linkDegraded = atomicArray<std::uint8_t>(nL, 0);
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
        swErrStart.assign(nS, kNaN);
        swDiscStart.assign(nS, kNaN);
        swPfcStart.assign(nS, kNaN);
        swUtilMax.assign(nS, 0);
        swUtilN.assign(nS, 0);
        swDownMax.assign(nS, 0);
    }

    float gpuVal(GpuField f, std::uint32_t g) const {
        return gpu[static_cast<std::size_t>(f) * nG + g].load(kRelaxed);
    }
    std::atomic<double>& portSlot(PortCounter c, std::uint32_t p) {
        return port[static_cast<std::size_t>(c) * nP + p];
    }
    double portVal(PortCounter c, std::uint32_t p) const {
        return port[static_cast<std::size_t>(c) * nP + p].load(kRelaxed);
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
        return nG * (kGpuFieldCount * 4 + 8 + 1 + 3 + 4 + 8 + 4) +
               nP * (kPortCounterCount * 8 + 4 + 4 + 8 + 1 + sizeof(PortDet)) + nL * 2 +
               L->racks().size() * 64 + L->switches().size() * 48;
    }
};

// ---------------------------------------------------------------------------------------------
// One ingest (or tick) in progress: holds the ingest lock's view and collects events.
namespace {

struct Pending {
    std::vector<FailureEvent> events;
};

}  // namespace

class HubWork {
public:
    using State = TelemetryHub::State;
    HubWork(State& s, const DetectionConfig& cfg, std::unordered_map<std::string, FailureEvent>& open,
            std::mutex& openMutex, std::vector<FailureEvent>& out, const std::string& keyPrefix,
            std::atomic<std::uint64_t>& keySeq)
        : s_(s), cfg_(cfg), open_(open), openMutex_(openMutex), out_(out), keyPrefix_(keyPrefix),
          keySeq_(keySeq) {}

    void openEvent(std::string_view kind, Severity sev, std::string location, std::uint32_t rack,
                   std::string_view zone, std::string message, std::int64_t t,
                   std::vector<std::pair<std::string, std::string>> labels = {}) {
        FailureEvent e;
        e.kind = std::string(kind);
        e.severity = sev;
        e.location = std::move(location);
        if (rack != kNoIndex) {
            e.rack = s_.L->racks()[rack].name;
            e.zone = s_.L->racks()[rack].zone;
        } else {
            e.zone = std::string(zone);
        }
        e.message = std::move(message);
        e.openedAtMs = t;
        e.labels = std::move(labels);
        e.key = keyPrefix_ + ':' + std::to_string(keySeq_.fetch_add(1, kRelaxed) + 1);
        {
            std::lock_guard lk(openMutex_);
            open_[e.kind + '\0' + e.location] = e;
        }
        out_.push_back(std::move(e));
    }

    void closeEvent(std::string_view kind, const std::string& location, std::int64_t t) {
        FailureEvent e;
        {
            std::lock_guard lk(openMutex_);
            auto it = open_.find(std::string(kind) + '\0' + location);
            if (it == open_.end()) return;
            e = std::move(it->second);
            open_.erase(it);
        }
        e.closedAtMs = std::max(t, e.openedAtMs);
        out_.push_back(std::move(e));
    }

    // ---- GPUs
    void gpuOpen(std::uint32_t g, std::uint8_t kind, Severity sev, std::string msg, std::int64_t t,
                 std::vector<std::pair<std::string, std::string>> labels = {}) {
        if ((s_.gpuOpen[g] | s_.gpuSuppressed[g]) & kind) return;
        s_.gpuOpen[g] |= kind;
        if (sev == Severity::Critical) s_.gpuCrit[g] |= kind;
        updateGpuHealth(g);
        const auto& name = s_.L->gpuNames()[g];
        openEvent(gpuKindName(kind), sev, name, s_.L->gpuRack()[g], {}, name + ": " + msg, t,
                  std::move(labels));
    }
    void gpuClose(std::uint32_t g, std::uint8_t kind, std::int64_t t) {
        s_.gpuSuppressed[g] &= static_cast<std::uint8_t>(~kind);  // the condition cleared
        if (!(s_.gpuOpen[g] & kind)) return;
        s_.gpuOpen[g] &= static_cast<std::uint8_t>(~kind);
        s_.gpuCrit[g] &= static_cast<std::uint8_t>(~kind);
        updateGpuHealth(g);
        closeEvent(gpuKindName(kind), s_.L->gpuNames()[g], t);
    }
    void updateGpuHealth(std::uint32_t g) {
        std::uint8_t h = s_.gpuCrit[g] ? kGpuFailed : s_.gpuOpen[g] ? kGpuWarning : kGpuOk;
        s_.gpuEventHealth[g].store(h, kRelaxed);
    }

    void gpuSample(std::uint32_t g, GpuField f, double v, std::int64_t t) {
        switch (f) {
            case GpuField::Xid: {
                if (!std::isfinite(v)) return;
                int code = static_cast<int>(v);
                if (code == 0) {
                    gpuClose(g, kXid, t);
                    return;
                }
                if (std::find(cfg_.ignoredXids.begin(), cfg_.ignoredXids.end(), code) !=
                    cfg_.ignoredXids.end())
                    return;
                bool crit = std::find(cfg_.criticalXids.begin(), cfg_.criticalXids.end(), code) !=
                            cfg_.criticalXids.end();
                gpuOpen(g, kXid, crit ? Severity::Critical : Severity::Warning,
                        "XID " + std::to_string(code), t, {{"xid", std::to_string(code)}});
                return;
            }
            case GpuField::EccDbe:
                if (!cfg_.eccDoubleBit || !std::isfinite(v)) return;
                if (v > 0)
                    gpuOpen(g, kEccDbe, Severity::Critical,
                            "double-bit ECC errors: " + formatNumber(v), t);
                else
                    gpuClose(g, kEccDbe, t);
                return;
            case GpuField::RowRemapFailure:
                if (!cfg_.rowRemapFailure || !std::isfinite(v)) return;
                if (v > 0)
                    gpuOpen(g, kRowRemap, Severity::Critical, "row remapping failed", t);
                else
                    gpuClose(g, kRowRemap, t);
                return;
            case GpuField::Temp: {
                if (!std::isfinite(v)) return;
                std::uint8_t lvl = s_.tempLevel[g], next = lvl;
                double hy = cfg_.tempHysteresisC;
                if (v >= cfg_.tempCriticalC) next = 2;
                else if (lvl == 2 && v >= cfg_.tempCriticalC - hy) next = 2;
                else if (v >= cfg_.tempWarningC) next = 1;
                else if (lvl >= 1 && v >= cfg_.tempWarningC - hy) next = 1;
                else next = 0;
                if (next == lvl) return;
                s_.tempLevel[g] = next;
                gpuClose(g, kTemp, t);
                if (next > 0)
                    gpuOpen(g, kTemp, next == 2 ? Severity::Critical : Severity::Warning,
                            "temperature " + formatNumber(v) + " C (threshold " +
                                formatNumber(next == 2 ? cfg_.tempCriticalC : cfg_.tempWarningC) + " C)",
                            t);
                return;
            }
            case GpuField::NvlinkCrc: {
                float prev = s_.nvPrev[g];
                std::int64_t pt = s_.nvPrevMs[g];
                s_.nvPrev[g] = static_cast<float>(v);
                s_.nvPrevMs[g] = t;
                if (cfg_.nvlinkCrcPerSecond <= 0 || !std::isfinite(prev) || t <= pt || v < prev) return;
                double rate = (v - prev) * 1000.0 / static_cast<double>(t - pt);
                s_.nvRate[g] = static_cast<float>(rate);
                if (rate > cfg_.nvlinkCrcPerSecond)
                    gpuOpen(g, kNvlink, Severity::Warning,
                            "NVLink CRC errors " + formatNumber(rate) + "/s", t);
                else if (rate < cfg_.nvlinkCrcPerSecond / 2)
                    gpuClose(g, kNvlink, t);
                return;
            }
            default: return;
        }
    }

    // ---- ports and links
    std::uint8_t& openBits(std::uint32_t p) {
        auto l = s_.L->ports()[p].linkIndex;
        return l != kNoIndex ? s_.linkOpen[l] : s_.pdet[p].open;
    }
    std::uint8_t& suppressedBits(std::uint32_t p) {
        auto l = s_.L->ports()[p].linkIndex;
        return l != kNoIndex ? s_.linkSuppressed[l] : s_.pdet[p].suppressed;
    }
    std::string portLocation(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        return l != kNoIndex ? s_.L->links()[l].name : s_.L->portName(p);
    }
    std::uint32_t portRack(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        if (l != kNoIndex) return s_.L->links()[l].rackIndex;
        return s_.L->switches()[s_.L->ports()[p].switchIndex].rackIndex;
    }
    bool inService(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        if (l == kNoIndex) return true;
        auto a = s_.L->linkAdmin()[l];
        return a == AdminState::InService || a == AdminState::Down;
    }
    void portOpen(std::uint32_t p, std::uint8_t kind, Severity sev, std::string msg, std::int64_t t) {
        auto& bits = openBits(p);
        if ((bits | suppressedBits(p)) & kind) return;
        bits |= kind;
        updateLinkFlags(p);
        const auto& sw = s_.L->switches()[s_.L->ports()[p].switchIndex];
        openEvent(linkKindName(kind), sev, portLocation(p), portRack(p), sw.zone,
                  s_.L->portName(p) + ": " + msg, t);
    }
    void portClose(std::uint32_t p, std::uint8_t kind, std::int64_t t) {
        suppressedBits(p) &= static_cast<std::uint8_t>(~kind);  // the condition cleared
        auto& bits = openBits(p);
        if (!(bits & kind)) return;
        bits &= static_cast<std::uint8_t>(~kind);
        updateLinkFlags(p);
        closeEvent(linkKindName(kind), portLocation(p), t);
    }
    void updateLinkFlags(std::uint32_t p) {
        auto l = s_.L->ports()[p].linkIndex;
        if (l == kNoIndex) return;
        s_.linkDegraded[l].store((s_.linkOpen[l] & kDown)                        ? 2
                                 : (s_.linkOpen[l] & (kFlap | kErrors | kPfc)) ? 1
                                                                               : 0,
                                 kRelaxed);
    }

    // The other switch end of p's link (kNoIndex if none).
    std::uint32_t peer(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        if (l == kNoIndex) return kNoIndex;
        const auto& link = s_.L->links()[l];
        return link.aPort == p ? link.bPort : link.aPort;
    }

    void operStatus(std::uint32_t p, double v, std::int64_t t) {
        auto& d = s_.pdet[p];
        std::int8_t up = v == 1 ? 1 : 0;
        s_.portDown[p].store(up ? 0 : 1, kRelaxed);
        std::int8_t was = d.lastOper;
        d.lastOper = up;
        if (was != -1 && was != up && cfg_.flapTransitions > 0) {
            auto windowMs = static_cast<std::int64_t>(cfg_.flapWindowSeconds * 1000);
            if (t - d.flapWindowStart > windowMs) {
                d.flapWindowStart = t;
                d.flapCount = 0;
            }
            ++d.flapCount;
            d.lastTransition = t;
            if (d.flapCount >= cfg_.flapTransitions && inService(p))
                portOpen(p, kFlap, Severity::Warning,
                         std::to_string(d.flapCount) + " state changes in " +
                             formatNumber(cfg_.flapWindowSeconds) + " s",
                         t);
        }
        if (!cfg_.linkDown) return;
        if (!up) {
            if (inService(p)) portOpen(p, kDown, Severity::Critical, "oper status down", t);
        } else {
            // A link is down while either end is; close only when the other end is not down.
            auto q = peer(p);
            if (q == kNoIndex || s_.portDown[q].load(kRelaxed) == 0) portClose(p, kDown, t);
        }
    }

    void rateRule(std::uint32_t p, std::uint8_t kind, double rate, double threshold,
                  std::string_view what, std::int64_t t) {
        if (threshold <= 0) return;
        if (rate > threshold && inService(p))
            portOpen(p, kind, Severity::Warning, std::string(what) + " " + formatNumber(rate) + "/s", t);
        else if (rate < threshold / 2)
            portClose(p, kind, t);
    }

    void portSample(std::uint32_t p, PortCounter c, double v, std::int64_t t) {
        auto& d = s_.pdet[p];
        if (t != d.scrapeMs) {
            d.prevScrapeMs = d.scrapeMs;
            d.scrapeMs = t;
        }
        auto& slot = s_.portSlot(c, p);
        double old = slot.load(kRelaxed);
        slot.store(v, kRelaxed);
        s_.portSeen[p].store(t, kRelaxed);
        auto rate = [&]() -> double {
            if (!std::isfinite(old) || !std::isfinite(v) || v < old || d.prevScrapeMs == 0 ||
                d.scrapeMs <= d.prevScrapeMs)
                return kNaN;
            return (v - old) * 1000.0 / static_cast<double>(d.scrapeMs - d.prevScrapeMs);
        };
        switch (c) {
            case PortCounter::OperStatus: operStatus(p, v, t); return;
            case PortCounter::InOctets:
            case PortCounter::OutOctets: {
                double r = rate();
                if (std::isnan(r)) return;
                float u = static_cast<float>(std::min(100.0, r * 8 / s_.speedBps(p) * 100));
                (c == PortCounter::InOctets ? s_.utilIn : s_.utilOut)[p].store(u, kRelaxed);
                return;
            }
            case PortCounter::InErrors:
            case PortCounter::OutErrors: {
                double r = rate();
                if (std::isnan(r)) return;
                (c == PortCounter::InErrors ? d.errRateIn : d.errRateOut) = static_cast<float>(r);
                rateRule(p, kErrors, d.errRateIn + d.errRateOut, cfg_.linkErrorsPerSecond, "errors", t);
                return;
            }
            case PortCounter::InPfcPause:
            case PortCounter::OutPfcPause: {
                double r = rate();
                if (std::isnan(r)) return;
                (c == PortCounter::InPfcPause ? d.pfcRateIn : d.pfcRateOut) = static_cast<float>(r);
                rateRule(p, kPfc, d.pfcRateIn + d.pfcRateOut, cfg_.pfcPausePerSecond,
                         "PFC pause frames", t);
                return;
            }
            default: return;
        }
    }

    // Time passing: flapping windows expire, and an open link_flapping event closes once the
    // link (both ends) has had no state change for the hold-down (quietIntervals x
    // intervalSeconds), like Alertmanager resolving an alert whose condition stopped.
    void tickPorts(std::int64_t now) {
        auto windowMs = static_cast<std::int64_t>(cfg_.flapWindowSeconds * 1000);
        auto quietMs = static_cast<std::int64_t>(cfg_.flapQuietIntervals * cfg_.flapIntervalSeconds * 1000);
        auto quiet = [&](std::uint32_t p) {
            return p == kNoIndex || now - s_.pdet[p].lastTransition >= quietMs;
        };
        for (std::uint32_t p = 0; p < s_.nP; ++p) {
            auto& d = s_.pdet[p];
            if (d.flapCount != 0 && now - d.lastTransition > windowMs) d.flapCount = 0;
            if ((openBits(p) & kFlap) && quiet(p) && quiet(peer(p))) {
                d.flapCount = 0;
                portClose(p, kFlap, now);
            }
        }
    }

    // A stored open event (restore at start, or a new layout): set the rule state that says it
    // is open, so recovery closes it and the condition does not open it twice. False when the
    // location is not in this layout.
    bool markOpen(const FailureEvent& e, std::int64_t now) {
        const auto& L = *s_.L;
        for (std::uint8_t k = 1; k <= kNvlink; k <<= 1) {
            if (gpuKindName(k) != e.kind) continue;
            auto g = L.gpuByName(e.location);
            if (g == kNoIndex) return false;
            s_.gpuOpen[g] |= k;
            if (e.severity == Severity::Critical) s_.gpuCrit[g] |= k;
            if (k == kTemp) s_.tempLevel[g] = e.severity == Severity::Critical ? 2 : 1;
            updateGpuHealth(g);
            return true;
        }
        for (std::uint8_t k = 1; k <= kPfc; k <<= 1) {
            if (linkKindName(k) != e.kind) continue;
            std::uint32_t p = kNoIndex;
            if (auto l = L.linkByName(e.location); l != kNoIndex) {
                p = L.links()[l].aPort != kNoIndex ? L.links()[l].aPort : L.links()[l].bPort;
            } else if (auto slash = e.location.rfind('/'); slash != std::string::npos) {
                p = L.portByName(std::string_view(e.location).substr(0, slash),
                                 std::string_view(e.location).substr(slash + 1));
            }
            if (p == kNoIndex) return false;
            openBits(p) |= k;
            // A restored flapping event holds down from now: it closes after a quiet period.
            if (k == kFlap && s_.pdet[p].lastTransition < now) s_.pdet[p].lastTransition = now;
            updateLinkFlags(p);
            return true;
        }
        return false;
    }

    // An operator closed the event: forget it, and hold the kind back until the condition clears.
    void markClosedByHand(const std::string& kind, const std::string& location) {
        const auto& L = *s_.L;
        for (std::uint8_t k = 1; k <= kNvlink; k <<= 1) {
            if (gpuKindName(k) != kind) continue;
            auto g = L.gpuByName(location);
            if (g == kNoIndex) return;
            if (!(s_.gpuOpen[g] & k)) return;
            s_.gpuOpen[g] &= static_cast<std::uint8_t>(~k);
            s_.gpuCrit[g] &= static_cast<std::uint8_t>(~k);
            s_.gpuSuppressed[g] |= k;
            updateGpuHealth(g);
            return;
        }
        for (std::uint8_t k = 1; k <= kPfc; k <<= 1) {
            if (linkKindName(k) != kind) continue;
            std::uint32_t p = kNoIndex;
            if (auto l = L.linkByName(location); l != kNoIndex) {
                p = L.links()[l].aPort != kNoIndex ? L.links()[l].aPort : L.links()[l].bPort;
            } else if (auto slash = location.rfind('/'); slash != std::string::npos) {
                p = L.portByName(std::string_view(location).substr(0, slash),
                                 std::string_view(location).substr(slash + 1));
            }
            if (p == kNoIndex || !(openBits(p) & k)) return;
            openBits(p) &= static_cast<std::uint8_t>(~k);
            suppressedBits(p) |= k;
            updateLinkFlags(p);
            return;
        }
    }

private:
    State& s_;
    const DetectionConfig& cfg_;
    std::unordered_map<std::string, FailureEvent>& open_;
    std::mutex& openMutex_;
    std::vector<FailureEvent>& out_;
    const std::string& keyPrefix_;
    std::atomic<std::uint64_t>& keySeq_;
};

// ---------------------------------------------------------------------------------------------
struct TelemetryHub::Shared {
    std::unordered_map<std::string, FailureEvent> open;
    std::vector<EventListener> listeners;
    std::vector<Rollup> rollups;
    std::mutex deliverMutex;
    // Cumulative counters for /metrics.
    std::atomic<std::uint64_t> bodies{0}, badBodies{0}, samples{0}, applied{0}, ignored{0},
        opened{0}, closed{0};
    std::atomic<std::uint64_t> unknown[kUnknownReasonCount] = {};
    std::atomic<std::uint64_t> ingestMicros{0};
    // Event keys: a random prefix per hub (per loomd run) and a sequence.
    std::string keyPrefix = randomKeyPrefix();
    std::atomic<std::uint64_t> keySeq{0};
    std::atomic<std::uint64_t> closedByHand{0}, restored{0};

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

TelemetryHub::TelemetryHub(std::shared_ptr<const HallLayout> layout, HubOptions options)
    : options_(std::move(options)),
      shared_(std::make_unique<Shared>()),
      state_(std::make_shared<State>(layout ? std::move(layout)
                                            : std::make_shared<const HallLayout>())) {
    if (!options_.clock) options_.clock = systemNowMs;
}

TelemetryHub::~TelemetryHub() = default;

std::int64_t TelemetryHub::now(std::int64_t nowMs) const {
    return nowMs != 0 ? nowMs : options_.clock();
}

std::shared_ptr<TelemetryHub::State> TelemetryHub::current() const {
    std::lock_guard lk(stateMutex_);
    return state_;
}

std::shared_ptr<const HallLayout> TelemetryHub::layout() const { return current()->L; }

void TelemetryHub::setLayout(std::shared_ptr<const HallLayout> layout) {
    std::lock_guard ingest(ingestMutex_);
    auto old = current();
    auto next = std::make_shared<State>(std::move(layout));
    // Carry values over by name, so a layout change does not blank the maps for a scrape.
    const auto& oldNames = old->L->gpuNames();
    for (std::uint32_t g = 0; g < old->nG; ++g) {
        auto ng = next->L->gpuByName(oldNames[g]);
        if (ng == kNoIndex) continue;
        for (int f = 0; f < kGpuFieldCount; ++f)
            next->gpu[f * next->nG + ng].store(old->gpu[f * old->nG + g].load(kRelaxed), kRelaxed);
        next->gpuSeen[ng].store(old->gpuSeen[g].load(kRelaxed), kRelaxed);
        next->gpuEventHealth[ng].store(old->gpuEventHealth[g].load(kRelaxed), kRelaxed);
        next->gpuOpen[ng] = old->gpuOpen[g];
        next->gpuCrit[ng] = old->gpuCrit[g];
        next->tempLevel[ng] = old->tempLevel[g];
        next->gpuSuppressed[ng] = old->gpuSuppressed[g];
    }
    for (std::uint32_t p = 0; p < old->nP; ++p) {
        const auto& op = old->L->ports()[p];
        auto np = next->L->portByName(old->L->switches()[op.switchIndex].name,
                                      std::to_string(op.number));
        if (np == kNoIndex || op.number == 0) continue;
        for (int c = 0; c < kPortCounterCount; ++c)
            next->port[c * next->nP + np].store(old->port[c * old->nP + p].load(kRelaxed), kRelaxed);
        next->utilIn[np].store(old->utilIn[p].load(kRelaxed), kRelaxed);
        next->utilOut[np].store(old->utilOut[p].load(kRelaxed), kRelaxed);
        next->portSeen[np].store(old->portSeen[p].load(kRelaxed), kRelaxed);
        next->portDown[np].store(old->portDown[p].load(kRelaxed), kRelaxed);
        next->pdet[np] = old->pdet[p];
        auto ol = op.linkIndex, nl = next->L->ports()[np].linkIndex;
        if (ol != kNoIndex && nl != kNoIndex) {
            next->linkOpen[nl] = old->linkOpen[ol];
            next->linkSuppressed[nl] = old->linkSuppressed[ol];
            next->linkDegraded[nl].store(old->linkDegraded[ol].load(kRelaxed), kRelaxed);
        }
    }
    // Open events the old layout could not place (restored before the first layout arrived,
    // or an entity the old layout lacked) get their rule state here.
    {
        std::vector<FailureEvent> none;
        HubWork work(*next, options_.detection, shared_->open, eventsMutex_, none, shared_->keyPrefix,
                     shared_->keySeq);
        std::lock_guard lk(eventsMutex_);
        auto now = this->now(0);
        for (const auto& [k, e] : shared_->open) work.markOpen(e, now);
    }
    std::lock_guard lk(stateMutex_);
    state_ = std::move(next);
}

std::size_t TelemetryHub::restoreOpenEvents(const std::vector<FailureEvent>& events) {
    std::lock_guard ingest(ingestMutex_);
    auto st = current();
    std::vector<FailureEvent> none;
    HubWork work(*st, options_.detection, shared_->open, eventsMutex_, none, shared_->keyPrefix,
                 shared_->keySeq);
    std::lock_guard lk(eventsMutex_);
    std::size_t n = 0;
    auto now = this->now(0);
    for (const auto& e : events) {
        if (!e.open()) continue;
        // Already known (this hub opened it, or a second restore): keep the live one, but learn
        // the stored id.
        auto [it, inserted] = shared_->open.try_emplace(e.kind + '\0' + e.location, e);
        if (!inserted) {
            if (it->second.id == 0 && (it->second.key == e.key || e.key.empty())) it->second.id = e.id;
            continue;
        }
        work.markOpen(e, now);
        ++n;
    }
    shared_->restored.fetch_add(n, kRelaxed);
    return n;
}

bool TelemetryHub::closedByHand(const std::string& kind, const std::string& location, std::int64_t id) {
    std::lock_guard ingest(ingestMutex_);
    auto st = current();
    std::vector<FailureEvent> none;
    HubWork work(*st, options_.detection, shared_->open, eventsMutex_, none, shared_->keyPrefix,
                 shared_->keySeq);
    {
        std::lock_guard lk(eventsMutex_);
        auto it = shared_->open.find(kind + '\0' + location);
        if (it == shared_->open.end()) return false;
        // A different stored row (an older event of the same kind and place): not ours to drop.
        if (id != 0 && it->second.id != 0 && it->second.id != id) return false;
        shared_->open.erase(it);
    }
    work.markClosedByHand(kind, location);
    shared_->closedByHand.fetch_add(1, kRelaxed);
    return true;
}

void TelemetryHub::addEventListener(EventListener l) {
    std::lock_guard lk(shared_->deliverMutex);
    shared_->listeners.push_back(std::move(l));
}

std::vector<FailureEvent> TelemetryHub::openEvents() const {
    std::lock_guard lk(eventsMutex_);
    std::vector<FailureEvent> v;
    v.reserve(shared_->open.size());
    for (const auto& [k, e] : shared_->open) v.push_back(e);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
        return std::tie(a.openedAtMs, a.kind, a.location) < std::tie(b.openedAtMs, b.kind, b.location);
    });
    return v;
}

void TelemetryHub::deliver(std::unique_lock<std::mutex>& ingestLock, std::vector<FailureEvent>& events) {
    if (events.empty()) return;
    for (const auto& e : events) (e.open() ? shared_->opened : shared_->closed).fetch_add(1, kRelaxed);
    // Take the delivery lock before letting the next ingest in, so listeners see events in the
    // order the rules produced them.
    std::unique_lock dl(shared_->deliverMutex);
    ingestLock.unlock();
    for (const auto& e : events)
        for (const auto& l : shared_->listeners) l(e);
}

Result<IngestReport> TelemetryHub::ingestText(std::string_view body, std::int64_t nowMs) {
    auto t0 = std::chrono::steady_clock::now();
    std::int64_t now = this->now(nowMs);
    IngestReport rep;
    std::vector<FailureEvent> events;
    std::unique_lock lock(ingestMutex_);
    auto st = current();
    State& s = *st;
    const HallLayout& L = *s.L;
    HubWork work(s, options_.detection, shared_->open, eventsMutex_, events, shared_->keyPrefix,
                 shared_->keySeq);
    const auto& table = metricTable();

    std::string_view lastName;
    MetricInfo info;
    std::string_view lastHost, lastSwitch;
    std::uint32_t lastHostIdx = kNoIndex, lastSwitchIdx = kNoIndex;
    std::string scratch;
    auto unknown = [&](UnknownReason r, std::string_view what, std::string_view name) {
        ++rep.unknown[static_cast<int>(r)];
        if (rep.unknownExamples.size() < 10) {
            std::string ex = std::string(what) + " " + std::string(name.substr(0, 128));
            if (std::find(rep.unknownExamples.begin(), rep.unknownExamples.end(), ex) ==
                rep.unknownExamples.end())
                rep.unknownExamples.push_back(std::move(ex));
        }
    };
    // Escaped label values are rare (never in host or switch names); resolve them on demand.
    auto labelValue = [&](const PromLabel* l) -> std::string_view {
        if (!l) return {};
        if (!l->escaped) return l->value;
        unescapeLabelValue(l->value, scratch);
        return scratch;
    };

    auto parsed = parsePromText(
        body,
        [&](const PromSample& smp) {
            if (smp.name != lastName) {
                lastName = smp.name;
                auto it = table.find(smp.name);
                info = it == table.end() ? MetricInfo{} : it->second;
            }
            if (info.type == MetricInfo::Ignored) {
                ++rep.ignored;
                return;
            }
            std::int64_t t = smp.hasTimestamp ? smp.timestampMs : now;
            double v = smp.value * info.scale;
            if (info.type == MetricInfo::Gpu) {
                std::uint32_t g = kNoIndex;
                auto host = labelValue(smp.findLabel("Hostname"));
                auto gpuLabel = smp.label("gpu");
                int gi = -1;
                std::uint32_t hostIdx = kNoIndex;
                if (!host.empty()) {
                    if (host != lastHost || lastHostIdx == kNoIndex) {
                        lastHostIdx = L.hostByName(host);
                        lastHost = host.data() == scratch.data() ? std::string_view{} : host;
                    }
                    hostIdx = lastHostIdx;
                    if (hostIdx != kNoIndex && parseSmallInt(gpuLabel, gi))
                        g = L.gpuOfHost(hostIdx, gi);
                }
                if (g == kNoIndex) {
                    auto uuid = smp.label("UUID");
                    if (!uuid.empty()) g = L.gpuByUuid(uuid);
                    if (g == kNoIndex) {
                        if (!host.empty() && hostIdx == kNoIndex)
                            unknown(UnknownReason::UnknownHost, "host", host);
                        else if (!host.empty())
                            unknown(UnknownReason::UnknownGpu, "gpu",
                                    std::string(host) + "/" + std::string(gpuLabel));
                        else if (!uuid.empty())
                            unknown(UnknownReason::UnknownUuid, "uuid", uuid);
                        else
                            unknown(UnknownReason::MissingLabels, "metric", smp.name);
                        return;
                    }
                }
                auto f = static_cast<GpuField>(info.id);
                s.gpu[static_cast<std::size_t>(info.id) * s.nG + g].store(static_cast<float>(v), kRelaxed);
                s.gpuSeen[g].store(t, kRelaxed);
                if (f == GpuField::Xid || f == GpuField::EccDbe || f == GpuField::RowRemapFailure ||
                    f == GpuField::Temp || f == GpuField::NvlinkCrc)
                    work.gpuSample(g, f, v, t);
                ++rep.applied;
                return;
            }
            // Switch port.
            const PromLabel* swl = smp.findLabel("switch");
            if (!swl) swl = smp.findLabel("instance");
            const PromLabel* pl = smp.findLabel("port");
            if (!pl) pl = smp.findLabel("ifName");
            if (!swl || !pl) {
                unknown(UnknownReason::MissingLabels, "metric", smp.name);
                return;
            }
            std::string_view sw = labelValue(swl);
            if (swl->name == "instance") sw = sw.substr(0, sw.rfind(':'));  // "host:9116"
            if (sw != lastSwitch || lastSwitchIdx == kNoIndex) {
                lastSwitchIdx = L.switchByName(sw);
                lastSwitch = swl->escaped ? std::string_view{} : sw;
            }
            if (lastSwitchIdx == kNoIndex) {
                unknown(UnknownReason::UnknownSwitch, "switch", sw);
                return;
            }
            bool exists = false;
            auto p = L.portBySwitch(lastSwitchIdx, labelValue(pl), &exists);
            if (p == kNoIndex && exists) {
                ++rep.ignored;  // an uncabled port of a known switch: nothing to track
                return;
            }
            if (p == kNoIndex) {
                unknown(UnknownReason::UnknownPort, "port",
                        std::string(sw) + "/" + std::string(labelValue(pl)));
                return;
            }
            work.portSample(p, static_cast<PortCounter>(info.id), v, t);
            ++rep.applied;
        },
        options_.limits);

    rep.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    shared_->bodies.fetch_add(1, kRelaxed);
    shared_->ingestMicros.fetch_add(static_cast<std::uint64_t>(rep.ms * 1000), kRelaxed);
    shared_->applied.fetch_add(rep.applied, kRelaxed);
    shared_->ignored.fetch_add(rep.ignored, kRelaxed);
    for (int i = 0; i < kUnknownReasonCount; ++i) shared_->unknown[i].fetch_add(rep.unknown[i], kRelaxed);
    if (parsed) rep.samples = parsed->samples;
    else rep.samples = rep.applied + rep.ignored + rep.unknownTotal();
    shared_->samples.fetch_add(rep.samples, kRelaxed);
    deliver(lock, events);
    if (!parsed) {
        shared_->badBodies.fetch_add(1, kRelaxed);
        return fail(parsed.error());
    }
    return rep;
}

void TelemetryHub::tick(std::int64_t nowMs) {
    std::int64_t now = this->now(nowMs);
    std::vector<FailureEvent> events;
    std::unique_lock lock(ingestMutex_);
    auto st = current();
    State& s = *st;
    const HallLayout& L = *s.L;
    HubWork work(s, options_.detection, shared_->open, eventsMutex_, events, shared_->keyPrefix,
                 shared_->keySeq);
    work.tickPorts(now);

    // Rollups: complete the previous minute, then sample the current state into it.
    std::int64_t minute = now - (now % 60000);
    if (s.minuteStart != 0 && minute != s.minuteStart && s.rollSamples > 0) {
        Rollup r;
        r.minuteStartMs = s.minuteStart;
        for (std::uint32_t i = 0; i < L.racks().size(); ++i) {
            if (L.racks()[i].gpuCount == 0) continue;
            RackRollup rr;
            rr.rack = i;
            rr.utilAvg = s.rackUtilN[i] ? static_cast<float>(s.rackUtilSum[i] / s.rackUtilN[i]) : NAN;
            rr.utilMax = s.rackUtilN[i] ? s.rackUtilMax[i] : NAN;
            rr.tempAvg = s.rackTempN[i] ? static_cast<float>(s.rackTempSum[i] / s.rackTempN[i]) : NAN;
            rr.tempMax = s.rackTempN[i] ? s.rackTempMax[i] : NAN;
            rr.powerAvgW = s.rackPowerN[i] ? static_cast<float>(s.rackPowerSum[i] / s.rackPowerN[i]) : NAN;
            rr.gpusReporting = s.rackReporting[i];
            rr.gpusUnhealthy = s.rackUnhealthyMax[i];
            if (s.rackUtilN[i] || s.rackTempN[i]) r.racks.push_back(rr);
        }
        for (std::uint32_t i = 0; i < L.switches().size(); ++i) {
            const auto& sw = L.switches()[i];
            double err = 0, disc = 0, pfc = 0;
            for (std::uint32_t p = sw.portOffset; p < sw.portOffset + sw.portSlots; ++p) {
                s.addErrorCounters(p, err, disc, pfc);
            }
            if (s.swUtilN[i] == 0 && std::isnan(s.swErrStart[i])) continue;
            SwitchRollup sr;
            sr.sw = i;
            sr.utilAvg = s.swUtilN[i] ? static_cast<float>(s.swUtilSum[i] / s.swUtilN[i]) : NAN;
            sr.utilMax = s.swUtilN[i] ? s.swUtilMax[i] : NAN;
            // Counter increase over the minute; a reset (negative) counts from zero.
            auto delta = [](double now, double start) {
                if (std::isnan(start)) return 0.0;
                return now >= start ? now - start : now;
            };
            sr.errors = delta(err, s.swErrStart[i]);
            sr.discards = delta(disc, s.swDiscStart[i]);
            sr.pfcPause = delta(pfc, s.swPfcStart[i]);
            sr.portsDown = s.swDownMax[i];
            r.switches.push_back(sr);
            s.swErrStart[i] = err;
            s.swDiscStart[i] = disc;
            s.swPfcStart[i] = pfc;
        }
        {
            std::lock_guard lk(eventsMutex_);
            shared_->rollups.push_back(std::move(r));
            if (shared_->rollups.size() > 60) shared_->rollups.erase(shared_->rollups.begin());
        }
        std::fill(s.rackUtilSum.begin(), s.rackUtilSum.end(), 0);
        std::fill(s.rackTempSum.begin(), s.rackTempSum.end(), 0);
        std::fill(s.rackPowerSum.begin(), s.rackPowerSum.end(), 0);
        std::fill(s.rackUtilMax.begin(), s.rackUtilMax.end(), 0.f);
        std::fill(s.rackTempMax.begin(), s.rackTempMax.end(), 0.f);
        for (auto* v : {&s.rackUtilN, &s.rackTempN, &s.rackPowerN, &s.rackUnhealthyMax,
                        &s.rackReporting, &s.swUtilN, &s.swDownMax})
            std::fill(v->begin(), v->end(), 0u);
        std::fill(s.swUtilSum.begin(), s.swUtilSum.end(), 0);
        std::fill(s.swUtilMax.begin(), s.swUtilMax.end(), 0.f);
        s.rollSamples = 0;
    }
    s.minuteStart = minute;
    ++s.rollSamples;
    auto staleMs = static_cast<std::int64_t>(options_.detection.staleAfterSeconds * 1000);
    for (std::uint32_t ri = 0; ri < L.racks().size(); ++ri) {
        const auto& rk = L.racks()[ri];
        std::uint32_t reporting = 0, unhealthy = 0;
        for (std::uint32_t g = rk.gpuOffset; g < rk.gpuOffset + rk.gpuCount; ++g) {
            if (!s.fresh(s.gpuSeen[g].load(kRelaxed), now, staleMs)) continue;
            ++reporting;
            if (s.gpuEventHealth[g].load(kRelaxed) != 0) ++unhealthy;
            float u = s.gpuVal(GpuField::Util, g), t = s.gpuVal(GpuField::Temp, g),
                  w = s.gpuVal(GpuField::Power, g);
            if (std::isfinite(u)) {
                s.rackUtilSum[ri] += u;
                s.rackUtilMax[ri] = std::max(s.rackUtilMax[ri], u);
                ++s.rackUtilN[ri];
            }
            if (std::isfinite(t)) {
                s.rackTempSum[ri] += t;
                s.rackTempMax[ri] = std::max(s.rackTempMax[ri], t);
                ++s.rackTempN[ri];
            }
            if (std::isfinite(w)) {
                s.rackPowerSum[ri] += w;
                ++s.rackPowerN[ri];
            }
        }
        s.rackReporting[ri] = std::max(s.rackReporting[ri], reporting);
        s.rackUnhealthyMax[ri] = std::max(s.rackUnhealthyMax[ri], unhealthy);
    }
    for (std::uint32_t si = 0; si < L.switches().size(); ++si) {
        const auto& sw = L.switches()[si];
        std::uint32_t down = 0;
        bool any = false;
        double err = 0, disc = 0, pfc = 0;
        for (std::uint32_t p = sw.portOffset; p < sw.portOffset + sw.portSlots; ++p) {
            if (!s.fresh(s.portSeen[p].load(kRelaxed), now, staleMs)) continue;
            any = true;
            if (s.portDown[p].load(kRelaxed)) ++down;
            float u = std::max(s.utilIn[p].load(kRelaxed), s.utilOut[p].load(kRelaxed));
            if (std::isfinite(u) && L.ports()[p].linkIndex != kNoIndex) {
                s.swUtilSum[si] += u;
                s.swUtilMax[si] = std::max(s.swUtilMax[si], u);
                ++s.swUtilN[si];
            }
            if (std::isnan(s.swErrStart[si])) {
                s.addErrorCounters(p, err, disc, pfc);
            }
        }
        if (any && std::isnan(s.swErrStart[si])) {
            s.swErrStart[si] = err;
            s.swDiscStart[si] = disc;
            s.swPfcStart[si] = pfc;
        }
        s.swDownMax[si] = std::max(s.swDownMax[si], down);
    }
    deliver(lock, events);
}

std::vector<Rollup> TelemetryHub::takeRollups() {
    std::lock_guard lk(eventsMutex_);
    return std::exchange(shared_->rollups, {});
}

namespace {
std::uint8_t toByte(float v, float max) {
    if (!std::isfinite(v)) return kNoData;
    if (v <= 0) return 0;
    if (v >= max) return static_cast<std::uint8_t>(max);
    return static_cast<std::uint8_t>(std::lround(v));
}
}  // namespace

void TelemetryHub::packedInto(Topic t, std::vector<std::uint8_t>& out, std::int64_t nowMs) const {
    auto st = current();
    const State& s = *st;
    const HallLayout& L = *s.L;
    std::int64_t now = this->now(nowMs);
    auto staleMs = static_cast<std::int64_t>(options_.detection.staleAfterSeconds * 1000);
    switch (t) {
        case Topic::GpuUtil:
        case Topic::GpuTemp: {
            out.resize(s.nG);
            auto f = t == Topic::GpuUtil ? GpuField::Util : GpuField::Temp;
            float max = t == Topic::GpuUtil ? 100.f : 254.f;
            for (std::uint32_t g = 0; g < s.nG; ++g)
                out[g] = s.fresh(s.gpuSeen[g].load(kRelaxed), now, staleMs) ? toByte(s.gpuVal(f, g), max)
                                                                           : kNoData;
            return;
        }
        case Topic::GpuHealth: {
            out.resize(s.nG);
            const auto& admin = L.gpuAdmin();
            for (std::uint32_t g = 0; g < s.nG; ++g) {
                if (admin[g] == AdminState::Quarantined) {
                    out[g] = kGpuQuarantined;
                    continue;
                }
                std::uint8_t h = s.gpuEventHealth[g].load(kRelaxed);
                // Open events outlive stale data: a failed GPU that stops reporting stays failed.
                bool fresh = s.fresh(s.gpuSeen[g].load(kRelaxed), now, staleMs);
                out[g] = h != kGpuOk ? h : fresh ? std::uint8_t{kGpuOk} : kNoData;
            }
            return;
        }
        case Topic::LinkUtil:
        case Topic::LinkHealth: {
            out.resize(s.nL);
            const auto& links = L.links();
            const auto& admin = L.linkAdmin();
            for (std::uint32_t l = 0; l < s.nL; ++l) {
                const auto& link = links[l];
                bool any = false, down = false;
                float util = -1;
                for (auto p : {link.aPort, link.bPort}) {
                    if (p == kNoIndex || !s.fresh(s.portSeen[p].load(kRelaxed), now, staleMs)) continue;
                    any = true;
                    if (s.portDown[p].load(kRelaxed)) down = true;
                    float u = std::max(s.utilIn[p].load(kRelaxed), s.utilOut[p].load(kRelaxed));
                    if (std::isfinite(u)) util = std::max(util, u);
                }
                if (t == Topic::LinkUtil) {
                    out[l] = util < 0 ? kNoData : down ? 0 : toByte(util, 100.f);
                    continue;
                }
                std::uint8_t h;
                if (admin[l] == AdminState::Drained) h = kLinkDrained;
                else if (admin[l] == AdminState::NotInService) h = kLinkNotInService;
                else if (down) h = kLinkDown;
                else if (auto ev = s.linkDegraded[l].load(kRelaxed); ev == 2) h = kLinkDown;
                else if (ev == 1) h = kLinkDegraded;
                else if (any) h = kLinkUp;
                else if (admin[l] == AdminState::Down) h = kLinkDown;
                else h = kNoData;
                out[l] = h;
            }
            return;
        }
    }
}

std::vector<std::uint8_t> TelemetryHub::packed(Topic t, std::int64_t nowMs) const {
    std::vector<std::uint8_t> v;
    packedInto(t, v, nowMs);
    return v;
}

double TelemetryHub::gpuValue(std::uint32_t gpu, GpuField f) const {
    auto st = current();
    return gpu < st->nG ? st->gpuVal(f, gpu) : kNaN;
}

double TelemetryHub::portValue(std::uint32_t port, PortCounter c) const {
    auto st = current();
    return port < st->nP ? st->portVal(c, port) : kNaN;
}

double TelemetryHub::portUtil(std::uint32_t port) const {
    auto st = current();
    if (port >= st->nP) return kNaN;
    float a = st->utilIn[port].load(kRelaxed), b = st->utilOut[port].load(kRelaxed);
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    return std::max(a, b);
}

std::size_t TelemetryHub::memoryBytes() const { return current()->bytes(); }

void TelemetryHub::appendMetrics(std::string& out) const {
    const auto& sh = *shared_;
    auto line = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
        out += "# HELP ";
        out += name;
        out += ' ';
        out += help;
        out += "\n# TYPE ";
        out += name;
        out += ' ';
        out += type;
        out += '\n';
        out += name;
        out += ' ';
        out += formatNumber(static_cast<double>(value));
        out += '\n';
    };
    line("loom_telemetry_bodies_total", "counter", "Telemetry bodies ingested.", sh.bodies.load());
    line("loom_telemetry_bad_bodies_total", "counter", "Telemetry bodies rejected as malformed.",
         sh.badBodies.load());
    line("loom_telemetry_samples_total", "counter", "Telemetry samples parsed.", sh.samples.load());
    line("loom_telemetry_applied_total", "counter", "Samples stored on a known GPU or port.",
         sh.applied.load());
    line("loom_telemetry_ignored_total", "counter", "Samples of metrics the hub does not track.",
         sh.ignored.load());
    out += "# HELP loom_telemetry_unknown_total Samples for entities not in the inventory.\n"
           "# TYPE loom_telemetry_unknown_total counter\n";
    for (int i = 0; i < kUnknownReasonCount; ++i) {
        out += "loom_telemetry_unknown_total{reason=\"";
        out += unknownReasonName(static_cast<UnknownReason>(i));
        out += "\"} ";
        out += std::to_string(sh.unknown[i].load());
        out += '\n';
    }
    line("loom_telemetry_ingest_seconds_total", "counter", "Time spent parsing and storing telemetry.",
         static_cast<double>(sh.ingestMicros.load()) / 1e6);
    line("loom_events_opened_total", "counter", "Failure events opened by detection rules.",
         sh.opened.load());
    line("loom_events_closed_total", "counter", "Failure events closed by detection rules.",
         sh.closed.load());
    std::size_t open;
    {
        std::lock_guard lk(eventsMutex_);
        open = sh.open.size();
    }
    line("loom_events_open", "gauge", "Failure events currently open.", open);
    line("loom_telemetry_hub_bytes", "gauge", "Memory held by the telemetry hub arrays.",
         memoryBytes());
}

}  // namespace loom::backend
