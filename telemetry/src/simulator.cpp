// The simulator's step (Simulator::step, simulator.hpp): the world moves on by the elapsed time
// (jobs end and start, failures arrive and heal, stragglers are injected) and is written as one
// scrape's worth of Prometheus text, GPUs like DCGM exporters and switch ports like SNMP
// exporters. Its state, and building it from a layout, are in simulator_model.cpp.
#include "loom/telemetry/simulator.hpp"

#include "loom/inventory/splitmix.hpp"
#include "simulator_model.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace loom::telemetry {

using sim::Job;
using sim::RackMode;

namespace {

// Deterministic noise in [-1, 1) for (seed, entity, step): no RNG state consumed per GPU.
double noise(std::uint64_t seed, std::uint64_t entity, std::uint64_t step) {
    auto h = splitmix64(seed ^ splitmix64(entity * 0x100000001b3ull + step));
    return static_cast<double>(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

void appendInt(std::string& out, std::int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

constexpr const char* kGpuMetrics[20] = {
    "DCGM_FI_DEV_GPU_UTIL",          "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",       "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_MEMORY_TEMP",       "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",         "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",           "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",  "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
};

constexpr const char* kPortMetrics[12] = {
    "loom_port_oper_status",          "loom_port_in_octets_total",
    "loom_port_out_octets_total",     "loom_port_in_packets_total",
    "loom_port_out_packets_total",    "loom_port_in_errors_total",
    "loom_port_out_errors_total",     "loom_port_in_discards_total",
    "loom_port_out_discards_total",   "loom_port_in_pfc_pause_frames_total",
    "loom_port_out_pfc_pause_frames_total", "loom_port_fec_uncorrectable_total",
};

bool linkReports(AdminState a) { return a == AdminState::InService || a == AdminState::Drained; }

}  // namespace

void Simulator::step(std::int64_t nowMs, std::string& out) {
    out.clear();
    write(nowMs, out, nullptr, 0);
}

void Simulator::step(std::int64_t nowMs, const ChunkSink& sink, std::size_t chunkBytes) {
    auto& buf = m_->chunk;
    buf.clear();
    write(nowMs, buf, &sink, std::max<std::size_t>(chunkBytes, 1));
    // A chunk's capacity stays for the next step; a whole page's worth would not be kept.
    if (buf.capacity() > 2 * chunkBytes + (64u << 10)) std::string().swap(buf);
}

void Simulator::write(std::int64_t nowMs, std::string& out, const ChunkSink* sink,
                      std::size_t chunkBytes) {
    auto& m = *m_;
    const auto& L = *m.L;
    const auto& c = config_;
    // Chunked: hand the text over at a rack's or a switch's end once a chunk is full, so at most
    // a chunk (plus one rack or switch) is ever held, not the whole cluster's page.
    const auto flush = [&](bool last) {
        if (!sink || out.empty() || (!last && out.size() < chunkBytes)) return;
        (*sink)(std::string_view(out));
        out.clear();
    };
    std::int64_t dtMs = m.lastMs == 0 ? 1000 : std::max<std::int64_t>(0, nowMs - m.lastMs);
    m.lastMs = nowMs;
    ++m.stepNo;
    ++stats_.steps;
    double dtHours = static_cast<double>(dtMs) / 3.6e6;
    const std::uint32_t nG = static_cast<std::uint32_t>(L.gpuCount());
    const std::uint32_t nR = static_cast<std::uint32_t>(L.racks().size());

    auto endJob = [&](std::int32_t j, bool failed) {
        auto& job = m.jobs[j];
        // A held job (setHeldRacks) is not ours to end: its owner says when.
        if (!job.live || job.held) return;
        job.live = false;
        for (auto r : job.racks) {
            m.rackJob[r] = -1;
            m.gpusBusy -= L.racks()[r].gpuCount;
        }
        if (failed) ++stats_.jobsFailed;
    };
    // Jobs that finished.
    for (std::int32_t j = 0; j < static_cast<std::int32_t>(m.jobs.size()); ++j)
        if (m.jobs[j].live && m.jobs[j].endMs <= nowMs) endJob(j, false);

    // Failures: Poisson arrivals over the elapsed time.
    auto arrivals = [&](double perEntityHour, std::size_t n) -> int {
        double mean = perEntityHour * static_cast<double>(n) * dtHours;
        if (mean <= 0) return 0;
        return std::poisson_distribution<int>(mean)(m.rng);
    };
    static constexpr int kXids[] = {79, 48, 94, 95, 63, 64, 74, 13, 31, 92};
    auto gpuOff = [&](std::uint32_t g) { return m.rackMode[L.gpuRack()[g]] == RackMode::Off; };
    for (int k = arrivals(c.xidPerGpuHour, nG); k > 0 && nG; --k) {
        auto g = static_cast<std::uint32_t>(m.rng() % nG);
        if (gpuOff(g)) continue;  // failures strike only powered equipment
        m.xid[g] = static_cast<std::uint8_t>(kXids[m.rng() % std::size(kXids)]);
        m.xidUntil[g] = nowMs + static_cast<std::int64_t>(c.gpuRecoverySeconds * 1000);
        ++stats_.xids;
        // A fatal XID takes the job down with it.
        bool fatal = m.xid[g] != 13 && m.xid[g] != 31 && m.xid[g] != 92;
        if (fatal && m.rackJob[L.gpuRack()[g]] >= 0) endJob(m.rackJob[L.gpuRack()[g]], true);
    }
    for (int k = arrivals(c.eccDbePerGpuHour, nG); k > 0 && nG; --k) {
        auto g = static_cast<std::uint32_t>(m.rng() % nG);
        if (gpuOff(g)) continue;
        m.ecc[g] = static_cast<std::uint16_t>(1 + m.rng() % 3);
        m.eccUntil[g] = nowMs + static_cast<std::int64_t>(c.gpuRecoverySeconds * 1000);
        ++stats_.eccs;
        if (m.rackJob[L.gpuRack()[g]] >= 0) endJob(m.rackJob[L.gpuRack()[g]], true);
    }
    for (int k = arrivals(c.overheatPerGpuHour, nG); k > 0 && nG; --k) {
        auto g = static_cast<std::uint32_t>(m.rng() % nG);
        if (gpuOff(g)) continue;
        m.hotUntil[g] = nowMs + static_cast<std::int64_t>(c.overheatSeconds * 1000);
        ++stats_.overheats;
    }
    for (int k = arrivals(c.flapPerLinkHour, m.flappable.size()); k > 0 && !m.flappable.empty(); --k) {
        auto l = m.flappable[m.rng() % m.flappable.size()];
        if (L.linkAdmin()[l] != AdminState::InService) continue;
        m.flaps.emplace_back(l, nowMs);
        ++stats_.flaps;
    }
    for (int k = arrivals(c.rtswDownPerSwitchHour, m.rtsws.size()); k > 0 && !m.rtsws.empty(); --k) {
        auto s = m.rtsws[m.rng() % m.rtsws.size()];
        if (auto r = L.switches()[s].rackIndex; r != kNoIndex && m.rackMode[r] == RackMode::Off) continue;
        m.rtswDown.emplace_back(s, nowMs + static_cast<std::int64_t>(c.rtswDownSeconds * 1000));
        ++stats_.rtswDowns;
        auto r = L.switches()[s].rackIndex;
        if (r != kNoIndex && m.rackJob[r] >= 0) endJob(m.rackJob[r], true);
    }
    for (std::uint32_t g = 0; g < nG; ++g) {
        if (m.xid[g] && m.xidUntil[g] <= nowMs) m.xid[g] = 0;
        if (m.ecc[g] && m.eccUntil[g] <= nowMs) m.ecc[g] = 0;
    }
    std::erase_if(m.flaps, [&](auto& f) { return nowMs - f.second > 15000; });
    std::erase_if(m.rtswDown, [&](auto& d) { return d.second <= nowMs; });

    // New jobs until the target fill: power-law sizes over powers of two, whole racks,
    // first fit from a random rack.
    if (nR > 0 && nG > 0) {
        std::uint32_t perRack = std::max<std::uint32_t>(1, nG / nR);
        int minJob = std::min<int>(c.minJobGpus, std::max<int>(static_cast<int>(perRack), static_cast<int>(nG) / 4));
        int maxJob = std::min<int>(c.maxJobGpus, static_cast<int>(nG));
        std::vector<int> sizes;
        std::vector<double> weights;
        for (int s = minJob; s <= maxJob; s *= 2) {
            sizes.push_back(s);
            weights.push_back(std::pow(static_cast<double>(s), -c.sizeExponent));
        }
        std::discrete_distribution<int> pick(weights.begin(), weights.end());
        for (int attempt = 0; attempt < 64 && !sizes.empty() &&
                              m.gpusBusy + static_cast<std::uint32_t>(minJob) <= c.fill * nG;
             ++attempt) {
            int size = sizes[pick(m.rng)];
            std::uint32_t need = (static_cast<std::uint32_t>(size) + perRack - 1) / perRack;
            std::uint32_t start = static_cast<std::uint32_t>(m.rng() % nR);
            Job job;
            for (std::uint32_t i = 0; i < nR && job.racks.size() < need; ++i) {
                std::uint32_t r = (start + i) % nR;
                if (m.rackJob[r] < 0 && L.racks()[r].gpuCount > 0 &&
                    m.rackMode[r] == RackMode::Serving)
                    job.racks.push_back(r);
            }
            if (job.racks.size() < need) continue;  // does not fit now; try a smaller one
            std::sort(job.racks.begin(), job.racks.end());
            job.startMs = nowMs;
            double minutes = std::exponential_distribution<double>(1.0 / c.jobMeanMinutes)(m.rng);
            job.endMs = nowMs + static_cast<std::int64_t>(std::max(1.0, minutes) * 60000);
            job.periodMs = static_cast<std::int64_t>(
                1000 * std::uniform_real_distribution<double>(c.iterationSecondsMin,
                                                              c.iterationSecondsMax)(m.rng));
            job.offsetMs = static_cast<std::int64_t>(m.rng() % static_cast<std::uint64_t>(job.periodMs));
            job.spansRacks = job.racks.size() > 1;
            for (auto r : job.racks)
                job.spansZones |= L.racks()[r].zoneIndex != L.racks()[job.racks[0]].zoneIndex;
            // Reuse a finished job's slot so the vector stays small over a long demo.
            std::int32_t j = -1;
            for (std::int32_t k = 0; k < static_cast<std::int32_t>(m.jobs.size()); ++k)
                if (!m.jobs[k].live) {
                    j = k;
                    break;
                }
            if (j < 0) {
                j = static_cast<std::int32_t>(m.jobs.size());
                m.jobs.emplace_back();
            }
            for (auto r : job.racks) {
                m.rackJob[r] = j;
                m.gpusBusy += L.racks()[r].gpuCount;
            }
            job.serial = ++stats_.jobsStarted;
            m.jobs[j] = std::move(job);
        }
    }
    stats_.jobsRunning = 0;
    for (const auto& j : m.jobs) stats_.jobsRunning += j.live;
    stats_.gpusBusy = m.gpusBusy;

    // Per rack: is its job communicating right now?
    std::vector<std::int8_t> rackPhase(nR, -1);  // -1 idle, 0 compute, 1 communicate
    std::vector<float> zoneComm(L.zones().size() + 1, 0.f), zoneRacks(L.zones().size() + 1, 0.f);
    for (std::uint32_t r = 0; r < nR; ++r) {
        auto j = m.rackJob[r];
        auto z = std::min<std::size_t>(L.racks()[r].zoneIndex, L.zones().size());
        zoneRacks[z] += 1;
        if (j < 0) continue;
        const auto& job = m.jobs[j];
        double ph = static_cast<double>((nowMs - job.startMs + job.offsetMs) % job.periodMs) /
                    static_cast<double>(job.periodMs);
        rackPhase[r] = ph >= 1.0 - c.commFraction ? 1 : 0;
        if (rackPhase[r] == 1 && job.spansZones) zoneComm[z] += 1;
    }

    // The demo injector: a seeded random cause on a random running job.
    if (c.stragglerEverySeconds > 0) {
        if (m.nextInjectMs == 0)
            m.nextInjectMs = nowMs + static_cast<std::int64_t>(c.stragglerEverySeconds * 1000);
        if (nowMs >= m.nextInjectMs) {
            m.nextInjectMs = nowMs + static_cast<std::int64_t>(c.stragglerEverySeconds * 1000);
            std::vector<std::int32_t> live;
            for (std::int32_t j = 0; j < static_cast<std::int32_t>(m.jobs.size()); ++j)
                if (m.jobs[j].live) live.push_back(j);
            if (!live.empty()) {
                const auto& job = m.jobs[live[m.rng() % live.size()]];
                const auto cause = static_cast<StragglerCause>(m.injected++ % kStragglerCauseCount);
                const auto ri = job.racks[m.rng() % job.racks.size()];
                const auto& rk = L.racks()[ri];
                std::uint32_t target = rk.gpuOffset + static_cast<std::uint32_t>(m.rng() % std::max(1u, rk.gpuCount));
                if (isLinkCause(cause)) {
                    // An uplink of the rack's RTSW.
                    std::vector<std::uint32_t> ups;
                    for (std::uint32_t l = 0; l < L.linkCount(); ++l)
                        if (L.links()[l].tier == 1 && L.links()[l].rackIndex == ri)
                            ups.push_back(l);
                    target = ups.empty() ? kNoIndex : ups[m.rng() % ups.size()];
                }
                if (target != kNoIndex) injectStraggler(cause, target, nowMs, c.stragglerSeconds);
            }
        }
    }
    // Injected stragglers active now.
    for (const auto& st : m.stragglers) {
        if (isLinkCause(st.cause)) {
            if (st.target < m.linkStrag.size()) m.linkStrag[st.target] = 0;
        } else if (st.target < nG) {
            m.strag[st.target] = 0;
        }
    }
    std::erase_if(m.stragglers, [&](const Model::Injection& st) { return st.endMs <= nowMs; });
    for (const auto& st : m.stragglers) {
        if (st.startMs > nowMs) continue;
        const auto code = static_cast<std::uint8_t>(1 + static_cast<int>(st.cause));
        if (isLinkCause(st.cause)) {
            if (st.target < m.linkStrag.size()) m.linkStrag[st.target] = code;
            continue;
        }
        if (st.target >= nG) continue;
        m.strag[st.target] = code;
        if (st.cause == StragglerCause::EccPressure)
            m.sbe[st.target] += 50.0 * static_cast<double>(dtMs) / 1000.0;
    }
    const auto throttled = [&](std::uint32_t g) {
        return m.strag[g] == 1 + static_cast<int>(StragglerCause::ThermalThrottle);
    };
    const auto gpuSlowed = [&](std::uint32_t g) {
        return m.strag[g] == 1 + static_cast<int>(StragglerCause::EccPressure);
    };
    // Healthy jitter: boost clocks wobble within 1,950-1,980 MHz with a one-step dip to 1,800
    // now and then (power capping); a GPU now and then logs a correctable ECC error.
    const auto smClock = [&](std::uint32_t g) -> std::int64_t {
        if (!c.healthyNoise) return 1980;
        const double n = noise(c.seed + 5, g, m.stepNo);
        if (n > 0.998) return 1800;
        return 1980 - std::lround(15 * (1 + noise(c.seed + 6, g, m.stepNo)));
    };
    if (c.healthyNoise)
        for (std::uint32_t g = 0; g < nG; ++g)
            if (noise(c.seed + 7, g, m.stepNo) > 0.9998) m.sbe[g] += 1;

    // GPUs, written per rack and field like a row of DCGM exporters.
    std::uint64_t samples = 0;
    if (sink)
        out.reserve(chunkBytes + (64u << 10));
    else
        out.reserve(c.fullFidelity ? nG * 20 * 110 : nG * 3 * 100 + m.emitPorts.size() * 3 * 75);
    auto utilOf = [&](std::uint32_t g) -> double {
        auto ph = rackPhase[L.gpuRack()[g]];
        if (m.xid[g] && m.xid[g] != 13 && m.xid[g] != 31) return 0;
        double n = noise(c.seed, g, m.stepNo);
        if (m.rackMode[L.gpuRack()[g]] == RackMode::BurnIn) return std::clamp(97 + 2 * n, 0.0, 100.0);
        if (ph < 0) return std::max(0.0, 1 + n);
        return std::clamp((ph ? c.commUtil : c.computeUtil) + 3 * n, 0.0, 100.0);
    };
    std::vector<double> util(nG);
    for (std::uint32_t g = 0; g < nG; ++g) util[g] = utilOf(g);
    // Live mode: util, temp, power, SM clock always; the error fields (XID, DBE, row remap,
    // SBE) only when they changed.
    static constexpr int kLiveFields[] = {0, 1, 2, 9, 3, 4, 6, 5};
    const int nLoop = c.fullFidelity ? 20 : static_cast<int>(std::size(kLiveFields));
    for (std::uint32_t r = 0; r < nR; ++r) {
        const auto& rk = L.racks()[r];
        if (m.rackMode[r] == RackMode::Off) continue;  // unpowered: no exporter answers
        std::uint32_t g0 = rk.gpuOffset, g1 = rk.gpuOffset + rk.gpuCount;
        for (int f = 0; f < nLoop; ++f) {
            const int field = c.fullFidelity ? f : kLiveFields[f];
            for (std::uint32_t g = g0; g < g1; ++g) {
                std::int64_t v = 0;
                switch (field) {
                    case 0: v = std::lround(util[g]); break;
                    case 1:
                        v = std::lround(32 + 0.45 * util[g] + 2 * noise(c.seed + 1, g, m.stepNo) +
                                        (m.hotUntil[g] > nowMs ? 30 : 0) + (throttled(g) ? 15 : 0));
                        break;
                    case 2:
                        v = std::lround((75 + 6.2 * util[g] + 5 * noise(c.seed + 2, g, m.stepNo)) *
                                        (throttled(g) ? 0.7 : 1.0));
                        break;
                    case 5:
                        if (!c.fullFidelity && m.lastSbe[g] == m.sbe[g]) continue;
                        v = static_cast<std::int64_t>(m.sbe[g]);
                        m.lastSbe[g] = m.sbe[g];
                        break;
                    case 3:
                        if (!c.fullFidelity && m.lastXid[g] == m.xid[g]) continue;
                        v = m.xid[g];
                        m.lastXid[g] = m.xid[g];
                        break;
                    case 4:
                        if (!c.fullFidelity && m.lastEcc[g] == m.ecc[g]) continue;
                        v = m.ecc[g];
                        m.lastEcc[g] = static_cast<std::uint8_t>(m.ecc[g]);
                        break;
                    case 6:
                        if (!c.fullFidelity) continue;  // rides with ECC in live mode: rare
                        v = 0;
                        break;
                    case 8: v = std::lround(40 + 0.3 * util[g]); break;
                    case 9:
                        v = util[g] <= 5     ? 345
                            : throttled(g)   ? 1140
                            : gpuSlowed(g)   ? 1680
                                             : smClock(g);
                        break;
                    case 10: v = 2619; break;
                    case 11: v = util[g] > 5 ? 71000 : 0; break;
                    case 12: v = util[g] > 5 ? 10559 : 81559; break;
                    case 16:
                        m.energy[g] += (75 + 6.2 * util[g]) * static_cast<double>(dtMs);
                        v = static_cast<std::int64_t>(m.energy[g]);
                        break;
                    case 17: v = std::lround(util[g] * 0.4); break;
                    case 18: v = std::lround(util[g]) / 100; break;
                    case 19: v = std::lround(util[g] * 0.6) / 100; break;
                    default: v = 0; break;
                }
                out += kGpuMetrics[field];
                out += m.gpuLabel(g);
                appendInt(out, v);
                out += '\n';
                ++samples;
            }
        }
        flush(false);
    }

    // Links: utilization from the phase of the jobs at either end; down while flapping or while
    // an RTSW is down.
    std::vector<std::uint8_t> switchDown(L.switches().size(), 0);
    for (auto& [s, until] : m.rtswDown) switchDown[s] = 1;
    std::fill(m.linkDown.begin(), m.linkDown.end(), 0);
    for (auto& [l, start] : m.flaps) {
        auto t = nowMs - start;  // down 0-3 s, up 3-8 s, down 8-12 s, then up
        if (t < 3000 || (t >= 8000 && t < 12000)) m.linkDown[l] = 1;
    }
    const double dtS = static_cast<double>(dtMs) / 1000.0;
    auto bump = [&](std::uint32_t l, std::vector<double>& counter, double amount) {
        for (auto p : {L.links()[l].aPort, L.links()[l].bPort})
            if (p != kNoIndex && amount > 0) {
                counter[p] += amount;
                m.portMoved[p] = 1;
            }
    };
    for (const auto& st : m.stragglers) {
        if (st.startMs > nowMs || !isLinkCause(st.cause) || st.target >= L.linkCount()) continue;
        if (st.cause == StragglerCause::FlappingOptic) {
            if ((nowMs - st.startMs) % 3000 < 1000)
                m.linkDown[st.target] = 1;
            else
                bump(st.target, m.errCnt, std::floor(20 * dtS));
        } else if (st.cause == StragglerCause::PfcStorm) {
            bump(st.target, m.pfcCnt,
                 std::floor((40000 + 20000 * noise(c.seed + 8, st.target, m.stepNo)) * dtS));
        } else {
            bump(st.target, m.discCnt,
                 std::floor((550 + 250 * noise(c.seed + 9, st.target, m.stepNo)) * dtS));
        }
    }
    for (std::uint32_t l = 0; l < L.linkCount(); ++l) {
        const auto& link = L.links()[l];
        for (auto p : {link.aPort, link.bPort})
            if (p != kNoIndex && switchDown[L.ports()[p].switchIndex]) m.linkDown[l] = 1;
        double u = 0;
        auto r = link.rackIndex;
        double n = noise(c.seed + 3, l, m.stepNo);
        if (link.tier == 0 && link.gpu != kNoIndex) {
            auto ph = rackPhase[L.gpuRack()[link.gpu]];
            u = ph < 0 ? 0.2 : ph ? c.nicUtilComm + 5 * n : c.nicUtilCompute + n;
        } else if (link.tier <= 1 && r != kNoIndex) {
            auto ph = rackPhase[r];
            bool spans = m.rackJob[r] >= 0 && m.jobs[m.rackJob[r]].spansRacks;
            u = ph < 0 ? 0.1 : ph && spans ? 0.8 * c.nicUtilComm + 5 * n : 2 + n;
        } else {
            // Above the zones: the share of the zone's racks in a zone-spanning exchange.
            std::size_t z = L.zones().size();
            if (link.aPort != kNoIndex) {
                const auto& sw = L.switches()[L.ports()[link.aPort].switchIndex];
                for (std::size_t i = 0; i < L.zones().size(); ++i)
                    if (L.zones()[i] == sw.zone) z = i;
            }
            double share = zoneRacks[z] > 0 ? zoneComm[z] / zoneRacks[z] : 0;
            u = 1 + 90 * share + n;
        }
        if (link.gpu < nG && m.strag[link.gpu] == 1 + static_cast<int>(StragglerCause::SlowNic))
            u *= 0.3;
        if (m.linkStrag[l] == 1 + static_cast<int>(StragglerCause::PfcStorm)) u *= 0.2;
        if (m.linkStrag[l] == 1 + static_cast<int>(StragglerCause::NoisyNeighbour))
            u = 98 + n;
        m.linkUtil[l] = static_cast<float>(m.linkDown[l] ? 0 : std::clamp(u, 0.0, 100.0));
    }
    // Healthy jitter on the ports: a short PFC pause burst now and then, a rare bit error.
    if (c.healthyNoise)
        for (auto p : m.emitPorts) {
            if (noise(c.seed + 10, p, m.stepNo) > 0.998) {
                m.pfcCnt[p] += std::floor(200 * (1 + noise(c.seed + 11, p, m.stepNo)));
                m.portMoved[p] = 1;
            }
            if (noise(c.seed + 12, p, m.stepNo) > 0.99998) {
                m.errCnt[p] += 1;
                m.portMoved[p] = 1;
            }
        }
    // Ports, per switch: counters advance with their link's utilization.
    int nCounters = c.fullFidelity ? 12 : 3;
    std::size_t i0 = 0;
    while (i0 < m.emitPorts.size()) {
        auto sw = L.ports()[m.emitPorts[i0]].switchIndex;
        std::size_t i1 = i0;
        while (i1 < m.emitPorts.size() && L.ports()[m.emitPorts[i1]].switchIndex == sw) ++i1;
        for (std::size_t i = i0; i < i1; ++i) {
            auto p = m.emitPorts[i];
            auto l = L.ports()[p].linkIndex;
            double u = l == kNoIndex || L.linkAdmin()[l] != AdminState::InService ? 0 : m.linkUtil[l];
            double bytes = u / 100.0 * L.ports()[p].speedGbps * 1e9 / 8 * static_cast<double>(dtMs) / 1000;
            m.inOct[p] += std::floor(bytes);
            m.outOct[p] += std::floor(bytes * (0.97 + 0.03 * noise(c.seed + 4, p, m.stepNo)));
        }
        for (int k = 0; k < nCounters; ++k)
            for (std::size_t i = i0; i < i1; ++i) {
                auto p = m.emitPorts[i];
                auto l = L.ports()[p].linkIndex;
                // Cables not in service (planned, or a failed rack's) report nothing.
                if (l != kNoIndex && !linkReports(L.linkAdmin()[l])) continue;
                std::int64_t v = 0;
                switch (k) {
                    case 0: v = (l != kNoIndex && m.linkDown[l]) || switchDown[sw] ? 2 : 1; break;
                    case 1: v = static_cast<std::int64_t>(m.inOct[p]); break;
                    case 2: v = static_cast<std::int64_t>(m.outOct[p]); break;
                    case 3: v = static_cast<std::int64_t>(m.inOct[p] / 4096); break;
                    case 4: v = static_cast<std::int64_t>(m.outOct[p] / 4096); break;
                    case 5: v = static_cast<std::int64_t>(m.errCnt[p]); break;
                    case 7: v = static_cast<std::int64_t>(m.discCnt[p]); break;
                    case 9: v = static_cast<std::int64_t>(m.pfcCnt[p]); break;
                    default: v = 0; break;
                }
                out += kPortMetrics[k];
                out += m.portLabel(p);
                appendInt(out, v);
                out += '\n';
                ++samples;
            }
        // Live mode: the error, discard and PFC counters of the ports where they moved.
        if (!c.fullFidelity)
            for (int k : {5, 7, 9})
                for (std::size_t i = i0; i < i1; ++i) {
                    auto p = m.emitPorts[i];
                    if (!m.portMoved[p]) continue;
                    const double v = k == 5 ? m.errCnt[p] : k == 7 ? m.discCnt[p] : m.pfcCnt[p];
                    out += kPortMetrics[k];
                    out += m.portLabel(p);
                    appendInt(out, static_cast<std::int64_t>(v));
                    out += '\n';
                    ++samples;
                }
        for (std::size_t i = i0; i < i1; ++i) m.portMoved[m.emitPorts[i]] = 0;
        i0 = i1;
        flush(false);
    }
    flush(true);
    stats_.samplesLastStep = samples;
}

}  // namespace loom::telemetry
