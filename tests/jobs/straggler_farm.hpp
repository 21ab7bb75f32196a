// A scenario farm for the straggler finder (issue 34): synchronous training jobs on whole racks
// of a synthetic cluster, their telemetry written in the exporters' own formats on separate
// pages — per host a dcgm-exporter page, per rack switch an snmp_exporter if_mib page and a
// switch agent's PFC page — each page on its own clock (interval jittered ±30 %), with
// switch counter resets, and the faults and healthy traps the finder must tell apart. Used by
// the finder's tests (tests/jobs) and its benchmark (bench/jobs/straggler_bench.cpp).
//
//   StragglerFarm farm(layout, {.seed = 3});
//   farm.startJob("llama", racks, nowMs);
//   farm.fault(FarmCause::PowerBrake, gpu, fromMs, untilMs);
//   farm.advance(nowMs, hub);  // every page due by nowMs, in time order, into the hub
//
// The model: each job iterates with a period of 2-10 s (30 % exchange); GPUs ~95 % busy while
// computing, ~90 % while exchanging (the collectives' kernels run); NICs ~5 % and ~85 %; the RTSW
// uplinks of jobs of more than one rack ~2 % and ~68 %. Bytes are integrated over time (100 ms
// steps), so a page's counters are what a real switch would have counted when that page was
// scraped.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::testing {

enum class FarmCause : std::uint8_t {
    ThermalThrottle,  // GPU: hw_thermal, SM clock 1,140 MHz, +18 °C
    PowerBrake,       // GPU: hw_power_brake, SM clock 1,300 MHz, -40 % power
    HwSlowdown,       // GPU: hw_slowdown, SM clock 1,400 MHz
    HbmHot,           // GPU of a power-capped job: HBM 97 °C, sw_thermal, SM clock -10 %
    EccPressure,      // GPU: ~50 correctable ECC errors/s, SM clock -15 %
    SlowNic,          // GPU's NIC cable trained at 200G (ifHighSpeed 200000), carrying its share
    PfcStorm,         // uplink: 40,000-60,000 PFC pause frames/s, a fifth of its traffic
    FlappingOptic,    // GPU's NIC cable: down 1 s in 3, 20 errors/s while up
    NoisyNeighbour,   // uplink: ~98 % busy, 300-800 discards/s
    HostContention,   // host: its 8 GPUs ~30 % busy (waiting for input), the job's others spin
    HostSlow,         // host: its 8 GPUs' SM clocks 20 % down
};
inline constexpr int kFarmCauseCount = 11;
inline std::string_view farmCauseName(FarmCause c) {
    constexpr std::string_view n[] = {"thermal_throttle", "power_brake",    "hw_slowdown",
                                      "hbm_hot",          "ecc_pressure",   "slow_nic",
                                      "pfc_storm",        "flapping_optic", "noisy_neighbour",
                                      "host_contention",  "host_slow"};
    return n[static_cast<int>(c)];
}
// The cause label the finder should give.
inline std::string_view farmExpectedLabel(FarmCause c) {
    constexpr std::string_view n[] = {"thermal_throttle", "power_brake",   "hw_slowdown",
                                      "thermal_throttle", "ecc_pressure",  "slow_nic",
                                      "pfc_storm",        "flapping_link", "congested_link",
                                      "host_contention",  "host_slow"};
    return n[static_cast<int>(c)];
}
enum class FarmTarget : std::uint8_t { Gpu, NicLink, Uplink, Host };
inline FarmTarget farmTargetOf(FarmCause c) {
    switch (c) {
        case FarmCause::SlowNic:
        case FarmCause::FlappingOptic:
            return FarmTarget::NicLink;
        case FarmCause::PfcStorm:
        case FarmCause::NoisyNeighbour:
            return FarmTarget::Uplink;
        case FarmCause::HostContention:
        case FarmCause::HostSlow:
            return FarmTarget::Host;
        default:
            return FarmTarget::Gpu;
    }
}

