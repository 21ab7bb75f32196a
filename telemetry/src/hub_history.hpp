// TelemetryHub's per-GPU and per-link history (not a public header): one-minute aggregates of
// the last hour in a ring of 60 slots, one byte or two per value, plus the accumulators of the
// minute in progress. A slot's column keeps only the values that differ from the column's most
// common one where those are few (a link's down samples and error increase are nearly always 0
// or none; racks not in service report nothing), every value otherwise. At 98k (98,304 GPUs,
// 222,720 links), whole hall in service: 60 x (4 x 98,304 + 2 x 222,720) bytes = 50 MB dense
// (GPU util avg and max, temperature, power; link util avg and max) where the dense ring of
// session 13 was 60 x (5 x 98,304 + 5 x 222,720) = 96 MB. tick() samples it once a second under
// the ingest mutex and its own mutex; readers (GET /api/v1/telemetry/rollups?scope=gpu|link)
// take only its mutex.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::telemetry::detail {

// One minute of one value for every GPU or link: the column's most common value and the
// entities that differ from it (sorted), or every value when those are too many for the index
// to pay (an index entry costs 4 bytes beside the value).
template <class T>
class SlotColumn {
public:
    explicit SlotColumn(T none = T{}) : common_(none) {}
    T at(std::size_t i) const {
        if (!dense_.empty()) return dense_[i];
        const auto it = std::lower_bound(index_.begin(), index_.end(), i);
        return it != index_.end() && *it == i ? values_[it - index_.begin()] : common_;
    }
    // Takes `values` (every entity's value); hands back a buffer for the next minute's.
    void assign(std::vector<T>& values);
    // Every entity `v`.
    void reset(T v) {
        common_ = v;
        std::vector<T>().swap(dense_);
        std::vector<std::uint32_t>().swap(index_);
        std::vector<T>().swap(values_);
    }
    bool isDense() const { return !dense_.empty(); }
    std::size_t bytes() const {
        return dense_.capacity() * sizeof(T) + index_.capacity() * 4 +
               values_.capacity() * sizeof(T);
    }

private:
    T common_;
    std::vector<T> dense_;
    std::vector<std::uint32_t> index_;
    std::vector<T> values_;
};

struct HubHistory {
    static constexpr int kSlots = 60;
    static constexpr std::uint8_t kNone = 255;
    static constexpr std::uint16_t kNoErrors = 0xffff;
    using Column8 = std::array<SlotColumn<std::uint8_t>, kSlots>;
    using Column16 = std::array<SlotColumn<std::uint16_t>, kSlots>;

    HubHistory(std::size_t gpus, std::size_t links);

    std::size_t nG = 0, nL = 0;
    mutable std::mutex m;
    // Completed minutes: slot = (minute / 60 s) % 60; slotMinute 0 = never written.
    std::array<std::int64_t, kSlots> slotMinute{};
    std::array<std::uint16_t, kSlots> slotSamples{};
    // Per slot; kNone = no sample in that minute.
    Column8 gUtilAvg, gUtilMax, gTempMax, gPower4W, gFbPct;
    Column8 lUtilAvg, lUtilMax, lDown;  // lDown: samples with the link down
    Column16 lErrors;                   // saturating at 65,534; kNoErrors none
    std::vector<std::uint8_t> scratch8;
    std::vector<std::uint16_t> scratch16;

    // The minute in progress.
    std::int64_t curMinute = 0;
    std::uint16_t curSamples = 0;
    std::vector<float> aUtilSum, aPowerSum, aFbSum, aUtilMax, aTempMax;
    std::vector<std::uint16_t> aUtilN, aPowerN, aFbN;
    std::vector<float> alUtilSum, alUtilMax;
    std::vector<std::uint16_t> alUtilN, alDown;
    std::vector<double> alErrStart;  // both ends' error counters when the minute began; NaN unset

    // Bytes held now (the ring as stored, the accumulators, the scratch buffers).
    std::size_t bytes() const;
};

// Samples the state's current values into the minute in progress, completing the previous
// minute first when `now` is in a new one.
void sampleHistory(HubHistory& h, const TelemetryHub::State& s, std::int64_t now,
                   std::int64_t staleMs);

// A structurally different layout: rows move by name (GPU and link maps old index -> new,
// kNoIndex for gone).
void carryHistory(const HubHistory& from, HubHistory& to, const std::vector<std::uint32_t>& gpuMap,
                  const std::vector<std::uint32_t>& linkMap);

std::vector<GpuMinute> readGpuHistory(const HubHistory& h, std::uint32_t gpu, std::int64_t now);
std::vector<LinkMinute> readLinkHistory(const HubHistory& h, const TelemetryHub::State& s,
                                        std::uint32_t link, std::int64_t now);

}  // namespace loom::telemetry::detail
