#include "loom/jobs/straggler_finder.hpp"

#include <algorithm>
#include <cmath>
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
// Smoothing of port utilisation (a NIC's share over the job's compute/exchange rhythm) and the
// decay of the flap count per tick: about 4 s and 7 s of half-life.
constexpr float kUtilAlpha = 0.25f, kFlapDecay = 0.9f;

struct Resolved {
    std::string name;
    std::vector<std::uint32_t> gpus;
    std::vector<std::string> gpuNames, nicNames;
    std::vector<std::uint32_t> nicPorts;  // kNoIndex: no NIC cable known
    std::vector<std::string> uplinkNames;
    std::vector<std::uint32_t> uplinkPorts;
    std::vector<RankSample> ranks;
    std::vector<LinkSample> links;
};

struct PortState {
    float util = kNaN, utilNow = kNaN, pfcRate = 0, errRate = 0, discRate = 0, flaps = 0;
    double pfc = NAN, err = NAN, disc = NAN;
    std::uint8_t oper = 0;  // 0 unknown, 1 up, 2 down
};

double sum2(const telemetry::TelemetryHub& hub, std::uint32_t p, PortCounter a, PortCounter b) {
    const double x = hub.portValue(p, a), y = hub.portValue(p, b);
    if (!std::isfinite(x) && !std::isfinite(y)) return NAN;
    return (std::isfinite(x) ? x : 0) + (std::isfinite(y) ? y : 0);
}

// A counter's increase per second since the last tick (0 without two readings or on a reset).
float rate(double now, double& prev, double dtSeconds) {
    float r = 0;
    if (std::isfinite(now) && std::isfinite(prev) && now >= prev && dtSeconds > 0)
        r = static_cast<float>((now - prev) / dtSeconds);
    prev = now;
    return r;
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
    std::vector<double> prevSbe;
    std::vector<float> sbeRate;
    std::vector<PortState> ports;
    std::int64_t prevMs = 0;

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
        prevSbe.assign(L.gpuCount(), NAN);
        sbeRate.assign(L.gpuCount(), 0);
    }

    void resolve(const telemetry::HallLayout& L) {
        resolved.clear();
        std::unordered_set<std::uint32_t> gpuSet, portSet;
        for (const auto& j : jobs) {
            Resolved r;
            r.name = j.name;
            std::vector<std::uint32_t> racks;
            for (const auto& h : j.hosts) {
                const auto hi = L.hostByName(h);
                if (hi == kNoIndex) continue;
                for (int k = 0; k < 16; ++k) {
                    const auto g = L.gpuOfHost(hi, k);
                    if (g == kNoIndex) continue;
                    r.gpus.push_back(g);
                    r.gpuNames.push_back(L.gpuNames()[g]);
                    const auto nl = gpuNicLink[g];
                    r.nicNames.push_back(nl == kNoIndex ? std::string() : L.links()[nl].name);
                    r.nicPorts.push_back(gpuNicPort[g]);
                    gpuSet.insert(g);
                    if (gpuNicPort[g] != kNoIndex) portSet.insert(gpuNicPort[g]);
                    const auto rack = L.gpuRack()[g];
                    if (racks.empty() || racks.back() != rack) racks.push_back(rack);
                }
            }
            std::sort(racks.begin(), racks.end());
            racks.erase(std::unique(racks.begin(), racks.end()), racks.end());
            for (auto rack : racks)
                for (auto l : rackUplinks[rack]) {
                    r.uplinkNames.push_back(L.links()[l].name);
                    r.uplinkPorts.push_back(uplinkPort[l]);
                    if (uplinkPort[l] != kNoIndex) portSet.insert(uplinkPort[l]);
                }
            r.ranks.resize(r.gpus.size());
            r.links.resize(r.uplinkPorts.size());
            resolved.push_back(std::move(r));
        }
        allGpus.assign(gpuSet.begin(), gpuSet.end());
        allPorts.assign(portSet.begin(), portSet.end());
        std::sort(allGpus.begin(), allGpus.end());
        std::sort(allPorts.begin(), allPorts.end());
    }

    // Rates and smoothed values of every GPU and port a job reads, once per tick.
    void sample(const telemetry::TelemetryHub& hub, double dt) {
        for (auto g : allGpus) sbeRate[g] = rate(hub.gpuValue(g, GpuField::EccSbe), prevSbe[g], dt);
        for (auto p : allPorts) {
            auto& s = ports[p];
            const double u = hub.portUtil(p);
            s.utilNow = static_cast<float>(u);
            if (std::isfinite(u)) {
                const auto uf = static_cast<float>(u);
                s.util = std::isfinite(s.util) ? s.util + kUtilAlpha * (uf - s.util) : uf;
            }
            s.pfcRate =
                rate(sum2(hub, p, PortCounter::InPfcPause, PortCounter::OutPfcPause), s.pfc, dt);
            s.errRate =
                rate(sum2(hub, p, PortCounter::InErrors, PortCounter::OutErrors), s.err, dt);
            s.discRate =
                rate(sum2(hub, p, PortCounter::InDiscards, PortCounter::OutDiscards), s.disc, dt);
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
        m.prevMs = 0;
        m.dirty = true;
    }
    m.layout = L;
    if (m.dirty) {
        m.resolve(*L);
        m.dirty = false;
    }
    const double dt = m.prevMs ? static_cast<double>(nowMs - m.prevMs) / 1000.0 : 0;
    m.prevMs = nowMs;
    m.sample(hub, dt);

    m.current.clear();
    m.current.reserve(m.resolved.size());
    for (auto& r : m.resolved) {
        for (std::size_t i = 0; i < r.gpus.size(); ++i) {
            const auto g = r.gpus[i];
            auto& s = r.ranks[i];
            s = {};
            s.smClockMhz = static_cast<float>(hub.gpuValue(g, GpuField::SmClock));
            s.tempC = static_cast<float>(hub.gpuValue(g, GpuField::Temp));
            s.powerW = static_cast<float>(hub.gpuValue(g, GpuField::Power));
            s.util = static_cast<float>(hub.gpuValue(g, GpuField::Util));
            const double xid = hub.gpuValue(g, GpuField::Xid);
            s.xid = std::isfinite(xid) ? static_cast<float>(xid) : 0;
            s.eccSbePerSecond = m.sbeRate[g];
            if (const auto p = r.nicPorts[i]; p != kNoIndex) {
                const auto& ps = m.ports[p];
                s.nicUtil = ps.util;
                s.pfcPerSecond = ps.pfcRate;
                s.linkErrorsPerSecond = ps.errRate;
                s.nicFlaps = ps.flaps;
            }
        }
        for (std::size_t i = 0; i < r.uplinkPorts.size(); ++i) {
            auto& s = r.links[i];
            s = {};
            if (const auto p = r.uplinkPorts[i]; p != kNoIndex) {
                const auto& ps = m.ports[p];
                s.util = ps.utilNow;
                s.pfcPerSecond = ps.pfcRate;
                s.errorsPerSecond = ps.errRate;
                s.discardsPerSecond = ps.discRate;
                s.flaps = ps.flaps;
            }
        }
        auto suspects =
            mergeSuspects(rankStragglers(r.gpuNames, r.nicNames, r.ranks, m.options),
                          rankLinks(r.uplinkNames, r.links, r.gpus.size(), m.options), m.options);
        record(m.detector.update(r.name, suspects, nowMs));
        m.current.push_back({r.name, r.gpus.size(), std::move(suspects), m.detector.open(r.name)});
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