// Healthy traps: what a job does that is no straggler.
enum class FarmTrap : std::uint8_t {
    HotGpu,       // a GPU 15 °C hotter than its peers, no throttle reason, full clock
    ClockDip,     // a GPU's clock down to 1,500 MHz for one sample
    Checkpoint,   // every rank idle (GPUs and NICs) for 20 s
    PowerCapJob,  // sw_power_cap on every GPU of the job, clocks 15 % down
};

struct FarmOptions {
    std::uint64_t seed = 1;
    double intervalS = 1.0, jitter = 0.3;     // each page's interval: intervalS × (1 ± jitter)
    double counterResetsPerSwitchHour = 0.2;  // a switch reboot: its counters restart at 0
    // Per host a node_exporter InfiniBand page too (the host ends of its NIC links), and/or
    // no switch pages at all (a cluster whose switches Loom does not scrape).
    bool nodeExporter = false, switchPages = true;
};

class StragglerFarm {
public:
    StragglerFarm(std::shared_ptr<const telemetry::HallLayout> layout, FarmOptions o = {})
        : L_(std::move(layout)), o_(o), rng_(o.seed) {
        const auto& L = *L_;
        gpuJob_.assign(L.gpuCount(), -1);
        rackJob_.assign(L.racks().size(), -1);
        nicLinkOf_.assign(L.gpuCount(), telemetry::kNoIndex);
        for (std::uint32_t l = 0; l < L.linkCount(); ++l)
            if (L.links()[l].gpu != telemetry::kNoIndex) nicLinkOf_[L.links()[l].gpu] = l;
        gpuOffsetC_.resize(L.gpuCount());
        gpuOffsetW_.resize(L.gpuCount());
        for (std::uint32_t g = 0; g < L.gpuCount(); ++g) {
            gpuOffsetC_[g] = static_cast<float>(uni() * 6 - 3);
            gpuOffsetW_[g] = static_cast<float>(uni() * 20 - 10);
        }
        // Pages: one dcgm page per host; per rack switch an if_mib page and a PFC page.
        for (std::uint32_t r = 0; r < L.racks().size(); ++r) {
            const auto& rk = L.racks()[r];
            for (std::uint32_t h = 0; h < rk.hosts.size(); ++h) {
                pages_.push_back({Page::Dcgm, r, h, firstDue()});
                if (o_.nodeExporter) pages_.push_back({Page::Node, r, h, firstDue()});
            }
            if (rk.rtswIndex != telemetry::kNoIndex && o_.switchPages) {
                pages_.push_back({Page::IfMib, r, 0, firstDue()});
                pages_.push_back({Page::Pfc, r, 0, firstDue()});
            }
        }
        // Per rack switch: its ports with a link (NIC cables and uplinks), and their counters.
        rackPorts_.resize(L.racks().size());
        for (std::uint32_t r = 0; r < L.racks().size(); ++r) {
            const auto sw = L.racks()[r].rtswIndex;
            if (sw == telemetry::kNoIndex) continue;
            const auto& s = L.switches()[sw];
            for (std::uint32_t p = s.portOffset; p < s.portOffset + s.portSlots; ++p)
                if (L.ports()[p].linkIndex != telemetry::kNoIndex && L.ports()[p].number > 0)
                    rackPorts_[r].push_back(p);
        }
        ctr_.assign(L.portCount(), {});
        nic_.assign(o_.nodeExporter ? L.gpuCount() : 0, {});
        sbe_.assign(L.gpuCount(), 0);
        lent_.assign(L.gpuCount(), 0);
    }

