#include "loom/provisioning/reconciler.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace loom::provisioning {
namespace {

constexpr std::array<std::string_view, 6> kPhaseStatusNames = {
    "pending", "running", "paused", "completed", "halted", "aborted"};

std::string percent(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", v);
    return b;
}

}  // namespace

std::string_view phaseStatusName(PhaseStatus s) {
    return kPhaseStatusNames[static_cast<std::size_t>(s)];
}

std::optional<PhaseStatus> parsePhaseStatus(std::string_view s) {
    for (std::size_t i = 0; i < kPhaseStatusNames.size(); ++i)
        if (kPhaseStatusNames[i] == s) return static_cast<PhaseStatus>(i);
    return std::nullopt;
}

std::string_view actionKindName(ActionKind k) {
    switch (k) {
        case ActionKind::StartPhase: return "start_phase";
        case ActionKind::CompletePhase: return "complete_phase";
        case ActionKind::HaltPhase: return "halt_phase";
        case ActionKind::Step: return "step";
        case ActionKind::RaiseTimeout: return "raise_timeout";
    }
    return "?";
}

StepKind stepKind(RackState from, RackState to) {
    if (to == RackState::Cabled) return StepKind::Cabling;
    if (to == RackState::BurnIn) return StepKind::StartBurnIn;
    if (to == RackState::Validated) return StepKind::BurnIn;
    if (to == RackState::InService) return StepKind::FabricEnable;
    if (from == RackState::Draining) return StepKind::FabricDrain;
    return StepKind::Physical;
}

PhaseProgress Reconciler::progress(const State& s, int phase) const {
    PhaseProgress p;
    for (const auto& r : s.racks) {
        if (r.phase != phase) continue;
        ++p.total;
        if (r.state == RackState::InService)
            ++p.inService;
        else if (r.state == RackState::Planned)
            ++p.notStarted;
        else if (r.state == RackState::Draining || r.state == RackState::Drained ||
                 r.state == RackState::Maintenance)
            ++p.drained;  // an operator took it out of service: not a failure
        else if (isSettled(r.state))
            ++p.failed;
        else
            ++p.inFlight;
    }
    p.inServicePercent = p.total ? 100.0 * p.inService / p.total : 0.0;
    return p;
}

