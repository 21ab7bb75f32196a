// loomd.yaml: the whole file as one type, read by one reader. configs/loomd.yaml documents
// every key with its default. Unknown keys are errors with a "did you mean"; every error names
// the key path and its line ("stream.intervalMs: must be >= 50 (line 18)"); duplicate keys and
// wrong types are errors, never ignored.
//
//   auto cfg = loadLoomdConfig("/etc/loom/loomd.yaml");
//   if (!cfg) { std::cerr << cfg.error().toString() << "\n"; return 2; }
//   Server server(cfg->server, database);
//   auto executor = executorSettings(cfg->provisioning, simulate);   // env overrides, default
//
// Limits: the file at most 1 MiB (the YAML node and alias limits of the cluster spec apply too),
// at most 100,000 scrape targets.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "loom/backend/alerting.hpp"
#include "loom/backend/http_url.hpp"
#include "loom/backend/provisioning_service.hpp"
#include "loom/backend/scrape_targets.hpp"
#include "loom/backend/scraper.hpp"
#include "loom/backend/server.hpp"
#include "loom/backend/slurm_sync.hpp"
#include "loom/inventory/error.hpp"
#include "loom/telemetry/detection.hpp"
#include "loom/telemetry/simulator.hpp"

namespace loom::backend {

struct LoomdConfig {
    std::string listen;                    // "host:port"; empty when the file has none
    ServerConfig server;                   // `server:` and `stream:` (host/port come from listen)
    telemetry::DetectionConfig detection;  // `detection:`
    telemetry::SimulatorConfig simulator;  // `simulator:`
    std::vector<ScrapeTarget> scrape;      // `telemetry.scrape`
    TargetTemplates targets;               // `telemetry.targets` (empty: none)
    AlertingConfig alerting;               // `alerting:` (no alertmanagers: off)
    SlurmSyncConfig slurm;                 // `jobs.slurm` (no command: off)
    // `provisioning:`; kind is empty when the file does not say: executorSettings() then
    // picks "off", or "simulated" under --simulate. loomd's simulated burn-in fails 2% of
    // hosts by default (configs/loomd.yaml).
    ExecutorSettings provisioning = [] {
        ExecutorSettings s{.kind = ""};
        s.simulated.hostDiagFailRate = 0.02;
        return s;
    }();
};

inline constexpr std::size_t kLoomdConfigMaxBytes = std::size_t{1} << 20;

// The text of a loomd.yaml (empty text: every default).
Result<LoomdConfig> readLoomdConfig(std::string_view yamlText);
// The file; a file that cannot be read is an error naming it.
Result<LoomdConfig> loadLoomdConfig(const std::filesystem::path& file);

}  // namespace loom::backend
