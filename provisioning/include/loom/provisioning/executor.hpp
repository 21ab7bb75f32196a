// Executors do the outside-world part of a step: confirm a physical step (delivery, racking,
// power-on), observe a rack's cabling, run burn-in. The reconciler decides what to run and
// judges the results (gates.hpp); executors only gather them.
//
// Two implementations:
//  - SimulatedExecutor: failure rates, durations and a seed. Every outcome is a pure function
//    of (seed, rack, step, attempt), so a run is reproducible whatever the order or threading,
//    and a step repeated after a crash sees the same outcome.
//  - CommandExecutor: runs shell command templates per host/rack with a timeout (POSIX
//    fork/exec; the whole process group is killed on timeout), output capped for the audit.
//
// Executors are called from worker threads; implementations must be thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/provisioning/gates.hpp"
#include "loom/provisioning/lifecycle.hpp"

namespace loom::provisioning {

struct RackContext {
    std::string rack;
    std::vector<std::string> hosts;                // healthy hosts to work on
    std::vector<std::vector<std::string>> gpus;    // per host, its GPU names (same order)
    std::vector<PlannedLink> plannedLinks;          // for cabling
    int attempt = 1;
    BurnInPolicy burnIn;
};

struct StepOutput {
    bool ok = false;
    std::string reason;
    std::string output;  // capped; kept in the audit record
};

class Executor {
public:
    virtual ~Executor() = default;
    virtual std::string name() const = 0;
    // Confirms a step that is physical work: to = delivered, racked or powered.
    virtual StepOutput physical(const RackContext& ctx, RackState to) = 0;
    // LLDP neighbours of the rack's ports. An error means the observation itself failed.
    virtual Result<std::vector<ObservedNeighbour>> observeCabling(const RackContext& ctx) = 0;
    virtual Result<BurnInResult> burnIn(const RackContext& ctx) = 0;
};

struct SimulatedConfig {
    std::uint64_t seed = 1;
    double physicalFailRate = 0.0;    // per physical step and attempt
    double miscablingRate = 0.02;     // per rack and attempt: one port miswired
    double hostDiagFailRate = 0.01;   // per host and attempt: one GPU fails diagnostics
    double busBwFailRate = 0.01;      // per rack and attempt: bandwidth below threshold
    double busBwGBps = 48.0;          // a healthy rack's figure (± 2 %)
    // Wall time each call takes (0 for benchmarks).
    std::chrono::milliseconds physicalDelay{0};
    std::chrono::milliseconds cablingDelay{0};
    std::chrono::milliseconds burnInDelay{0};
};

class SimulatedExecutor final : public Executor {
public:
    explicit SimulatedExecutor(SimulatedConfig cfg) : cfg_(cfg) {}
    std::string name() const override { return "simulated"; }
    StepOutput physical(const RackContext& ctx, RackState to) override;
    Result<std::vector<ObservedNeighbour>> observeCabling(const RackContext& ctx) override;
    Result<BurnInResult> burnIn(const RackContext& ctx) override;

    // Uniform [0,1) drawn from (seed, key): the simulator's only source of randomness.
    double draw(std::string_view key) const;

private:
    SimulatedConfig cfg_;
};

// Result of one command run.
struct CommandResult {
    int exitCode = -1;     // -1 when killed by a signal or not started
    bool timedOut = false;
    bool truncated = false;  // output exceeded the cap
    std::string output;      // stdout and stderr interleaved, capped (stdout only: Separate)
    std::string errorOutput;  // stderr under CommandStderr::Separate, capped too
    std::chrono::milliseconds elapsed{0};
};

// Runs `/bin/sh -c command` in its own process group; on timeout the group gets SIGKILL.
// Output beyond maxOutput bytes is drained and dropped (so the child never blocks on a full pipe).
// Separate: stdout alone in `output` (a command whose output is parsed, e.g. `squeue --json`),
// stderr in `errorOutput`.
enum class CommandStderr { Merged, Separate };
CommandResult runCommand(const std::string& command, std::chrono::milliseconds timeout,
                         std::size_t maxOutput = 64 * 1024,
                         CommandStderr stderrMode = CommandStderr::Merged);

// Replaces {key} by the shell-quoted value ('...'); unknown keys are left as they are.
std::string expandTemplate(std::string_view tmpl,
                           const std::vector<std::pair<std::string, std::string>>& vars);

struct CommandConfig {
    // Per host; {host}, {rack}, {level}. Exit 0 = pass. Output lines "gpu N fail" (N = index)
    // name failing GPUs.
    std::string hostDiag = "ssh {host} dcgmi diag -r {level}";
    // Per rack; {rack}, {hosts} (space-separated). Output must contain nccl-tests'
    // "Avg bus bandwidth    : <GB/s>" line.
    std::string rackBandwidth;
    // Per rack; {rack}. Output lines "<local-port> <peer-port>". Empty: no observation
    // (cabling then relies on LLDP reports posted through the API).
    std::string lldp;
    // Per rack, for physical steps; {rack}, {state}. Empty: physical steps are confirmed by
    // an operator (`rack advance`), the executor reports them done.
    std::string physical;
    std::chrono::milliseconds timeout{std::chrono::minutes(30)};
    std::size_t maxOutput = 64 * 1024;
};

class CommandExecutor final : public Executor {
public:
    explicit CommandExecutor(CommandConfig cfg) : cfg_(std::move(cfg)) {}
    std::string name() const override { return "command"; }
    StepOutput physical(const RackContext& ctx, RackState to) override;
    Result<std::vector<ObservedNeighbour>> observeCabling(const RackContext& ctx) override;
    Result<BurnInResult> burnIn(const RackContext& ctx) override;

private:
    CommandConfig cfg_;
};

}  // namespace loom::provisioning
