#include "loom/jobs/straggler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

namespace loom::jobs {

namespace {

struct Stat {
    double median = 0, mad = 0;
    bool valid = false;
};

template <class Sample>
Stat stat(std::span<const Sample> s, float Sample::*field) {
    std::vector<double> v;
    v.reserve(s.size());
    for (const auto& r : s)
        if (std::isfinite(r.*field)) v.push_back(r.*field);
    Stat st;
    if (v.size() < 3) return st;
    auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    st.median = *mid;
    for (auto& x : v) x = std::abs(x - st.median);
    std::nth_element(v.begin(), mid, v.end());
    st.mad = 1.4826 * *mid;
    st.valid = true;
    return st;
}

std::string num(double v) {
    // 1,140 rather than 1140: what the evidence reads like.
    auto n = static_cast<long long>(std::llround(v));
    std::string s = std::to_string(std::llabs(n));
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
        s.insert(static_cast<std::size_t>(i), ",");
    return (n < 0 ? "-" : "") + s;
}

// NVML clock event reasons (DCGM_FI_DEV_CLOCKS_EVENT_REASONS) the finder names. sw_power_cap,
// gpu_idle and the clock settings are normal operation.
constexpr std::uint32_t kHwSlowdownBit = 0x8, kThermalBits = 0x20 | 0x40, kPowerBrakeBit = 0x80;
constexpr std::pair<std::uint32_t, std::string_view> kReasonNames[] = {
    {0x8, "hw_slowdown"}, {0x20, "sw_thermal"}, {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}};

double medianOf(std::vector<double> v) {
    if (v.empty()) return NAN;
    auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

// A job of 2 hosts has no majority: each host is compared with the job's own healthy rhythm
// on it (RankSample::hostUtilBase, hostClockBase), and is the suspect when it fell well below
// it while the other host kept its own.
void rankTwoHosts(std::span<const RankSample> samples, std::span<const std::string> hostNames,
                  const StragglerOptions& o, const std::vector<std::vector<double>>& util,
                  const std::vector<std::vector<double>>& clock, const std::vector<double>& hu,
                  const std::vector<double>& hc, const std::vector<char>& was,
                  const std::vector<std::size_t>& first, const std::vector<std::size_t>& count,
                  std::vector<StragglerSuspect>& out, std::vector<char>& suspect) {
    double ub[2] = {NAN, NAN}, cb[2] = {NAN, NAN};
    for (std::size_t h = 0; h < 2; ++h)
        if (first[h] < samples.size()) {
            ub[h] = samples[first[h]].hostUtilBase;
            cb[h] = samples[first[h]].hostClockBase;
        }
    for (std::size_t h = 0; h < 2; ++h) {
        const std::size_t k = 1 - h;
        double score = 0;
        const char* cause = "";
        std::string evidence;
        const double ratio = was[h] ? 0.8 : 0.7;
        if (std::isfinite(hu[h]) && std::isfinite(hu[k]) && ub[h] > 0 && ub[k] > 0 &&
            hu[h] < ratio * ub[h] && hu[k] >= 0.85 * ub[k]) {
            std::size_t low = 0;
            for (double u : util[h]) low += u < 0.85 * ub[h];
            if (low * 4 >= util[h].size() * 3) {
                score = std::max(std::min(40.0, 10 + 40 * (0.75 - hu[h] / ub[h])),
                                 was[h] ? 0.75 * o.minScore : o.minScore);
                cause = "host_contention";
                evidence = hostNames[h] + ": its " + num(static_cast<double>(count[h])) + " GPUs " +
                           num(hu[h]) + " % busy vs " + num(ub[h]) +
                           " in the job's own rhythm, while " + hostNames[k] +
                           " keeps its own (idle, waiting for input: host contention); the "
                           "other host waits";
            }
        }
        if (std::isfinite(hc[h]) && std::isfinite(hc[k]) && cb[h] > 0 && cb[k] > 0) {
            const double z = (cb[h] - hc[h]) / 15.0;
            std::size_t low = 0;
            for (double c : clock[h]) low += c < cb[h] - 30;
            if (z >= (was[h] ? 0.75 : 1.0) * o.minScore && cb[k] - hc[k] < 30 &&
                low * 4 >= clock[h].size() * 3 && z > score) {
                score = std::min(40.0, z);
                cause = "host_slow";
                evidence = hostNames[h] + ": its " + num(static_cast<double>(count[h])) +
                           " GPUs at " + num(hc[h]) + " MHz vs " + num(cb[h]) +
                           " in the job's own rhythm, while " + hostNames[k] +
                           " keeps its own (the whole host slow); the other host waits";
            }
        }
        if (score <= 0) continue;
        suspect[h] = 1;
        out.push_back({first[h], hostNames[h], "", cause, score, std::move(evidence)});
    }
}

// Host-level causes (issue 34 item 3), for jobs of 3 hosts or more: a host whose GPUs are
// together idler (host_contention: input, CPU or storage starves them while the other hosts
// spin in the collective) or slower (host_slow: their clocks together below the other hosts')
// than the job's hosts' median. Marks such hosts in `suspect` (by host index).
void rankHosts(std::span<const std::string> names, std::span<const RankSample> samples,
               std::span<const std::string> hostNames, const StragglerOptions& o,
               std::vector<StragglerSuspect>& out, std::vector<char>& suspect) {
    const auto nh = hostNames.size();
    suspect.assign(nh, 0);
    if (nh < 2) return;
    const auto n = std::min(names.size(), samples.size());
    std::vector<std::vector<double>> util(nh), clock(nh);
    std::vector<char> was(nh, 0);
    std::vector<std::size_t> first(nh, n), count(nh, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const auto h = samples[i].host;
        if (h >= nh) continue;
        if (std::isfinite(samples[i].util)) util[h].push_back(samples[i].util);
        if (std::isfinite(samples[i].smClockMhz)) clock[h].push_back(samples[i].smClockMhz);
        was[h] |= samples[i].suspect;
        first[h] = std::min(first[h], i);
        ++count[h];
    }
    std::vector<double> hu(nh, NAN), hc(nh, NAN), hus, hcs;
    for (std::size_t h = 0; h < nh; ++h) {
        if (util[h].size() * 4 < count[h] * 3 || util[h].size() < 2) continue;
        hu[h] = medianOf(util[h]);
        hus.push_back(hu[h]);
        if (clock[h].size() * 4 >= count[h] * 3 && clock[h].size() >= 2) {
            hc[h] = medianOf(clock[h]);
            hcs.push_back(hc[h]);
        }
    }
    if (hus.size() == 2 && nh == 2) {
        rankTwoHosts(samples, hostNames, o, util, clock, hu, hc, was, first, count, out, suspect);
        return;
    }
    if (hus.size() < 3) return;
    const double mu = medianOf(hus);
    const double mc = hcs.size() >= 3 ? medianOf(hcs) : NAN;
    const std::string wait =
        "; the other " + num(static_cast<double>(hus.size() - 1)) + " hosts wait";
    for (std::size_t h = 0; h < nh; ++h) {
        if (!std::isfinite(hu[h])) continue;
        // Enter below 70 % of the hosts' median, stay below 80 % (hysteresis).
        const double ratio = was[h] ? 0.8 : 0.7;
        double score = 0;
        const char* cause = "";
        std::string evidence;
        if (mu > 0 && hu[h] < ratio * mu) {
            // Most of the host's GPUs idle, not one (one is a GPU's own cause).
            std::size_t low = 0;
            for (double u : util[h]) low += u < 0.85 * mu;
            if (low * 4 >= util[h].size() * 3) {
                score = std::min(40.0, 10 + 40 * (0.75 - hu[h] / mu));
                score = std::max(score, was[h] ? 0.75 * o.minScore : o.minScore);
                cause = "host_contention";
                evidence = hostNames[h] + ": its " + num(static_cast<double>(count[h])) + " GPUs " +
                           num(hu[h]) + " % busy vs the job's hosts' median " + num(mu) +
                           " (idle, waiting for input: host contention)" + wait;
            }
        }
        if (std::isfinite(mc) && std::isfinite(hc[h])) {
            const double z = (mc - hc[h]) / 15.0;
            std::size_t low = 0;
            for (double c : clock[h]) low += c < mc - 30;
            if (z >= (was[h] ? 0.75 : 1.0) * o.minScore && low * 4 >= clock[h].size() * 3 &&
                z > score) {
                score = std::min(40.0, z);
                cause = "host_slow";
                evidence = hostNames[h] + ": its " + num(static_cast<double>(count[h])) +
                           " GPUs at " + num(hc[h]) + " MHz vs the job's hosts' median " + num(mc) +
                           " (the whole host slow)" + wait;
            }
        }
        if (score <= 0) continue;
        suspect[h] = 1;
        out.push_back({first[h], hostNames[h], "", cause, score, std::move(evidence)});
    }
}

}  // namespace

std::vector<StragglerSuspect> rankStragglers(std::span<const std::string> names,
                                             std::span<const std::string> nicNames,
                                             std::span<const RankSample> samples,
                                             const StragglerOptions& o,
                                             std::span<const std::string> hostNames) {
    std::vector<StragglerSuspect> out;
    const auto n = std::min(names.size(), samples.size());
    if (n < 3) return out;
    const auto clock = stat(samples, &RankSample::smClockMhz);
    const auto temp = stat(samples, &RankSample::tempC);
    const auto memTemp = stat(samples, &RankSample::memTempC);
    const auto nic = stat(samples, &RankSample::nicUtil);
    const auto wait = stat(samples, &RankSample::nicXmitWaitPerSecond);
    // Floors: the noise a healthy job shows even when every rank reads the same.
    const double clockScale = std::max(clock.mad, 15.0), tempScale = std::max(temp.mad, 2.0),
                 memTempScale = std::max(memTemp.mad, 2.0), nicScale = std::max(nic.mad, 3.0);
    // How many ranks carry each clock event reason: a reason most of the job shares (a power
    // cap on the whole job, a facility power brake) slows every rank alike, no straggler.
    std::uint32_t reasonCount[9] = {};
    for (std::size_t i = 0; i < n; ++i)
        if (const float m = samples[i].clockReasons; std::isfinite(m) && m > 0)
            for (int b = 0; b < 9; ++b)
                if (static_cast<std::uint32_t>(m) & (1u << b)) ++reasonCount[b];
    auto rankOnly = [&](std::uint32_t mask, std::uint32_t bits) {
        for (int b = 0; b < 9; ++b)
            if ((mask & bits & (1u << b)) && reasonCount[b] * 2 < n) return true;
        return false;
    };
    const std::string others = "; the other " + num(static_cast<double>(n - 1)) + " ranks wait";
    // The median NIC utilisation of each host: a NIC is slow when it carries less than its own
    // host's others too. A whole host's (or rack's) NICs reading low together are the page that
    // reports them (scraped a moment apart from the others) or the host, not a NIC.
    // The same for the NICs' wait to send (one page per host, read at one moment of the job's
    // rhythm: a host read while the job exchanges waits more on every NIC).
    std::vector<double> hostNic, hostWait;
    {
        std::vector<std::vector<double>> per, perWait;
        for (std::size_t i = 0; i < n; ++i) {
            const auto h = samples[i].host;
            if (h >= per.size()) {
                per.resize(h + 1);
                perWait.resize(h + 1);
            }
            if (std::isfinite(samples[i].nicUtil)) per[h].push_back(samples[i].nicUtil);
            if (std::isfinite(samples[i].nicXmitWaitPerSecond))
                perWait[h].push_back(samples[i].nicXmitWaitPerSecond);
        }
        hostNic.assign(per.size(), NAN);
        hostWait.assign(per.size(), NAN);
        for (std::size_t h = 0; h < per.size(); ++h) {
            if (per[h].size() >= 4) hostNic[h] = medianOf(per[h]);
            if (perWait[h].size() >= 4) hostWait[h] = medianOf(perWait[h]);
        }
    }
    // Host-level causes first (issue 34 item 3): the GPUs of one host together idler or slower
    // than the job's other hosts name the host; its GPUs are then not suspects of their own.
    std::vector<char> hostSuspect;
    if (!hostNames.empty()) rankHosts(names, samples, hostNames, o, out, hostSuspect);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& r = samples[i];
        if (r.host < hostSuspect.size() && hostSuspect[r.host]) continue;
        // Hysteresis: a suspect of the last tick stays one down to 3/4 of the threshold.
        const double need = r.suspect ? 0.75 * o.minScore : o.minScore;
        // The rank's strongest signal. Its evidence text is built only when that signal can be
        // reported: most ranks of a healthy job score a little on several signals every tick,
        // and none of that text would ever be read.
        double bestScore = 0;
        const char* bestCause = "";
        bool bestNetwork = false, bestClockOnly = false;
        std::string evidence;
        auto consider = [&](double score, const char* cause, auto&& makeEvidence,
                            bool network = false, bool clockOnly = false) {
            if (score <= bestScore) return;
            bestScore = score;
            bestCause = cause;
            bestNetwork = network;
            bestClockOnly = clockOnly;
            if (score >= need) evidence = makeEvidence();
        };
        const double zTemp =
            temp.valid && std::isfinite(r.tempC) ? (r.tempC - temp.median) / tempScale : 0;
        const double zMem = memTemp.valid && std::isfinite(r.memTempC)
                                ? (r.memTempC - memTemp.median) / memTempScale
                                : 0;
        const double zClock = clock.valid && std::isfinite(r.smClockMhz)
                                  ? (clock.median - r.smClockMhz) / clockScale
                                  : 0;
        const auto reasons = std::isfinite(r.clockReasons) && r.clockReasons > 0
                                 ? static_cast<std::uint32_t>(r.clockReasons)
                                 : 0u;
        auto clockText = [&] {
            return clock.valid && std::isfinite(r.smClockMhz)
                       ? ", SM clock " + num(r.smClockMhz) + " MHz vs job median " +
                             num(clock.median)
                       : std::string();
        };
        auto reasonText = [&](std::uint32_t bits) {
            std::string t;
            for (const auto& [bit, name] : kReasonNames)
                if (reasons & bits & bit) t += (t.empty() ? "" : ",") + std::string(name);
            return t;
        };
        // The clock event reasons the GPU gives (NVML, decoded by name), when this rank has
        // them and most of the job does not: the cause by its name.
        if (rankOnly(reasons, kThermalBits))
            consider(std::max(12.0, zClock + 1), "thermal_throttle", [&] {
                return names[i] + ": clocks held back (" + reasonText(kThermalBits) + ")" +
                       clockText() +
                       (std::isfinite(r.tempC) ? ", " + num(r.tempC) + " °C" : std::string()) +
                       (std::isfinite(r.memTempC) ? ", HBM " + num(r.memTempC) + " °C"
                                                  : std::string()) +
                       others;
            });
        if (rankOnly(reasons, kPowerBrakeBit))
            consider(std::max(12.0, zClock + 1.5), "power_brake", [&] {
                return names[i] +
                       ": clocks held back (hw_power_brake: the board's power brake "
                       "signal)" +
                       clockText() + others;
            });
        if (rankOnly(reasons, kHwSlowdownBit))
            consider(std::max(12.0, zClock + 1.25), "hw_slowdown", [&] {
                return names[i] + ": clocks held back (hw_slowdown)" + clockText() + others;
            });
        if (clock.valid && std::isfinite(r.smClockMhz)) {
            // A slow clock with a hot die or hot HBM. Heat is no reason the GPU gives: a hot
            // GPU's boost clock dips like any other's. Where its page carries the clock event
            // reasons and none is thermal, the GPU says heat is not what holds it back
            // (low_sm_clock, the heat told); where the page carries none (dcgm-exporter's stock
            // counters before 4.x), heat is the best guess at the cause (thermal_throttle). Either
            // way only the clock is measured: it must last like a bare dip
            // (StragglerOptions::lowClockSpanMs). A thermal reason on this rank is the hardware's
            // word and counts from its second sample.
            const bool hot = zTemp >= 3 || zMem >= 4;
            const bool reasonsKnown = std::isfinite(r.clockReasons);
            const bool thermalReason = (reasons & kThermalBits) != 0;
            const bool thermal = thermalReason || (hot && !reasonsKnown);
            const char* heat = thermalReason  ? " (thermal throttle)"
                               : reasonsKnown ? " (hot, but no thermal clock event reason)"
                                              : " (thermal throttle)";
            consider(
                zClock, thermal ? "thermal_throttle" : "low_sm_clock",
                [&] {
                    return names[i] + ": SM clock " + num(r.smClockMhz) + " MHz vs job median " +
                           num(clock.median) +
                           (zTemp >= 3 ? ", " + num(r.tempC) + " °C vs " + num(temp.median) + heat
                            : hot ? ", HBM " + num(r.memTempC) + " °C vs " + num(memTemp.median) +
                                        heat
                                  : std::string()) +
                           others;
                },
                false, !thermalReason);
        }
        // Correctable errors explain a slow clock on the same GPU: they outrank it.
        if (r.eccSbePerSecond >= 5)
            consider(std::max(std::min(40.0, 8.0 + r.eccSbePerSecond / 5.0), bestScore + 1),
                     "ecc_pressure", [&] {
                         return names[i] + ": " + num(r.eccSbePerSecond) +
                                " correctable ECC errors/s (row-remap pressure)" + others;
                     });
        if (r.xid != 0)
            consider(30, "xid", [&] { return names[i] + ": XID " + num(r.xid) + others; });
        // A NIC cable up below its rated speed is slow whatever its utilisation says (a port
        // trained at 200G carrying its share reads busier, not idler).
        if (std::isfinite(r.nicSpeedRatio) && r.nicSpeedRatio < 0.95)
            consider(
                20, "slow_nic",
                [&] {
                    return names[i] + ": its NIC cable is up at " + num(r.nicSpeedRatio * 100) +
                           " % of its rated speed" + others;
                },
                true);
        if (nic.valid && std::isfinite(r.nicUtil)) {
            // A NIC that carries a fraction of its peers' traffic: the ratio tells it even when
            // the job's rhythm (compute, then exchange) moves every NIC together.
            double z = (nic.median - r.nicUtil) / nicScale;
            const double ratio = r.suspect ? 0.8 : 0.7;
            if (nic.median >= 4 && r.nicUtil < ratio * nic.median)
                z = std::max(z, 8 + 20 * (0.7 - r.nicUtil / nic.median));
            // Its own host's NICs carry their share: the NIC alone is slow.
            const double host = r.host < hostNic.size() ? hostNic[r.host] : NAN;
            if (std::isfinite(host) && r.nicUtil >= ratio * host) z = 0;
            consider(
                z, "slow_nic",
                [&] {
                    return names[i] + ": NIC at " + num(r.nicUtil) + " % vs job median " +
                           num(nic.median) + others;
                },
                true);
        }
        // The host NIC waits to send far longer than the job's others (port_transmit_wait):
        // it cannot put its share on the wire. Ten times the job's median and its own host's
        // (read at the same moment), and at least 10^5 ticks/s (a healthy job's NICs wait too,
        // at about the same rate as each other).
        if (std::isfinite(r.nicXmitWaitPerSecond) && r.nicXmitWaitPerSecond >= 1e5) {
            const double host = r.host < hostWait.size() ? hostWait[r.host] : NAN;
            const double base =
                std::max({wait.valid ? wait.median : 0.0, std::isfinite(host) ? host : 0.0, 1e4});
            if (r.nicXmitWaitPerSecond >= 10 * base)
                consider(
                    std::min(20.0, 4.0 + 4 * std::log10(r.nicXmitWaitPerSecond / base)), "slow_nic",
                    [&] {
                        return names[i] + ": its NIC waited " + num(r.nicXmitWaitPerSecond) +
                               " ticks/s to send (port_transmit_wait) vs job median " +
                               num(wait.valid ? wait.median : 0) + others;
                    },
                    true);
        }
        if (r.pfcPerSecond >= 1000)
            consider(
                std::min(40.0, 8.0 + std::log10(r.pfcPerSecond)), "pfc_storm",
                [&] {
                    return names[i] + ": " + num(r.pfcPerSecond) +
                           " PFC pause frames/s on its NIC" + others;
                },
                true);
        if (r.linkErrorsPerSecond >= 1)
            consider(
                std::min(40.0, 8.0 + r.linkErrorsPerSecond), "link_errors",
                [&] {
                    return names[i] + ": " + num(r.linkErrorsPerSecond) +
                           " link errors/s on its NIC cable" + others;
                },
                true);
        // A flap is the evidence from the first one on (a link that went down and came back);
        // the errors an optic makes while it flaps are its symptom: the flap outranks them.
        if (r.nicFlaps >= 0.7)
            consider(
                std::max(std::min(40.0, 10.0 + 4 * r.nicFlaps), bestNetwork ? bestScore + 1 : 0),
                "flapping_link",
                [&] {
                    return names[i] + ": its NIC cable went down " +
                           num(std::ceil(r.nicFlaps - 0.5)) + " time(s) recently (flapping optic)" +
                           others;
                },
                true);
        if (bestScore < need) continue;
        const bool onNic = bestNetwork && i < nicNames.size() && !nicNames[i].empty();
        out.push_back({i, onNic ? nicNames[i] : names[i], names[i], bestCause, bestScore,
                       std::move(evidence)});
        out.back().clockOnly = bestClockOnly;
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.score != b.score ? a.score > b.score : a.rank < b.rank;
    });
    if (out.size() > o.maxSuspects) out.resize(o.maxSuspects);
    return out;
}

