// Scraper: loomd pulls Prometheus text from exporters (dcgm-exporter, node_exporter,
// snmp_exporter) into the same TelemetryHub ingest path as POST /api/v1/telemetry.
//
// Targets come from two places: URLs listed by hand (`telemetry.scrape`, `--scrape`), and the
// `telemetry.targets` templates expanded over the live inventory (scrape_targets.hpp), handed
// over again by setTargets() whenever the inventory changes (racks rolled in are scraped,
// drained or removed ones stop). A templated target has a kind and the entity it stands for:
// samples of its page that name no host or switch are that entity's, as Prometheus adds
// `instance` from the target.
//
// All targets run on one io_context on the scraper's own thread: one coroutine per target,
// asynchronous connect / keep-alive GET / read with a per-target deadline, at most
// `maxInFlight` scrapes in flight at once; a target that hangs, refuses or returns garbage is
// reported and never delays another (its coroutine waits, the others run). Pages are parsed
// and ingested on a second thread, so the io thread goes on with the next GETs meanwhile; a
// scrape keeps its in-flight slot until its page is in (at most maxInFlight pages wait). A
// template's target may have its own interval and timeout (`intervalMs`, `timeoutMs` in
// `telemetry.targets`; ExporterTarget::interval). Plain http:// only
// (exporters sit on the management network; put TLS in front with a proxy if needed). Host
// names are resolved when a target (re)connects, not on every scrape.
//
//   Scraper s(hub, {{.url = "http://gpu-host-1:9400/metrics"}});
//   s.start();
//   s.setTargets(expandTargets(templates, inventory, ExporterKind::Dcgm));
//   auto rows = s.status();   // GET /api/v1/telemetry/targets
//   s.stop();
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/backend/scrape_targets.hpp"
#include "loom/inventory/error.hpp"

namespace loom::telemetry {
class TelemetryHub;
}

namespace loom::backend {

using telemetry::TelemetryHub;
class Services;

struct ScrapeTarget {
    std::string url;  // http://host:port/path
    std::chrono::milliseconds interval{1000};
    std::chrono::milliseconds timeout{5000};
    std::size_t maxBytes = std::size_t{64} << 20;  // body cap (a 24k-node exporter is ~100 KB)
};

// loomd.yaml's `telemetry.scrape` is read by loomd_config.hpp; URLs by http_url.hpp.

struct ScraperOptions {
    std::size_t maxInFlight = 256;             // scrapes in flight at once, over every target
    std::chrono::milliseconds interval{1000};  // of templated targets
    std::chrono::milliseconds timeout{5000};   // of templated targets (connect+request+read)
    std::size_t maxBytes = std::size_t{64} << 20;
};

// One target as GET /api/v1/telemetry/targets shows it.
struct ScrapeTargetStatus {
    std::string kind;    // "dcgm", "node", "snmp", or "static" for a hand-listed URL
    std::string entity;  // host or switch ("" for a hand-listed URL)
    std::string url;
    bool up = false;
    std::int64_t lastScrapeMs = 0;  // Unix epoch ms of the last finished scrape (0: none yet)
    double seconds = 0;             // duration of the last scrape
    std::uint64_t samples = 0;      // in the last successful scrape
    std::uint64_t scrapes = 0, errors = 0;
    std::string lastError;  // of the last scrape ("" when it succeeded)
};

class Scraper {
public:
    Scraper(TelemetryHub& hub, std::vector<ScrapeTarget> targets, ScraperOptions options = {});
    ~Scraper();
    Scraper(const Scraper&) = delete;
    Scraper& operator=(const Scraper&) = delete;

    void start();
    void stop();  // idempotent; in-flight scrapes are abandoned

    // The templated targets (every kind at once): targets with the same kind, entity and URL
    // as before keep their connection and counters, new ones start, missing ones stop.
    void setTargets(std::vector<ExporterTarget> targets);

    // Every target (those `keep` accepts, when given), hand-listed first, then templated in the
    // order given. `keep` runs under the scraper's lock: a filter, nothing slow.
    std::vector<ScrapeTargetStatus> status(
        const std::function<bool(const ScrapeTargetStatus&)>& keep = {}) const;

    // Prometheus text: per hand-listed target loom_scrape_up, loom_scrape_duration_seconds,
    // loom_scrape_samples, loom_scrape_errors_total{target}; templated targets summed per kind
    // (8k targets x 4 series would dwarf the rest of /metrics; the API has them one by one):
    // loom_scrape_targets{kind}, loom_scrape_targets_up{kind}, loom_scrape_kind_errors_total{kind},
    // loom_scrape_kind_samples{kind}, loom_scrape_duration_seconds_max{kind}.
    void appendMetrics(std::string& out) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// Keeps `scraper`'s templated targets those of `templates` over the live inventory of
// `services`: now (if loaded) and after every live-state reload. Nothing when every template
// is empty. The scraper must outlive the services' reloads (stop the server first).
void followInventory(Scraper& scraper, Services& services, const TargetTemplates& templates);

}  // namespace loom::backend
