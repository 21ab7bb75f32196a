// Simulator: a living cluster without hardware, for demos (`loomd serve --simulate`), tests and
// benchmarks. It writes Prometheus text exactly like DCGM exporters and switch exporters would,
// and that text goes through the SAME ingest path as real telemetry (TelemetryHub::ingestText).
//
// Model: training jobs of power-law sizes (64..4096 GPUs by default, whole racks) are placed on
// free racks and run for an exponential time. Each job iterates with a period of a few seconds:
// a compute phase (GPU ~95 %, NIC links low) then a communication phase (GPU lower, NIC links
// and, for jobs spanning racks/zones, RTSW and CTSW uplinks high). Idle GPUs sit near 0 %.
// Temperature and power follow utilization. Background failures arrive as Poisson processes:
// GPU XIDs (a critical one ends the job running there), double-bit ECC, overheating, link flaps
// (a burst of down/up transitions), and rarely a whole RTSW down for minutes.
//
// Deterministic: the same seed, layout and sequence of step() times give byte-identical text.
//
//   Simulator sim(layout, {.seed = 7});
//   std::string body;
//   sim.step(nowMs, body);          // one scrape of the whole cluster
//   hub.ingestText(body, nowMs);
//   sim.step(nowMs, [&](std::string_view chunk) { hub.ingestText(chunk, nowMs); });  // chunked
//
// Cost: in the default (live) mode one 24k-cluster step writes ~0.37 M samples (GPU util, temp,
// power, SM clock; per linked switch port oper status and in/out octets; error fields only when
// they change), measured in bench/telemetry. `fullFidelity` writes every field and counter (~20 per
// GPU, 12 per port) as a real full scrape would (the ingest benchmark).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "loom/telemetry/hall_layout.hpp"
#include "loom/inventory/error.hpp"

namespace loom::telemetry {

struct SimulatorConfig {
    std::uint64_t seed = 1;
    double fill = 0.85;  // target fraction of GPUs in jobs
    int minJobGpus = 64, maxJobGpus = 4096;
    double sizeExponent = 0.8;  // P(size) ~ size^-exponent over powers of two
    double jobMeanMinutes = 45;
    double iterationSecondsMin = 2, iterationSecondsMax = 10;
    double commFraction = 0.3;  // part of an iteration spent communicating
    double computeUtil = 95, commUtil = 40;
    double nicUtilCompute = 5, nicUtilComm = 85;
    // Failure rates.
    double xidPerGpuHour = 2e-4;       // ~5 per hour on 24k GPUs
    double eccDbePerGpuHour = 1e-5;
    double overheatPerGpuHour = 2e-5;
    double flapPerLinkHour = 4e-5;     // ~2 per hour on 55k links
    double rtswDownPerSwitchHour = 2e-4;  // ~0.3 per hour on 1,536 RTSWs
    double gpuRecoverySeconds = 300;   // XID/ECC until the GPU is reset (field back to 0)
    double overheatSeconds = 240;
    double rtswDownSeconds = 420;
    bool fullFidelity = false;  // every DCGM field and port counter, every step
    // Healthy jitter the straggler finder must not take for a straggler: SM clock boost
    // wobble and one-step dips, sporadic correctable ECC errors, link errors and PFC pauses.
    bool healthyNoise = true;
    // The demo injector: every this many seconds (0 = off) a seeded random cause on a random
    // GPU or uplink of a random running job, for stragglerSeconds.
    double stragglerEverySeconds = 0, stragglerSeconds = 60;
    // Read from loomd.yaml's `simulator:` section by backend/loomd_config.hpp.
};

struct SimulatorStats {
    std::uint64_t steps = 0, samplesLastStep = 0;
    std::uint32_t jobsRunning = 0, gpusBusy = 0;
    std::uint64_t jobsStarted = 0, jobsFailed = 0, xids = 0, eccs = 0, overheats = 0, flaps = 0,
                  rtswDowns = 0;
};

class Simulator {
public:
    Simulator(std::shared_ptr<const HallLayout> layout, SimulatorConfig config = {});
    ~Simulator();
    Simulator(const Simulator&) = delete;
    Simulator& operator=(const Simulator&) = delete;

    // Advances the model to `nowMs` (Unix epoch ms, non-decreasing) and appends one scrape of
    // the whole cluster to `out` (cleared first).
    void step(std::int64_t nowMs, std::string& out);

