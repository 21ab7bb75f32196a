#include "loom/jobs/straggler_finder.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::jobs {

namespace {

using telemetry::GpuField;
using telemetry::kNoIndex;
using telemetry::PortCounter;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// Port utilisation is smoothed in time, not per tick (issue 34 item 2): each new sample of a
// port's octets (the hub's rate over that counter's own interval) moves the average by
// 1 - exp(-interval / kUtilTauS). Weighting by time makes ports sampled at different moments of
// the job's compute/exchange rhythm agree; the time constant bounds what a page scraped a
// second later than its peers reads differently at an exchange's edge (at 10 s, a second of an
// 80-point swing is 8 points; the NICs of one host share that page, and a NIC is compared with
// its host's others too). NICs and uplinks alike. A NIC that slows shows in its speed (below
// rated) at once; its utilisation share takes ~6 s to cross the threshold.
constexpr double kUtilTauS = 10;
// A port or GPU value older than this is unknown (not a zero): its exporter went quiet.
constexpr std::int64_t kStaleMs = 15'000;
// The time constant of a host's healthy rhythm (RankSample::hostUtilBase).
constexpr double kBaseTauS = 60;
// Decay of the flap count per tick (about 7 s of half-life).
constexpr float kFlapDecay = 0.9f;

// One port as a job sees it: its own average, from the moment the port joined the job.
struct JobPort {
    float util = kNaN;
    std::int64_t atMs = 0;  // the octet sample the average last took
};

struct Resolved {
    FinderJob job;
    std::int64_t firstMs = 0;  // the job's first tick: ranked from firstMs + warmupMs
    std::int64_t lastTickMs = 0;
    std::vector<std::uint32_t> gpus;
    std::vector<std::string> gpuNames, nicNames;
    std::vector<std::uint32_t> nicPorts;  // kNoIndex: no NIC cable known
    std::vector<std::string> uplinkNames;
    std::vector<std::uint32_t> uplinkPorts;
    std::vector<RankSample> ranks;
    std::vector<LinkSample> links;
    std::vector<std::string> hostNames;  // the job's hosts found in the layout
    std::vector<std::uint16_t> hostOf;   // rank -> its host, an index of hostNames
    std::vector<JobPort> nicState, uplinkState;
    std::vector<JobPort> nicEndState;       // per rank: the host end's utilisation (node_exporter)
    std::vector<std::string> lastSuspects;  // locations of the last tick's suspects
    std::vector<std::int64_t> gpuAtMs;      // per rank: its GPU's newest sample
    // Per host: shared (the job shares its hosts, or another listed job holds this one). Per
    // rank: from when its NIC's utilisation is compared again (a warm-up after sharing ends).
    std::vector<char> hostShared;
    std::vector<std::int64_t> nicFromMs;
    // Per suspect location of the last tick: the sample its evidence came from and in how many
    // distinct samples in a row it has been a suspect (StragglerOptions::minSamples).
    struct Persist {
        std::string location;
        std::int64_t atMs = 0, firstMs = 0;
        std::uint32_t samples = 0;
    };
    std::vector<Persist> persist;
    // Per host: the job's own rhythm there (median GPU utilisation and SM clock, averaged over
    // kBaseTauS while the host is no suspect): a job of 2 hosts compares against it.
    std::vector<float> hostUtilBase, hostClockBase;
};

struct PortState {  // the port itself, whatever job it serves
    float flaps = 0;
    std::uint8_t oper = 0;  // 0 unknown, 1 up, 2 down
};

struct NicEndState {  // the host end of a GPU's NIC link (node_exporter), whatever job
    float flaps = 0;
    std::int8_t up = -1;
    std::int64_t flapAtMs = 0;  // the last link_downed rise counted
};

// The time-weighted average of `s` after the hub's reading `rate` (utilisation and the time
// of its octet sample): only a new sample moves it; none for kStaleMs makes it unknown.
// A sample taken before `sinceMs` (the job's start) is another job's, or an idle port's: not
// this job's baseline.
float smooth(JobPort& s, float util, std::int64_t utilAtMs, std::int64_t sinceMs,
             std::int64_t nowMs) {
    if (utilAtMs != 0 && utilAtMs >= sinceMs && utilAtMs != s.atMs && std::isfinite(util)) {
        if (s.atMs == 0 || !std::isfinite(s.util) || utilAtMs < s.atMs) {
            s.util = util;
        } else {
            const double dt = static_cast<double>(utilAtMs - s.atMs) / 1000.0;
            const auto a = static_cast<float>(1 - std::exp(-dt / kUtilTauS));
            s.util += a * (util - s.util);
        }
        s.atMs = utilAtMs;
    }
    if (s.atMs == 0 || nowMs - s.atMs > kStaleMs) return kNaN;
    return s.util;
}

double medianInPlace(std::vector<double>& v) {
    if (v.empty()) return NAN;
    auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

// Moves each host's healthy rhythm towards its GPUs' medians now (not while the host is a
// suspect: a slow host must not become its own baseline) and hands it to its ranks.
void updateHostBase(Resolved& r, const std::unordered_set<std::string_view>& was,
                    std::int64_t dtMs) {
    const auto nh = r.hostNames.size();
    if (r.hostUtilBase.size() != nh) {
        r.hostUtilBase.assign(nh, kNaN);
        r.hostClockBase.assign(nh, kNaN);
    }
    std::vector<std::vector<double>> u(nh), c(nh);
    for (std::size_t i = 0; i < r.ranks.size(); ++i) {
        // Only what the GPU reported since the job began: the values a host's page last sent
        // before it (another job's, or idle) are no rhythm of this job.
        if (r.gpuAtMs[i] < r.firstMs) continue;
        const auto h = r.hostOf[i];
        if (std::isfinite(r.ranks[i].util)) u[h].push_back(r.ranks[i].util);
        if (std::isfinite(r.ranks[i].smClockMhz)) c[h].push_back(r.ranks[i].smClockMhz);
    }
    const auto a = static_cast<float>(
        1 - std::exp(-std::clamp(static_cast<double>(dtMs), 0.0, 10'000.0) / 1000 / kBaseTauS));
    for (std::size_t h = 0; h < nh; ++h) {
        if (was.contains(r.hostNames[h])) continue;
        auto move = [&](float& base, std::vector<double>& v) {
            const double m = medianInPlace(v);
            if (!std::isfinite(m)) return;
            base = std::isfinite(base) ? base + a * (static_cast<float>(m) - base)
                                       : static_cast<float>(m);
        };
        move(r.hostUtilBase[h], u[h]);
        move(r.hostClockBase[h], c[h]);
    }
    for (std::size_t i = 0; i < r.ranks.size(); ++i) {
        r.ranks[i].hostUtilBase = r.hostUtilBase[r.hostOf[i]];
        r.ranks[i].hostClockBase = r.hostClockBase[r.hostOf[i]];
    }
}

float fresh(float v, std::int64_t atMs, std::int64_t nowMs) {
    return atMs != 0 && nowMs - atMs <= kStaleMs && std::isfinite(v) ? v : 0.f;
}

}  // namespace

struct StragglerFinder::Impl {
    StragglerOptions options;
    StragglerDetector detector;
    std::vector<FinderJob> jobs;
    std::vector<std::string> gone;  // jobs to forget at the next tick
    bool dirty = true;

    std::shared_ptr<const telemetry::HallLayout> layout;
    std::int64_t builtVersion = -1;
    std::vector<std::uint32_t> gpuNicPort;                // GPU -> its NIC cable's switch port
    std::vector<std::uint32_t> gpuNicLink;                // GPU -> its NIC cable
    std::vector<std::vector<std::uint32_t>> rackUplinks;  // rack -> its RTSW's uplinks
    std::vector<std::uint32_t> uplinkPort;                // link -> its RTSW-side port

    std::vector<Resolved> resolved;
    std::vector<std::uint32_t> allGpus, allPorts;
    std::vector<std::uint32_t> gpuSlot, portSlot;  // GPU / port -> index in allGpus / allPorts
    std::vector<telemetry::CounterRate> sbe;       // per allGpus
    std::vector<telemetry::TelemetryHub::PortRates> rates;  // per allPorts
    std::vector<PortState> ports;                           // per port of the layout
    std::vector<telemetry::TelemetryHub::NicEnd> nicEnds;   // per allGpus
    std::vector<NicEndState> nicEndFlaps;                   // per GPU of the layout

    std::vector<JobSuspects> current;

    explicit Impl(StragglerOptions o) : options(o), detector(o) {}

    void buildIndex(const telemetry::HallLayout& L) {
        gpuNicPort.assign(L.gpuCount(), kNoIndex);
        gpuNicLink.assign(L.gpuCount(), kNoIndex);
        rackUplinks.assign(L.racks().size(), {});
        uplinkPort.assign(L.linkCount(), kNoIndex);
        for (std::uint32_t l = 0; l < L.linkCount(); ++l) {
            const auto& k = L.links()[l];
            const auto port = k.aPort != kNoIndex ? k.aPort : k.bPort;
            if (k.gpu != kNoIndex && k.gpu < L.gpuCount()) {
                gpuNicPort[k.gpu] = port;
                gpuNicLink[k.gpu] = l;
            } else if (k.tier == 1 && k.rackIndex < L.racks().size()) {
                const auto rtsw = L.racks()[k.rackIndex].rtswIndex;
                auto p = port;
                for (auto q : {k.aPort, k.bPort})
                    if (q != kNoIndex && L.ports()[q].switchIndex == rtsw) p = q;
                uplinkPort[l] = p;
                rackUplinks[k.rackIndex].push_back(l);
            }
        }
        ports.assign(L.portCount(), {});
        nicEndFlaps.assign(L.gpuCount(), {});
        resolved.clear();  // another structure: every job starts afresh
    }

    // The jobs of the list resolved to GPUs, NIC ports and uplinks. A job already resolved with
    // the same hosts keeps its state (averages, warm-up); a new job, or one whose hosts
    // changed, starts fresh: its ports' averages begin with its own first samples.
    void resolve(const telemetry::HallLayout& L, std::int64_t nowMs) {
        std::unordered_map<std::string, Resolved> before;
        for (auto& r : resolved) before.emplace(r.job.name, std::move(r));
        resolved.clear();
        for (const auto& j : jobs) {
            if (auto it = before.find(j.name); it != before.end() && it->second.job == j) {
                resolved.push_back(std::move(it->second));
                continue;
            }
            Resolved r;
            r.job = j;
            r.firstMs = nowMs;
            std::vector<std::uint32_t> racks;
            std::uint16_t hostIndex = 0;
            for (const auto& h : j.hosts) {
                const auto hi = L.hostByName(h);
                if (hi == kNoIndex) continue;
                for (int k = 0; k < 16; ++k) {
                    const auto g = L.gpuOfHost(hi, k);
                    if (g == kNoIndex) continue;
                    r.hostOf.push_back(hostIndex);
                    r.gpus.push_back(g);
                    r.gpuNames.push_back(L.gpuNames()[g]);
                    const auto nl = gpuNicLink[g];
                    r.nicNames.push_back(nl == kNoIndex ? std::string() : L.links()[nl].name);
                    r.nicPorts.push_back(gpuNicPort[g]);
                    const auto rack = L.gpuRack()[g];
                    if (racks.empty() || racks.back() != rack) racks.push_back(rack);
                }
                r.hostNames.push_back(h);
                ++hostIndex;
            }
            std::sort(racks.begin(), racks.end());
            racks.erase(std::unique(racks.begin(), racks.end()), racks.end());
            for (auto rack : racks)
                for (auto l : rackUplinks[rack]) {
                    r.uplinkNames.push_back(L.links()[l].name);
                    r.uplinkPorts.push_back(uplinkPort[l]);
                }
            r.ranks.resize(r.gpus.size());
            r.links.resize(r.uplinkPorts.size());
            r.nicState.resize(r.gpus.size());
            r.nicEndState.resize(r.gpus.size());
            r.gpuAtMs.resize(r.gpus.size());
            r.nicFromMs.assign(r.gpus.size(), 0);
            r.uplinkState.resize(r.uplinkPorts.size());
            resolved.push_back(std::move(r));
        }
        // Shared hosts: a job's own flag, or a host more than one listed job holds.
        std::unordered_map<std::string_view, int> holders;
        for (const auto& r : resolved)
            for (const auto& h : r.hostNames) ++holders[h];
        for (auto& r : resolved) {
            r.hostShared.assign(r.hostNames.size(), 0);
            for (std::size_t h = 0; h < r.hostNames.size(); ++h)
                r.hostShared[h] = r.job.sharesHosts || holders[r.hostNames[h]] > 1;
        }
        std::unordered_set<std::uint32_t> gpuSet, portSet;
        for (const auto& r : resolved) {
            gpuSet.insert(r.gpus.begin(), r.gpus.end());
            for (auto p : r.nicPorts)
                if (p != kNoIndex) portSet.insert(p);
            for (auto p : r.uplinkPorts)
                if (p != kNoIndex) portSet.insert(p);
        }
        allGpus.assign(gpuSet.begin(), gpuSet.end());
        allPorts.assign(portSet.begin(), portSet.end());
        std::sort(allGpus.begin(), allGpus.end());
        std::sort(allPorts.begin(), allPorts.end());
        gpuSlot.assign(L.gpuCount(), kNoIndex);
        portSlot.assign(L.portCount(), kNoIndex);
        for (std::uint32_t i = 0; i < allGpus.size(); ++i) gpuSlot[allGpus[i]] = i;
        for (std::uint32_t i = 0; i < allPorts.size(); ++i) portSlot[allPorts[i]] = i;
    }

    // The time of the sample a suspect's evidence comes from: its GPU's page for a GPU's own
    // cause or a host's (one dcgm-exporter page per host), the port's counter behind a network
    // cause (octets, speed and oper status come with the interface counters; PFC, errors and
    // discards each with their own). 0: unknown.
    std::int64_t evidenceMs(const Resolved& r, const StragglerSuspect& s) const {
        auto port = [&](std::uint32_t p) -> const telemetry::TelemetryHub::PortRates* {
            return p != kNoIndex && portSlot[p] != kNoIndex ? &rates[portSlot[p]] : nullptr;
        };
        auto byCause = [&](const telemetry::TelemetryHub::PortRates& pr) {
            const std::string_view c = s.cause;
            std::int64_t t = c == "pfc_storm"        ? pr.pfcAtMs
                             : c == "link_errors"    ? pr.errorsAtMs
                             : c == "congested_link" ? std::max(pr.utilAtMs, pr.discardsAtMs)
                                                     : pr.utilAtMs;
            return t != 0 ? t : std::max(pr.utilAtMs, pr.atMs);
        };
        if (s.gpu.empty()) {
            if (s.rank < r.uplinkNames.size() && r.uplinkNames[s.rank] == s.location) {
                const auto* pr = port(r.uplinkPorts[s.rank]);
                return pr ? byCause(*pr) : 0;
            }
            return s.rank < r.gpuAtMs.size() ? r.gpuAtMs[s.rank] : 0;  // a host: its page
        }
        if (s.rank >= r.gpus.size()) return 0;
        if (s.location == r.nicNames[s.rank]) {
            const auto* pr = port(r.nicPorts[s.rank]);
            std::int64_t t = pr ? byCause(*pr) : 0;
            // The host end's page, for what it reports too (not PFC).
            if (const auto k = gpuSlot[r.gpus[s.rank]]; k != kNoIndex && s.cause != "pfc_storm")
                t = std::max({t, nicEnds[k].utilAtMs, nicEnds[k].atMs});
            return t;
        }
        return r.gpuAtMs[s.rank];
    }

    // Counts, per suspect location, the distinct samples in a row its evidence held in
    // (StragglerSuspect::samples). A location missing from a tick's suspects starts again.
    void countSamples(Resolved& r, std::vector<StragglerSuspect>& suspects, std::int64_t nowMs) {
        std::vector<Resolved::Persist> next;
        next.reserve(suspects.size());
        for (auto& s : suspects) {
            // Unknown time: each tick counts as a sample (what the detector did before).
            std::int64_t at = evidenceMs(r, s);
            if (at == 0) at = nowMs;
            std::uint32_t n = 1;
            std::int64_t first = at;
            for (const auto& p : r.persist)
                if (p.location == s.location) {
                    n = at > p.atMs ? p.samples + 1 : std::max<std::uint32_t>(p.samples, 1);
                    if (at < p.atMs) at = p.atMs;
                    first = p.firstMs;
                    break;
                }
            s.samples = n;
            s.spanMs = at - first;
            next.push_back({s.location, at, first, n});
        }
        r.persist = std::move(next);
    }

    // What the hub says of every GPU and port a job reads, once per tick: the counters' rates
    // as the hub keeps them (each over its own samples: issue 34 item 1) and link flaps.
    void sample(const telemetry::TelemetryHub& hub, std::int64_t nowMs) {
        hub.gpuRates(allGpus, GpuField::EccSbe, sbe);
        hub.portRates(allPorts, rates);
        // The host ends: a link_downed_total rise or ACTIVE -> not, once per tick, is a flap.
        hub.nicEnds(allGpus, nicEnds);
        for (std::size_t k = 0; k < allGpus.size(); ++k) {
            auto& f = nicEndFlaps[allGpus[k]];
            const auto& e = nicEnds[k];
            f.flaps *= kFlapDecay;
            // A rise seen for the first time counts when it is recent (not a job's history).
            const bool rose = e.flapAtMs != 0 && e.flapAtMs != f.flapAtMs &&
                              (f.flapAtMs != 0 || nowMs - e.flapAtMs <= kStaleMs);
            const bool fell = f.up == 1 && e.up == 0;
            if (rose || fell) f.flaps += 1;
            if (e.flapAtMs != 0) f.flapAtMs = e.flapAtMs;
            if (e.up >= 0) f.up = e.up;
        }
        for (auto p : allPorts) {
            auto& s = ports[p];
            s.flaps *= kFlapDecay;
            const double oper = hub.portValue(p, PortCounter::OperStatus);
            if (std::isfinite(oper)) {
                const std::uint8_t now = oper == 1 ? 1 : 2;
                if (s.oper == 1 && now == 2) s.flaps += 1;
                s.oper = now;
            }
        }
    }
};

StragglerFinder::StragglerFinder(StragglerOptions options)
    : impl_(std::make_unique<Impl>(options)) {}
StragglerFinder::~StragglerFinder() = default;
StragglerFinder::StragglerFinder(StragglerFinder&&) noexcept = default;
StragglerFinder& StragglerFinder::operator=(StragglerFinder&&) noexcept = default;

void StragglerFinder::setJobs(std::vector<FinderJob> jobs) {
    auto& m = *impl_;
    // Unchanged: the resolved GPUs, NIC ports and uplinks stay (resolving builds every rank's
    // names again).
    if (jobs == m.jobs) return;
    std::unordered_set<std::string> now;
    for (const auto& j : jobs) now.insert(j.name);
    for (const auto& j : m.jobs)
        if (!now.contains(j.name)) m.gone.push_back(j.name);
    m.jobs = std::move(jobs);
    m.dirty = true;
}

std::vector<StragglerTransition> StragglerFinder::tick(const telemetry::TelemetryHub& hub,
                                                       std::int64_t nowMs) {
    auto& m = *impl_;
    std::vector<StragglerTransition> out;
    auto record = [&](std::vector<StragglerTransition> ts) {
        for (auto& t : ts) out.push_back(std::move(t));
    };
    for (const auto& g : m.gone) record(m.detector.forget(g));
    m.gone.clear();

    auto L = hub.layout();
    if (!L) return out;
    if (L->layoutVersion() != m.builtVersion || L->gpuCount() != m.gpuNicPort.size()) {
        m.buildIndex(*L);
        m.builtVersion = L->layoutVersion();
        m.dirty = true;
    }
    m.layout = L;
    if (m.dirty) {
        m.resolve(*L, nowMs);
        m.dirty = false;
    }
    m.sample(hub, nowMs);

    m.current.clear();
    m.current.reserve(m.resolved.size());
    for (auto& r : m.resolved) {
        // Hysteresis: last tick's suspects of this job stay suspects at lower thresholds.
        std::unordered_set<std::string_view> was(r.lastSuspects.begin(), r.lastSuspects.end());
        for (std::size_t i = 0; i < r.gpus.size(); ++i) {
            const auto g = r.gpus[i];
            auto& s = r.ranks[i];
            s = {};
            r.gpuAtMs[i] = hub.gpuSampleMs(g);
            // A GPU whose page stopped naming it (dcgm-exporter lost it, the exporter is down)
            // is unknown after kStaleMs, not frozen at its last values.
            const bool gpuFresh = r.gpuAtMs[i] != 0 && nowMs - r.gpuAtMs[i] <= kStaleMs;
            if (gpuFresh) {
                s.smClockMhz = static_cast<float>(hub.gpuValue(g, GpuField::SmClock));
                s.tempC = static_cast<float>(hub.gpuValue(g, GpuField::Temp));
                s.memTempC = static_cast<float>(hub.gpuValue(g, GpuField::MemTemp));
                s.powerW = static_cast<float>(hub.gpuValue(g, GpuField::Power));
                s.util = static_cast<float>(hub.gpuValue(g, GpuField::Util));
                s.clockReasons = static_cast<float>(hub.gpuValue(g, GpuField::ClockEventReasons));
                const double xid = hub.gpuValue(g, GpuField::Xid);
                s.xid = std::isfinite(xid) ? static_cast<float>(xid) : 0;
            }
            const auto k = m.gpuSlot[g];
            if (k != kNoIndex) {
                const auto& e = m.sbe[k];
                s.eccSbePerSecond = fresh(static_cast<float>(e.perSecond), e.atMs, nowMs);
            }
            s.host = r.hostOf[i];
            s.suspect = was.contains(r.gpuNames[i]) || was.contains(r.nicNames[i]) ||
                        was.contains(r.hostNames[s.host]);
            // A shared host's NIC carries another job's traffic too: its utilisation (and its
            // wait to send) says nothing against this job's median. Its averages start afresh
            // when the sharing ends and are compared a warm-up later, as a new job's.
            const bool shared = r.hostShared[s.host];
            if (shared) {
                r.nicState[i] = {};
                r.nicEndState[i] = {};
                r.nicFromMs[i] = nowMs + m.options.warmupMs;
            }
            float util = kNaN, speedRatio = kNaN;
            const auto p = r.nicPorts[i];
            const auto rated = p != kNoIndex ? L->ports()[p].speedGbps : 0;
            if (p != kNoIndex && m.portSlot[p] != kNoIndex) {
                // The switch end (snmp_exporter's IF-MIB, a switch agent's PFC counters).
                const auto& pr = m.rates[m.portSlot[p]];
                if (!shared) util = smooth(r.nicState[i], pr.util, pr.utilAtMs, r.firstMs, nowMs);
                s.pfcPerSecond = fresh(pr.pfc, pr.atMs, nowMs);
                s.linkErrorsPerSecond = fresh(pr.errors, pr.atMs, nowMs);
                s.nicFlaps = m.ports[p].flaps;
                // A port up below its rated speed (ifHighSpeed / loom_port_speed_bps against
                // the inventory's): trained down, whatever its utilisation says.
                const double speed = hub.portValue(p, PortCounter::SpeedBps);
                const auto seen = std::max(pr.utilAtMs, pr.atMs);
                if (std::isfinite(speed) && speed > 0 && rated > 0 && seen != 0 &&
                    nowMs - seen <= kStaleMs)
                    speedRatio = static_cast<float>(speed / (rated * 1e9));
            }
            if (k != kNoIndex) {
                // The host end (node_exporter's InfiniBand collector): the only view of a NIC
                // whose switch is not scraped, and a second one where it is.
                const auto& ne = m.nicEnds[k];
                const float endUtil =
                    shared ? kNaN
                           : smooth(r.nicEndState[i], ne.util, ne.utilAtMs, r.firstMs, nowMs);
                if (!std::isfinite(util)) util = endUtil;
                const auto seen = std::max(ne.utilAtMs, ne.atMs);
                if (seen != 0 && nowMs - seen <= kStaleMs) {
                    s.linkErrorsPerSecond =
                        std::max(s.linkErrorsPerSecond, fresh(ne.rcvErrors, ne.atMs, nowMs));
                    if (!shared && ne.atMs != 0 && nowMs - ne.atMs <= kStaleMs &&
                        std::isfinite(ne.xmitWait))
                        s.nicXmitWaitPerSecond = ne.xmitWait;
                    if (ne.speedBytes > 0 && rated > 0) {
                        const auto r2 = static_cast<float>(ne.speedBytes * 8 / (rated * 1e9));
                        speedRatio = std::isfinite(speedRatio) ? std::min(speedRatio, r2) : r2;
                    }
                }
                s.nicFlaps = std::max(s.nicFlaps, m.nicEndFlaps[g].flaps);
            }
            s.nicSpeedRatio = speedRatio;
            if (!shared && nowMs >= r.nicFromMs[i]) s.nicUtil = util;
        }
        for (std::size_t i = 0; i < r.uplinkPorts.size(); ++i) {
            auto& s = r.links[i];
            s = {};
            s.suspect = was.contains(r.uplinkNames[i]);
            if (const auto p = r.uplinkPorts[i]; p != kNoIndex && m.portSlot[p] != kNoIndex) {
                const auto& pr = m.rates[m.portSlot[p]];
                s.util = smooth(r.uplinkState[i], pr.util, pr.utilAtMs, r.firstMs, nowMs);
                s.pfcPerSecond = fresh(pr.pfc, pr.atMs, nowMs);
                s.errorsPerSecond = fresh(pr.errors, pr.atMs, nowMs);
                s.discardsPerSecond = fresh(pr.discards, pr.atMs, nowMs);
                s.flaps = m.ports[p].flaps;
            }
        }
        updateHostBase(r, was, nowMs - r.lastTickMs);
        r.lastTickMs = nowMs;
        // Warm-up (issue 34 item 2): a job is ranked once its own averages have settled; until
        // then the detector does not see it (an event taken over from an earlier leader stays
        // as it is).
        std::vector<StragglerSuspect> suspects;
        if (nowMs - r.firstMs >= m.options.warmupMs) {
            suspects = mergeSuspects(
                rankStragglers(r.gpuNames, r.nicNames, r.ranks, m.options, r.hostNames),
                rankLinks(r.uplinkNames, r.links, r.gpus.size(), m.options), m.options);
            m.countSamples(r, suspects, nowMs);
            record(m.detector.update(r.job.name, suspects, nowMs));
        }
        r.lastSuspects.clear();
        for (const auto& s : suspects) r.lastSuspects.push_back(s.location);
        // Listed (GET /api/v1/jobs/<job>) once the evidence held in minSamples samples (a
        // clock with nothing behind it: over lowClockSpanMs): a one-sample clock dip or bit
        // error never stands first, even for a tick.
        std::erase_if(suspects,
                      [&](const StragglerSuspect& s) { return !persisted(s, m.options); });
        m.current.push_back(
            {r.job.name, r.gpus.size(), std::move(suspects), m.detector.open(r.job.name)});
    }
    return out;
}

const std::vector<JobSuspects>& StragglerFinder::current() const { return impl_->current; }

bool StragglerFinder::adopt(const std::string& job, StragglerSuspect suspect) {
    auto& m = *impl_;
    if (std::none_of(m.jobs.begin(), m.jobs.end(), [&](const auto& j) { return j.name == job; }))
        return false;
    m.detector.adopt(job, suspect);
    return true;
}

std::vector<StragglerTransition> StragglerFinder::reset() {
    auto& m = *impl_;
    std::vector<StragglerTransition> out;
    for (const auto& j : m.jobs)
        for (auto& t : m.detector.forget(j.name)) out.push_back(std::move(t));
    for (const auto& g : m.gone)
        for (auto& t : m.detector.forget(g)) out.push_back(std::move(t));
    m.gone.clear();
    m.detector = StragglerDetector(m.options);
    for (auto& c : m.current) c.open.clear();
    return out;
}

}  // namespace loom::jobs
