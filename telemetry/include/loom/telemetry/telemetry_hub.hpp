// TelemetryHub: the latest value of every GPU field and every switch-port counter of the
// cluster, in flat arrays indexed by HallLayout, plus the failure-detection rules over them.
//
// Ingest: Prometheus text (POST /api/v1/telemetry, scraped exporters, the simulator) goes
// through ingestText(); samples are matched to GPUs and ports without allocating and stored.
// Ingests are serialized by one mutex (they also advance the detection state); readers never
// take it: the value arrays are relaxed atomics, so the stream tick's packed() never waits for
// a large ingest. Failure events are delivered to listeners after the ingest mutex is released.
//
//   TelemetryHub hub(layout, detectionConfig);
//   hub.addEventListener([&](const FailureEvent& e) { queueForDb(e); });
//   auto report = hub.ingestText(body);           // {"samples": N, "unknown": {...}, "ms": x}
//   auto bytes = hub.packed(Topic::GpuUtil);      // one byte per GPU, docs/api.md encodings
//   hub.tick();                                   // once a second: time-based rules, rollups
//   auto hour = hub.gpuHistory(g);                 // last hour of one GPU, a point a minute
//
// Metrics accepted (others are counted as "ignored"):
//  GPU (labels Hostname + gpu, or UUID): DCGM_FI_DEV_GPU_UTIL, _GPU_TEMP, _MEMORY_TEMP,
//   _POWER_USAGE, _SM_CLOCK, _MEM_CLOCK, _FB_USED, _FB_FREE, _XID_ERRORS, _ECC_SBE_VOL_TOTAL,
//   _ECC_DBE_VOL_TOTAL, _ROW_REMAP_FAILURE, _UNCORRECTABLE_REMAPPED_ROWS,
//   _CORRECTABLE_REMAPPED_ROWS, _NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, _PCIE_REPLAY_COUNTER,
//   _TOTAL_ENERGY_CONSUMPTION, _MEM_COPY_UTIL, DCGM_FI_PROF_GR_ENGINE_ACTIVE,
//   DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, DCGM_FI_DEV_CLOCKS_EVENT_REASONS (and its old name
//   DCGM_FI_DEV_CLOCK_THROTTLE_REASONS), DCGM_FI_DEV_POWER_VIOLATION, _THERMAL_VIOLATION,
//   DCGM_FI_PROF_SM_ACTIVE, _DRAM_ACTIVE, _PCIE_{TX,RX}_BYTES, _NVLINK_{TX,RX}_BYTES. The
//   `hpc_job` label is kept as the GPU's job (gpuJob()).
//  Switch ports (labels switch + port; or instance + ifName as from snmp_exporter):
//   loom_port_oper_status (1 up; 0, 2, 5, 6, 7 down; IF-MIB ifOperStatus likewise),
//   loom_port_admin_status (IF-MIB ifAdminStatus: 2 = shut on purpose, no failure),
//   loom_port_{in,out}_octets_total, loom_port_{in,out}_packets_total,
//   loom_port_{in,out}_errors_total, loom_port_{in,out}_discards_total,
//   loom_port_{in,out}_pfc_pause_frames_total, loom_port_fec_uncorrectable_total,
//   loom_port_speed_bps; aliases ifOperStatus, ifAdminStatus, ifHCInOctets, ifHCOutOctets,
//   ifHCInUcastPkts, ifHCOutUcastPkts, ifInErrors, ifOutErrors, ifInDiscards, ifOutDiscards,
//   ifHighSpeed (Mb/s).
// Link utilization = max(in, out) octet-counter rate over the port speed, of either switch
// end of the link. A counter that goes backwards (reset) yields no rate for that interval.
//
// Unknown entities are counted per reason (unknown_host, unknown_gpu, unknown_uuid,
// unknown_switch, unknown_port, missing_labels), in the report and cumulatively in /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/telemetry/detection.hpp"
#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/prom_text.hpp"

