// TelemetryHub's per-GPU and per-link history of the last hour (hub_history.hpp).
#include "hub_history.hpp"

#include <algorithm>
#include <cmath>

#include "hub_state.hpp"

namespace loom::telemetry {
using namespace detail;

namespace detail {

template <class T>
void SlotColumn<T>::assign(std::vector<T>& values) {
    // The most common value: any of a byte's; of two bytes, 0 or none (error increases).
    T common = common_;
    std::size_t commonCount = 0;
    if constexpr (sizeof(T) == 1) {
        std::array<std::size_t, 256> counts{};
        for (const T v : values) ++counts[v];
        const auto top = std::max_element(counts.begin(), counts.end());
        common = static_cast<T>(top - counts.begin());
        commonCount = *top;
    } else {
        for (const T candidate : {T{0}, static_cast<T>(~T{0})}) {
            const auto n =
                static_cast<std::size_t>(std::count(values.begin(), values.end(), candidate));
            if (n > commonCount) {
                common = candidate;
                commonCount = n;
            }
        }
    }
    const std::size_t others = values.size() - commonCount;
    if (!values.empty() &&
        others * (sizeof(std::uint32_t) + sizeof(T)) >= values.size() * sizeof(T)) {
        // Dense: keep the buffer and hand back the one it replaces.
        dense_.swap(values);
        std::vector<std::uint32_t>().swap(index_);
        std::vector<T>().swap(values_);
        return;
    }
    common_ = common;
    std::vector<std::uint32_t> index;
    std::vector<T> other;
    index.reserve(others);
    other.reserve(others);
    for (std::size_t i = 0; i < values.size(); ++i)
        if (values[i] != common) {
            index.push_back(static_cast<std::uint32_t>(i));
            other.push_back(values[i]);
        }
    index_.swap(index);
    values_.swap(other);
    std::vector<T>().swap(dense_);  // `values` stays the caller's buffer
}

template class SlotColumn<std::uint8_t>;
template class SlotColumn<std::uint16_t>;

std::size_t HubHistory::bytes() const {
    std::lock_guard lk(m);
    std::size_t n = scratch8.capacity() + scratch16.capacity() * 2;
    for (const auto* c :
         {&gUtilAvg, &gUtilMax, &gTempMax, &gPower4W, &gFbPct, &lUtilAvg, &lUtilMax, &lDown})
        for (const auto& slot : *c) n += slot.bytes();
    for (const auto& slot : lErrors) n += slot.bytes();
    return n + nG * (5 * 4 + 3 * 2) + nL * (2 * 4 + 2 * 2 + 8);
}

namespace {
constexpr std::uint16_t kNoErrors = HubHistory::kNoErrors;

std::uint8_t quantize(float v, float scale = 1.f) {
    if (!std::isfinite(v)) return HubHistory::kNone;
    const float q = std::round(v / scale);
    return static_cast<std::uint8_t>(std::clamp(q, 0.f, 254.f));
}
float unquantize(std::uint8_t v, float scale = 1.f) {
    return v == HubHistory::kNone ? NAN : static_cast<float>(v) * scale;
}

// Error, in and out, of both switch ends of a link; NaN when neither end ever reported one.
double linkErrorCounters(const TelemetryHub::State& s, std::uint32_t link) {
    const auto& l = s.L->links()[link];
    double sum = 0;
    bool any = false;
    for (auto p : {l.aPort, l.bPort}) {
        if (p == kNoIndex) continue;
        for (auto c : {PortCounter::InErrors, PortCounter::OutErrors}) {
            const double v = s.portVal(c, p);
            if (std::isfinite(v)) {
                sum += v;
                any = true;
            }
        }
    }
    return any ? sum : kNaN;
}

double counterDelta(double now, double start) {
    if (std::isnan(start) || std::isnan(now)) return kNaN;
    return now >= start ? now - start : now;  // a reset counts from zero
}

// Fills `buf` with `n` values of valueOf(i), in index order, and stores them as `col`.
template <class T, class F>
void putColumn(SlotColumn<T>& col, std::vector<T>& buf, std::size_t n, F valueOf) {
    buf.resize(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = valueOf(i);
    col.assign(buf);
}

void completeMinute(HubHistory& h, const TelemetryHub::State& s) {
    const int slot = static_cast<int>((h.curMinute / 60000) % HubHistory::kSlots);
    h.slotMinute[slot] = h.curMinute;
    h.slotSamples[slot] = h.curSamples;
    constexpr auto kNone = HubHistory::kNone;
    auto& b8 = h.scratch8;
    putColumn(h.gUtilAvg[slot], b8, h.nG, [&](std::size_t g) {
        return h.aUtilN[g] ? quantize(h.aUtilSum[g] / h.aUtilN[g]) : kNone;
    });
    putColumn(h.gUtilMax[slot], b8, h.nG,
              [&](std::size_t g) { return h.aUtilN[g] ? quantize(h.aUtilMax[g]) : kNone; });
    putColumn(h.gTempMax[slot], b8, h.nG, [&](std::size_t g) { return quantize(h.aTempMax[g]); });
    putColumn(h.gPower4W[slot], b8, h.nG, [&](std::size_t g) {
        return h.aPowerN[g] ? quantize(h.aPowerSum[g] / h.aPowerN[g], 4.f) : kNone;
    });
    putColumn(h.gFbPct[slot], b8, h.nG,
              [&](std::size_t g) { return h.aFbN[g] ? quantize(h.aFbSum[g] / h.aFbN[g]) : kNone; });
    putColumn(h.lUtilAvg[slot], b8, h.nL, [&](std::size_t l) {
        return h.alUtilN[l] ? quantize(h.alUtilSum[l] / h.alUtilN[l]) : kNone;
    });
    putColumn(h.lUtilMax[slot], b8, h.nL,
              [&](std::size_t l) { return h.alUtilN[l] ? quantize(h.alUtilMax[l]) : kNone; });
    putColumn(h.lDown[slot], b8, h.nL, [&](std::size_t l) {
        return static_cast<std::uint8_t>(std::min<std::uint16_t>(h.alDown[l], 254));
    });
    putColumn(h.lErrors[slot], h.scratch16, h.nL, [&](std::size_t l) {
        const double now = linkErrorCounters(s, static_cast<std::uint32_t>(l));
        const double d = counterDelta(now, h.alErrStart[l]);
        h.alErrStart[l] = now;  // the next minute starts where this one ended
        return std::isnan(d) ? kNoErrors : static_cast<std::uint16_t>(std::min(d, 65534.0));
    });
    std::fill(h.aUtilSum.begin(), h.aUtilSum.end(), 0.f);
    std::fill(h.aPowerSum.begin(), h.aPowerSum.end(), 0.f);
    std::fill(h.aFbSum.begin(), h.aFbSum.end(), 0.f);
    std::fill(h.aUtilMax.begin(), h.aUtilMax.end(), 0.f);
    std::fill(h.aTempMax.begin(), h.aTempMax.end(), NAN);
    for (auto* v : {&h.aUtilN, &h.aPowerN, &h.aFbN, &h.alUtilN, &h.alDown})
        std::fill(v->begin(), v->end(), std::uint16_t{0});
    std::fill(h.alUtilSum.begin(), h.alUtilSum.end(), 0.f);
    std::fill(h.alUtilMax.begin(), h.alUtilMax.end(), 0.f);
    h.curSamples = 0;
}

// Slots of the last hour before `now`'s minute, oldest first.
std::vector<int> slotsInHour(const HubHistory& h, std::int64_t now) {
    const std::int64_t minute = now - (now % 60000);
    std::vector<int> slots;
    for (int i = 0; i < HubHistory::kSlots; ++i)
        if (h.slotMinute[i] != 0 && h.slotMinute[i] < minute && h.slotMinute[i] >= minute - 3600000)
            slots.push_back(i);
    std::sort(slots.begin(), slots.end(),
              [&](int a, int b) { return h.slotMinute[a] < h.slotMinute[b]; });
    return slots;
}
}  // namespace

HubHistory::HubHistory(std::size_t gpus, std::size_t links) : nG(gpus), nL(links) {
    for (auto* c : {&gUtilAvg, &gUtilMax, &gTempMax, &gPower4W, &gFbPct, &lUtilAvg, &lUtilMax})
        for (auto& slot : *c) slot.reset(kNone);
    for (auto& slot : lDown) slot.reset(0);
    for (auto& slot : lErrors) slot.reset(kNoErrors);
    for (auto* v : {&aUtilSum, &aPowerSum, &aFbSum, &aUtilMax, &aTempMax}) v->assign(nG, 0.f);
    for (auto* v : {&aUtilN, &aPowerN, &aFbN}) v->assign(nG, 0);
    for (auto* v : {&alUtilSum, &alUtilMax}) v->assign(nL, 0.f);
    for (auto* v : {&alUtilN, &alDown}) v->assign(nL, 0);
    alErrStart.assign(nL, kNaN);
    std::fill(aTempMax.begin(), aTempMax.end(), NAN);
}

void sampleHistory(HubHistory& h, const TelemetryHub::State& s, std::int64_t now,
                   std::int64_t staleMs) {
    std::lock_guard lk(h.m);
    const std::int64_t minute = now - (now % 60000);
    if (h.curMinute != 0 && minute != h.curMinute && h.curSamples > 0) completeMinute(h, s);
    h.curMinute = minute;
    ++h.curSamples;
    for (std::uint32_t g = 0; g < h.nG; ++g) {
        if (!s.fresh(s.gpuSeen[g].load(kRelaxed), now, staleMs)) continue;
        if (const float u = s.gpuVal(GpuField::Util, g); std::isfinite(u)) {
            h.aUtilSum[g] += u;
            h.aUtilMax[g] = std::max(h.aUtilMax[g], u);
            ++h.aUtilN[g];
        }
        if (const float t = s.gpuVal(GpuField::Temp, g); std::isfinite(t))
            h.aTempMax[g] = std::isnan(h.aTempMax[g]) ? t : std::max(h.aTempMax[g], t);
        if (const float w = s.gpuVal(GpuField::Power, g); std::isfinite(w)) {
            h.aPowerSum[g] += w;
            ++h.aPowerN[g];
        }
        const float used = s.gpuVal(GpuField::FbUsed, g), fbFree = s.gpuVal(GpuField::FbFree, g);
        if (std::isfinite(used) && std::isfinite(fbFree) && used + fbFree > 0) {
            h.aFbSum[g] += 100.f * used / (used + fbFree);
            ++h.aFbN[g];
        }
    }
    const auto& links = s.L->links();
    for (std::uint32_t l = 0; l < h.nL; ++l) {
        bool any = false, down = false;
        float util = -1;
        for (auto p : {links[l].aPort, links[l].bPort}) {
            if (p == kNoIndex || !s.fresh(s.portSeen[p].load(kRelaxed), now, staleMs)) continue;
            any = true;
            if (s.portDown[p].load(kRelaxed)) down = true;
            const float u = std::max(s.utilIn[p].load(kRelaxed), s.utilOut[p].load(kRelaxed));
            if (std::isfinite(u)) util = std::max(util, u);
        }
        if (!any) continue;
        if (down) {
            ++h.alDown[l];
            util = 0;
        }
        if (util >= 0) {
            h.alUtilSum[l] += util;
            h.alUtilMax[l] = std::max(h.alUtilMax[l], util);
            ++h.alUtilN[l];
        }
        if (std::isnan(h.alErrStart[l])) h.alErrStart[l] = linkErrorCounters(s, l);
    }
}

void carryHistory(const HubHistory& from, HubHistory& to, const std::vector<std::uint32_t>& gpuMap,
                  const std::vector<std::uint32_t>& linkMap) {
    std::scoped_lock lk(from.m, to.m);
    to.slotMinute = from.slotMinute;
    to.slotSamples = from.slotSamples;
    to.curMinute = from.curMinute;
    to.curSamples = from.curSamples;
    // The ring, slot by slot and column by column: entities the map drops are gone, new ones
    // start with no samples.
    auto carry = [](const auto& fromCol, auto& toCol, auto& buf, std::size_t toN, auto none,
                    const std::vector<std::uint32_t>& map, std::size_t fromN) {
        for (int slot = 0; slot < HubHistory::kSlots; ++slot) {
            buf.assign(toN, none);
            for (std::size_t i = 0; i < map.size() && i < fromN; ++i)
                if (map[i] != kNoIndex && map[i] < toN) buf[map[i]] = fromCol[slot].at(i);
            toCol[slot].assign(buf);
        }
    };
    constexpr auto kNone = HubHistory::kNone;
    for (auto [f, t] : {std::pair{&from.gUtilAvg, &to.gUtilAvg},
                        {&from.gUtilMax, &to.gUtilMax},
                        {&from.gTempMax, &to.gTempMax},
                        {&from.gPower4W, &to.gPower4W},
                        {&from.gFbPct, &to.gFbPct}})
        carry(*f, *t, to.scratch8, to.nG, kNone, gpuMap, from.nG);
    carry(from.lUtilAvg, to.lUtilAvg, to.scratch8, to.nL, kNone, linkMap, from.nL);
    carry(from.lUtilMax, to.lUtilMax, to.scratch8, to.nL, kNone, linkMap, from.nL);
    carry(from.lDown, to.lDown, to.scratch8, to.nL, std::uint8_t{0}, linkMap, from.nL);
    carry(from.lErrors, to.lErrors, to.scratch16, to.nL, kNoErrors, linkMap, from.nL);
    for (std::size_t g = 0; g < gpuMap.size() && g < from.nG; ++g) {
        const auto n = gpuMap[g];
        if (n == kNoIndex || n >= to.nG) continue;
        to.aUtilSum[n] = from.aUtilSum[g];
        to.aPowerSum[n] = from.aPowerSum[g];
        to.aFbSum[n] = from.aFbSum[g];
        to.aUtilMax[n] = from.aUtilMax[g];
        to.aTempMax[n] = from.aTempMax[g];
        to.aUtilN[n] = from.aUtilN[g];
        to.aPowerN[n] = from.aPowerN[g];
        to.aFbN[n] = from.aFbN[g];
    }
    for (std::size_t l = 0; l < linkMap.size() && l < from.nL; ++l) {
        const auto n = linkMap[l];
        if (n == kNoIndex || n >= to.nL) continue;
        to.alUtilSum[n] = from.alUtilSum[l];
        to.alUtilMax[n] = from.alUtilMax[l];
        to.alUtilN[n] = from.alUtilN[l];
        to.alDown[n] = from.alDown[l];
        to.alErrStart[n] = from.alErrStart[l];
    }
}

std::vector<GpuMinute> readGpuHistory(const HubHistory& h, std::uint32_t gpu, std::int64_t now) {
    std::vector<GpuMinute> out;
    if (gpu >= h.nG) return out;
    std::lock_guard lk(h.m);
    for (int slot : slotsInHour(h, now)) {
        out.push_back({.minuteStartMs = h.slotMinute[slot],
                       .utilAvg = unquantize(h.gUtilAvg[slot].at(gpu)),
                       .utilMax = unquantize(h.gUtilMax[slot].at(gpu)),
                       .tempMax = unquantize(h.gTempMax[slot].at(gpu)),
                       .powerAvgW = unquantize(h.gPower4W[slot].at(gpu), 4.f),
                       .fbUsedPct = unquantize(h.gFbPct[slot].at(gpu)),
                       .samples = h.slotSamples[slot],
                       .partial = false});
    }
    if (h.curSamples > 0 && h.curMinute == now - (now % 60000)) {
        auto mean = [](float sum, std::uint16_t n) { return n ? sum / n : NAN; };
        out.push_back({.minuteStartMs = h.curMinute,
                       .utilAvg = mean(h.aUtilSum[gpu], h.aUtilN[gpu]),
                       .utilMax = h.aUtilN[gpu] ? h.aUtilMax[gpu] : NAN,
                       .tempMax = h.aTempMax[gpu],
                       .powerAvgW = mean(h.aPowerSum[gpu], h.aPowerN[gpu]),
                       .fbUsedPct = mean(h.aFbSum[gpu], h.aFbN[gpu]),
                       .samples = h.curSamples,
                       .partial = true});
    }
    return out;
}

std::vector<LinkMinute> readLinkHistory(const HubHistory& h, const TelemetryHub::State& s,
                                        std::uint32_t link, std::int64_t now) {
    std::vector<LinkMinute> out;
    if (link >= h.nL) return out;
    std::lock_guard lk(h.m);
    for (int slot : slotsInHour(h, now)) {
        const std::uint16_t errors = h.lErrors[slot].at(link);
        out.push_back({.minuteStartMs = h.slotMinute[slot],
                       .utilAvg = unquantize(h.lUtilAvg[slot].at(link)),
                       .utilMax = unquantize(h.lUtilMax[slot].at(link)),
                       .downSamples = h.lDown[slot].at(link),
                       .samples = h.slotSamples[slot],
                       .errors = errors == kNoErrors ? kNaN : errors,
                       .partial = false});
    }
    if (h.curSamples > 0 && h.curMinute == now - (now % 60000)) {
        out.push_back({.minuteStartMs = h.curMinute,
                       .utilAvg = h.alUtilN[link] ? h.alUtilSum[link] / h.alUtilN[link] : NAN,
                       .utilMax = h.alUtilN[link] ? h.alUtilMax[link] : NAN,
                       .downSamples = h.alDown[link],
                       .samples = h.curSamples,
                       .errors = counterDelta(linkErrorCounters(s, link), h.alErrStart[link]),
                       .partial = true});
    }
    return out;
}

}  // namespace detail

std::vector<GpuMinute> TelemetryHub::gpuHistory(std::uint32_t gpu, std::int64_t nowMs) const {
    auto st = current();
    return readGpuHistory(*st->history, gpu, now(nowMs));
}

std::vector<LinkMinute> TelemetryHub::linkHistory(std::uint32_t link, std::int64_t nowMs) const {
    auto st = current();
    return readLinkHistory(*st->history, *st, link, now(nowMs));
}

}  // namespace loom::telemetry
