#include "loom/provisioning/reconciler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>

using namespace loom::provisioning;

namespace {

PhasePlan plan(int phases, int concurrency, int canary, double threshold, bool autoNext = true) {
    PhasePlan p;
    p.name = "t";
    p.autoStartNext = autoNext;
    for (int i = 0; i < phases; ++i) {
        Phase ph;
        ph.name = "p" + std::to_string(i);
        ph.concurrency = concurrency;
        ph.canary = i == 0 ? canary : 0;
        ph.successThreshold = threshold;
        ph.retry.maxAttempts = 3;
        ph.retry.initialMs = 1000;
        ph.retry.maxMs = 4000;
        p.phases.push_back(ph);
    }
    return p;
}

State state(int phases, int racksPerPhase) {
    State s;
    s.phases.resize(phases);
    for (int p = 0; p < phases; ++p)
        for (int i = 0; i < racksPerPhase; ++i)
            s.racks.push_back({"p" + std::to_string(p) + "-r" + std::to_string(i), p, i});
    return s;
}

std::vector<Action> only(const std::vector<Action>& as, ActionKind k) {
    std::vector<Action> out;
    std::copy_if(as.begin(), as.end(), std::back_inserter(out),
                 [&](const Action& a) { return a.kind == k; });
    return out;
}

// Applies actions the way the service does, with `fails(rack, from)` deciding step outcomes.
template <class F>
int apply(const Reconciler& rec, State& s, const std::vector<Action>& as, F fails) {
    int transitions = 0;
    for (const auto& a : as) {
        switch (a.kind) {
            case ActionKind::StartPhase: s.phases[a.phase].status = PhaseStatus::Running; break;
            case ActionKind::CompletePhase: s.phases[a.phase].status = PhaseStatus::Completed; break;
            case ActionKind::HaltPhase: s.phases[a.phase].status = PhaseStatus::Halted; break;
            case ActionKind::RaiseTimeout: s.racks[a.rack].timeoutRaised = true; break;
            case ActionKind::Step: {
                auto& r = s.racks[a.rack];
                const bool bad = fails(r, a);
                auto d = rec.judge(r, a, {!bad, bad ? "injected" : ""}, s.nowMs);
                r.attempts = d.attempts;
                r.notBeforeMs = d.notBeforeMs;
                if (d.transition) {
                    EXPECT_TRUE(isAllowed(r.state, d.to));
                    r.state = d.to;
                    r.enteredAtMs = s.nowMs;
                    r.timeoutRaised = false;
                    ++transitions;
                }
                break;
            }
        }
    }
    return transitions;
}

}  // namespace

TEST(Reconciler, NothingHappensBeforeTheFirstPhaseIsStarted) {
    auto p = plan(2, 4, 0, 100);
    Reconciler rec(p);
    auto s = state(2, 3);
    EXPECT_TRUE(rec.step(s).empty());
    s.phases[0].startRequested = true;
    auto as = rec.step(s);
    ASSERT_EQ(as.size(), 1u);
    EXPECT_EQ(as[0].kind, ActionKind::StartPhase);
    EXPECT_EQ(as[0].phase, 0);
}

TEST(Reconciler, ConcurrencyBoundsNewRacks) {
    auto p = plan(1, 2, 0, 100);
    Reconciler rec(p);
    auto s = state(1, 5);
    s.phases[0].status = PhaseStatus::Running;
    auto as = rec.step(s);
    ASSERT_EQ(as.size(), 2u);
    EXPECT_EQ(as[0].rack, 0);
    EXPECT_EQ(as[1].rack, 1);
    EXPECT_EQ(as[0].to, RackState::Delivered);
    s.racks[0].state = RackState::BurnIn;
    s.racks[1].state = RackState::Cabled;
    as = rec.step(s);
    // The two in flight move on; nobody new starts.
    ASSERT_EQ(as.size(), 2u);
    EXPECT_EQ(as[0].to, RackState::Validated);
    EXPECT_EQ(as[1].to, RackState::Powered);
    s.racks[0].state = RackState::InService;
    as = rec.step(s);
    ASSERT_EQ(as.size(), 2u);
    EXPECT_EQ(as[1].rack, 2);
    EXPECT_EQ(as[1].to, RackState::Delivered);
}

