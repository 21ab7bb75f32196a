// Provisioning state in PostgreSQL: the active phase plan, phase status, per-rack
// provisioning bookkeeping, and the append-only transition audit (migration 0003).
//
// Crash safety rests on two rules kept here:
//  - every rack transition is a compare-and-set on (racks.state, rack_provisioning.seq): a
//    step computed from a stale read, or replayed after a crash, changes nothing;
//  - the transition, its audit row (unique idempotency key "rack:<name>:<seq>") and everything
//    that goes with it (host/GPU states, link states, fabric config versions, events) are
//    written in ONE transaction. A batch carries many racks' steps in that one transaction.
//
//   ProvisioningRepo repo(conn);
//   auto st = repo.load();                        // plan, phases, racks, database time
//   auto applied = repo.commit(batch);            // per change: applied or skipped (stale)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/db/database.hpp"
#include "loom/db/leader.hpp"
#include "loom/provisioning/gates.hpp"
#include "loom/provisioning/lifecycle.hpp"
#include "loom/provisioning/phase_plan.hpp"
#include "loom/provisioning/reconciler.hpp"

namespace loom::db {

struct ProvisioningRack {
    std::string name;
    std::string zone;
    provisioning::RackState state = provisioning::RackState::Planned;
    std::int64_t seq = 0;
    int attempts = 0;
    std::int64_t enteredAtMs = 0;
    std::int64_t notBeforeMs = 0;
    bool timeoutRaised = false;
    int phase = -1;  // ordinal in the active plan, -1 if none
    int order = 0;
    std::string reason;
};

struct ProvisioningPhase {
    std::string name;
    int ordinal = 0;
    provisioning::PhaseView view;
    std::string message;
    std::string startedAt, finishedAt;  // ISO 8601 UTC, "" if not yet
};

struct ProvisioningState {
    std::string planName;      // "" when no plan was applied
    std::string planDocument;  // the YAML as applied
    std::vector<ProvisioningPhase> phases;
    std::vector<ProvisioningRack> racks;  // every rack of the inventory, by name
    std::int64_t nowMs = 0;               // the database's clock (one clock for all replicas)
};

struct HostChange {
    std::string host;
    provisioning::HostState from, to;
    // A host quarantined by burn-in: what its `host_quarantined` event names (the GPUs the
    // diagnostic blamed, comma-separated; the diagnostic; the bar it missed).
    std::string gpus, diagnostic, threshold;
    // Set by ProvisioningRepo::quarantineHost: the host_quarantined event it opened (0: none,
    // one was open already).
    std::int64_t openedEvent = 0;
};

struct GpuChange {
    std::string gpu;
    provisioning::GpuState from, to;
};

struct ConfigVersion {
    std::string switchName;
    std::string config;
    std::string diff;
};

// One rack's step outcome. With `transition` the rack moves from → to (CAS on state and seq);
// without, only the retry bookkeeping (attempts, notBefore, reason) is updated (CAS as well).
struct RackChange {
    std::string rack;
    provisioning::RackState from = provisioning::RackState::Planned;
    provisioning::RackState to = provisioning::RackState::Planned;
    std::int64_t seq = 0;  // the seq the decision was based on
    bool transition = true;
    int attempts = 0;
    std::int64_t notBeforeMs = 0;  // 0: no backoff
    std::string reason;
    std::string executor;
    std::string output;
    std::string phase;
    std::string actor = "reconciler";
    std::vector<HostChange> hosts;  // applied only if the rack's CAS succeeds
    std::vector<GpuChange> gpus;
    std::vector<std::string> linkNames;  // links whose state becomes linkState
    std::string linkState;               // link_service.hpp state name; "" = leave links alone
    std::optional<std::string> event;    // a provisioning event to record with it
    std::string eventKind = "gate_failed";
};

struct PhaseChange {
    std::string phase;
    provisioning::PhaseStatus from, to;
    std::string message;
    std::string actor = "reconciler";
};

struct TimeoutMark {
    std::string rack;
    std::int64_t seq = 0;
    std::string message;
    std::string phase;
};

struct Batch {
    std::vector<RackChange> racks;
    std::vector<PhaseChange> phases;
    std::vector<TimeoutMark> timeouts;
    std::vector<ConfigVersion> configs;  // one new version per switch, one config set
    std::string configReason;
    // The leader's fencing token: the commit is refused (Conflict, nothing written) unless
    // the lease is still held at this epoch. Unset: no check (tests, single-instance tools).
    std::optional<Fence> fence;
};

struct BatchResult {
    std::vector<bool> rackApplied;   // per Batch::racks
    std::vector<bool> phaseApplied;  // per Batch::phases
    int transitions = 0;             // audit rows written (racks, hosts, GPUs, phases)
    std::int64_t configSet = 0;      // 0 when no configs
    // host_quarantined events opened by the commit (for the `events` topic).
    std::vector<std::int64_t> openedEvents;
    // host_quarantined events closed by the commit (hosts that left quarantine).
    std::vector<std::int64_t> closedEvents;
};

struct AuditRecord {
    std::int64_t id = 0;
    std::string at, actor, entityKind, entity, from, to, reason, executor, output, phase, key;
};

struct ProvisioningEvent {
    std::int64_t id = 0;
    std::string at, severity, kind, rack, phase, message;
};

class ProvisioningRepo {
public:
    explicit ProvisioningRepo(Connection& conn) : conn_(conn) {}