std::vector<Action> Reconciler::step(const State& s) const {
    std::vector<Action> out;
    const int nPhases = static_cast<int>(plan_.phases.size());
    std::vector<std::vector<int>> members(nPhases);
    for (int i = 0; i < static_cast<int>(s.racks.size()); ++i) {
        const auto& r = s.racks[i];
        if (r.state == RackState::Draining) {
            if (r.notBeforeMs <= s.nowMs)
                out.push_back({ActionKind::Step, r.phase, i, r.state, RackState::Drained, "drain"});
            continue;
        }
        if (r.phase >= 0 && r.phase < nPhases) members[r.phase].push_back(i);
    }
    for (auto& m : members)
        std::stable_sort(m.begin(), m.end(),
                         [&](int a, int b) { return s.racks[a].order < s.racks[b].order; });

    auto phaseView = [&](int p) {
        return p < static_cast<int>(s.phases.size()) ? s.phases[p] : PhaseView{};
    };

    // A phase's gate is met once its successThreshold is in service and every one of its racks
    // has been admitted: the next phase may start then (autoStartNext), while this one's last
    // racks — retries waiting out their backoff — finish; it completes when all are settled.
    // Waiting for those few (30 s and more of backoff each) held every 192-rack zone of a 98k
    // rollout for a retry, one zone at a time.
    auto gateMet = [&](int q) {
        const auto v = phaseView(q);
        if (v.status == PhaseStatus::Completed) return true;
        if (v.status != PhaseStatus::Running || members[q].empty()) return false;
        int inService = 0;
        for (int i : members[q]) {
            const auto st = s.racks[i].state;
            if (st == RackState::Planned) return false;
            if (st == RackState::InService) ++inService;
        }
        const double pct = 100.0 * inService / static_cast<double>(members[q].size());
        return pct + 1e-9 >= plan_.phases[q].successThreshold;
    };

    for (int p = 0; p < nPhases; ++p) {
        const auto& ph = plan_.phases[p];
        const auto pv = phaseView(p);
        const bool prevDone = p == 0 || phaseView(p - 1).status == PhaseStatus::Completed;
        const bool prevGate = p == 0 || prevDone || (plan_.autoStartNext && gateMet(p - 1));

        if (pv.status == PhaseStatus::Pending) {
            const bool wanted = pv.startRequested || (p > 0 && plan_.autoStartNext &&
                                                      phaseView(0).status != PhaseStatus::Pending);
            if (wanted && prevGate)
                out.push_back({ActionKind::StartPhase,
                               p,
                               -1,
                               {},
                               {},
                               prevDone ? "gate of previous phase passed"
                                        : "gate of previous phase met; its last racks finish"});
            continue;
        }
        if (pv.status == PhaseStatus::Aborted || pv.status == PhaseStatus::Pending) continue;

        // Time limits are watched in every live phase, paused or not.
        for (int i : members[p]) {
            const auto& r = s.racks[i];
            if (r.timeoutRaised || isSettled(r.state)) continue;
            if (auto lim = ph.timeoutFor(r.state); lim && s.nowMs - r.enteredAtMs > *lim)
                out.push_back({ActionKind::RaiseTimeout, p, i, r.state, r.state,
                               "in " + std::string(stateName(r.state)) + " longer than " +
                                   std::to_string(*lim / 1000) + " s"});
        }
        if (pv.status == PhaseStatus::Paused) continue;

        bool admitting = pv.status == PhaseStatus::Running;
        const int total = static_cast<int>(members[p].size());
        int inFlight = 0, settled = 0, inService = 0;
        for (int i : members[p]) {
            const auto st = s.racks[i].state;
            if (isSettled(st)) ++settled;
            if (st == RackState::InService) ++inService;
            if (isInFlight(st)) ++inFlight;
        }

        // Phase gate.
        if (pv.status == PhaseStatus::Running && settled == total) {
            const double pct = total ? 100.0 * inService / total : 100.0;
            if (pct + 1e-9 >= ph.successThreshold)
                out.push_back({ActionKind::CompletePhase, p, -1, {}, {},
                               percent(pct) + " in service (threshold " +
                                   percent(ph.successThreshold) + ")"});
            else
                out.push_back({ActionKind::HaltPhase, p, -1, {}, {},
                               "only " + percent(pct) + " in service, threshold " +
                                   percent(ph.successThreshold)});
            continue;
        }

        // Canaries: the first `canary` racks in phase order.
        const int nCanary = std::min(ph.canary, total);
        bool canariesDone = true;
        if (admitting && nCanary > 0 && !pv.canaryAccepted) {
            for (int k = 0; k < nCanary; ++k) {
                const auto& r = s.racks[members[p][k]];
                if (r.state == RackState::InService) continue;
                canariesDone = false;
                if (isSettled(r.state)) {
                    out.push_back({ActionKind::HaltPhase, p, -1, {}, {},
                                   "canary " + r.name + " is " + std::string(stateName(r.state))});
                    admitting = false;
                    break;
                }
            }
        }

        int budget = ph.concurrency - inFlight;
        for (int k = 0; k < total; ++k) {
            const int i = members[p][k];
            const auto& r = s.racks[i];
            if (r.notBeforeMs > s.nowMs) continue;
            if (r.state == RackState::Planned) {
                // New work: only in a running phase, within the concurrency budget, and
                // behind the canaries.
                if (!admitting || budget <= 0) continue;
                if (k >= nCanary && !canariesDone) continue;
                if (plan_.manualPhysicalSteps) continue;
                --budget;
                out.push_back({ActionKind::Step, p, i, r.state, RackState::Delivered, "start"});
                continue;
            }
            if (!isInFlight(r.state)) continue;
            // Halted phases let in-flight racks finish; they just admit no new ones.
            if (plan_.manualPhysicalSteps && r.state == RackState::Delivered) continue;
            if (auto next = nextOnPath(r.state))
                out.push_back({ActionKind::Step, p, i, r.state, *next, ""});
        }
    }
    return out;
}

Decision Reconciler::judge(const RackView& rack, const Action& a, const StepOutcome& o,
                           std::int64_t nowMs) const {
    Decision d;
    if (o.ok) {
        d.transition = true;
        d.to = a.to;
        d.attempts = 0;
        d.reason = o.reason;
        return d;
    }
    const RetryPolicy retry = rack.phase >= 0 && rack.phase < static_cast<int>(plan_.phases.size())
                                  ? plan_.phases[rack.phase].retry
                                  : RetryPolicy{};
    d.attempts = rack.attempts + 1;
    if (d.attempts >= retry.maxAttempts && isAllowed(a.from, RackState::Failed)) {
        d.transition = true;
        d.to = RackState::Failed;
        d.attempts = 0;
        d.reason = std::string(stateName(a.from)) + " → " + std::string(stateName(a.to)) +
                   " failed " + std::to_string(retry.maxAttempts) + " times: " + o.reason;
        return d;
    }
    d.notBeforeMs = nowMs + backoffMs(retry, d.attempts + 1, rack.name);
    d.reason = "attempt " + std::to_string(d.attempts) + " of " +
               std::to_string(retry.maxAttempts) + " failed: " + o.reason;
    return d;
}

}  // namespace loom::provisioning