TEST(Reconciler, CanariesGoFirstAndAFailedCanaryHaltsThePhase) {
    auto p = plan(1, 10, 2, 50);
    Reconciler rec(p);
    auto s = state(1, 6);
    s.phases[0].status = PhaseStatus::Running;
    auto as = rec.step(s);
    ASSERT_EQ(as.size(), 2u);  // only the canaries, though concurrency is 10
    s.racks[0].state = RackState::InService;
    s.racks[1].state = RackState::Validated;
    as = rec.step(s);
    ASSERT_EQ(as.size(), 1u);
    EXPECT_EQ(as[0].rack, 1);
    s.racks[1].state = RackState::InService;
    EXPECT_EQ(only(rec.step(s), ActionKind::Step).size(), 4u);

    auto s2 = state(1, 6);
    s2.phases[0].status = PhaseStatus::Running;
    s2.racks[0].state = RackState::Failed;
    s2.racks[1].state = RackState::Powered;
    as = rec.step(s2);
    auto halts = only(as, ActionKind::HaltPhase);
    ASSERT_EQ(halts.size(), 1u);
    EXPECT_NE(halts[0].reason.find("canary p0-r0 is failed"), std::string::npos);
    // The in-flight canary may finish; nothing new is admitted.
    auto steps = only(as, ActionKind::Step);
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_EQ(steps[0].rack, 1);
    s2.phases[0].canaryAccepted = true;
    EXPECT_EQ(only(rec.step(s2), ActionKind::Step).size(), 5u);
}

TEST(Reconciler, PhaseGateCompletesAtThresholdAndHaltsBelow) {
    auto p = plan(2, 10, 0, 75);
    Reconciler rec(p);
    auto s = state(2, 4);
    s.phases[0].status = PhaseStatus::Running;
    for (int i = 0; i < 3; ++i) s.racks[i].state = RackState::InService;
    s.racks[3].state = RackState::BurnIn;
    EXPECT_TRUE(only(rec.step(s), ActionKind::CompletePhase).empty());  // not all settled
    s.racks[3].state = RackState::Failed;
    auto c = only(rec.step(s), ActionKind::CompletePhase);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].reason, "75.0% in service (threshold 75.0%)");
    s.phases[0].status = PhaseStatus::Completed;
    auto st = only(rec.step(s), ActionKind::StartPhase);
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].phase, 1);

    s.phases[0].status = PhaseStatus::Running;
    s.racks[2].state = RackState::Repair;
    auto h = only(rec.step(s), ActionKind::HaltPhase);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].reason, "only 50.0% in service, threshold 75.0%");
    s.phases[0].status = PhaseStatus::Halted;
    EXPECT_TRUE(only(rec.step(s), ActionKind::StartPhase).empty());
}

// autoStartNext starts the next phase once the previous one's gate is met — its threshold in
// service and every rack admitted — without waiting for its last racks (a retry in backoff);
// the previous phase completes when they settle. Not before every rack was admitted, not for a
// paused or halted phase, and never without autoStartNext.
TEST(Reconciler, NextPhaseStartsOnceTheGateIsMetWhileTheLastRacksRetry) {
    auto p = plan(3, 10, 0, 75);
    Reconciler rec(p);
    auto s = state(3, 4);
    s.nowMs = 10'000;
    s.phases[0].status = PhaseStatus::Running;
    s.racks[0].state = RackState::InService;
    s.racks[1].state = RackState::InService;
    s.racks[2].state = RackState::InService;
    s.racks[3].state = RackState::Planned;  // 75 % in service, one rack never admitted
    auto starts = only(rec.step(s), ActionKind::StartPhase);
    EXPECT_TRUE(starts.empty());
    s.racks[3].state = RackState::Racked;  // admitted, waiting out a retry's backoff
    s.racks[3].attempts = 1;
    s.racks[3].notBeforeMs = 40'000;
    auto as = rec.step(s);
    starts = only(as, ActionKind::StartPhase);
    ASSERT_EQ(starts.size(), 1u);
    EXPECT_EQ(starts[0].phase, 1);
    EXPECT_TRUE(only(as, ActionKind::CompletePhase).empty());
    EXPECT_TRUE(only(as, ActionKind::Step).empty());  // the retry waits for its time

    // Both phases run: the next one admits, the straggler moves on when due, and the previous
    // phase completes once it is settled.
    s.phases[1].status = PhaseStatus::Running;
    s.nowMs = 40'000;
    as = rec.step(s);
    EXPECT_EQ(only(as, ActionKind::Step).size(), 5u);  // p1's four and p0-r3
    EXPECT_TRUE(only(as, ActionKind::StartPhase).empty()) << "phase 2 waits for phase 1's gate";
    s.racks[3].state = RackState::InService;
    auto done = only(rec.step(s), ActionKind::CompletePhase);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].phase, 0);

    // Below the threshold, paused, or not automatic: the next phase waits.
    auto below = state(2, 4);
    below.phases[0].status = PhaseStatus::Running;
    below.racks[0].state = RackState::InService;
    below.racks[1].state = RackState::InService;
    below.racks[2].state = RackState::BurnIn;
    below.racks[3].state = RackState::Cabled;
    const auto p2 = plan(2, 10, 0, 75);
    Reconciler rec2(p2);
    EXPECT_TRUE(only(rec2.step(below), ActionKind::StartPhase).empty());
    below.racks[2].state = RackState::InService;
    EXPECT_EQ(only(rec2.step(below), ActionKind::StartPhase).size(), 1u);
    below.phases[0].status = PhaseStatus::Paused;
    EXPECT_TRUE(only(rec2.step(below), ActionKind::StartPhase).empty());
    below.phases[0].status = PhaseStatus::Running;
    const auto pManual = plan(2, 10, 0, 75, false);
    Reconciler manual(pManual);
    EXPECT_TRUE(only(manual.step(below), ActionKind::StartPhase).empty()) << "not automatic";
    below.phases[1].startRequested = true;
    EXPECT_TRUE(only(manual.step(below), ActionKind::StartPhase).empty())
        << "a requested start still waits for the previous phase to complete";
}