namespace loom::telemetry {

enum class Topic : std::uint8_t { GpuUtil, GpuTemp, GpuHealth, LinkUtil, LinkHealth };
inline constexpr int kTopicCount = 5;
std::string_view topicName(Topic t);  // "gpu.util", "gpu.temp", ...
std::optional<Topic> parseTopic(std::string_view s);

// Packed-array values (docs/api.md).
inline constexpr std::uint8_t kNoData = 255;
enum GpuHealthValue : std::uint8_t {
    kGpuOk = 0,
    kGpuWarning = 1,
    kGpuFailed = 2,
    kGpuQuarantined = 3
};
enum LinkHealthValue : std::uint8_t {
    kLinkUp = 0,
    kLinkDegraded = 1,
    kLinkDown = 2,
    kLinkDrained = 3,
    kLinkNotInService = 4
};

enum class GpuField : std::uint8_t {
    Util,
    Temp,
    MemTemp,
    Power,
    SmClock,
    MemClock,
    FbUsed,
    FbFree,
    Xid,
    EccSbe,
    EccDbe,
    RowRemapFailure,
    UncorrectableRemappedRows,
    CorrectableRemappedRows,
    NvlinkCrc,
    PcieReplay,
    Energy,
    MemCopyUtil,
    GrEngineActive,
    TensorActive,
    // Clock event reasons (NVML bit mask, clockEventReasonNames()), throttle time counters (us),
    // profiling ratios 0..1 and byte counters.
    ClockEventReasons,
    PowerViolation,
    ThermalViolation,
    SmActive,
    DramActive,
    PcieTxBytes,
    PcieRxBytes,
    NvlinkTxBytes,
    NvlinkRxBytes,
};
inline constexpr int kGpuFieldCount = 29;

// NVML clock event reasons (DCGM_FI_DEV_CLOCKS_EVENT_REASONS, formerly
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS): bit -> name.
struct ClockEventReason {
    std::uint32_t bit;
    std::string_view name;
};
inline constexpr ClockEventReason kClockEventReasons[] = {
    {0x1, "gpu_idle"},         {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},     {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},      {0x20, "sw_thermal"},
    {0x40, "hw_thermal"},      {0x80, "hw_power_brake"},
    {0x100, "display_clocks"},
};
// The reasons that make a gpu_throttled event (thermal, power brake, hw slowdown); sw_power_cap
// and gpu_idle are normal operation.
inline constexpr std::uint32_t kThrottleAlarmMask = 0x8 | 0x20 | 0x40 | 0x80;
// The names of the bits set in `mask`, in bit order (unknown bits as "0x..").
std::vector<std::string> clockEventReasonNames(std::uint32_t mask);

enum class PortCounter : std::uint8_t {
    OperStatus,
    InOctets,
    OutOctets,
    InPackets,
    OutPackets,
    InErrors,
    OutErrors,
    InDiscards,
    OutDiscards,
    InPfcPause,
    OutPfcPause,
    FecUncorrectable,
    SpeedBps,
};
inline constexpr int kPortCounterCount = 13;

// Why a sample was not stored. The first six are unknown entities (counted in the report's
// `unknown`); not_a_port (an interface of a switch that is no front-panel port of its scheme:
// lo, mgmt0, PortChannel0001, Vlan1000, a breakout sub-port) and port_conflict (two ifIndexes
// of one page naming the same port: neither is believed) are ignored by design and counted in
// `ignored`. Every reason's names are listed by unknownNames().
enum class UnknownReason : std::uint8_t {
    UnknownHost,
    UnknownGpu,
    UnknownUuid,
    UnknownSwitch,
    UnknownPort,
    MissingLabels,
    NotAPort,
    PortConflict,
    // A host whose RDMA devices do not match its model's NICs (inventory/nic_identity.hpp):
    // none of its devices is believed.
    NicIdentity,
};
inline constexpr int kUnknownReasonCount = 9;
std::string_view unknownReasonName(UnknownReason r);  // "unknown_host", ...

// One name the hub could not place or ignored (GET /api/v1/telemetry/unknown).
struct UnknownName {
    std::string reason;  // unknownReasonName()
    std::string name;    // "z1-r001-rtsw/PortChannel0001", "z9-r001-h0", "z1-r001-h0/mlx5_9"
    std::string source;  // the page's origin ("scrape snmp z1-r001-rtsw", "push")
    std::string detail;  // why, in words ("no port of scheme sonic lanes=8")
    std::int64_t firstSeenMs = 0, lastSeenMs = 0;
    std::uint64_t samples = 0;  // samples seen with it (while it stayed in the catalogue)
};

