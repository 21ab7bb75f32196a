// Lifecycles of racks, hosts and GPUs: the states and the ONE table of allowed transitions.
//
// Everything that changes a state (the reconciler, the HTTP actions, the repository's
// compare-and-set) asks checkTransition() first, so an illegal request is refused the same way
// everywhere: a Conflict error naming the current state and the states allowed next.
//
//   auto to = parseRackState("burn_in");
//   if (auto ok = checkTransition(*from, *to); !ok) return fail(ok.error());  // 409
//
// States are stored as their snake_case names (the `state` columns of racks/hosts/gpus).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"

namespace loom::provisioning {

// The rollout path, in order, then the side states.
enum class RackState : std::uint8_t {
    Planned,
    Delivered,
    Racked,
    Cabled,
    Powered,
    BurnIn,
    Validated,
    InService,
    Failed,  // carries a reason in the audit record and the rack's status
    Repair,
    Draining,
    Drained,
    Maintenance,
    Decommissioned,
};
inline constexpr int kRackStateCount = 14;

// Hosts follow their rack through bring-up; a host that fails its diagnostics is quarantined
// (the rack goes on with its healthy hosts) and, when hardware must go back, sent to RMA.
enum class HostState : std::uint8_t {
    Planned,
    BurnIn,
    Ready,
    InService,
    Quarantined,
    Rma,
    Repair,
    Decommissioned,
};
inline constexpr int kHostStateCount = 8;

// A GPU is "ok" from the start (inventory default); diagnostics may make it suspect.
enum class GpuState : std::uint8_t { Ok, Suspect, Quarantined, Rma, Decommissioned };
inline constexpr int kGpuStateCount = 5;

std::string_view stateName(RackState s);
std::string_view stateName(HostState s);
std::string_view stateName(GpuState s);
std::optional<RackState> parseRackState(std::string_view s);
std::optional<HostState> parseHostState(std::string_view s);
std::optional<GpuState> parseGpuState(std::string_view s);

template <class S>
struct Transition {
    S from;
    S to;
};

// THE table. Reading it top to bottom is reading the lifecycle.
inline constexpr Transition<RackState> kRackTransitions[] = {
    {RackState::Planned, RackState::Delivered},
    {RackState::Planned, RackState::Decommissioned},
    {RackState::Delivered, RackState::Racked},
    {RackState::Delivered, RackState::Failed},
    {RackState::Delivered, RackState::Decommissioned},
    {RackState::Racked, RackState::Cabled},
    {RackState::Racked, RackState::Failed},
    {RackState::Cabled, RackState::Powered},
    {RackState::Cabled, RackState::Failed},
    {RackState::Powered, RackState::BurnIn},
    {RackState::Powered, RackState::Failed},
    {RackState::BurnIn, RackState::Validated},
    {RackState::BurnIn, RackState::Failed},
    {RackState::Validated, RackState::InService},
    {RackState::Validated, RackState::Failed},
    // Leaving service always goes through draining so the fabric moves traffic away first;
    // a hard failure in service is still recorded as failed (its links are disabled).
    {RackState::InService, RackState::Draining},
    {RackState::InService, RackState::Failed},
    {RackState::Failed, RackState::Repair},
    {RackState::Failed, RackState::Decommissioned},
    // A repaired rack re-enters at racked: its cabling and burn-in are checked again.
    {RackState::Repair, RackState::Racked},
    {RackState::Repair, RackState::Decommissioned},
    {RackState::Draining, RackState::Drained},
    {RackState::Draining, RackState::Failed},
    {RackState::Drained, RackState::Maintenance},
    {RackState::Drained, RackState::InService},
    {RackState::Drained, RackState::Decommissioned},
    {RackState::Maintenance, RackState::Racked},
    {RackState::Maintenance, RackState::Decommissioned},
};

inline constexpr Transition<HostState> kHostTransitions[] = {
    {HostState::Planned, HostState::BurnIn},
    {HostState::Planned, HostState::Quarantined},
    {HostState::Planned, HostState::Decommissioned},
    {HostState::BurnIn, HostState::Ready},
    {HostState::BurnIn, HostState::Quarantined},
    {HostState::Ready, HostState::InService},
    {HostState::Ready, HostState::Quarantined},
    {HostState::InService, HostState::Quarantined},
    {HostState::InService, HostState::Ready},  // its rack was drained
    {HostState::Quarantined, HostState::Rma},
    {HostState::Quarantined, HostState::Repair},
    {HostState::Quarantined, HostState::Decommissioned},
    {HostState::Rma, HostState::Repair},
    {HostState::Rma, HostState::Decommissioned},
    {HostState::Repair, HostState::BurnIn},  // a repaired host is burned in again
    {HostState::Repair, HostState::Decommissioned},
};

inline constexpr Transition<GpuState> kGpuTransitions[] = {
    {GpuState::Ok, GpuState::Suspect},
    {GpuState::Ok, GpuState::Quarantined},
    {GpuState::Suspect, GpuState::Ok},
    {GpuState::Suspect, GpuState::Quarantined},
    {GpuState::Quarantined, GpuState::Rma},
    {GpuState::Quarantined, GpuState::Ok},  // cleared by a passing re-test
    {GpuState::Rma, GpuState::Ok},          // replaced part
    {GpuState::Rma, GpuState::Decommissioned},
};

bool isAllowed(RackState from, RackState to);
bool isAllowed(HostState from, HostState to);
bool isAllowed(GpuState from, GpuState to);

std::vector<RackState> allowedNext(RackState from);
std::vector<HostState> allowedNext(HostState from);
std::vector<GpuState> allowedNext(GpuState from);

// Ok, or Conflict: "rack z1-r001: cannot go from burn_in to in_service; allowed next: validated, failed".
// `what` names the entity in the message ("rack z1-r001").
Result<void> checkTransition(RackState from, RackState to, std::string_view what = "rack");
Result<void> checkTransition(HostState from, HostState to, std::string_view what = "host");
Result<void> checkTransition(GpuState from, GpuState to, std::string_view what = "gpu");

// The next state on the bring-up path (planned → ... → in_service); nullopt off that path.
std::optional<RackState> nextOnPath(RackState s);
// Index of the state on the bring-up path (planned 0 ... in_service 7), -1 off the path.
int pathIndex(RackState s);

// Settled for phase gating: nothing more will happen without a person (in service, or out of
// the rollout: failed, repair, maintenance, decommissioned).
bool isSettled(RackState s);
// In flight: the reconciler is working on it (delivered .. validated, draining).
bool isInFlight(RackState s);

}  // namespace loom::provisioning
