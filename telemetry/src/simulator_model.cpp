// The simulator's state (simulator_model.hpp): built from a hall layout (exporter labels, the
// ports written each step, counters of switches that have been up a while), following a layout
// of the same structure (rack states: jobs on racks that left service end), the running jobs
// and injected stragglers. One step of the world is in simulator.cpp.
#include "simulator_model.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string_view>

#include "loom/inventory/splitmix.hpp"
#include "loom/telemetry/simulator.hpp"

namespace loom::telemetry {

using sim::RackMode;
using sim::rackMode;

Simulator::Simulator(std::shared_ptr<const HallLayout> layout, SimulatorConfig config)
    : config_(config), m_(std::make_unique<Model>()) {
    auto& m = *m_;
    m.L = layout ? std::move(layout) : std::make_shared<const HallLayout>();
    const auto& L = *m.L;
    m.rng.seed(config_.seed);
    std::size_t nG = L.gpuCount();
    for (std::uint32_t p = 0; p < L.portCount(); ++p) {
        const auto& hp = L.ports()[p];
        if (hp.number == 0 || hp.linkIndex == kNoIndex) continue;  // cabled ports only
        m.emitPorts.push_back(p);
    }
    // Sized first (one allocation for every label), then written.
    auto gpuIndex = [&](std::uint32_t g) -> std::string_view {
        // The GPU's index on its host is the suffix of "<host>-gpu<i>".
        const auto& name = L.gpuNames()[g];
        const auto& host = L.gpuHost()[g];
        return name.size() > host.size() + 4 ? std::string_view(name).substr(host.size() + 4)
                                             : std::string_view("0");
    };
    const auto gpuLabel = [&](std::uint32_t g, auto&& put) {
        put("{gpu=\"");
        put(gpuIndex(g));
        put("\",UUID=\"GPU-");
        put(L.gpuNames()[g]);
        put("\",Hostname=\"");
        put(L.gpuHost()[g]);
        put("\"} ");
    };
    const auto portLabel = [&](std::uint32_t p, auto&& put) {
        const auto& hp = L.ports()[p];
        char num[16];
        const auto n = std::to_chars(num, num + sizeof num, hp.number).ptr - num;
        put("{switch=\"");
        put(L.switches()[hp.switchIndex].name);
        put("\",port=\"p");
        put(std::string_view(num, static_cast<std::size_t>(n)));
        put("\"} ");
    };
    std::size_t bytes = 0;
    const auto count = [&](std::string_view s) { bytes += s.size(); };
    for (std::uint32_t g = 0; g < nG; ++g) gpuLabel(g, count);
    for (auto p : m.emitPorts) portLabel(p, count);
    m.labelText.reserve(bytes);
    const auto append = [&](std::string_view s) { m.labelText += s; };
    m.gpuLabelAt.resize(nG + 1);
    for (std::uint32_t g = 0; g < nG; ++g) {
        m.gpuLabelAt[g] = static_cast<std::uint32_t>(m.labelText.size());
        gpuLabel(g, append);
    }
    m.gpuLabelAt[nG] = static_cast<std::uint32_t>(m.labelText.size());
    // A port slot that is not written has an empty label (its offset is the next one's).
    m.portLabelAt.assign(L.portCount() + 1, 0);
    std::size_t next = 0;
    for (std::uint32_t p = 0; p <= L.portCount(); ++p) {
        m.portLabelAt[p] = static_cast<std::uint32_t>(m.labelText.size());
        if (next < m.emitPorts.size() && m.emitPorts[next] == p) {
            portLabel(p, append);
            ++next;
        }
    }
    m.rackJob.assign(L.racks().size(), -1);
    for (const auto& r : L.racks()) m.rackMode.push_back(rackMode(r.state));
    m.xid.assign(nG, 0);
    m.xidUntil.assign(nG, 0);
    m.eccUntil.assign(nG, 0);
    m.hotUntil.assign(nG, 0);
    m.ecc.assign(nG, 0);
    m.lastXid.assign(nG, 255);
    m.lastEcc.assign(nG, 255);
    m.energy.assign(nG, 0);
    m.strag.assign(nG, 0);
    m.linkStrag.assign(L.linkCount(), 0);
    m.errCnt.assign(L.portCount(), 0);
    m.discCnt.assign(L.portCount(), 0);
    m.pfcCnt.assign(L.portCount(), 0);
    m.portMoved.assign(L.portCount(), 0);
    m.sbe.assign(nG, 0);
    m.lastSbe.assign(nG, -1);
    m.linkUtil.assign(L.linkCount(), 0);
    m.linkDown.assign(L.linkCount(), 0);
    m.inOct.assign(L.portCount(), 0);
    m.outOct.assign(L.portCount(), 0);
    for (std::uint32_t p = 0; p < L.portCount(); ++p) {
        // Counters of a switch that has been up a while.
        m.inOct[p] = static_cast<double>(splitmix64(config_.seed + p) % 1000000000000ull);
        m.outOct[p] = static_cast<double>(splitmix64(config_.seed + p + 7) % 1000000000000ull);
    }
    for (std::uint32_t s = 0; s < L.switches().size(); ++s)
        if (L.switches()[s].role == inventory::SwitchRole::Rtsw ||
            L.switches()[s].role == inventory::SwitchRole::Leaf)
            m.rtsws.push_back(s);
    for (std::uint32_t l = 0; l < L.linkCount(); ++l)
        if (L.links()[l].aPort != kNoIndex || L.links()[l].bPort != kNoIndex)
            m.flappable.push_back(l);
}

Simulator::~Simulator() = default;

void Simulator::setLayout(std::shared_ptr<const HallLayout> layout) {
    auto& m = *m_;
    if (!layout || layout->racks().size() != m.rackJob.size() ||
        layout->gpuCount() != m.xid.size() || layout->linkCount() != m.linkUtil.size())
        return;  // not the same structure: the caller makes a new Simulator
    m.L = std::move(layout);
    const auto& L = *m.L;
    for (std::size_t r = 0; r < L.racks().size(); ++r) m.rackMode[r] = rackMode(L.racks()[r].state);
    // Jobs on racks that left service end now (a drain moves the work away).
    for (auto& job : m.jobs) {
        if (!job.live) continue;
        bool ok = true;
        for (auto r : job.racks) ok &= m.rackMode[r] == RackMode::Serving;
        if (ok) continue;
        job.live = false;
        for (auto r : job.racks) {
            m.rackJob[r] = -1;
            m.gpusBusy -= L.racks()[r].gpuCount;
        }
    }
}

std::vector<Simulator::RunningJob> Simulator::runningJobs() const {
    std::vector<RunningJob> out;
    for (const auto& j : m_->jobs)
        if (j.live && !j.held) out.push_back({j.serial, j.racks, j.startMs});
    std::sort(out.begin(), out.end(),
              [](const RunningJob& a, const RunningJob& b) { return a.serial < b.serial; });
    return out;
}

void Simulator::setHeldRacks(const std::vector<std::vector<std::uint32_t>>& racksPerJob) {
    auto& m = *m_;
    const auto& L = *m.L;
    const auto nR = static_cast<std::uint32_t>(L.racks().size());
    // What each list can hold: racks in service with GPUs, each rack once (the first list).
    std::vector<std::vector<std::uint32_t>> want;
    std::vector<char> taken(nR, 0);
    for (const auto& list : racksPerJob) {
        std::vector<std::uint32_t> racks;
        for (auto r : list)
            if (r < nR && !taken[r] && L.racks()[r].gpuCount > 0 &&
                m.rackMode[r] == sim::RackMode::Serving) {
                taken[r] = 1;
                racks.push_back(r);
            }
        std::sort(racks.begin(), racks.end());
        if (!racks.empty()) want.push_back(std::move(racks));
    }
    std::vector<std::vector<std::uint32_t>> have;
    for (const auto& j : m.jobs)
        if (j.live && j.held) have.push_back(j.racks);
    auto sorted = [](auto v) {
        std::sort(v.begin(), v.end());
        return v;
    };
    if (sorted(want) == sorted(have)) return;
    auto end = [&](sim::Job& job) {
        job.live = false;
        for (auto r : job.racks) {
            m.rackJob[r] = -1;
            m.gpusBusy -= L.racks()[r].gpuCount;
        }
    };
    for (auto& j : m.jobs) {
        if (!j.live) continue;
        bool onHeld = j.held;
        for (auto r : j.racks) onHeld |= taken[r] != 0;
        if (onHeld) end(j);
    }
    for (auto& racks : want) {
        sim::Job job;
        job.held = true;
        job.racks = std::move(racks);
        job.startMs = m.lastMs;
        job.endMs = std::numeric_limits<std::int64_t>::max();
        job.periodMs = 5000;
        job.offsetMs = static_cast<std::int64_t>(job.racks.front() * 977 % 5000);
        job.spansRacks = job.racks.size() > 1;
        for (auto r : job.racks)
            job.spansZones |= L.racks()[r].zoneIndex != L.racks()[job.racks[0]].zoneIndex;
        std::int32_t slot = -1;
        for (std::int32_t k = 0; k < static_cast<std::int32_t>(m.jobs.size()); ++k)
            if (!m.jobs[k].live) {
                slot = k;
                break;
            }
        if (slot < 0) {
            slot = static_cast<std::int32_t>(m.jobs.size());
            m.jobs.emplace_back();
        }
        for (auto r : job.racks) {
            m.rackJob[r] = slot;
            m.gpusBusy += L.racks()[r].gpuCount;
        }
        m.jobs[slot] = std::move(job);
    }
}

void Simulator::injectStraggler(StragglerCause cause, std::uint32_t target, std::int64_t startMs,
                                double seconds) {
    m_->stragglers.push_back(
        {cause, target, startMs, startMs + static_cast<std::int64_t>(seconds * 1000)});
}

namespace {
constexpr std::string_view kCauseNames[Simulator::kStragglerCauseCount] = {
    "thermal_throttle", "ecc_pressure",   "slow_nic",
    "pfc_storm",        "flapping_optic", "noisy_neighbour"};
}

std::string_view Simulator::causeName(StragglerCause c) { return kCauseNames[static_cast<int>(c)]; }

}  // namespace loom::telemetry
