// TelemetryHub's per-GPU and per-link history (not a public header): one-minute aggregates of
// the last hour in a ring of 60 slots, one byte or two per value, plus the accumulators of the
// minute in progress. At 24k (24,576 GPUs, 55,680 links) the ring is 5 x 60 x 24,576 +
// 5 x 60 x 55,680 bytes = 24 MB. tick() samples it once a second under the ingest mutex and
// its own mutex; readers (GET /api/v1/telemetry/rollups?scope=gpu|link) take only its mutex.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::telemetry::detail {

struct HubHistory {
    static constexpr int kSlots = 60;
    static constexpr std::uint8_t kNone = 255;

    HubHistory(std::size_t gpus, std::size_t links);

    std::size_t nG = 0, nL = 0;
    mutable std::mutex m;
    // Completed minutes: slot = (minute / 60 s) % 60; slotMinute 0 = never written.
    std::array<std::int64_t, kSlots> slotMinute{};
    std::array<std::uint16_t, kSlots> slotSamples{};
    // Slot-major (slot * n + entity); kNone = no sample in that minute.
    std::vector<std::uint8_t> gUtilAvg, gUtilMax, gTempMax, gPower4W, gFbPct;
    std::vector<std::uint8_t> lUtilAvg, lUtilMax, lDown;  // lDown: samples with the link down
    std::vector<std::uint16_t> lErrors;                   // saturating at 65,534; 65,535 none

    // The minute in progress.
    std::int64_t curMinute = 0;
    std::uint16_t curSamples = 0;
    std::vector<float> aUtilSum, aPowerSum, aFbSum, aUtilMax, aTempMax;
    std::vector<std::uint16_t> aUtilN, aPowerN, aFbN;
    std::vector<float> alUtilSum, alUtilMax;
    std::vector<std::uint16_t> alUtilN, alDown;
    std::vector<double> alErrStart;  // both ends' error counters when the minute began; NaN unset

    std::size_t bytes() const { return (nG + nL) * (5 * kSlots + 24); }
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
