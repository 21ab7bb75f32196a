// Phase plans: which racks come into service in which order, how many at a time, and what
// "good enough" means at each gate. Parsed from YAML (`apiVersion: loom/v1`, `kind: PhasePlan`,
// see configs/phases/) with errors that name the document path and line.
//
//   auto plan = parsePhasePlan(yamlText);            // Result<PhasePlan>
//   auto groups = assignRacks(*plan, racks);         // Result<std::vector<std::vector<int>>>
//
// Limits (stated, enforced): document ≤ 1 MiB, ≤ 256 phases, concurrency 1..100000,
// maxAttempts 1..100, durations ≤ 30 days, threshold 0..100 %.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"
#include "loom/provisioning/lifecycle.hpp"

namespace loom::provisioning {

inline constexpr std::size_t kMaxPlanBytes = 1 << 20;
inline constexpr int kMaxPhases = 256;

struct RetryPolicy {
    int maxAttempts = 3;            // attempts of one gate before the rack goes to failed
    std::int64_t initialMs = 30'000;  // backoff before the 2nd attempt
    std::int64_t maxMs = 600'000;
    double multiplier = 2.0;
    double jitter = 0.2;  // ± fraction of the backoff, drawn deterministically per rack/attempt
};

struct BurnInPolicy {
    int gpuDiagLevel = 3;         // dcgmi diag -r N
    double minBusBwGBps = 40.0;   // rack-level all_reduce bus bandwidth (nccl-tests busbw)
    // A rack with more quarantined hosts than this fails burn-in as a whole.
    int maxQuarantinedHosts = 1;
};

// Per-state time limits; exceeding one raises an event (the rack is not moved).
struct StateTimeout {
    RackState state = RackState::Planned;
    std::int64_t ms = 0;
};

// The racks a phase selects: union of zones, exact names and glob patterns (`*`, `?`,
// `[a-z]`). A rack selected by an earlier phase is not selected again.
struct RackSelector {
    std::vector<std::string> zones;
    std::vector<std::string> names;
    std::vector<std::string> patterns;
    int namesLine = 0;  // for errors about unknown names
};

struct Phase {
    std::string name;
    RackSelector racks;
    int concurrency = 16;
    int canary = 0;                 // the first N racks go alone; all must pass before the rest
    double successThreshold = 95.0;  // % of the phase in service before the next may start
    BurnInPolicy burnIn;
    RetryPolicy retry;
    std::vector<StateTimeout> timeouts;
    int line = 0;

    std::optional<std::int64_t> timeoutFor(RackState s) const;
};

struct PhasePlan {
    std::string name;
    std::string cluster;         // optional: the cluster the plan was written for
    bool autoStartNext = true;   // start phase N+1 as soon as phase N passes its gate
    // auto: the reconciler confirms delivery and racking itself (simulation, or a site where
    // those are tracked elsewhere); manual: racks wait in planned/delivered for `rack advance`.
    bool manualPhysicalSteps = false;
    std::vector<Phase> phases;
};

Result<PhasePlan> parsePhasePlan(std::string_view yaml);

struct RackRef {
    std::string name;
    std::string zone;
};

// For each phase, the indices into `racks` it selects (in `racks` order). Errors: a name that
// is not a rack (path spec.phases[i].racks.names[j]), a phase that selects no rack.
Result<std::vector<std::vector<int>>> assignRacks(const PhasePlan& plan,
                                                  const std::vector<RackRef>& racks);

// Glob match used by selectors: `*`, `?`, `[abc]`, `[a-z]`.
bool globMatch(std::string_view pattern, std::string_view text);

// "90s", "15m", "2h", "1d", or a plain number of seconds → milliseconds.
std::optional<std::int64_t> parseDuration(std::string_view s);

// Backoff before attempt `attempt` (2 = first retry): initial × multiplier^(attempt-2), capped,
// ± jitter drawn from a hash of (key, attempt) so every replica computes the same value.
std::int64_t backoffMs(const RetryPolicy& p, int attempt, std::string_view key);

}  // namespace loom::provisioning
