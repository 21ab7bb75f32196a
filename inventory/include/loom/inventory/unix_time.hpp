// The wall clock as Unix milliseconds, as events, telemetry samples and the stream carry time.
#pragma once

#include <chrono>
#include <cstdint>

namespace loom {

inline std::int64_t unixMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace loom
