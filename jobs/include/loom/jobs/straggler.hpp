// The straggler finder (issue 15 item 3): in a synchronous job every rank follows the same
// rhythm, so the rank that holds the others back stands out against the job's median in the
// telemetry Loom already has. Pure: the caller (loomd, the benchmark) fills one RankSample per
// GPU of a job from the hub each second.
//
// Signals, each scored as a robust z-score against the job (median and MAD, with a floor so a
// perfectly uniform job does not turn noise into infinity):
//   SM clock below the median (with high temperature: "thermal throttle"), temperature above it,
//   power below it, correctable ECC errors per second (row-remap pressure), an XID, NIC
//   utilisation below the median (a slow NIC), its speed below rated or its transmit wait far
//   above the job's (slow_nic), PFC pause frames and link errors per second on the GPU's NIC
//   cable, its flaps. A rank's score is its strongest signal; suspects are ranked by score.
// The detector keeps one event per job and suspect location: it opens when a location is among
// the job's suspects (a score of at least `minScore`) for `openAfterTicks` consecutive ticks (and,
// where the caller counts them, `minSamples` distinct samples: StragglerSuspect::samples), and
// closes after `closeAfterTicks` ticks without it. An open event never blocks another suspect's:
// a job can hold several, and the same location one for each job it slows.
//
//   auto suspects = rankStragglers(names, samples);  // best first, with evidence text
//   for (auto& t : detector.update("llama", suspects, nowMs)) if (t.opened) openEvent(t.message);
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace loom::jobs {

struct RankSample {
    static constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    float smClockMhz = kNaN, tempC = kNaN, powerW = kNaN, util = kNaN;
    float memTempC = kNaN;      // HBM temperature (DCGM_FI_DEV_MEMORY_TEMP)
    float clockReasons = kNaN;  // NVML clock event reasons, the bit mask (kClockEventReasons)
    float eccSbePerSecond = 0;  // correctable ECC errors per second
    float xid = 0;              // the last XID (0: none)
    float nicUtil = kNaN;       // utilisation of the GPU's NIC cable, %, smoothed over a few s
    float pfcPerSecond = 0, linkErrorsPerSecond = 0;  // on the NIC cable
    float nicFlaps = 0;  // up-to-down transitions of the NIC cable, recently (decaying count)
    float nicSpeedRatio = kNaN;  // the NIC cable's speed now / its rated speed (1: full)
    // The host NIC's port_transmit_wait rate (node_exporter: ticks/s it had data to send and
    // could not): one NIC waiting far more than its job's others is slow (or paused).
    float nicXmitWaitPerSecond = kNaN;
    // The job's own healthy rhythm on the rank's host (StragglerFinder: the median utilisation
    // and SM clock of the host's GPUs, averaged over a minute while the host is no suspect):
    // what a job of 2 hosts, with no majority, compares a host against.
    float hostUtilBase = kNaN, hostClockBase = kNaN;
    std::uint32_t host = 0;  // the rank's host, an index within the job
    bool suspect = false;    // a suspect at the last tick: the lower thresholds hold it
};

// A fabric link the job's traffic crosses (its racks' RTSW uplinks): what the switch port at
// the rack's end reports.
struct LinkSample {
    static constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    float util = kNaN;  // %, now
    float pfcPerSecond = 0, errorsPerSecond = 0, discardsPerSecond = 0;
    float flaps = 0;       // up-to-down transitions, recently (decaying count)
    bool suspect = false;  // a suspect at the last tick: the lower thresholds hold it
};

struct StragglerOptions {
    double minScore = 8;  // robust z below which a rank is not a suspect
    std::size_t maxSuspects = 5;
    int openAfterTicks = 3, closeAfterTicks = 10;
    // StragglerFinder: a location is listed as a suspect, and its event opens, only once its
    // evidence held in this many distinct samples of the page it comes from (a one-sample clock
    // dip, one bit error, a host's page read at a checkpoint's edge are one sample; the finder's
    // ticks can read one sample twice). Opening still takes openAfterTicks ticks: 3 ticks span
    // 2 s, more than a page's interval, so a real cause opens no later for it.
    std::uint32_t minSamples = 2;
    // A clock below the job's with no reason the GPU gives behind it (no clock event reason, no
    // ECC: `low_sm_clock`, and a hot GPU's slow clock: StragglerSuspect::clockOnly) is the
    // weakest evidence: a GPU's boost clock dips for a second or two in healthy jobs, hot ones
    // too. It counts once its samples span this long (first to newest), ~1 s more than a cause
    // the hardware names.
    std::int64_t lowClockSpanMs = 2500;
    // StragglerFinder: a job (or a job whose hosts changed) is ranked only this long after the
    // finder first saw it: three time constants of its port averages (10 s: the first sample's
    // weight down to 5 %) and a few seconds for every rank's first samples to arrive.
    std::int64_t warmupMs = 30'000;
};

struct StragglerSuspect {
    std::size_t rank = 0;
    std::string location;  // the GPU, its NIC cable (network causes), a host or an uplink
    std::string gpu;       // the rank's GPU (empty for a host or an uplink)
    std::string cause;     // thermal_throttle, power_brake, hw_slowdown, low_sm_clock,
                           // ecc_pressure, xid, slow_nic, pfc_storm, link_errors,
                           // flapping_link, host_contention, host_slow, congested_link
    double score = 0;
    std::string evidence;  // "z3-r017-h1-gpu5: SM clock 1,140 MHz vs job median 1,980, ..."
    // In how many distinct samples in a row (of the page its evidence comes from) it has been
    // a suspect; 0: not counted (the detector then goes by ticks alone).
    std::uint32_t samples = 0;
    std::int64_t spanMs = 0;  // from the first of those samples to the newest
    // Only a slow clock stands behind it, no reason the GPU gives (heat at most: low_sm_clock,
    // or thermal_throttle from a page without clock event reasons): it is listed, and its event
    // opens, once its samples span StragglerOptions::lowClockSpanMs.
    bool clockOnly = false;
};

// Whether a suspect's evidence has held long enough to be listed and its event opened
// (StragglerOptions::minSamples, lowClockSpanMs). True where the caller counts no samples.
bool persisted(const StragglerSuspect& s, const StragglerOptions& options);

// Ranks the suspects of one job (names[i] is rank i's GPU; nicNames[i] its NIC cable or empty;
// hostNames[h] the host of the ranks whose RankSample::host is h — empty: no host-level cause).
std::vector<StragglerSuspect> rankStragglers(std::span<const std::string> names,
                                             std::span<const std::string> nicNames,
                                             std::span<const RankSample> samples,
                                             const StragglerOptions& options = {},
                                             std::span<const std::string> hostNames = {});

// Ranks the uplinks of one job (names[i] is link i) against each other: a PFC storm, link
// errors, a flapping optic, or a link far busier than the job's others (a noisy neighbour's
// traffic). `ranks` is the job's rank count, for the evidence. Merge with rankStragglers'
// suspects through mergeSuspects.
std::vector<StragglerSuspect> rankLinks(std::span<const std::string> names,
                                        std::span<const LinkSample> samples, std::size_t ranks,
                                        const StragglerOptions& options = {});
// Both lists as one, best first, at most options.maxSuspects.
std::vector<StragglerSuspect> mergeSuspects(std::vector<StragglerSuspect> a,
                                            std::vector<StragglerSuspect> b,
                                            const StragglerOptions& options = {});

struct StragglerTransition {
    std::string job;
    bool opened = false;  // false: closed
    StragglerSuspect suspect;
    std::string message;  // "job llama: straggler z3-r017-h1-gpu5 (thermal_throttle): ..."
};

class StragglerDetector {
public:
    explicit StragglerDetector(StragglerOptions options = {}) : options_(options) {}
    // One tick of one job: its ranked suspects now. Closes first, then opens (best first).
    std::vector<StragglerTransition> update(const std::string& job,
                                            const std::vector<StragglerSuspect>& suspects,
                                            std::int64_t nowMs);
    // The job ended: closes what is open.
    std::vector<StragglerTransition> forget(const std::string& job);
    // An event opened before this detector ran (by an earlier leader, or before a restart) on
    // `suspect`: it stays open as if opened here, and closes after closeAfterTicks without it.
    void adopt(const std::string& job, const StragglerSuspect& suspect);
    // The job's open events, highest score first (a suspect's latest score while it is one).
    std::vector<StragglerSuspect> open(const std::string& job) const;

private:
    struct Track {                 // one suspect location of one job
        StragglerSuspect suspect;  // as last ranked (what opened it, for an adopted event)
        int streak = 0;            // consecutive ticks among the suspects
        bool open = false;
        int clean = 0;  // consecutive ticks without it, while open
    };
    StragglerOptions options_;
    std::unordered_map<std::string, std::vector<Track>> jobs_;
};

}  // namespace loom::jobs