TEST(Reconciler, NextPhaseWaitsForRequestWhenNotAutomatic) {
    auto p = plan(2, 10, 0, 50, false);
    Reconciler rec(p);
    auto s = state(2, 1);
    s.phases[0].status = PhaseStatus::Completed;
    EXPECT_TRUE(rec.step(s).empty());
    s.phases[1].startRequested = true;
    EXPECT_EQ(only(rec.step(s), ActionKind::StartPhase).size(), 1u);
}

TEST(Reconciler, PausedAndAbortedPhasesDoNothingButDrainsAlwaysProceed) {
    auto p = plan(1, 10, 0, 50);
    Reconciler rec(p);
    auto s = state(1, 3);
    s.phases[0].status = PhaseStatus::Paused;
    s.racks[0].state = RackState::Cabled;
    s.racks[1].state = RackState::Draining;
    auto as = rec.step(s);
    ASSERT_EQ(as.size(), 1u);
    EXPECT_EQ(as[0].rack, 1);
    EXPECT_EQ(as[0].to, RackState::Drained);
    s.phases[0].status = PhaseStatus::Aborted;
    EXPECT_EQ(rec.step(s).size(), 1u);
}

TEST(Reconciler, RetriesBackOffThenFail) {
    auto p = plan(1, 10, 0, 50);
    Reconciler rec(p);
    RackView r{"r", 0, 0, RackState::BurnIn};
    Action a{ActionKind::Step, 0, 0, RackState::BurnIn, RackState::Validated, ""};
    auto d1 = rec.judge(r, a, {false, "bw low"}, 10'000);
    EXPECT_FALSE(d1.transition);
    EXPECT_EQ(d1.attempts, 1);
    EXPECT_GE(d1.notBeforeMs, 10'000 + 800);
    EXPECT_LE(d1.notBeforeMs, 10'000 + 1200);
    r.attempts = 2;
    auto d3 = rec.judge(r, a, {false, "bw low"}, 10'000);
    EXPECT_TRUE(d3.transition);
    EXPECT_EQ(d3.to, RackState::Failed);
    EXPECT_EQ(d3.reason, "burn_in → validated failed 3 times: bw low");
    auto ok = rec.judge(r, a, {true, ""}, 10'000);
    EXPECT_TRUE(ok.transition);
    EXPECT_EQ(ok.to, RackState::Validated);
    EXPECT_EQ(ok.attempts, 0);

    State s = state(1, 1);
    s.phases[0].status = PhaseStatus::Running;
    s.racks[0].state = RackState::BurnIn;
    s.racks[0].notBeforeMs = 5000;
    s.nowMs = 4999;
    EXPECT_TRUE(only(rec.step(s), ActionKind::Step).empty());
    s.nowMs = 5000;
    EXPECT_EQ(only(rec.step(s), ActionKind::Step).size(), 1u);
}

TEST(Reconciler, TimeLimitRaisesOneEvent) {
    auto p = plan(1, 10, 0, 50);
    p.phases[0].timeouts.push_back({RackState::BurnIn, 60'000});
    Reconciler rec(p);
    auto s = state(1, 1);
    s.phases[0].status = PhaseStatus::Running;
    s.racks[0].state = RackState::BurnIn;
    s.racks[0].enteredAtMs = 0;
    s.racks[0].notBeforeMs = 1'000'000;  // waiting on a backoff: no step, still timed
    s.nowMs = 60'000;
    EXPECT_TRUE(rec.step(s).empty());
    s.nowMs = 60'001;
    auto as = rec.step(s);
    ASSERT_EQ(as.size(), 1u);
    EXPECT_EQ(as[0].kind, ActionKind::RaiseTimeout);
    EXPECT_EQ(as[0].reason, "in burn_in longer than 60 s");
    s.racks[0].timeoutRaised = true;
    EXPECT_TRUE(rec.step(s).empty());
}

TEST(Reconciler, StepKindsMapTheGates) {
    EXPECT_EQ(stepKind(RackState::Planned, RackState::Delivered), StepKind::Physical);
    EXPECT_EQ(stepKind(RackState::Racked, RackState::Cabled), StepKind::Cabling);
    EXPECT_EQ(stepKind(RackState::Powered, RackState::BurnIn), StepKind::StartBurnIn);
    EXPECT_EQ(stepKind(RackState::BurnIn, RackState::Validated), StepKind::BurnIn);
    EXPECT_EQ(stepKind(RackState::Validated, RackState::InService), StepKind::FabricEnable);
    EXPECT_EQ(stepKind(RackState::Draining, RackState::Drained), StepKind::FabricDrain);
}

// A whole rollout in memory: 8 phases × 192 racks with failures injected, every transition
// legal, every phase gated, and the planner fast.
TEST(Reconciler, FullInMemoryRolloutOf1536Racks) {
    auto p = plan(8, 64, 4, 95);
    Reconciler rec(p);
    auto s = state(8, 192);
    s.phases[0].startRequested = true;
    // Deterministic failures: ~1% of racks fail burn-in for good, some fail once.
    auto fails = [](const RackView& r, const Action& a) {
        const auto h = std::hash<std::string>{}(r.name);
        if (a.to == RackState::Validated && h % 100 == 7) return true;
        if (a.to == RackState::Cabled && h % 50 == 3 && r.attempts == 0) return true;
        return false;
    };
    int rounds = 0, transitions = 0;
    double plannerMs = 0;
    for (; rounds < 10'000; ++rounds) {
        const auto t0 = std::chrono::steady_clock::now();
        auto as = rec.step(s);
        plannerMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (as.empty()) break;
        // Phases start only once the previous one's gate is met: completed, or running with
        // every rack admitted and its threshold in service.
        for (const auto& a : as) {
            if (a.kind == ActionKind::StartPhase && a.phase > 0) {
                const auto prev = s.phases[a.phase - 1].status;
                const auto pr = rec.progress(s, a.phase - 1);
                if (prev != PhaseStatus::Completed) {
                    EXPECT_EQ(prev, PhaseStatus::Running);
                    EXPECT_EQ(pr.notStarted, 0);
                    EXPECT_GE(pr.inServicePercent, 95.0);
                }
            }
        }
        transitions += apply(rec, s, as, fails);
        s.nowMs += 5000;  // past every backoff
    }
    for (int ph = 0; ph < 8; ++ph) {
        EXPECT_EQ(s.phases[ph].status, PhaseStatus::Completed) << ph;
        auto pr = rec.progress(s, ph);
        EXPECT_EQ(pr.total, 192);
        EXPECT_GE(pr.inServicePercent, 95.0);
        EXPECT_EQ(pr.inService + pr.failed, 192);
    }
    EXPECT_GT(transitions, 1536 * 7 - 200);
    // Microseconds per round, not milliseconds: the planner is never the bottleneck.
    EXPECT_LT(plannerMs / rounds, 5.0) << rounds << " rounds";
    std::cout << rounds << " rounds, " << transitions << " transitions, planner "
              << plannerMs * 1000 / rounds << " us/round\n";
}
