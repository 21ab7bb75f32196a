// loomd serve: the HTTP + WebSocket server on the embedded PostgreSQL (or --db URL), with the
// telemetry hub (and --simulate), LISTEN/NOTIFY fan-out to other loomds on the same database
// and the leader lease (db/leader.hpp) for singleton loops. Prints "loomd listening on URL"
// (flushed) once it accepts connections; SIGINT/SIGTERM stop it cleanly.
#include <malloc.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "loom/backend/db_options.hpp"
#include "loom/backend/loomd_config.hpp"
#include "loom/backend/provisioning_service.hpp"
#include "loom/backend/router.hpp"
#include "loom/backend/scraper.hpp"
#include "loom/backend/server.hpp"
#include "loom/backend/slurm_sync.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/leader.hpp"
#include "loom/db/notify.hpp"
#include "loomd/commands.hpp"

namespace loom::loomd {
namespace {

struct ServeArgs {
    std::string listen = "127.0.0.1:8480";
    std::string config;
    std::string tlsCert, tlsKey;
    bool insecure = false;
    bool simulate = false;
    std::uint64_t simulateSeed = 1;
    bool simulateSeedSet = false;
    double simulateStragglers = -1;  // seconds between injected stragglers; -1: the config's
    std::vector<std::string> scrape;
    backend::DbOptions db;
};

// host:port, [v6]:port
Result<std::pair<std::string, std::uint16_t>> parseListen(const std::string& s) {
    auto colon = s.rfind(':');
    if (colon == std::string::npos)
        return fail(Error::invalid("--listen must be HOST:PORT, not '" + s + "'", "--listen"));
    std::string host = s.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "0.0.0.0";
    int port = -1;
    try {
        std::size_t used = 0;
        port = std::stoi(s.substr(colon + 1), &used);
        if (used != s.size() - colon - 1) port = -1;
    } catch (...) {
    }
    if (port < 0 || port > 65535)
        return fail(Error::invalid("--listen port must be 0..65535 in '" + s + "'", "--listen"));
    return std::pair{host, std::uint16_t(port)};
}

// glibc gives a thread that allocates while the others hold theirs an arena of its own, up to 8
// per core, and what is freed in one arena is not reused by another: loomd's I/O, database
// pool, reconciler and telemetry threads each grew their own. One arena per core: the 98k
// rollout's peak fell from 924 to 855 MB, 764 -> 708 MB after it (bench/README.md, issue 37).
// MALLOC_ARENA_MAX or a glibc.malloc.arena_max tunable in the environment still decides.
void limitMallocArenas() {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (std::getenv("MALLOC_ARENA_MAX") || (tunables && std::strstr(tunables, "arena_max"))) return;
    ::mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
}

int runServe(ServeArgs args) {
    limitMallocArenas();
    // loomd.yaml, every section at once (backend/loomd_config.hpp); no file: the defaults.
    backend::LoomdConfig file;
    if (!args.config.empty()) {
        auto loaded = backend::loadLoomdConfig(args.config);
        if (!loaded) {
            std::cerr << "loomd serve: --config " << args.config << ": "
                      << loaded.error().toString() << "\n";
            return 2;
        }
        file = std::move(*loaded);
        if (!file.listen.empty() && args.listen == "127.0.0.1:8480") args.listen = file.listen;
    }
    backend::ServerConfig cfg = file.server;
    auto hp = parseListen(args.listen);
    if (!hp) {
        std::cerr << "loomd serve: " << hp.error().toString() << "\n";
        return 2;
    }
    cfg.host = hp->first;
    cfg.port = hp->second;
    if (!args.tlsCert.empty()) cfg.tlsCert = args.tlsCert;
    if (!args.tlsKey.empty()) cfg.tlsKey = args.tlsKey;
    cfg.insecure = args.insecure;
    auto execSettings = backend::executorSettings(file.provisioning, args.simulate);
    if (!execSettings) {
        std::cerr << "loomd serve: " << execSettings.error().toString() << "\n";
        return 2;
    }

    // Block the stop signals before any thread starts, so only waitForSignal() sees them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    auto db = backend::openDatabase(args.db);
    if (!db) {
        std::cerr << "loomd serve: " << db.error().toString() << "\n";
        return 1;
    }
    spdlog::info("database: {}", db->description);

    backend::Server server(cfg, db->database);
    auto& services = server.services();
    backend::registerInventoryRoutes(server.router(), services);
    backend::registerFabricRoutes(server.router(), services);
    backend::registerAuthRoutes(server.router(), services);
    backend::registerTelemetryRoutes(server.router(), services);
    backend::registerProvisioningRoutes(server.router(), services);
    backend::registerJobRoutes(server.router(), services);
    backend::registerSdRoutes(server.router(), services, file.targets);

    db::LeaderLock leader(db->database);
    server.setLeaderFlag([&leader] { return leader.isLeader(); });
    db::Notifier notifier(db->database, std::string(db::kStreamChannel),
                          [&server](std::string_view topic, std::string_view payload) {
                              server.deliverFromPeer(std::string(topic), std::string(payload));
                          });
    server.setPeerPublisher([&notifier](const std::string& topic, const std::string& json) {
        notifier.publish(topic, json);
    });
    server.setPeerHealth([&notifier] { return notifier.connected(); });

    backend::TelemetryServiceOptions topts;
    topts.hub.detection = file.detection;
    topts.simulate = args.simulate;
    topts.leaderFence = [&leader] { return leader.fence(); };  // rollups are leader-only
    topts.simulator = file.simulator;
    if (args.simulateSeedSet || args.config.empty()) topts.simulator.seed = args.simulateSeed;
    if (args.simulateStragglers >= 0)
        topts.simulator.stragglerEverySeconds = args.simulateStragglers;
    auto targets = std::move(file.scrape);
    for (const auto& url : args.scrape) {
        if (auto ok = backend::parseHttpUrl(url); !ok) {
            std::cerr << "loomd serve: --scrape " << url << ": " << ok.error().message << "\n";
            return 2;
        }
        targets.push_back({.url = url});
    }
    backend::TelemetryService telemetry(services, topts);
    backend::Scraper scraper(telemetry.hub(), targets);
    services.addMetricsSource([&scraper](std::string& out) { scraper.appendMetrics(out); });
    backend::registerTargetRoutes(server.router(), scraper);
    // telemetry.targets follow the live inventory (rolled-in racks scraped, drained ones not).
    backend::followInventory(scraper, services, file.targets);
    server.setHub(&telemetry.hub());
    server.setTopicSource(backend::TelemetryService::topics(),
                          [&telemetry](std::string_view t, std::vector<std::uint8_t>& out) {
                              return telemetry.topic(t, out);
                          });
    if (auto r = server.start(); !r) {
        std::cerr << "loomd serve: " << r.error().toString() << "\n";
        return r.error().code == Errc::InvalidArgument ? 2 : 1;
    }
    telemetry.start();
    scraper.start();
    // Alertmanager out (alerting: in loomd.yaml); the leader sends.
    backend::AlertSender alerts(services, file.alerting, server.url());
    services.addMetricsSource([&alerts](std::string& out) { alerts.appendMetrics(out); });
    alerts.start();
    // Slurm's jobs (jobs.slurm in loomd.yaml); the leader polls.
    backend::SlurmPoller slurm(services, file.slurm);
    services.addMetricsSource([&slurm](std::string& out) { slurm.appendMetrics(out); });
    slurm.start();
    if (!targets.empty()) spdlog::info("telemetry: scraping {} exporter target(s)", targets.size());
    // The provisioning reconciler: started after the server, stopped before it (it publishes
    // through the server's Services). Only the holder of the leader lease reconciles.
    auto fenced = std::make_shared<std::atomic<std::int64_t>>(0);
    services.addMetricsSource([fenced](std::string& out) {
        out +=
            "# HELP loom_leader_fenced_commits_total Reconciler commits refused because this "
            "loomd's leader lease had moved on (a stalled leader's late writes).\n"
            "# TYPE loom_leader_fenced_commits_total counter\n"
            "loom_leader_fenced_commits_total " +
            std::to_string(fenced->load()) + "\n";
    });
    std::unique_ptr<backend::ProvisioningService> provisioning;
    std::optional<std::jthread> provisioningLoop;
    if (auto executor = backend::makeExecutor(*execSettings)) {
        backend::ProvisioningOptions popt;
        popt.publish = [&services](std::string_view topic, nlohmann::json msg) {
            services.publish(topic == "phase" ? "provisioning" : topic, std::move(msg));
            // Rack states changed: this loomd's live state follows at once (coalesced); the
            // others hear the commit's NOTIFY.
            services.inventoryChanged(backend::Services::Change::States);
        };
        // The reconciler runs under loomd's lease; its commits carry the lease's epoch.
        popt.leadership = [&leader] { return leader.fence(); };
        popt.onFenced = [fenced] { fenced->fetch_add(1); };
        popt.liveInventory = [&services] { return services.inventory(); };
        provisioning =
            std::make_unique<backend::ProvisioningService>(db->database, executor, std::move(popt));
        provisioningLoop.emplace(
            [&provisioning](std::stop_token st) { provisioning->runLoop(st); });
        spdlog::info("provisioning: reconciler running with the {} executor", execSettings->kind);
    } else {
        spdlog::warn(
            "provisioning: executor off (provisioning.executor in loomd.yaml, or "
            "--simulate): phase plans and rack actions are accepted, but no step "
            "runs by itself and phases do not advance");
    }
    std::cout << "loomd listening on " << server.url() << std::endl;
    server.waitForSignal();
    provisioningLoop.reset();  // request_stop + join
    provisioning.reset();
    slurm.stop();
    alerts.stop();
    scraper.stop();
    telemetry.stop();
    server.stop("server shutting down");
    notifier.stop();
    leader.stop();
    return 0;  // `db` goes out of scope last: the embedded PostgreSQL stops after the server
}

}  // namespace

void addServeCommand(CLI::App& app) {
    auto args = std::make_shared<ServeArgs>();
    auto* cmd = app.add_subcommand("serve", "run the HTTP/WebSocket API server");
    cmd->add_option("--listen", args->listen, "HOST:PORT to listen on (port 0 = any free port)")
        ->capture_default_str();
    cmd->add_option("--config", args->config,
                    "loomd.yaml (configs/loomd.yaml documents every key)");
    cmd->add_option(
        "--scrape", args->scrape,
        "exporter URL to scrape every second (repeatable; also telemetry.scrape in --config)");
    cmd->add_option("--tls-cert", args->tlsCert, "PEM certificate chain: serve HTTPS/WSS");
    cmd->add_option("--tls-key", args->tlsKey, "PEM private key for --tls-cert");
    cmd->add_flag("--insecure", args->insecure, "allow plain HTTP on a non-loopback address");
    cmd->add_flag("--simulate", args->simulate,
                  "feed the telemetry hub from the simulator; provisioning steps default to "
                  "the simulated executor");
    cmd->add_option_function<std::uint64_t>(
        "--simulate-seed",
        [args](std::uint64_t seed) {
            args->simulateSeed = seed;
            args->simulateSeedSet = true;
        },
        "simulator seed (default: simulator.seed in --config, else 1)");
    cmd->add_option(
           "--simulate-stragglers", args->simulateStragglers,
           "every SECONDS, make a random running job straggle for a minute (the six causes "
           "in turn, seeded: thermal throttle, ECC pressure, slow NIC, PFC storm on an "
           "RTSW uplink, flapping optic, noisy neighbour); 0 = off")
        ->check(CLI::Range(0.0, 86400.0));
    backend::addDbOptions(*cmd, args->db);
    cmd->callback([args] { throw CLI::RuntimeError(runServe(*args)); });
}

}  // namespace loom::loomd