struct IngestReport {
    std::uint64_t samples = 0;  // parsed
    std::uint64_t applied = 0;  // stored on a GPU or port
    std::uint64_t ignored = 0;  // metric names the hub does not track
    std::uint64_t unknown[kUnknownReasonCount] = {};
    std::vector<std::string> unknownExamples;  // up to 10 distinct "host z9-r1-h0" etc.
    // Rated port counters, and GPU samples, a second source sent while the first still sends
    // them (not taken).
    std::uint64_t duplicates = 0;
    double ms = 0;
    std::uint64_t unknownTotal() const;
    // {"samples": N, "applied": N, "ignored": N, "unknown": {"unknown_host": 3, ...},
    //  "unknownExamples": [...], "ms": x} (zero reasons omitted)
    nlohmann::json toJson() const;
};

// One-minute aggregates, persisted by EventRepo::insertRollups.
struct RackRollup {
    std::uint32_t rack = 0;
    float utilAvg = 0, utilMax = 0, tempAvg = 0, tempMax = 0, powerAvgW = 0;
    std::uint32_t gpusReporting = 0, gpusUnhealthy = 0;
};
struct SwitchRollup {
    std::uint32_t sw = 0;
    float utilAvg = 0, utilMax = 0;
    double errors = 0, discards = 0, pfcPause = 0;  // counter increase over the minute
    std::uint32_t portsDown = 0;
};
struct Rollup {
    std::int64_t minuteStartMs = 0;
    std::vector<RackRollup> racks;
    std::vector<SwitchRollup> switches;
};

// One minute of one GPU or link from the hub's in-memory history: the last hour, oldest first,
// the minute in progress last (`partial`). NaN: no sample in that minute. Kept by this hub only
// (a restart starts empty; it is not persisted, unlike the rack and switch rollups).
struct GpuMinute {
    std::int64_t minuteStartMs = 0;
    float utilAvg = 0, utilMax = 0, tempMax = 0;
    float powerAvgW = 0;  // to 4 W
    float fbUsedPct = 0;  // frame buffer used / (used + free), percent
    std::uint32_t samples = 0;
    bool partial = false;
};
struct LinkMinute {
    std::int64_t minuteStartMs = 0;
    float utilAvg = 0, utilMax = 0;  // max of either switch end, 0 while down
    std::uint32_t downSamples = 0;   // samples (about one a second) with the link down
    std::uint32_t samples = 0;       // samples taken in the minute (the hub's ticks)
    double errors = 0;               // in+out error counters of both ends, increase (NaN none)
    bool partial = false;
};

// Who a scraped page speaks for, as Prometheus's `instance` label: the host of a dcgm or
// node_exporter target, the switch of an snmp_exporter target. Samples that name no host
// (no Hostname and no UUID) or no switch (no switch or instance label) are matched through it.
//
// `origin` names what sent the page, and is recorded on the events it opens: "push" (the
// default: POST /api/v1/telemetry), "simulator", or "scrape <target>". An event closes only on
// a sample of the same kind of origin (a simulator sample never closes what a push or a scrape
// reported, nor the other way round), and the simulator's samples of a GPU or link on which a
// push or a scrape holds an event open are dropped until that event closes.
//
// `source` names where the page came from (a scrape target's URL): a rated port counter keeps
// the source that sends it, and the same counter from a second source while the first still
// sends it is counted (IngestReport::duplicates) and not taken: two copies of one counter read 0
// and then a spike (issue 34 item 1). Empty: an unnamed source.
struct IngestIdentity {
    std::string_view host;
    std::string_view switchName;
    std::string_view origin = "push";
    std::string_view source;
};

// A counter's rate per second over its last two samples (Prometheus's rate() on the last two
// points: a reset counts the new value, a 32-bit wrap its distance through 2^32), and the time
// of its last sample. NaN: fewer than two samples. The reader decides how old is too old.
struct CounterRate {
    double perSecond = std::numeric_limits<double>::quiet_NaN();
    std::int64_t atMs = 0;  // 0: never sampled
};

struct HubOptions {
    DetectionConfig detection;
    // Unix epoch milliseconds; tests replace it to drive time.
    std::function<std::int64_t()> clock;
    PromLimits limits;
};

