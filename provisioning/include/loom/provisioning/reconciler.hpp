// The reconciler: a pure planner that says what to do next, given the phase plan and the
// current state of every phase and rack. It never does anything itself, so it is
// deterministic and runs in microseconds; the service (backend/) executes its actions,
// each as one idempotent transaction, and calls it again.
//
//   Reconciler r(plan);
//   for (const Action& a : r.step(state)) ...        // what to do now
//   Decision d = r.judge(rackView, action, outcome);  // what a step's outcome means
//
// Rules, in order of precedence:
//  - a draining rack is always moved on (drain does not wait for phases);
//  - per-state time limits raise one event per rack and state entry;
//  - phases run in order: phase 0 starts by request; phase N+1 starts (automatically when
//    the plan says so, else by request) only once phase N is completed; a phase completes
//    when every rack is settled and ≥ successThreshold % are in service, and halts when every
//    rack is settled below the threshold;
//  - within a running phase the first `canary` racks go alone; if one fails the phase halts
//    until an admin resumes it (which accepts the canary result);
//  - at most `concurrency` racks of a phase are in flight; new racks start in phase order;
//  - a rack whose last attempt failed waits for its backoff (notBefore) before retrying.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/provisioning/gates.hpp"
#include "loom/provisioning/lifecycle.hpp"
#include "loom/provisioning/phase_plan.hpp"

namespace loom::provisioning {

enum class PhaseStatus : std::uint8_t { Pending, Running, Paused, Completed, Halted, Aborted };
std::string_view phaseStatusName(PhaseStatus s);
std::optional<PhaseStatus> parsePhaseStatus(std::string_view s);

struct PhaseView {
    PhaseStatus status = PhaseStatus::Pending;
    bool startRequested = false;   // an admin asked to start it (it waits for its gate)
    bool canaryAccepted = false;   // an admin resumed it after a canary failure
};

struct RackView {
    std::string name;
    int phase = -1;  // index into plan.phases; -1 when no phase selects the rack
    int order = 0;   // position within its phase (canaries are the first `canary`)
    RackState state = RackState::Planned;
    int attempts = 0;              // failed attempts of the step leaving the current state
    std::int64_t enteredAtMs = 0;  // when it entered the current state
    std::int64_t notBeforeMs = 0;  // backoff: no attempt before this time
    bool timeoutRaised = false;    // the time-limit event for this state entry was raised
};

struct State {
    std::vector<PhaseView> phases;  // one per plan phase
    std::vector<RackView> racks;
    std::int64_t nowMs = 0;
};

enum class ActionKind : std::uint8_t {
    StartPhase,
    CompletePhase,
    HaltPhase,
    Step,          // run the step that moves rack `rack` from `from` to `to`
    RaiseTimeout,  // rack has been in `from` longer than its limit
};
std::string_view actionKindName(ActionKind k);

// What kind of work a Step is: which executor call (or none) decides it.
enum class StepKind : std::uint8_t { Physical, Cabling, StartBurnIn, BurnIn, FabricEnable, FabricDrain };
StepKind stepKind(RackState from, RackState to);

struct Action {
    ActionKind kind = ActionKind::Step;
    int phase = -1;
    int rack = -1;  // index into State::racks
    RackState from = RackState::Planned;
    RackState to = RackState::Planned;
    std::string reason;

    bool operator==(const Action&) const = default;
};

// The outcome of running a Step, as the service saw it.
struct StepOutcome {
    bool ok = false;
    std::string reason;
};

// What to write after a Step ran.
struct Decision {
    bool transition = false;   // move the rack to `to`
    RackState to = RackState::Planned;
    int attempts = 0;          // the rack's attempt counter after this step
    std::int64_t notBeforeMs = 0;
    std::string reason;
};

// Progress of one phase, for the API and the console.
struct PhaseProgress {
    int total = 0;
    int inService = 0;
    int inFlight = 0;
    int notStarted = 0;
    int failed = 0;   // failed, in repair or decommissioned
    int drained = 0;  // draining, drained or in maintenance (taken out by an operator)
    double inServicePercent = 0;
};

class Reconciler {
public:
    // The reconciler reads the plan it is given and does not copy it: the plan must outlive it
    // (a temporary would dangle, so it does not compile).
    explicit Reconciler(const PhasePlan& plan) : plan_(plan) {}
    explicit Reconciler(PhasePlan&&) = delete;

    std::vector<Action> step(const State& s) const;
    Decision judge(const RackView& rack, const Action& a, const StepOutcome& o,
                   std::int64_t nowMs) const;
    PhaseProgress progress(const State& s, int phase) const;

private:
    const PhasePlan& plan_;
};

}  // namespace loom::provisioning