    struct Job {
        std::string name;
        std::vector<std::uint32_t> racks;
        std::vector<std::uint32_t> hosts;  // layout host indices (2 per rack, or 1..2 of one rack)
        std::int64_t startMs = 0, endMs = 0;  // endMs 0: running
        double periodS = 5, offsetS = 0;
    };
    // A job on whole racks (or, with `hostsOfRack` 1 or 2, on that many hosts of one rack).
    int startJob(std::string name, std::vector<std::uint32_t> racks, std::int64_t nowMs,
                 int hostsOfRack = 0) {
        Job j;
        j.name = std::move(name);
        j.racks = std::move(racks);
        j.startMs = nowMs;
        j.periodS = 2 + 8 * uni();
        j.offsetS = uni() * j.periodS;
        const int id = static_cast<int>(jobs_.size());
        for (auto r : j.racks) {
            const auto& rk = L_->racks()[r];
            rackJob_[r] = id;
            const int nh = hostsOfRack > 0 ? hostsOfRack : static_cast<int>(rk.hosts.size());
            for (int h = 0; h < nh && h < static_cast<int>(rk.hosts.size()); ++h) {
                const auto hi = L_->hostByName(rk.hosts[static_cast<std::size_t>(h)]);
                j.hosts.push_back(hi);
                for (int k = 0; k < 8; ++k)
                    if (auto g = L_->gpuOfHost(hi, k); g != telemetry::kNoIndex) gpuJob_[g] = id;
            }
        }
        jobs_.push_back(std::move(j));
        return id;
    }
    void endJob(int id, std::int64_t nowMs) {
        auto& j = jobs_[static_cast<std::size_t>(id)];
        j.endMs = nowMs;
        for (auto r : j.racks)
            if (rackJob_[r] == id) rackJob_[r] = -1;
        for (auto& g : gpuJob_)
            if (g == id) g = -1;
        // Its traps are moot now (its GPUs and racks belong to no job): a long run would
        // otherwise scan every ended job's future checkpoints on each sample.
        std::erase_if(traps_, [&](const Trap& x) { return x.job == id; });
    }
    // GPUs `fromGpu`..7 of a host run something else besides their job from now on (a job that
    // shares the host: Slurm's GRES split, an inference server): busy computing on their own
    // rhythm, with nothing on their NICs.
    void lendGpus(std::uint32_t host, int fromGpu) {
        for (int k = fromGpu; k < 8; ++k)
            if (auto g = L_->gpuOfHost(host, k); g != telemetry::kNoIndex) lent_[g] = 1;
    }
    // The host's dcgm-exporter page names this GPU no more (it fell off the bus).
    void dropGpu(std::uint32_t gpu) { dropped_.push_back(gpu); }
    const std::vector<Job>& jobs() const { return jobs_; }
    std::vector<std::string> hostNames(int id) const {
        std::vector<std::string> out;
        for (auto h : jobs_[static_cast<std::size_t>(id)].hosts)
            out.push_back(L_->gpuHost()[L_->gpuOfHost(h, 0)]);
        return out;
    }

    struct Fault {
        FarmCause cause;
        std::uint32_t target;  // GPU (Gpu, NicLink causes), link (Uplink) or host index (Host)
        std::int64_t fromMs, untilMs;
    };
    void fault(FarmCause c, std::uint32_t target, std::int64_t fromMs, std::int64_t untilMs) {
        faults_.push_back({c, target, fromMs, untilMs});
    }
    struct Trap {
        FarmTrap trap;
        int job;
        std::uint32_t gpu;
        std::int64_t fromMs, untilMs;
    };
    void trap(FarmTrap t, int job, std::uint32_t gpu, std::int64_t fromMs, std::int64_t untilMs) {
        traps_.push_back({t, job, gpu, fromMs, untilMs});
    }
    // What the finder should name for a fault: the GPU, its NIC cable, the uplink or the host.
    std::string expectedLocation(const Fault& f) const {
        switch (farmTargetOf(f.cause)) {
            case FarmTarget::Gpu:
                return L_->gpuNames()[f.target];
            case FarmTarget::NicLink:
                return L_->links()[nicLinkOf_[f.target]].name;
            case FarmTarget::Uplink:
                return L_->links()[f.target].name;
            case FarmTarget::Host:
                return L_->gpuHost()[L_->gpuOfHost(f.target, 0)];
        }
        return {};
    }
    std::uint32_t nicLinkOf(std::uint32_t gpu) const { return nicLinkOf_[gpu]; }

