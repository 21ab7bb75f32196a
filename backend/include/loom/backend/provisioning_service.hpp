// ProvisioningService: the reconciler loop of loomd. Stateless between passes: every pass
// reads the desired state (the active phase plan) and the current state (racks, phases) from
// PostgreSQL, asks the pure planner (provisioning/reconciler.hpp) what to do, runs the steps
// (executors on worker threads, fabric enablement in memory), and commits the outcomes as ONE
// transaction per batch with compare-and-set on each rack's (state, seq) and an audit row per
// transition (db/provisioning_repo.hpp). Killed at any point, a restarted service (this or
// another loomd) reads the same state and goes on: a step whose commit was lost is run again
// (executors are idempotent checks), a step that was committed is never committed twice.
//
// Only the leader reconciles: runLoop() runs passes while it holds loomd's leader lease
// (db/leader.hpp), and each batch commits only if the lease is still held at the same epoch
// (fencing: a leader that was stopped and resumed cannot write).
//
//   ProvisioningService svc(db, std::make_shared<SimulatedExecutor>(cfg), {});
//   while (true) { auto s = svc.runOnce(); if (s && s->idle()) break; }
//
// Fabric enablement: the service keeps a fabric::Router over the stored inventory (links of
// racks not in service are out of the routing; links not attached to any rack — the CTSW/ATSW
// core — are routed as up). validated → in_service sets the rack's links up, reroutes
// incrementally, checks that every uplink peer reaches the rack, and writes the new FRR
// config of every affected switch (its RTSW and the uplink peers) with the diff to the
// previous version, in the same transaction as the transition. Draining does the reverse.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/db/database.hpp"
#include "loom/db/leader.hpp"
#include "loom/inventory/error.hpp"
#include "loom/provisioning/executor.hpp"

namespace loom::inventory {
struct Inventory;
}

namespace loom::backend {

struct ProvisioningOptions {
    int maxBatch = 1024;  // rack steps per pass (one transaction)
    int workers = 4;      // threads running executor calls
    bool fabric = true;   // fabric enablement (routing + configs); off: links only
    std::chrono::milliseconds idleInterval{500};  // runLoop pause when nothing was due
    // Publishes stream messages: topic "provisioning" ({"type":"provisioning",...}) and
    // "phase" ({"type":"phase",...}). May be empty.
    std::function<void(std::string_view topic, nlohmann::json msg)> publish;
    // runLoop's leadership: the current term's fencing token, nullopt when not leader (loomd
    // passes its LeaderLock::fence). Empty: runLoop holds a lease of its own.
    std::function<std::optional<db::Fence>()> leadership;
    // Called when a batch commit was refused because the lease moved on (a stalled leader's
    // late write; loomd counts them in /metrics). May be empty.
    std::function<void()> onFenced;
    // The server's live inventory snapshot (Services::inventory). Link states changed by
    // anyone else (operator actions, the leader's live sync) reach the reconciler's router
    // from it before each pass, so the configs it writes route what is really in service.
    std::function<std::shared_ptr<const inventory::Inventory>()> liveInventory;
};

struct PassStats {
    int actions = 0;       // planner actions acted on
    int transitions = 0;   // audit rows written (racks, hosts, GPUs, phases)
    int rackTransitions = 0;
    int retries = 0;
    int skipped = 0;       // CAS lost (state changed under us): redone next pass
    std::int64_t nextDueMs = 0;  // earliest backoff expiry when idle, 0 if none
    bool planPresent = false;
    // Where the pass's wall time went (runLoop logs it at debug level): reading the state,
    // the inventory context and router (0 unless the inventory changed), executors and
    // fabric, and the batch's commit.
    double loadMs = 0, contextMs = 0, workMs = 0, commitMs = 0;
    bool idle() const { return actions == 0; }
};

// Which executor `loomd serve` gives its reconciler: loomd.yaml's `provisioning:` section
// (LoomdConfig::provisioning; configs/loomd.yaml documents every key), then the
// LOOM_PROVISIONING_EXECUTOR, _SEED, _FAIL_RATE and _DELAY_MS environment overrides. When
// neither says, "off" (no reconciler: plans, phases and manual rack actions work, no step runs
// by itself), or "simulated" when loomd runs with --simulate.
struct ExecutorSettings {
    std::string kind = "off";  // off | simulated | command
    provisioning::SimulatedConfig simulated;
    provisioning::CommandConfig command;
};
Result<ExecutorSettings> executorSettings(ExecutorSettings fromFile, bool simulate);
// Null for "off".
std::shared_ptr<provisioning::Executor> makeExecutor(const ExecutorSettings& settings);

class ProvisioningService {
public:
    ProvisioningService(db::Database db, std::shared_ptr<provisioning::Executor> executor,
                        ProvisioningOptions options = {});
    ~ProvisioningService();
    ProvisioningService(const ProvisioningService&) = delete;
    ProvisioningService& operator=(const ProvisioningService&) = delete;

    // One pass. Does not check leadership (runLoop does; tests call this directly).
    Result<PassStats> runOnce();

    // Until stopped: take the leader lock (retrying), then pass after pass; sleeps when idle.
    // Database errors are logged and retried with a fresh connection.
    void runLoop(std::stop_token stop);

    bool leader() const { return leader_.load(); }
    std::int64_t totalTransitions() const { return total_.load(); }
    // Whether the reconciler holds its context (racks' hosts and cables, the fabric routing):
    // loaded by the first pass with work, let go once every phase of the plan is done. Call
    // between passes (the reconciler's thread owns it).
    bool holdsContext() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::atomic<bool> leader_{false};
    std::atomic<std::int64_t> total_{0};
};

}  // namespace loom::backend
