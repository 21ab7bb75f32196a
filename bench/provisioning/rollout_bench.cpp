// loom_bench_provisioning [--cluster FILE] [--plan FILE] [--seed N] [--fsync on|off] [--no-fabric]
//
// Starts an embedded PostgreSQL in a temporary directory, applies the cluster spec (default
// configs/clusters/meta-24k-roce.yaml) and the phase plan (default
// configs/phases/meta-24k-8phase.yaml), starts the first phase and runs the reconciler with
// the simulated executor at zero delay (default failure rates, fixed seed) until nothing is
// left to do. Prints one JSON object: wall time of the rollout, transitions (audit rows) and
// rack transitions per second, passes, final rack states.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "loom/backend/provisioning_service.hpp"
#include "loom/db/embedded_postgres.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/migrations.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/inventory/spec.hpp"

using namespace loom;
using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

int main(int argc, char** argv) {
    std::string cluster = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/meta-24k-roce.yaml";
    std::string planFile = std::string(LOOM_SOURCE_DIR) + "/configs/phases/meta-24k-8phase.yaml";
    std::uint64_t seed = 1;
    bool fsync = true, fabric = true;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
        if (a == "--cluster") cluster = next();
        else if (a == "--plan") planFile = next();
        else if (a == "--seed") seed = std::stoull(next());
        else if (a == "--fsync") fsync = next() != "off";
        else if (a == "--no-fabric") fabric = false;
        else {
            std::cerr << "usage: " << argv[0]
                      << " [--cluster FILE] [--plan FILE] [--seed N] [--fsync on|off] [--no-fabric]\n";
            return 2;
        }
    }
    char tmpl[] = "/tmp/loom-bench-prov-XXXXXX";
    if (!::mkdtemp(tmpl)) return 1;
    const std::filesystem::path dir = tmpl;
    int rc = 0;
    {
        auto pg = db::EmbeddedPostgres::start({.stateDir = dir, .fsync = fsync});
        if (!pg) {
            std::cerr << pg.error().toString() << "\n";
            return 1;
        }
        auto database = (*pg)->database();
        auto conn = database.connect();
        if (!conn || !db::migrate(*conn)) {
            std::cerr << "cannot connect/migrate\n";
            return 1;
        }
        auto t0 = Clock::now();
        auto inv = inventory::loadClusterSpecFile(cluster);
        if (!inv) {
            std::cerr << inv.error().toString() << "\n";
            return 1;
        }
        auto applied = db::applyPlan(*conn, inventory::plan(*inv, inventory::Inventory{}), *inv,
                                     {.actor = "bench"});
        if (!applied) {
            std::cerr << applied.error().toString() << "\n";
            return 1;
        }
        const double applySec = secondsSince(t0);
        std::ifstream in(planFile);
        std::stringstream ss;
        ss << in.rdbuf();
        // Retry backoffs are real time (30 s in the 24k plan): the benchmark sets them to zero
        // so that it measures the reconciler, not sleeping. Everything else is the plan as is.
        std::string planText = ss.str();
        for (auto pos = planText.find("backoff:"); pos != std::string::npos;
             pos = planText.find("backoff:", pos + 1)) {
            auto end = planText.find('}', pos);
            if (end != std::string::npos)
                planText.replace(pos, end + 1 - pos, "backoff: {initial: 0s, max: 0s}");
        }
        auto plan = provisioning::parsePhasePlan(planText);
        if (!plan) {
            std::cerr << planFile << ": " << plan.error().toString() << "\n";
            return 2;
        }
        db::ProvisioningRepo repo(*conn);
        if (auto r = repo.applyPlan(*plan, planText, "bench"); !r) {
            std::cerr << r.error().toString() << "\n";
            return 1;
        }
        if (auto r = repo.controlPhase(plan->phases[0].name, "start", "bench"); !r) {
            std::cerr << r.error().toString() << "\n";
            return 1;
        }
        provisioning::SimulatedConfig sim;  // default failure rates, zero delay
        sim.seed = seed;
        backend::ProvisioningService svc(database,
                                         std::make_shared<provisioning::SimulatedExecutor>(sim),
                                         {.maxBatch = 4096, .fabric = fabric});
        const auto t1 = Clock::now();
        int passes = 0, rackTransitions = 0, retries = 0;
        std::int64_t transitions = 0;
        double firstPass = 0;
        for (;; ++passes) {
            const auto tp = Clock::now();
            auto s = svc.runOnce();
            if (passes == 0) firstPass = secondsSince(tp);
            if (!s) {
                std::cerr << "pass " << passes << ": " << s.error().toString() << "\n";
                rc = 1;
                break;
            }
            if (s->idle()) {
                if (s->nextDueMs == 0) break;
                // Backoffs are real time (30 s in the 24k plan); the benchmark does not wait
                // for them: they would only measure sleeping.
                rc = 3;
                std::cerr << "stopped: racks waiting on retry backoff\n";
                break;
            }
            transitions += s->transitions;
            rackTransitions += s->rackTransitions;
            retries += s->retries;
        }
        const double wall = secondsSince(t1);
        auto st = repo.load();
        std::map<std::string, int> states;
        if (st)
            for (const auto& r : st->racks) ++states[std::string(provisioning::stateName(r.state))];
        auto configs = conn->queryValue("SELECT count(*) FROM fabric_config_versions");
        std::printf("{\"bench\": \"provisioning_rollout\", \"cluster\": \"%s\", \"racks\": %zu, "
                    "\"phases\": %zu, \"fsync\": %s, \"fabric\": %s, \"applySeconds\": %.2f, "
                    "\"rolloutSeconds\": %.2f, \"firstPassSeconds\": %.2f, \"passes\": %d, "
                    "\"transitions\": %lld, \"rackTransitions\": %d, \"retries\": %d, "
                    "\"transitionsPerSecond\": %.0f, \"configVersions\": %s, \"states\": {",
                    inv->cluster.c_str(), inv->racks.size(), plan->phases.size(),
                    fsync ? "true" : "false", fabric ? "true" : "false", applySec, wall, firstPass,
                    passes, static_cast<long long>(transitions), rackTransitions, retries,
                    transitions / wall, configs && *configs ? configs->value().c_str() : "0");
        bool first = true;
        for (const auto& [k, v] : states) {
            std::printf("%s\"%s\": %d", first ? "" : ", ", k.c_str(), v);
            first = false;
        }
        std::printf("}}\n");
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return rc;
}
