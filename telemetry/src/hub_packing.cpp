// TelemetryHub's readers: the packed one-byte-per-entity arrays of the stream topics, raw
// values, and the Prometheus text of /metrics. Lock-free against ingest.
#include "hub_state.hpp"

namespace loom::telemetry {
using namespace detail;

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
                out[g] = s.fresh(s.gpuSeen[g].load(kRelaxed), now, staleMs)
                             ? toByte(s.gpuVal(f, g), max)
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
                bool any = false, down = false, shut = false;
                float util = -1;
                for (auto p : {link.aPort, link.bPort}) {
                    if (p == kNoIndex || !s.fresh(s.portSeen[p].load(kRelaxed), now, staleMs))
                        continue;
                    any = true;
                    // 1: a failed end; 2: shut (ifAdminStatus down) or training after it was
                    // enabled: down on purpose.
                    if (const auto pd = s.portDown[p].load(kRelaxed); pd == 1)
                        down = true;
                    else if (pd == 2)
                        shut = true;
                    float u = std::max(s.utilIn[p].load(kRelaxed), s.utilOut[p].load(kRelaxed));
                    if (std::isfinite(u)) util = std::max(util, u);
                }
                // The host end (node_exporter's InfiniBand counters): the only view of a link
                // whose switch is not scraped.
                if (const auto n = s.nicOfLink(l);
                    n != kNoIndex && s.fresh(s.nicSeen[n].load(kRelaxed), now, staleMs)) {
                    any = true;
                    if (float u = s.nicUtil[n].load(kRelaxed); std::isfinite(u))
                        util = std::max(util, u);
                }
                if (t == Topic::LinkUtil) {
                    out[l] = util < 0 ? kNoData : down || shut ? 0 : toByte(util, 100.f);
                    continue;
                }
                std::uint8_t h;
                if (admin[l] == AdminState::Drained)
                    h = kLinkDrained;
                else if (admin[l] == AdminState::NotInService)
                    h = kLinkNotInService;
                else if (shut)  // an end shut on the switch: the other end is down for it
                    h = kLinkDrained;
                else if (down)
                    h = kLinkDown;
                else if (auto ev = s.linkDegraded[l].load(kRelaxed); ev == 2)
                    h = kLinkDown;
                else if (ev == 1)  // an open warning event (docs/api.md, "Link health")
                    h = kLinkDegraded;
                else if (any)
                    h = kLinkUp;
                else if (admin[l] == AdminState::Down)
                    h = kLinkDown;
                else
                    h = kNoData;
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

std::int64_t TelemetryHub::gpuSampleMs(std::uint32_t gpu) const {
    auto st = current();
    return gpu < st->nG ? st->gpuSeen[gpu].load(kRelaxed) : 0;
}

std::string TelemetryHub::gpuJob(std::uint32_t gpu) const {
    auto st = current();
    if (gpu >= st->nG) return {};
    std::lock_guard lk(st->jobMutex);
    return st->gpuJob[gpu];
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

// The rates live in the ingest mutex's state (PortDet, sbeRate): read under it.
CounterRate TelemetryHub::portRate(std::uint32_t port, PortCounter c) const {
    CounterRate out;
    const int slot = ratedSlot(c);
    if (slot < 0) return out;
    std::lock_guard lk(ingestMutex_);
    auto st = current();
    if (port >= st->nP) return out;
    const auto& d = st->pdet[port];
    if (d.at[slot] == 0) return out;
    out.atMs = st->portSeen[port].load(kRelaxed) -
               static_cast<std::int64_t>(rateClock(st->portSeen[port].load(kRelaxed)) - d.at[slot]);
    if (slot >= 2) {
        out.perSecond = d.rateOf(slot);
    } else {
        // Octets: the utilisation is what the hub keeps; bytes/s back from it.
        const float u = (slot == 0 ? st->utilIn : st->utilOut)[port].load(kRelaxed);
        if (std::isfinite(u)) out.perSecond = u / 100.0 * st->speedBps(port) / 8;
    }
    return out;
}

void TelemetryHub::portRates(const std::vector<std::uint32_t>& ports,
                             std::vector<PortRates>& out) const {
    constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
    out.assign(ports.size(), {kNaNf, kNaNf, kNaNf, kNaNf, 0, 0, 0, 0, 0});
    std::lock_guard lk(ingestMutex_);
    auto st = current();
    auto pair = [](const State::PortDet& d, int slot) {
        const float a = d.rateOf(slot), b = d.rateOf(slot + 1);
        if (!std::isfinite(a) && !std::isfinite(b)) return kNaNf;
        return (std::isfinite(a) ? a : 0.f) + (std::isfinite(b) ? b : 0.f);
    };
    for (std::size_t i = 0; i < ports.size(); ++i) {
        const auto p = ports[i];
        if (p >= st->nP) continue;
        const auto& d = st->pdet[p];
        auto& o = out[i];
        const float a = st->utilIn[p].load(kRelaxed), b = st->utilOut[p].load(kRelaxed);
        o.util = std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b);
        o.errors = pair(d, 2);
        o.discards = pair(d, 4);
        o.pfc = pair(d, 6);
        // Times back from the port's newest sample (portSeen) and each counter's distance to it.
        const std::int64_t seen = st->portSeen[p].load(kRelaxed);
        const std::uint32_t now32 = rateClock(seen);
        auto newest = [&](int from, int to) -> std::int64_t {
            std::uint32_t best = 0xffffffffu;
            for (int k = from; k < to; ++k)
                if (d.at[k] != 0) best = std::min(best, now32 - d.at[k]);
            return best == 0xffffffffu ? 0 : seen - static_cast<std::int64_t>(best);
        };
        o.utilAtMs = newest(0, 2);
        o.atMs = newest(2, kRatedSlots);
        o.errorsAtMs = newest(2, 4);
        o.discardsAtMs = newest(4, 6);
        o.pfcAtMs = newest(6, 8);
    }
}

void TelemetryHub::nicEnds(const std::vector<std::uint32_t>& gpus, std::vector<NicEnd>& out) const {
    constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
    out.assign(gpus.size(), {kNaNf, kNaNf, kNaNf, kNaNf, 0, 0, -1, 0});
    std::lock_guard lk(ingestMutex_);
    auto st = current();
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        const auto g = gpus[i];
        if (g >= st->nG) continue;
        const auto& n = st->nicRates[g];
        auto& o = out[i];
        o.util = st->nicUtil[g].load(kRelaxed);
        o.utilAtMs = st->nicSeen[g].load(kRelaxed);
        o.speedBytes = n.speedBytes;
        o.xmitWait = n.rate[detail::kNicXmitWait - detail::kNicRxBytes];
        o.rcvErrors = n.rate[detail::kNicRcvErrors - detail::kNicRxBytes];
        o.atMs = std::max(n.at[detail::kNicXmitWait - detail::kNicRxBytes],
                          n.at[detail::kNicRcvErrors - detail::kNicRxBytes]);
        o.up = st->nicUp[g];
        o.flapAtMs = st->nicFlapAt[g];
    }
}