class TelemetryHub {
public:
    explicit TelemetryHub(std::shared_ptr<const HallLayout> layout, HubOptions options = {});
    ~TelemetryHub();
    TelemetryHub(const TelemetryHub&) = delete;
    TelemetryHub& operator=(const TelemetryHub&) = delete;

    // Switches to a new layout (inventory changed). Values of GPUs and ports present in both
    // layouts carry over by name; open events stay open.
    void setLayout(std::shared_ptr<const HallLayout> layout);
    std::shared_ptr<const HallLayout> layout() const;

    // Parses and stores one exposition body. The parser streams, so the samples before a
    // malformed line are applied and nothing after it; the error names the line and column.
    // `nowMs` 0 = the hub's clock; samples with a timestamp use their own.
    Result<IngestReport> ingestText(std::string_view body, std::int64_t nowMs = 0,
                                    IngestIdentity identity = {});

    // Time-driven work, once a second: closes flapping events whose window passed, marks
    // stale data, samples the rollup accumulators and completes minutes.
    void tick(std::int64_t nowMs = 0);

    // One byte per GPU or link, in layout order (docs/api.md encodings). Lock-free.
    std::vector<std::uint8_t> packed(Topic t, std::int64_t nowMs = 0) const;
    void packedInto(Topic t, std::vector<std::uint8_t>& out, std::int64_t nowMs = 0) const;

    // Latest raw values (NaN when none).
    double gpuValue(std::uint32_t gpu, GpuField f) const;
    // When the GPU's newest sample arrived (0: never): how old its values are.
    std::int64_t gpuSampleMs(std::uint32_t gpu) const;
    double portValue(std::uint32_t port, PortCounter c) const;
    // Utilization 0..100 of a port (max of in/out), NaN when unknown.
    double portUtil(std::uint32_t port) const;
    // The rate of a port's octet, error, discard or PFC pause counter (other counters: NaN;
    // octets in bytes/s), over that counter's own last two samples.
    CounterRate portRate(std::uint32_t port, PortCounter c) const;
    // The same for many ports at once, under one lock (the straggler finder's read): per port
    // its utilisation (portUtil) with the time of its newest octet sample, and in + out of its
    // errors, discards and PFC pause frames per second (NaN where neither direction has a
    // rate) with the newest of their times (0: never sampled), and each one's own time: a
    // reader that wants evidence from two samples tells a new sample from the same one read
    // again (the straggler finder; the pages that carry them arrive on their own clocks).
    struct PortRates {
        float util, errors, discards, pfc;
        std::int64_t utilAtMs, atMs;
        std::int64_t errorsAtMs, discardsAtMs, pfcAtMs;
    };
    void portRates(const std::vector<std::uint32_t>& ports, std::vector<PortRates>& out) const;
    // The host end of each GPU's backend NIC link, as node_exporter's InfiniBand collector
    // reports it (docs/telemetry.md §4), under one lock: utilisation (max of rx/tx over the
    // port's speed) and its time, the speed the port reports (bytes/s), the rates of
    // port_transmit_wait (ticks/s) and port_errors_received with the newest of their times,
    // the port state (-1 unknown, 0 not ACTIVE, 1 ACTIVE) and the last rise of
    // link_downed_total (0: none). NaN / 0 where the page said nothing.
    struct NicEnd {
        float util, speedBytes, xmitWait, rcvErrors;
        std::int64_t utilAtMs, atMs;
        std::int8_t up;
        std::int64_t flapAtMs;
    };
    void nicEnds(const std::vector<std::uint32_t>& gpus, std::vector<NicEnd>& out) const;
    // The rate of a GPU's correctable ECC counter (GpuField::EccSbe; other fields: NaN), for
    // one GPU or many under one lock.
    CounterRate gpuRate(std::uint32_t gpu, GpuField f) const;
    void gpuRates(const std::vector<std::uint32_t>& gpus, GpuField f,
                  std::vector<CounterRate>& out) const;
    // The job dcgm-exporter's `hpc_job` label names for this GPU (its HPC job mapping), empty
    // when the last sample carried none.
    std::string gpuJob(std::uint32_t gpu) const;

