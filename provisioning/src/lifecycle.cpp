#include "loom/provisioning/lifecycle.hpp"
#include "loom/provisioning/follow_rack.hpp"

#include <array>

namespace loom::provisioning {
namespace {

constexpr std::array<std::string_view, kRackStateCount> kRackNames = {
    "planned", "delivered", "racked",  "cabled",   "powered", "burn_in",     "validated",
    "in_service", "failed", "repair", "draining", "drained", "maintenance", "decommissioned"};
constexpr std::array<std::string_view, kHostStateCount> kHostNames = {
    "planned", "burn_in", "ready", "in_service", "quarantined", "rma", "repair", "decommissioned"};
constexpr std::array<std::string_view, kGpuStateCount> kGpuNames = {
    "ok", "suspect", "quarantined", "rma", "decommissioned"};

template <class S, std::size_t N>
std::optional<S> parseIn(const std::array<std::string_view, N>& names, std::string_view s) {
    for (std::size_t i = 0; i < N; ++i)
        if (names[i] == s) return static_cast<S>(i);
    return std::nullopt;
}

template <class S, std::size_t N>
bool allowedIn(const Transition<S> (&table)[N], S from, S to) {
    for (const auto& t : table)
        if (t.from == from && t.to == to) return true;
    return false;
}

template <class S, std::size_t N>
std::vector<S> nextIn(const Transition<S> (&table)[N], S from) {
    std::vector<S> out;
    for (const auto& t : table)
        if (t.from == from) out.push_back(t.to);
    return out;
}

template <class S>
Result<void> check(bool ok, S from, S to, const std::vector<S>& next, std::string_view what) {
    if (ok) return {};
    std::string msg = std::string(what) + ": cannot go from " + std::string(stateName(from)) +
                      " to " + std::string(stateName(to)) + "; current state " +
                      std::string(stateName(from)) + ", allowed next: ";
    if (next.empty()) msg += "none (terminal state)";
    for (std::size_t i = 0; i < next.size(); ++i) {
        if (i) msg += ", ";
        msg += stateName(next[i]);
    }
    return fail(Error::conflict(std::move(msg)));
}

}  // namespace

std::string_view stateName(RackState s) { return kRackNames[static_cast<std::size_t>(s)]; }
std::string_view stateName(HostState s) { return kHostNames[static_cast<std::size_t>(s)]; }
std::string_view stateName(GpuState s) { return kGpuNames[static_cast<std::size_t>(s)]; }

std::optional<RackState> parseRackState(std::string_view s) {
    return parseIn<RackState>(kRackNames, s);
}
std::optional<HostState> parseHostState(std::string_view s) {
    return parseIn<HostState>(kHostNames, s);
}
std::optional<GpuState> parseGpuState(std::string_view s) {
    return parseIn<GpuState>(kGpuNames, s);
}

bool isAllowed(RackState from, RackState to) { return allowedIn(kRackTransitions, from, to); }
bool isAllowed(HostState from, HostState to) { return allowedIn(kHostTransitions, from, to); }
bool isAllowed(GpuState from, GpuState to) { return allowedIn(kGpuTransitions, from, to); }

std::vector<RackState> allowedNext(RackState from) { return nextIn(kRackTransitions, from); }
std::vector<HostState> allowedNext(HostState from) { return nextIn(kHostTransitions, from); }
std::vector<GpuState> allowedNext(GpuState from) { return nextIn(kGpuTransitions, from); }

Result<void> checkTransition(RackState from, RackState to, std::string_view what) {
    return check(isAllowed(from, to), from, to, allowedNext(from), what);
}
Result<void> checkTransition(HostState from, HostState to, std::string_view what) {
    return check(isAllowed(from, to), from, to, allowedNext(from), what);
}
Result<void> checkTransition(GpuState from, GpuState to, std::string_view what) {
    return check(isAllowed(from, to), from, to, allowedNext(from), what);
}

int pathIndex(RackState s) {
    const int i = static_cast<int>(s);
    return i <= static_cast<int>(RackState::InService) ? i : -1;
}

std::optional<RackState> nextOnPath(RackState s) {
    const int i = pathIndex(s);
    if (i < 0 || s == RackState::InService) return std::nullopt;
    return static_cast<RackState>(i + 1);
}

HostState hostStateFor(RackState rack) {
    switch (rack) {
        case RackState::BurnIn: return HostState::BurnIn;
        case RackState::Validated:
        case RackState::Drained:
        case RackState::Maintenance: return HostState::Ready;
        case RackState::InService:
        case RackState::Draining: return HostState::InService;
        case RackState::Decommissioned: return HostState::Decommissioned;
        default: return HostState::Planned;
    }
}

bool hostKeepsOwnState(HostState s) {
    return s == HostState::Quarantined || s == HostState::Rma || s == HostState::Repair ||
           s == HostState::Decommissioned;
}

bool isSettled(RackState s) {
    switch (s) {
        case RackState::InService:
        case RackState::Failed:
        case RackState::Repair:
        case RackState::Maintenance:
        case RackState::Decommissioned:
        case RackState::Drained:
            return true;
        default:
            return false;
    }
}

bool isInFlight(RackState s) {
    const int i = pathIndex(s);
    return (i >= static_cast<int>(RackState::Delivered) && i < static_cast<int>(RackState::InService)) ||
           s == RackState::Draining;
}

}  // namespace loom::provisioning