    // The same step handed over in chunks of about `chunkBytes` (each ends at a rack's or a
    // switch's end, whole lines), in the order of the whole page: their concatenation is the
    // text step(nowMs, out) writes. `sink` runs on this thread, inside the step. At 98k GPUs
    // the whole page is ~100 MB; chunked, the simulator holds one chunk (reused across steps)
    // and a hub ingesting each chunk ends with the same values (tests/telemetry).
    using ChunkSink = std::function<void(std::string_view chunk)>;
    static constexpr std::size_t kChunkBytes = 256u << 10;
    void step(std::int64_t nowMs, const ChunkSink& sink, std::size_t chunkBytes = kChunkBytes);

    // The same structure with new states (layoutVersion unchanged): jobs go on where their
    // racks are still in service and end where they are not. The world follows the racks:
    // racks before `powered`, failed, in repair or decommissioned send nothing; powered,
    // validated, draining, drained and maintenance racks are idle; burn_in runs the burn-in
    // load; only in_service racks run jobs. Links report only while in service or drained, and
    // failures strike only equipment that reports.
    void setLayout(std::shared_ptr<const HallLayout> layout);

    // The jobs running now, for the jobs module's objects (source "simulator"): `serial` numbers
    // the jobs of this simulator from 1 in start order; racks index layout().racks().
    struct RunningJob {
        std::uint64_t serial = 0;
        std::vector<std::uint32_t> racks;
        std::int64_t startMs = 0;
    };
    std::vector<RunningJob> runningJobs() const;

    // The racks of jobs the simulator does not own (an operator's or Slurm's running jobs; issue
    // 34 item 5), one list per job: the simulator's own jobs give way (one on such a rack ends
    // now, the work moves away, and none starts there), and each list runs as one job of the
    // simulated world (load, traffic, injected stragglers) that runningJobs() does not report
    // and that only the next call ends. Racks not in service are skipped. The same lists as
    // the jobs held now change nothing.
    void setHeldRacks(const std::vector<std::vector<std::uint32_t>>& racksPerJob);

    // Makes a job straggle (issue 15 item 3; the straggler finder's tests, benchmarks and
    // demos) from `startMs` for `seconds`. `target` is a GPU index for the GPU causes and
    // SlowNic (its NIC cable), a link index for the link causes:
    //   ThermalThrottle: SM clock 1,140 MHz instead of ~1,980, +15 °C (about 90 °C, the
    //     slowdown temperature), 30 % less power;
    //   EccPressure: correctable ECC errors climbing ~50/s (row-remap pressure), SM clock -15 %;
    //   SlowNic: the GPU's NIC carries 30 % of its peers' traffic (a NIC trained down);
    //   PfcStorm: 20,000-60,000 PFC pause frames/s on both ends of the link, which carries a
    //     fifth of its traffic (an RTSW uplink: the receiver cannot drain);
    //   FlappingOptic: the link down 1 s in every 3, 20 input errors/s while up;
    //   NoisyNeighbour: the link runs at ~98 % with 300-800 discards/s (another tenant's
    //     traffic on a shared uplink).
    enum class StragglerCause : std::uint8_t {
        ThermalThrottle, EccPressure, SlowNic, PfcStorm, FlappingOptic, NoisyNeighbour
    };
    static constexpr int kStragglerCauseCount = 6;
    static std::string_view causeName(StragglerCause c);  // "thermal_throttle", "slow_nic", ...
    static bool isLinkCause(StragglerCause c) {
        return c == StragglerCause::PfcStorm || c == StragglerCause::FlappingOptic ||
               c == StragglerCause::NoisyNeighbour;
    }
    void injectStraggler(StragglerCause cause, std::uint32_t target, std::int64_t startMs,
                         double seconds);

    const SimulatorStats& stats() const { return stats_; }
    const SimulatorConfig& config() const { return config_; }

    struct Model;  // telemetry_hub-independent internals, in simulator_model.hpp

private:
    void write(std::int64_t nowMs, std::string& out, const ChunkSink* sink,
               std::size_t chunkBytes);

    SimulatorConfig config_;
    SimulatorStats stats_;
    std::unique_ptr<Model> m_;
};

}  // namespace loom::telemetry