    using EventListener = std::function<void(const FailureEvent&)>;
    // Called for every opened and closed event (closedAtMs set), in order, outside the ingest
    // lock, on the thread that ingested or ticked. Register before ingesting.
    void addEventListener(EventListener l);
    // Called with the open events restoreOpenEvents took (those new to the hub), in order with
    // the events above and on the same terms. They are stored and were announced when they
    // opened, so the event listeners (which store and announce) do not hear them; a view that
    // mirrors the open events (openEvents() once, then every change) registers both, or it
    // misses what a restore brings after it took its copy (issue 39 item 2).
    using RestoreListener = std::function<void(const std::vector<FailureEvent>&)>;
    void addRestoreListener(RestoreListener l);
    std::vector<FailureEvent> openEvents() const;

    // Open events stored in the database (a restart, or another loomd's): the rules take them
    // as open (a GPU with an open critical XID is failed in gpu.health at once) without
    // announcing them again, and recovery closes them by their stored id. Events of places not
    // in the layout wait for a layout that has them. The restore listeners hear the new ones.
    // Returns how many were new to the hub.
    std::size_t restoreOpenEvents(const std::vector<FailureEvent>& events);

    // The writer stored these events (kind, location, key) as rows `id`: the open event of that
    // key takes the id, which may be another loomd's row for the same condition (one row is
    // open per kind and place). closedElsewhere and closedByHand then know it by its row.
    void learnStoredIds(const std::vector<FailureEvent>& stored);

    // An operator closed this event by hand (`id`: its stored id, 0 = any): the hub forgets it
    // and opens no new event of that kind there until the condition has cleared. False when
    // the hub did not hold it open.
    bool closedByHand(const std::string& kind, const std::string& location, std::int64_t id);

    // Another loomd closed this stored event (`stored`: the row, closed, with its id): its
    // source's recovery reached that loomd, or an operator closed it there. The hub forgets the
    // event it holds open at that place if it is that row (the same id; held without an id, one
    // opened before that close) and delivers the close, as stored, to the event listeners. A
    // close by hand (`byHand`) holds the kind back until the condition clears, as closedByHand
    // does; a recovery does not (a new report of the failure opens a new event). Counted in
    // loom_events_closed_elsewhere_total, not as this hub's close. False when it held no such
    // event.
    bool closedElsewhere(const FailureEvent& stored, bool byHand);

    // The last hour of one GPU or link, a minute a point (see GpuMinute); empty for an index
    // outside the layout.
    std::vector<GpuMinute> gpuHistory(std::uint32_t gpu, std::int64_t nowMs = 0) const;
    std::vector<LinkMinute> linkHistory(std::uint32_t link, std::int64_t nowMs = 0) const;

    // Completed one-minute rollups since the last call (usually 0 or 1).
    std::vector<Rollup> takeRollups();

    // The names the hub could not place or ignored, most recently seen first, at most `limit`
    // (the catalogue keeps the last 256 per reason); `reason` empty = every reason.
    std::vector<UnknownName> unknownNames(std::string_view reason = {},
                                          std::size_t limit = 100) const;

    // Prometheus text for /metrics: ingest counters, distinct unknown names per reason, open
    // events, memory.
    void appendMetrics(std::string& out) const;
    // Bytes held by the value arrays and detection state (benchmarks, /metrics).
    std::size_t memoryBytes() const;
    // The detection rules' configuration (fixed at construction): legends mark its thresholds.
    const DetectionConfig& detection() const { return options_.detection; }

    struct State;  // defined in telemetry/src/hub_state.hpp

    struct Shared;

private:
    // The ingest lock and a rule work on the current state, for changes to the open events
    // that come from outside the rules (telemetry_hub.cpp).
    struct OutsideWork;

    std::int64_t now(std::int64_t nowMs) const;
    std::shared_ptr<State> current() const;
    void deliver(std::unique_lock<std::mutex>& ingestLock, std::vector<FailureEvent>& events);

    HubOptions options_;
    std::unique_ptr<Shared> shared_;
    mutable std::mutex ingestMutex_;  // serializes ingest, tick and setLayout
    mutable std::mutex eventsMutex_;  // open-event map and listeners
    mutable std::mutex stateMutex_;   // held only to copy or swap state_
    std::shared_ptr<State> state_;
};

}  // namespace loom::telemetry