std::vector<StragglerSuspect> rankLinks(std::span<const std::string> names,
                                        std::span<const LinkSample> samples, std::size_t ranks,
                                        const StragglerOptions& o) {
    std::vector<StragglerSuspect> out;
    const auto n = std::min(names.size(), samples.size());
    if (n == 0) return out;
    const auto util = stat(samples, &LinkSample::util);
    const auto disc = stat(samples, &LinkSample::discardsPerSecond);
    const std::string wait = "; the job's " + num(static_cast<double>(ranks)) + " ranks wait";
    for (std::size_t i = 0; i < n; ++i) {
        const auto& l = samples[i];
        const double need = l.suspect ? 0.75 * o.minScore : o.minScore;
        double bestScore = 0;
        const char* bestCause = "";
        std::string evidence;
        auto consider = [&](double score, const char* cause, auto&& makeEvidence) {
            if (score <= bestScore) return;
            bestScore = score;
            bestCause = cause;
            if (score >= need) evidence = makeEvidence();  // as rankStragglers
        };
        if (l.pfcPerSecond >= 1000)
            consider(std::min(40.0, 8.0 + std::log10(l.pfcPerSecond)), "pfc_storm", [&] {
                return names[i] + ": " + num(l.pfcPerSecond) + " PFC pause frames/s (PFC storm)" +
                       wait;
            });
        if (l.errorsPerSecond >= 1)
            consider(std::min(40.0, 8.0 + l.errorsPerSecond), "link_errors", [&] {
                return names[i] + ": " + num(l.errorsPerSecond) + " link errors/s" + wait;
            });
        if (l.flaps >= 0.7)  // from the first flap on; it outranks the errors it makes
            consider(std::max(std::min(40.0, 10.0 + 4 * l.flaps), bestScore + 1), "flapping_link",
                     [&] {
                         return names[i] + ": went down " + num(std::ceil(l.flaps - 0.5)) +
                                " time(s) recently (flapping optic)" + wait;
                     });
        // A noisy neighbour: the link far busier than the job's other uplinks (their median and
        // spread, time-smoothed: no absolute floor for jitter to cross), or dropping what they
        // do not. Enters 20 points (or 4 spreads) above the median, stays down to 60 % of that.
        if (util.valid && std::isfinite(l.util)) {
            const double excess = l.util - util.median;
            const double enter = std::max(20.0, 4 * util.mad);
            const double bar = l.suspect ? 0.6 * enter : enter;
            const double discards = std::isfinite(l.discardsPerSecond) ? l.discardsPerSecond : 0.0;
            if (excess >= bar)
                consider(
                    std::max(need, 8.0 + (excess - enter) / 5 + std::min(10.0, discards / 100.0)),
                    "congested_link", [&] {
                        return names[i] + ": " + num(l.util) +
                               " % busy vs the job's uplink median " + num(util.median) +
                               (discards >= 1 ? ", " + num(discards) + " discards/s"
                                              : std::string()) +
                               " (traffic from outside the job)" + wait;
                    });
        }
        if (std::isfinite(l.discardsPerSecond) && l.discardsPerSecond >= 100 &&
            (!disc.valid || l.discardsPerSecond >= 10 * std::max(1.0, disc.median)))
            consider(std::min(40.0, 6.0 + 2 * std::log10(l.discardsPerSecond)), "congested_link",
                     [&] {
                         return names[i] + ": " + num(l.discardsPerSecond) +
                                " discards/s vs the job's uplink median " +
                                num(disc.valid ? disc.median : 0) +
                                (std::isfinite(l.util) ? ", " + num(l.util) + " % busy"
                                                       : std::string()) +
                                " (traffic from outside the job)" + wait;
                     });
        if (bestScore >= need)
            out.push_back({i, names[i], "", bestCause, bestScore, std::move(evidence)});
    }
    return mergeSuspects(std::move(out), {}, o);
}