CounterRate TelemetryHub::gpuRate(std::uint32_t gpu, GpuField f) const {
    std::vector<CounterRate> out;
    gpuRates({gpu}, f, out);
    return out[0];
}

void TelemetryHub::gpuRates(const std::vector<std::uint32_t>& gpus, GpuField f,
                            std::vector<CounterRate>& out) const {
    out.assign(gpus.size(), {});
    if (f != GpuField::EccSbe) return;
    std::lock_guard lk(ingestMutex_);
    auto st = current();
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        const auto g = gpus[i];
        if (g >= st->nG) continue;
        out[i].atMs = st->sbePrevMs[g];
        out[i].perSecond = st->sbeRate[g];
    }
}

std::size_t TelemetryHub::memoryBytes() const { return current()->bytes(); }

void TelemetryHub::appendMetrics(std::string& out) const {
    const auto& sh = *shared_;
    auto line = [&](std::string_view name, std::string_view type, std::string_view help,
                    auto value) {
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
    out +=
        "# HELP loom_telemetry_unknown_total Samples for entities not in the inventory.\n"
        "# TYPE loom_telemetry_unknown_total counter\n";
    for (int i = 0; i < kUnknownReasonCount; ++i) {
        out += "loom_telemetry_unknown_total{reason=\"";
        out += unknownReasonName(static_cast<UnknownReason>(i));
        out += "\"} ";
        out += std::to_string(sh.unknown[i].load());
        out += '\n';
    }
    line("loom_telemetry_ingest_seconds_total", "counter",
         "Time spent parsing and storing telemetry.",
         static_cast<double>(sh.ingestMicros.load()) / 1e6);
    line("loom_telemetry_duplicate_samples_total", "counter",
         "Samples of a port counter a second source sent while the first still sends it (not "
         "taken).",
         sh.duplicates.load());
    line("loom_events_opened_total", "counter", "Failure events opened by detection rules.",
         sh.opened.load());
    line("loom_events_closed_total", "counter", "Failure events closed by detection rules.",
         sh.closed.load());
    line("loom_events_closed_by_hand_total", "counter",
         "Failure events an operator closed by hand (POST /api/v1/events/<id>/close).",
         sh.closedByHand.load());
    line("loom_events_restored_total", "counter",
         "Open failure events this loomd took from the database: at start, when it took the "
         "lead, and those another loomd opened.",
         sh.restored.load());
    line("loom_events_closed_elsewhere_total", "counter",
         "Open failure events this loomd forgot because another loomd closed them (its source's "
         "recovery, or an operator, reached that loomd).",
         sh.closedElsewhere.load());
    std::size_t open;
    {
        std::lock_guard lk(eventsMutex_);
        open = sh.open.size();
    }
    line("loom_events_open", "gauge", "Failure events currently open.", open);
    line("loom_telemetry_hub_bytes", "gauge", "Memory held by the telemetry hub arrays.",
         memoryBytes());
}

}  // namespace loom::telemetry
