// /healthz, /readyz and /metrics.
#include "server/shared_state.hpp"

#include "loom/db/failover_guard.hpp"
#include "loom/db/migrations.hpp"

#include <fstream>
#include <unistd.h>

namespace loom::backend {

namespace {

std::size_t rssBytes() {
    std::ifstream f("/proc/self/statm");
    std::size_t pages = 0, rss = 0;
    f >> pages >> rss;
    return rss * std::size_t(sysconf(_SC_PAGESIZE));
}

}  // namespace

void registerSystemRoutes(Router& router, Server::Impl& s) {
    router.add(
        "GET", "/healthz", Role::None,
        [](const Request&) -> Result<Response> {
            return Response::ofJson({{"status", "ok"}});
        },
        RouteOptions{.needsDb = false});
    router.add(
        "GET", "/readyz", Role::None,
        [&s](const Request& req) -> Result<Response> {
            if (!req.connection)
                return fail(Error::unavailable("database unreachable"));
            auto v = req.connection->queryValue("SELECT max(version) FROM schema_migrations");
            if (!v) return fail(Error::unavailable("database not ready: " + v.error().message));
            int have = v->has_value() ? std::stoi(**v) : 0;
            int want = db::migrations().empty() ? 0 : db::migrations().back().version;
            if (have < want)
                return fail(Error::unavailable("migrations not applied: schema version " +
                                               std::to_string(have) + ", this loomd needs " +
                                               std::to_string(want)));
            if (!s.liveLoaded)
                return fail(Error::unavailable("live state not loaded yet (inventory, layout)"));
            if (s.readyCheck) {
                auto r = s.readyCheck(*req.connection);
                if (!r) return fail(r.error());
            }
            return Response::ofJson({{"status", "ready"}, {"schemaVersion", have}});
        },
        RouteOptions{.needsDb = false});
    router.add(
        "GET", "/metrics", Role::Viewer,
        [&s](const Request&) -> Result<Response> {
            std::string out;
            out.reserve(16 * 1024);
            s.metrics.appendTo(out);
            auto gauge = [&](const char* name, const char* help, double v) {
                out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name +
                       " gauge\n" + name + " " + std::to_string(v) + "\n";
            };
            gauge("loom_db_pool_size", "Database pool threads.", s.pool->size());
            gauge("loom_db_pool_busy", "Pool threads running a job.", s.pool->busy());
            gauge("loom_db_pool_queued", "Jobs waiting for a pool thread.",
                  double(s.pool->queued()));
            gauge("loom_db_pool_connected", "Pool threads with an open connection.",
                  s.pool->connected());
            out += "# HELP loom_db_pool_connect_failures_total Failed connection attempts.\n"
                   "# TYPE loom_db_pool_connect_failures_total counter\n"
                   "loom_db_pool_connect_failures_total " +
                   std::to_string(s.pool->connectFailures()) + "\n";
            out += "# HELP loom_db_failover_cuts_total Connections cut because another server "
                   "became the primary (docs/deploy.md).\n"
                   "# TYPE loom_db_failover_cuts_total counter\n"
                   "loom_db_failover_cuts_total " +
                   std::to_string(db::failover::cuts()) + "\n";
            out += "# HELP loom_db_failover_probes_total Probe connections made to find the "
                   "primary (docs/deploy.md).\n"
                   "# TYPE loom_db_failover_probes_total counter\n"
                   "loom_db_failover_probes_total " +
                   std::to_string(db::failover::probes()) + "\n";
            gauge("loom_process_resident_memory_bytes", "Resident set size of loomd.",
                  double(rssBytes()));
            gauge("loom_layout_version", "Current hall layout version.",
                  double(s.layoutVersion.load()));
            gauge("loom_leader", "1 when this loomd holds the leader lock.",
                  (s.isLeader ? s.isLeader() : true) ? 1 : 0);
            std::vector<std::function<void(std::string&)>> sources;
            {
                std::lock_guard lock(s.metricsSourcesMutex);
                sources = s.metricsSources;
            }
            for (auto& src : sources) src(out);
            return Response::text(std::move(out), "text/plain; version=0.0.4; charset=utf-8");
        },
        RouteOptions{.needsDb = false});
}

}  // namespace loom::backend
