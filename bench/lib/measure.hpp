// What every benchmark driver reports beside its own figures: wall time, this process's CPU time
// (user + system, so load from other processes shows as wall > CPU) and peak RSS.
#pragma once

#include <sys/resource.h>

#include <chrono>

namespace loom::bench {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

inline double cpuMs() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

// Peak resident set size of this process so far (Linux reports ru_maxrss in KiB), in MiB.
inline long peakRssMb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

}  // namespace loom::bench