    // Every page due by `nowMs` into `hub`, oldest first; returns how many.
    std::size_t advance(std::int64_t nowMs, telemetry::TelemetryHub& hub) {
        std::size_t n = 0;
        if (heap_.empty())
            for (std::size_t i = 0; i < pages_.size(); ++i) heap_.push({pages_[i].due, i});
        std::erase_if(faults_, [&](const Fault& f) { return f.untilMs + 60'000 < nowMs; });
        std::erase_if(traps_, [&](const Trap& x) { return x.untilMs + 60'000 < nowMs; });
        for (;;) {
            if (heap_.empty() || heap_.top().first > nowMs) break;
            auto* it = &pages_[heap_.top().second];
            const auto index = heap_.top().second;
            heap_.pop();
            const std::int64_t t = it->due;
            integrate(t);
            std::string body;
            telemetry::IngestIdentity id;
            std::string source;
            const auto& rk = L_->racks()[it->rack];
            if (it->kind == Page::Dcgm) {
                writeDcgm(it->rack, it->host, t, body);
                id.host = rk.hosts[it->host];
                source = "dcgm:" + rk.hosts[it->host];
            } else if (it->kind == Page::Node) {
                writeNode(it->rack, it->host, t, body);
                id.host = rk.hosts[it->host];
                source = "node:" + rk.hosts[it->host];
            } else {
                const auto& sw = L_->switches()[rk.rtswIndex].name;
                maybeReset(it->rack, t);
                if (it->kind == Page::IfMib)
                    writeIfMib(it->rack, t, body);
                else
                    writePfc(it->rack, body);
                id.switchName = sw;
                source = (it->kind == Page::IfMib ? "snmp:" : "agent:") + sw;
            }
            setSource(id, source);
            auto r = hub.ingestText(body, t, id);
            (void)r;
            ++n;
            it->due = t + static_cast<std::int64_t>(o_.intervalS * 1000 *
                                                    (1 - o_.jitter + 2 * o_.jitter * uni()));
            heap_.push({it->due, index});
        }
        return n;
    }

    // Every rank of `job` idles for a checkpoint at `t` (a trap): a host's contention cannot
    // be seen then (every GPU waits alike).
    bool checkpointing(int job, std::int64_t t) const {
        return trapOn(FarmTrap::Checkpoint, job, telemetry::kNoIndex, t);
    }

private:
    struct Page {
        enum Kind : std::uint8_t { Dcgm, IfMib, Pfc, Node } kind;
        std::uint32_t rack, host;
        std::int64_t due;
    };
    struct Counters {
        double in = 0, out = 0, err = 0, disc = 0, pfc = 0;
        double flapDown = 0;  // 1 while the link is down
    };
    // The host end of a GPU's NIC link (node_exporter): its own counters (a switch's reboot
    // does not reset them).
    struct NicCounters {
        double bytes = 0, wait = 0, err = 0, downed = 0;
    };

    // Sets IngestIdentity::source where the hub has it (this farm also builds against a hub
    // without sources, for before/after figures).
    template <class Id>
    static auto setSource(Id& id, std::string_view s, int) -> decltype(id.source = s, void()) {
        id.source = s;
    }
    template <class Id>
    static void setSource(Id&, std::string_view, long) {}
    template <class Id>
    static void setSource(Id& id, std::string_view s) {
        setSource(id, s, 0);
    }

    double uni() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
    std::int64_t firstDue() {
        return 1'700'000'000'000 + static_cast<std::int64_t>(uni() * o_.intervalS * 1000);
    }
    // A hash of (a, b, c) to [0, 1): deterministic noise per entity and time step.
    static double noise(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
        std::uint64_t x = a * 0x9E3779B97F4A7C15ull ^
                          (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^
                          (c + 0x94D049BB133111EBull) * 0x94D049BB133111EBull;
        x ^= x >> 31;
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 29;
        return static_cast<double>(x >> 11) / 9007199254740992.0;
    }
    const Fault* faultOn(FarmCause c, std::uint32_t target, std::int64_t t) const {
        for (const auto& f : faults_)
            if (f.cause == c && f.target == target && t >= f.fromMs && t < f.untilMs) return &f;
        return nullptr;
    }
    bool anyFault(std::initializer_list<FarmCause> cs, std::uint32_t target, std::int64_t t) const {
        for (auto c : cs)
            if (faultOn(c, target, t)) return true;
        return false;
    }
    bool trapOn(FarmTrap k, int job, std::uint32_t gpu, std::int64_t t) const {
        for (const auto& x : traps_)
            if (x.trap == k && x.job == job && (gpu == telemetry::kNoIndex || x.gpu == gpu) &&
                t >= x.fromMs && t < x.untilMs)
                return true;
        return false;
    }
    // -1 idle (no job), 0 computing, 1 exchanging, 2 checkpointing (everything idle).
    int phase(int job, std::int64_t t) const {
        if (job < 0) return -1;
        const auto& j = jobs_[static_cast<std::size_t>(job)];
        if (t < j.startMs || (j.endMs && t >= j.endMs)) return -1;
        if (trapOn(FarmTrap::Checkpoint, job, telemetry::kNoIndex, t)) return 2;
        const double s = static_cast<double>(t - j.startMs) / 1000 + j.offsetS;
        const double ph = std::fmod(s, j.periodS) / j.periodS;
        return ph >= 0.7 ? 1 : 0;
    }
    // Utilisation (%) of port p's link at time t.
    double linkUtil(std::uint32_t p, std::int64_t t) const {
        const auto& L = *L_;
        const auto l = L.ports()[p].linkIndex;
        const auto& link = L.links()[l];
        const auto step = static_cast<std::uint64_t>(t / 1000);
        const double n = noise(o_.seed + 3, l, step);
        if (link.gpu != telemetry::kNoIndex) {
            const auto g = link.gpu;
            const int job = gpuJob_[g];
            const int ph = phase(job, t);
            if (faultOn(FarmCause::FlappingOptic, g, t) &&
                (t - faultOn(FarmCause::FlappingOptic, g, t)->fromMs) % 3000 < 1000)
                return 0;
            double u = ph < 0 || ph == 2 || lent_[g] ? 0.2 : ph == 1 ? 85 + 5 * n : 5 + n;
            // At 200G carrying its share: twice the utilisation of its own speed.
            if (faultOn(FarmCause::SlowNic, g, t)) u = std::min(100.0, 2 * u);
            return u;
        }
        const auto r = link.rackIndex;
        const int job = r < rackJob_.size() ? rackJob_[r] : -1;
        const int ph = phase(job, t);
        const bool spans = job >= 0 && jobs_[static_cast<std::size_t>(job)].racks.size() > 1;
        double u = ph < 0 || ph == 2 ? 0.1 : ph == 1 && spans ? 68 + 5 * n : 2 + n;
        if (faultOn(FarmCause::PfcStorm, l, t)) u *= 0.2;
        if (faultOn(FarmCause::NoisyNeighbour, l, t)) u = 98 + n;
        return u;
    }
    // Advances every rack switch's counters to t in 100 ms steps.
    void integrate(std::int64_t t) {
        if (integratedMs_ == 0) integratedMs_ = t;
        while (integratedMs_ + 100 <= t) {
            const std::int64_t at = integratedMs_ + 50;
            for (std::uint32_t r = 0; r < rackPorts_.size(); ++r)
                for (auto p : rackPorts_[r]) {
                    auto& c = ctr_[p];
                    const double speedBytes =
                        (faultOn(FarmCause::SlowNic, L_->links()[L_->ports()[p].linkIndex].gpu, at)
                             ? 200e9
                             : 400e9) /
                        8;
                    const double u = linkUtil(p, at);
                    c.in += u / 100 * speedBytes * 0.1;
                    c.out += u / 100 * speedBytes * 0.1;
                    const auto l = L_->ports()[p].linkIndex;
                    const auto g = L_->links()[l].gpu;
                    if (g != telemetry::kNoIndex && faultOn(FarmCause::FlappingOptic, g, at))
                        c.err += 2;
                    if (faultOn(FarmCause::PfcStorm, l, at))
                        c.pfc += (40000 + 20000 * noise(o_.seed + 8, l, at / 1000)) * 0.1;
                    if (faultOn(FarmCause::NoisyNeighbour, l, at))
                        c.disc += (550 + 250 * noise(o_.seed + 9, l, at / 1000)) * 0.1;
                    // Healthy noise: a short PFC pause burst now and then, a rare bit error.
                    if (noise(o_.seed + 10, p, static_cast<std::uint64_t>(at / 100)) > 0.9998)
                        c.pfc += 200;
                    if (noise(o_.seed + 12, p, static_cast<std::uint64_t>(at / 100)) > 0.999998)
                        c.err += 1;
                    if (!nic_.empty() && g != telemetry::kNoIndex) {
                        auto& e = nic_[g];
                        e.bytes += u / 100 * speedBytes * 0.1;
                        // Every NIC waits a little to send while it exchanges (~2·10^4 ticks/s);
                        // one trained at half speed carrying its share waits far longer.
                        const bool slow = faultOn(FarmCause::SlowNic, g, at) != nullptr;
                        e.wait += (u > 50 ? 2e4 : 1e3) * (slow ? 40 : 1) * 0.1;
                        if (const auto* f = faultOn(FarmCause::FlappingOptic, g, at)) {
                            e.err += 2;
                            if ((at - f->fromMs) % 3000 < 100) e.downed += 1;
                        }
                        if (noise(o_.seed + 13, g, static_cast<std::uint64_t>(at / 100)) > 0.999998)
                            e.err += 1;
                    }
                }
            for (std::uint32_t g = 0; g < sbe_.size(); ++g)
                if (faultOn(FarmCause::EccPressure, g, at)) sbe_[g] += 5;
            integratedMs_ += 100;
        }
    }
    void maybeReset(std::uint32_t rack, std::int64_t t) {
        const double p = o_.counterResetsPerSwitchHour * o_.intervalS / 3600 / 2;
        if (noise(o_.seed + 20, rack, static_cast<std::uint64_t>(t)) >= p) return;
        for (auto port : rackPorts_[rack]) ctr_[port] = {};
        ++resets_;
    }

    // What "%.0f" writes (the same bytes), without printf: a long farm run spent a quarter of
    // its time formatting.
    static void num(std::string& out, double v) {
        char buf[64];
        const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 0);
        out.append(buf, r.ptr);
    }
    void writeDcgm(std::uint32_t rack, std::uint32_t hostSlot, std::int64_t t, std::string& out) {
        const auto& L = *L_;
        const auto& hostName = L.racks()[rack].hosts[hostSlot];
        const auto hi = L.hostByName(hostName);
        const auto step = static_cast<std::uint64_t>(t / 1000);
        for (int k = 0; k < 8; ++k) {
            const auto g = L.gpuOfHost(hi, k);
            if (g == telemetry::kNoIndex ||
                std::find(dropped_.begin(), dropped_.end(), g) != dropped_.end())
                continue;
            const int job = gpuJob_[g];
            const int ph = lent_[g] ? 0 : phase(job, t);
            const double n = noise(o_.seed + 5, g, step);
            // GPU_UTIL counts time a kernel runs: the collectives' kernels keep a rank busy
            // while it exchanges (or spins waiting for a late peer).
            double util = ph < 0 || ph == 2 ? 0 : ph == 1 ? 90 + 4 * n : 95 + 2 * n;
            double clock = ph < 0 ? 1410 : 1980 - 15 * (1 + noise(o_.seed + 6, g, step));
            double temp = 35 + 0.38 * util + gpuOffsetC_[g];
            double memTemp = temp + 6;
            double power = 90 + 6.2 * util + gpuOffsetW_[g];
            std::uint32_t reasons = ph < 0 ? 0x1 : 0;
            if (job >= 0 && trapOn(FarmTrap::PowerCapJob, job, telemetry::kNoIndex, t)) {
                clock *= 0.85;
                power *= 0.8;
                reasons |= 0x4;
            }
            if (job >= 0 && trapOn(FarmTrap::HotGpu, job, g, t)) temp += 15, memTemp += 15;
            if (job >= 0 && trapOn(FarmTrap::ClockDip, job, g, t)) clock = 1500;
            if (faultOn(FarmCause::ThermalThrottle, g, t)) {
                clock = 1140;
                temp += 18;
                memTemp += 14;
                power *= 0.7;
                reasons |= 0x40;
            }
            if (faultOn(FarmCause::PowerBrake, g, t)) {
                clock = 1300;
                power *= 0.6;
                reasons |= 0x80;
            }
            if (faultOn(FarmCause::HwSlowdown, g, t)) {
                clock = 1400;
                reasons |= 0x8;
            }
            if (faultOn(FarmCause::HbmHot, g, t)) {
                memTemp = 97;
                clock *= 0.9;
                reasons |= 0x20;
            }
            if (faultOn(FarmCause::EccPressure, g, t)) clock *= 0.85;
            if (faultOn(FarmCause::HostContention, hi, t)) {
                // Starved of input: busy at most 30 % (idle in a checkpoint, like every rank).
                util = std::min(util, 30 + 4 * n);
                power = 90 + 6.2 * util + gpuOffsetW_[g];
            }
            if (faultOn(FarmCause::HostSlow, hi, t)) clock *= 0.8;
            const std::string labels =
                "{gpu=\"" + std::to_string(k) + "\",Hostname=\"" + hostName + "\"} ";
            auto line = [&](const char* name, double v) {
                out += name;
                out += labels;
                num(out, v);
                out += '\n';
            };
            line("DCGM_FI_DEV_GPU_UTIL", util);
            line("DCGM_FI_DEV_SM_CLOCK", clock);
            line("DCGM_FI_DEV_GPU_TEMP", temp);
            line("DCGM_FI_DEV_MEMORY_TEMP", memTemp);
            line("DCGM_FI_DEV_POWER_USAGE", power);
            line("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", reasons);
            if (noise(o_.seed + 7, g, step) > 0.9995) sbe_[g] += 1;
            line("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", sbe_[g]);
            line("DCGM_FI_DEV_XID_ERRORS", 0);
        }
    }
    void writeIfMib(std::uint32_t rack, std::int64_t t, std::string& out) {
        for (auto p : rackPorts_[rack]) {
            const auto& c = ctr_[p];
            const auto l = L_->ports()[p].linkIndex;
            const auto g = L_->links()[l].gpu;
            const std::string labels = "{ifIndex=\"" + std::to_string(L_->ports()[p].number) +
                                       "\",ifName=\"swp" + std::to_string(L_->ports()[p].number) +
                                       "\"} ";
            auto line = [&](const char* name, double v) {
                out += name;
                out += labels;
                num(out, v);
                out += '\n';
            };
            const bool down = g != telemetry::kNoIndex && faultOn(FarmCause::FlappingOptic, g, t) &&
                              (t - faultOn(FarmCause::FlappingOptic, g, t)->fromMs) % 3000 < 1000;
            line("ifOperStatus", down ? 2 : 1);
            line("ifHighSpeed",
                 g != telemetry::kNoIndex && faultOn(FarmCause::SlowNic, g, t) ? 200000 : 400000);
            line("ifHCInOctets", c.in);
            line("ifHCOutOctets", c.out);
            line("ifInErrors", c.err);
            line("ifOutErrors", 0);
            line("ifInDiscards", 0);
            line("ifOutDiscards", c.disc);
        }
    }
    // node_exporter 1.5's InfiniBand collector, as it writes a host's eight backend ConnectX-7
    // (mlx5_0..7 = NIC 0..7; docs/telemetry.md §4).
    void writeNode(std::uint32_t rack, std::uint32_t hostSlot, std::int64_t t, std::string& out) {
        const auto& L = *L_;
        const auto hi = L.hostByName(L.racks()[rack].hosts[hostSlot]);
        for (int k = 0; k < 8; ++k) {
            const auto g = L.gpuOfHost(hi, k);
            if (g == telemetry::kNoIndex) continue;
            const auto& e = nic_[g];
            const std::string dev = "mlx5_" + std::to_string(k);
            out += "node_infiniband_info{board_id=\"MT_0000000838\",device=\"" + dev +
                   "\",firmware_version=\"28.39.1002\",hca_type=\"MT4129\"} 1\n";
            const std::string labels = "{device=\"" + dev + "\",port=\"1\"} ";
            auto line = [&](const char* name, double v) {
                out += name;
                out += labels;
                num(out, v);
                out += '\n';
            };
            const auto* flap = faultOn(FarmCause::FlappingOptic, g, t);
            const bool down = flap && (t - flap->fromMs) % 3000 < 1000;
            line("node_infiniband_link_downed_total", e.downed);
            line("node_infiniband_port_data_received_bytes_total", e.bytes);
            line("node_infiniband_port_data_transmitted_bytes_total", e.bytes);
            line("node_infiniband_port_errors_received_total", e.err);
            line("node_infiniband_port_transmit_wait_total", e.wait);
            line("node_infiniband_rate_bytes_per_second",
                 faultOn(FarmCause::SlowNic, g, t) ? 25e9 : 50e9);
            line("node_infiniband_state_id", down ? 1 : 4);
        }
    }
    void writePfc(std::uint32_t rack, std::string& out) {
        const auto& sw = L_->switches()[L_->racks()[rack].rtswIndex].name;
        for (auto p : rackPorts_[rack]) {
            const std::string labels =
                "{switch=\"" + sw + "\",port=\"p" + std::to_string(L_->ports()[p].number) + "\"} ";
            out += "loom_port_in_pfc_pause_frames_total" + labels;
            num(out, ctr_[p].pfc);
            out += "\nloom_port_out_pfc_pause_frames_total" + labels;
            num(out, ctr_[p].pfc / 2);
            out += '\n';
        }
    }

    std::shared_ptr<const telemetry::HallLayout> L_;
    FarmOptions o_;
    std::mt19937_64 rng_;
    std::vector<Job> jobs_;
    std::vector<int> gpuJob_, rackJob_;
    std::vector<std::uint32_t> nicLinkOf_;
    std::vector<float> gpuOffsetC_, gpuOffsetW_;
    std::vector<Page> pages_;
    std::priority_queue<std::pair<std::int64_t, std::size_t>,
                        std::vector<std::pair<std::int64_t, std::size_t>>, std::greater<>>
        heap_;
    std::vector<std::vector<std::uint32_t>> rackPorts_;
    std::vector<Counters> ctr_;
    std::vector<NicCounters> nic_;  // per GPU, with FarmOptions::nodeExporter
    std::vector<double> sbe_;
    std::vector<char> lent_;              // per GPU: lendGpus
    std::vector<std::uint32_t> dropped_;  // dropGpu
    std::vector<Fault> faults_;
    std::vector<Trap> traps_;
    std::int64_t integratedMs_ = 0;

public:
    std::size_t resets_ = 0;  // switch counter resets so far
};

}  // namespace loom::testing
