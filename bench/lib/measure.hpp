// What every benchmark driver reports beside its own figures: wall time, this process's CPU time
// (user + system, so load from other processes shows as wall > CPU) and peak RSS.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

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

// The p-quantile (0 < p <= 1, nearest rank) of `v`; 0 for an empty sample.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::min(i == 0 ? 0 : i - 1, v.size() - 1)];
}

// The machine's load average ("1.02 0.87 0.55"): every wall-clock figure is read beside it.
inline std::string loadAverage() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
}

}  // namespace loom::bench
