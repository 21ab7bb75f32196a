#include "loom/provisioning/lifecycle.hpp"

#include <gtest/gtest.h>

#include <set>
#include <utility>

using namespace loom::provisioning;

namespace {

// The expected rack lifecycle, written out independently of kRackTransitions: every pair not
// listed here must be refused.
const std::set<std::pair<std::string, std::string>> kExpectedRack = {
    {"planned", "delivered"},   {"planned", "decommissioned"}, {"delivered", "racked"},
    {"delivered", "failed"},    {"delivered", "decommissioned"}, {"racked", "cabled"},
    {"racked", "failed"},       {"cabled", "powered"},         {"cabled", "failed"},
    {"powered", "burn_in"},     {"powered", "failed"},         {"burn_in", "validated"},
    {"burn_in", "failed"},      {"validated", "in_service"},   {"validated", "failed"},
    {"in_service", "draining"}, {"in_service", "failed"},      {"failed", "repair"},
    {"failed", "decommissioned"}, {"repair", "racked"},        {"repair", "decommissioned"},
    {"draining", "drained"},    {"draining", "failed"},        {"drained", "maintenance"},
    {"drained", "in_service"},  {"drained", "decommissioned"}, {"maintenance", "racked"},
    {"maintenance", "decommissioned"},
};

}  // namespace

TEST(Lifecycle, RackTableIsExactlyTheExpectedOneForEveryPair) {
    int allowed = 0;
    for (int a = 0; a < kRackStateCount; ++a)
        for (int b = 0; b < kRackStateCount; ++b) {
            const auto from = static_cast<RackState>(a), to = static_cast<RackState>(b);
            const bool want = kExpectedRack.contains(
                {std::string(stateName(from)), std::string(stateName(to))});
            EXPECT_EQ(isAllowed(from, to), want) << stateName(from) << " -> " << stateName(to);
            auto r = checkTransition(from, to, "rack r1");
            EXPECT_EQ(r.has_value(), want);
            if (!r) {
                EXPECT_EQ(r.error().code, loom::Errc::Conflict);
                EXPECT_NE(r.error().message.find("current state " + std::string(stateName(from))),
                          std::string::npos)
                    << r.error().message;
            }
            allowed += want;
        }
    EXPECT_EQ(allowed, static_cast<int>(kExpectedRack.size()));
}

TEST(Lifecycle, ConflictNamesCurrentAndAllowedNextStates) {
    auto r = checkTransition(RackState::BurnIn, RackState::InService, "rack z1-r001");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message,
              "rack z1-r001: cannot go from burn_in to in_service; current state burn_in, "
              "allowed next: validated, failed");
    auto t = checkTransition(RackState::Decommissioned, RackState::Planned);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message.find("none (terminal state)"), std::string::npos);
}

TEST(Lifecycle, NamesRoundTripForAllKinds) {
    for (int i = 0; i < kRackStateCount; ++i)
        EXPECT_EQ(parseRackState(stateName(static_cast<RackState>(i))), static_cast<RackState>(i));
    for (int i = 0; i < kHostStateCount; ++i)
        EXPECT_EQ(parseHostState(stateName(static_cast<HostState>(i))), static_cast<HostState>(i));
    for (int i = 0; i < kGpuStateCount; ++i)
        EXPECT_EQ(parseGpuState(stateName(static_cast<GpuState>(i))), static_cast<GpuState>(i));
    EXPECT_FALSE(parseRackState("in-service"));
    EXPECT_FALSE(parseRackState(""));
}

TEST(Lifecycle, BringUpPathIsOrderedAndEveryStepAllowed) {
    RackState s = RackState::Planned;
    int steps = 0;
    while (auto n = nextOnPath(s)) {
        EXPECT_TRUE(isAllowed(s, *n));
        EXPECT_EQ(pathIndex(*n), pathIndex(s) + 1);
        s = *n;
        ++steps;
    }
    EXPECT_EQ(s, RackState::InService);
    EXPECT_EQ(steps, 7);
    EXPECT_FALSE(nextOnPath(RackState::Failed));
    EXPECT_EQ(pathIndex(RackState::Repair), -1);
}

TEST(Lifecycle, EveryStateIsReachableFromPlannedAndOnlyDecommissionedIsTerminal) {
    std::set<int> seen{static_cast<int>(RackState::Planned)};
    std::vector<RackState> todo{RackState::Planned};
    while (!todo.empty()) {
        auto s = todo.back();
        todo.pop_back();
        for (auto n : allowedNext(s))
            if (seen.insert(static_cast<int>(n)).second) todo.push_back(n);
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kRackStateCount));
    for (int i = 0; i < kRackStateCount; ++i) {
        auto s = static_cast<RackState>(i);
        EXPECT_EQ(allowedNext(s).empty(), s == RackState::Decommissioned) << stateName(s);
    }
}

TEST(Lifecycle, HostAndGpuTablesHaveQuarantineAndRma) {
    EXPECT_TRUE(isAllowed(HostState::BurnIn, HostState::Quarantined));
    EXPECT_TRUE(isAllowed(HostState::Quarantined, HostState::Rma));
    EXPECT_TRUE(isAllowed(HostState::Rma, HostState::Repair));
    EXPECT_TRUE(isAllowed(HostState::Repair, HostState::BurnIn));
    EXPECT_FALSE(isAllowed(HostState::Quarantined, HostState::InService));
    EXPECT_TRUE(isAllowed(GpuState::Ok, GpuState::Quarantined));
    EXPECT_TRUE(isAllowed(GpuState::Quarantined, GpuState::Rma));
    EXPECT_FALSE(isAllowed(GpuState::Rma, GpuState::Quarantined));
    auto r = checkTransition(HostState::Quarantined, HostState::InService, "host h1");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("allowed next: rma, repair, decommissioned"), std::string::npos)
        << r.error().message;
    for (int a = 0; a < kHostStateCount; ++a)
        for (int b = 0; b < kHostStateCount; ++b) {
            auto from = static_cast<HostState>(a), to = static_cast<HostState>(b);
            EXPECT_EQ(checkTransition(from, to).has_value(), isAllowed(from, to));
        }
}
