// Scraper: loomd pulls Prometheus text from exporter URLs (DCGM exporters, switch exporters)
// into the same TelemetryHub ingest path as POST /api/v1/telemetry.
//
// Each target is fetched every `interval` with a time limit and a body cap; a target that
// hangs, refuses or returns garbage is reported (`loom_scrape_up{target}`, last error in the
// log) and never delays the others (each target has its own thread). Plain http:// only
// (exporters sit on the management network; put TLS in front with a proxy if needed).
// Every loomd scrapes the targets it is configured with: give each instance its own list, or
// one instance all of them (ingest is idempotent: the latest value wins).
//
//   Scraper s(hub, {{.url = "http://gpu-host-1:9400/metrics"}});
//   s.start(); ... s.stop();
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"

namespace loom::telemetry {
class TelemetryHub;
}

namespace loom::backend {

using telemetry::TelemetryHub;

struct ScrapeTarget {
    std::string url;  // http://host:port/path
    std::chrono::milliseconds interval{1000};
    std::chrono::milliseconds timeout{5000};
    std::size_t maxBytes = std::size_t{64} << 20;  // body cap (a 24k-node exporter is ~100 KB)
};

// loomd.yaml's `telemetry.scrape` is read by loomd_config.hpp; URLs by http_url.hpp.

class Scraper {
public:
    Scraper(TelemetryHub& hub, std::vector<ScrapeTarget> targets);
    ~Scraper();
    Scraper(const Scraper&) = delete;
    Scraper& operator=(const Scraper&) = delete;

    void start();
    void stop();  // idempotent; waits for in-flight scrapes (at most one timeout)
    // Prometheus text: loom_scrape_up, loom_scrape_duration_seconds, loom_scrape_samples,
    // loom_scrape_errors_total per target.
    void appendMetrics(std::string& out) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace loom::backend
