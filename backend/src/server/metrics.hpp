// Metrics: the server's own Prometheus counters and histograms (requests by route and status,
// latency, WebSocket clients and frames). Cheap enough for every request: one mutex, a map
// keyed by (route, method, status) and fixed latency buckets.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

namespace loom::backend {

class Metrics {
public:
    static constexpr std::array<double, 12> kBuckets{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,   0.25,   0.5,   1,    2.5,   10};

    // `route`: a registered pattern or "unmatched" (never a raw path); `method` as sent (the
    // label is methodLabel(method)).
    void observeRequest(const std::string& route, std::string_view method, int status,
                        double seconds);
    void appendTo(std::string& out) const;

    std::atomic<std::int64_t> httpConnections{0};
    std::atomic<std::uint64_t> connectionsRejected{0}, acceptErrors{0};
    std::atomic<std::int64_t> wsClients{0};
    std::atomic<std::uint64_t> wsFramesSent{0}, wsBytesSent{0}, wsDropped{0}, wsSlowDisconnects{0},
        wsSnapshotsResent{0};
    std::atomic<std::uint64_t> streamTicks{0};
    std::atomic<double> streamTickSeconds{0};
    std::atomic<std::uint64_t> liveReloads{0}, liveReloadFailures{0};
    // Rows the leader's live-state sync set to follow their racks: loom_live_link_fixes_total's
    // kind="link" and kind="switch".
    std::atomic<std::uint64_t> liveLinkFixes{0}, liveSwitchFixes{0};
    std::atomic<double> liveReloadSeconds{0};

private:
    struct Hist {
        std::array<std::uint64_t, kBuckets.size()> counts{};
        std::uint64_t count = 0;
        double sum = 0;
    };
    mutable std::mutex mutex_;
    std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;
    std::map<std::string, Hist> latency_;  // by route
};

// The method label of loom_http_requests_total: a standard method, else "other" (a client
// sending made-up methods must not create series).
std::string_view methodLabel(std::string_view method);

// Prometheus label value escaping (\\, \", \n).
std::string promEscape(const std::string& v);

}  // namespace loom::backend
