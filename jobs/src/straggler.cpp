#include "loom/jobs/straggler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

}  // namespace

std::vector<StragglerSuspect> rankStragglers(std::span<const std::string> names,
                                             std::span<const std::string> nicNames,
                                             std::span<const RankSample> samples,
                                             const StragglerOptions& o) {
    std::vector<StragglerSuspect> out;
    const auto n = std::min(names.size(), samples.size());
    if (n < 3) return out;
    const auto clock = stat(samples, &RankSample::smClockMhz);
    const auto temp = stat(samples, &RankSample::tempC);
    const auto power = stat(samples, &RankSample::powerW);
    const auto nic = stat(samples, &RankSample::nicUtil);
    // Floors: the noise a healthy job shows even when every rank reads the same.
    const double clockScale = std::max(clock.mad, 15.0), tempScale = std::max(temp.mad, 2.0),
                 powerScale = std::max(power.mad, 15.0), nicScale = std::max(nic.mad, 3.0);
    const std::string others = "; the other " + num(static_cast<double>(n - 1)) + " ranks wait";
    for (std::size_t i = 0; i < n; ++i) {
        const auto& r = samples[i];
        // The rank's strongest signal. Its evidence text is built only when that signal can be
        // reported (a score of at least minScore): most ranks of a healthy job score a little on
        // several signals every tick, and none of that text would ever be read.
        double bestScore = 0;
        const char* bestCause = "";
        bool bestNetwork = false;
        std::string evidence;
        auto consider = [&](double score, const char* cause, auto&& makeEvidence,
                            bool network = false) {
            if (score <= bestScore) return;
            bestScore = score;
            bestCause = cause;
            bestNetwork = network;
            if (score >= o.minScore) evidence = makeEvidence();
        };
        const double zTemp =
            temp.valid && std::isfinite(r.tempC) ? (r.tempC - temp.median) / tempScale : 0;
        if (clock.valid && std::isfinite(r.smClockMhz)) {
            const double z = (clock.median - r.smClockMhz) / clockScale;
            const bool hot = zTemp >= 3;
            consider(z, hot ? "thermal_throttle" : "low_sm_clock", [&] {
                return names[i] + ": SM clock " + num(r.smClockMhz) + " MHz vs job median " +
                       num(clock.median) +
                       (hot ? ", " + num(r.tempC) + " °C vs " + num(temp.median) +
                                  " (thermal throttle)"
                            : std::string()) +
                       others;
            });
        }
        if (zTemp > 0)
            consider(zTemp * 0.8, "hot", [&] {
                return names[i] + ": " + num(r.tempC) + " °C vs job median " + num(temp.median) +
                       others;
            });
        if (power.valid && std::isfinite(r.powerW))
            consider((power.median - r.powerW) / powerScale * 0.7, "low_power", [&] {
                return names[i] + ": " + num(r.powerW) + " W vs job median " + num(power.median) +
                       others;
            });
        // Correctable errors explain a slow clock on the same GPU: they outrank it.
        if (r.eccSbePerSecond >= 5)
            consider(std::max(std::min(40.0, 8.0 + r.eccSbePerSecond / 5.0), bestScore + 1),
                     "ecc_pressure", [&] {
                         return names[i] + ": " + num(r.eccSbePerSecond) +
                                " correctable ECC errors/s (row-remap pressure)" + others;
                     });
        if (r.xid != 0)
            consider(30, "xid", [&] { return names[i] + ": XID " + num(r.xid) + others; });
        if (nic.valid && std::isfinite(r.nicUtil)) {
            // A NIC that carries a fraction of its peers' traffic: the ratio tells it even when
            // the job's rhythm (compute, then exchange) moves every NIC together.
            double z = (nic.median - r.nicUtil) / nicScale;
            if (nic.median >= 4 && r.nicUtil < 0.7 * nic.median)
                z = std::max(z, 8 + 20 * (0.7 - r.nicUtil / nic.median));
            consider(
                z, "slow_nic",
                [&] {
                    return names[i] + ": NIC at " + num(r.nicUtil) + " % vs job median " +
                           num(nic.median) + others;
                },
                true);
        }
        if (r.nicFlaps >= 1.5)
            consider(
                std::min(40.0, 8.0 + 4 * r.nicFlaps), "flapping_link",
                [&] {
                    return names[i] + ": its NIC cable went down " + num(r.nicFlaps) +
                           " times recently (flapping optic)" + others;
                },
                true);
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
        if (bestScore < o.minScore) continue;
        const bool onNic = bestNetwork && i < nicNames.size() && !nicNames[i].empty();
        out.push_back({i, onNic ? nicNames[i] : names[i], names[i], bestCause, bestScore,
                       std::move(evidence)});
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
    const std::string wait = "; the job's " + num(static_cast<double>(ranks)) + " ranks wait";
    for (std::size_t i = 0; i < n; ++i) {
        const auto& l = samples[i];
        double bestScore = 0;
        const char* bestCause = "";
        std::string evidence;
        auto consider = [&](double score, const char* cause, auto&& makeEvidence) {
            if (score <= bestScore) return;
            bestScore = score;
            bestCause = cause;
            if (score >= o.minScore) evidence = makeEvidence();  // as rankStragglers
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
        if (l.flaps >= 1.5)
            consider(std::min(40.0, 8.0 + 4 * l.flaps), "flapping_link", [&] {
                return names[i] + ": went down " + num(l.flaps) +
                       " times recently (flapping optic)" + wait;
            });
        // A noisy neighbour: the link runs full while the job's other uplinks do not (n >= 3:
        // a median of one or two links says nothing).
        if (util.valid && std::isfinite(l.util) && l.util >= 90 && l.util - util.median >= 20)
            consider(
                8.0 + (l.util - util.median) / 10 + std::min(10.0, l.discardsPerSecond / 100.0),
                "congested_link", [&] {
                    return names[i] + ": " + num(l.util) + " % busy vs the job's uplink median " +
                           num(util.median) +
                           (l.discardsPerSecond >= 1
                                ? ", " + num(l.discardsPerSecond) + " discards/s"
                                : std::string()) +
                           " (traffic from outside the job)" + wait;
                });
        if (bestScore >= o.minScore)
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