std::vector<StragglerSuspect> mergeSuspects(std::vector<StragglerSuspect> a,
                                            std::vector<StragglerSuspect> b,
                                            const StragglerOptions& o) {
    a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
    std::stable_sort(a.begin(), a.end(),
                     [](const auto& x, const auto& y) { return x.score > y.score; });
    if (a.size() > o.maxSuspects) a.resize(o.maxSuspects);
    return a;
}

bool persisted(const StragglerSuspect& s, const StragglerOptions& o) {
    if (s.samples == 0) return true;
    if (s.samples < o.minSamples) return false;
    return !s.clockOnly || s.spanMs >= o.lowClockSpanMs;
}

std::vector<StragglerTransition> StragglerDetector::update(
    const std::string& job, const std::vector<StragglerSuspect>& suspects, std::int64_t) {
    std::vector<StragglerTransition> out;
    auto& tracks = jobs_[job];
    auto find = [&](const std::string& location) {
        return std::find_if(tracks.begin(), tracks.end(),
                            [&](const Track& t) { return t.suspect.location == location; });
    };
    std::vector<char> seen(tracks.size(), 0);
    std::vector<std::size_t> ranked;  // the track of each suspect, in suspect order
    for (const auto& s : suspects) {
        auto it = find(s.location);
        if (it == tracks.end()) {
            tracks.push_back({s, 0, false, 0});
            seen.push_back(0);
            it = tracks.end() - 1;
        }
        const auto k = static_cast<std::size_t>(it - tracks.begin());
        if (seen[k]) continue;  // a location listed twice counts once
        seen[k] = 1;
        ++it->streak;
        it->clean = 0;
        it->suspect = s;
        ranked.push_back(k);
    }
    std::vector<Track> kept;
    kept.reserve(tracks.size());
    std::vector<std::size_t> newIndex(tracks.size(), 0);
    for (std::size_t k = 0; k < tracks.size(); ++k) {
        auto& t = tracks[k];
        if (!seen[k]) {
            t.streak = 0;
            if (!t.open) continue;  // a blip that never opened: forgotten
            if (++t.clean >= options_.closeAfterTicks) {
                out.push_back({job, false, t.suspect,
                               "job " + job + ": straggler " + t.suspect.location + " recovered"});
                continue;
            }
        }
        newIndex[k] = kept.size();
        kept.push_back(std::move(t));
    }
    tracks = std::move(kept);
    for (auto k : ranked) {
        auto& t = tracks[newIndex[k]];
        if (t.open || t.streak < options_.openAfterTicks) continue;
        if (!persisted(t.suspect, options_)) continue;
        t.open = true;
        const auto& s = t.suspect;
        out.push_back(
            {job, true, s,
             "job " + job + ": straggler " + s.location + " (" + s.cause + "): " + s.evidence});
    }
    if (tracks.empty()) jobs_.erase(job);
    return out;
}

void StragglerDetector::adopt(const std::string& job, const StragglerSuspect& suspect) {
    auto& tracks = jobs_[job];
    for (auto& t : tracks)
        if (t.suspect.location == suspect.location) {
            t.open = true;
            t.clean = 0;
            return;
        }
    tracks.push_back({suspect, 0, true, 0});
}

std::vector<StragglerSuspect> StragglerDetector::open(const std::string& job) const {
    std::vector<StragglerSuspect> out;
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return out;
    for (const auto& t : it->second)
        if (t.open) out.push_back(t.suspect);
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.score > b.score; });
    return out;
}

std::vector<StragglerTransition> StragglerDetector::forget(const std::string& job) {
    std::vector<StragglerTransition> out;
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return out;
    for (const auto& t : it->second)
        if (t.open)
            out.push_back({job, false, t.suspect,
                           "job " + job + ": straggler " + t.suspect.location + " (job ended)"});
    jobs_.erase(it);
    return out;
}

}  // namespace loom::jobs