    // Stores the plan (replacing the active one), its phases (all pending) and each rack's
    // phase assignment, in one transaction. Re-applying a plan of the same name keeps the
    // status of phases that still exist. Errors: InvalidArgument from assignRacks (path/line).
    struct ApplyResult {
        int phases = 0;
        int racksAssigned = 0;
        bool replaced = false;  // another plan was active before
    };
    Result<ApplyResult> applyPlan(const provisioning::PhasePlan& plan, std::string_view document,
                                  std::string_view actor);

    Result<ProvisioningState> load();

    Result<BatchResult> commit(const Batch& batch);

    // start | pause | resume | abort of one phase of the active plan; Conflict naming the
    // current status when the operation does not apply.
    Result<ProvisioningPhase> controlPhase(std::string_view phase, std::string_view op,
                                           std::string_view actor);

    // An operator's request on one rack: advance (next on the bring-up path, or repair →
    // racked, drained → in_service... the one non-failure next state), fail, drain, repair.
    // Validated against the transition table; Conflict names current and allowed states.
    struct RackActionResult {
        std::string rack;
        provisioning::RackState from, to;
    };
    // `rackLinks`: the links the rack owns (provisioning::LinkOwners); they take the state the
    // rack's new state gives them (linkServiceFor) in the same transaction.
    Result<RackActionResult> rackAction(std::string_view rack, std::string_view action,
                                        std::string_view reason, std::string_view actor,
                                        const std::vector<std::string>& rackLinks = {});

    // Stores the given links' states (one statement; rows already in that state are left
    // alone); returns how many changed.
    Result<int> setLinkStates(const std::vector<std::string>& names,
                              const std::vector<std::string>& states);
    // The leader's live-state sync: links (link_service.hpp, desiredLinkStates) and switches
    // (follow_rack.hpp, desiredSwitchStates) set to follow their racks in one transaction (one
    // statement per table, one `live` NOTIFY when a row changed), so no reader sees a rack's
    // cables follow it while its switch does not. Rows already in their state are left alone.
    struct FollowFixes {
        int links = 0, switches = 0;  // rows changed
    };
    Result<FollowFixes> setFollowStates(const std::vector<std::string>& linkNames,
                                        const std::vector<std::string>& linkStates,
                                        const std::vector<std::string>& switchNames,
                                        const std::vector<std::string>& switchStates);

    // Quarantines a host (and records it); its rack is unaffected.
    Result<HostChange> quarantineHost(std::string_view host, std::string_view reason,
                                      std::string_view actor);

    // Replaces the rack's stored LLDP observations.
    Result<int> recordLldp(std::string_view rack,
                           const std::vector<provisioning::ObservedNeighbour>& seen);
    // rack name → its observations (all racks that have any).
    Result<std::vector<std::pair<std::string, std::vector<provisioning::ObservedNeighbour>>>>
    lldpAll();

    // Latest config version and text per switch.
    Result<std::vector<std::pair<std::string, std::pair<int, std::string>>>> latestConfigs();

    Result<std::vector<AuditRecord>> audit(std::string_view entity = {}, int limit = 1000,
                                           std::int64_t afterId = 0);
    Result<std::vector<ProvisioningEvent>> events(std::int64_t afterId = 0, int limit = 1000);

    // Current state of every host (name, state), and the inventory generation (changes with
    // every apply that changed something).
    Result<std::vector<std::pair<std::string, std::string>>> hostStates();
    // The same for the hosts of these racks only (the reconciler's pass reads those of the
    // racks it steps: ~60 of 6,144 at 98k, not all 12,288 hosts every pass).
    Result<std::vector<std::pair<std::string, std::string>>> hostStatesOfRacks(
        const std::vector<std::string>& racks);
    Result<std::int64_t> inventoryGeneration();

private:
    Connection& conn_;
};

}  // namespace loom::db
