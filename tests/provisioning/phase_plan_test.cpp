#include "loom/provisioning/phase_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

using namespace loom::provisioning;

namespace {

std::string readFile(const std::string& rel) {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/" + rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

constexpr const char* kPlan = R"(apiVersion: loom/v1
kind: PhasePlan
metadata:
  name: p
spec:
  defaults:
    concurrency: 3
    retry: {maxAttempts: 4, backoff: {initial: 10s, max: 1m}}
    timeouts: {burn_in: 2h}
  phases:
    - name: one
      racks: {names: [r1, r2]}
      canary: 1
    - name: two
      racks: {pattern: "r[3-4]"}
      concurrency: 7
      timeouts: {cabled: 30m}
    - name: three
      racks: {zones: [z2]}
)";

std::vector<RackRef> racks() {
    return {{"r1", "z1"}, {"r2", "z1"}, {"r3", "z1"}, {"r4", "z1"}, {"r5", "z2"}, {"r6", "z2"}};
}

loom::Error parseError(const std::string& doc) {
    auto p = parsePhasePlan(doc);
    EXPECT_FALSE(p) << doc;
    return p ? loom::Error{} : p.error();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
    auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return s.replace(pos, from.size(), to);
}

}  // namespace

TEST(PhasePlan, ParsesDefaultsAndOverrides) {
    auto p = parsePhasePlan(kPlan);
    ASSERT_TRUE(p) << p.error().toString();
    ASSERT_EQ(p->phases.size(), 3u);
    EXPECT_EQ(p->phases[0].concurrency, 3);
    EXPECT_EQ(p->phases[0].canary, 1);
    EXPECT_EQ(p->phases[1].concurrency, 7);
    EXPECT_EQ(p->phases[1].retry.maxAttempts, 4);
    EXPECT_EQ(p->phases[1].retry.initialMs, 10'000);
    EXPECT_EQ(p->phases[1].retry.maxMs, 60'000);
    EXPECT_EQ(p->phases[1].timeoutFor(RackState::BurnIn), 7'200'000);
    EXPECT_EQ(p->phases[1].timeoutFor(RackState::Cabled), 1'800'000);
    EXPECT_FALSE(p->phases[0].timeoutFor(RackState::Cabled));
    EXPECT_TRUE(p->autoStartNext);
}

TEST(PhasePlan, AssignsRacksFirstPhaseWins) {
    auto p = parsePhasePlan(kPlan);
    ASSERT_TRUE(p);
    auto a = assignRacks(*p, racks());
    ASSERT_TRUE(a) << a.error().toString();
    EXPECT_EQ((*a)[0], (std::vector<int>{0, 1}));
    EXPECT_EQ((*a)[1], (std::vector<int>{2, 3}));
    EXPECT_EQ((*a)[2], (std::vector<int>{4, 5}));
}

TEST(PhasePlan, UnknownRackNameIsAnErrorWithPath) {
    auto p = parsePhasePlan(replaced(kPlan, "[r1, r2]", "[r1, r9]"));
    ASSERT_TRUE(p);
    auto a = assignRacks(*p, racks());
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().path, "spec.phases[0].racks.names[1]");
    EXPECT_EQ(a.error().line, 12);
}

TEST(PhasePlan, PhaseSelectingNothingIsAnError) {
    auto p = parsePhasePlan(replaced(kPlan, "zones: [z2]", "zones: [z1]"));
    ASSERT_TRUE(p);
    auto a = assignRacks(*p, racks());
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().path, "spec.phases[2].racks");
}

TEST(PhasePlan, BadDocumentsNamePathAndLine) {
    struct Case {
        std::string from, to, path;
        int line;
        std::string message;
    };
    const std::vector<Case> cases = {
        {"concurrency: 3", "concurency: 3", "spec.defaults.concurency", 7, "did you mean 'concurrency'"},
        {"concurrency: 3", "concurrency: 0", "spec.defaults.concurrency", 7, "between"},
        {"concurrency: 3", "concurrency: lots", "spec.defaults.concurrency", 7, "integer"},
        {"maxAttempts: 4", "maxAttempts: 400", "spec.defaults.retry.maxAttempts", 8, "between"},
        {"initial: 10s", "initial: soon", "spec.defaults.retry.backoff.initial", 8, "duration"},
        {"max: 1m}", "max: 1s}", "spec.defaults.retry.backoff.max", 8, "initial"},
        {"{burn_in: 2h}", "{burnin: 2h}", "spec.defaults.timeouts.burnin", 9, "unknown rack state"},
        {"name: two", "name: one", "spec.phases[1].name", 14, "duplicate"},
        {"canary: 1", "canry: 1", "spec.phases[0].canry", 13, "did you mean 'canary'"},
        {"{zones: [z2]}", "{}", "spec.phases[2].racks", 19, "selects nothing"},
        {"{zones: [z2]}", "{zone: [z2]}", "spec.phases[2].racks.zone", 19, "did you mean 'zones'"},
        {"kind: PhasePlan", "kind: Cluster", "kind", 2, "PhasePlan"},
        {"apiVersion: loom/v1", "apiVersion: v2", "apiVersion", 1, "loom/v1"},
        {"  name: p\n", "  nam: p\n", "metadata.nam", 4, "did you mean 'name'"},
    };
    for (const auto& c : cases) {
        auto e = parseError(replaced(kPlan, c.from, c.to));
        EXPECT_EQ(e.code, loom::Errc::InvalidArgument);
        EXPECT_EQ(e.path, c.path) << c.to << ": " << e.toString();
        EXPECT_EQ(e.line, c.line) << c.to << ": " << e.toString();
        EXPECT_NE(e.message.find(c.message), std::string::npos) << e.toString();
    }
}

TEST(PhasePlan, SyntaxErrorsEmptyAndOversizeDocuments) {
    auto e = parseError("apiVersion: loom/v1\nkind: [unclosed\n");
    EXPECT_NE(e.message.find("YAML syntax"), std::string::npos);
    EXPECT_GT(e.line, 0);
    EXPECT_EQ(parseError("").code, loom::Errc::InvalidArgument);
    EXPECT_EQ(parseError("- a\n- b\n").code, loom::Errc::InvalidArgument);
    EXPECT_EQ(parseError(std::string(kMaxPlanBytes + 1, ' ')).code, loom::Errc::TooLarge);
}

TEST(PhasePlan, ShippedPlansParse) {
    for (auto f : {"configs/phases/dev-small-3phase.yaml", "configs/phases/meta-24k-8phase.yaml"}) {
        auto p = parsePhasePlan(readFile(f));
        ASSERT_TRUE(p) << f << ": " << p.error().toString();
    }
    auto big = parsePhasePlan(readFile("configs/phases/meta-24k-8phase.yaml"));
    EXPECT_EQ(big->phases.size(), 8u);
    EXPECT_EQ(big->phases[0].canary, 4);
    EXPECT_EQ(big->phases[7].concurrency, 64);
    std::vector<RackRef> rs;
    for (int z = 1; z <= 8; ++z)
        for (int r = 1; r <= 192; ++r) {
            char n[32];
            std::snprintf(n, sizeof n, "z%d-r%03d", z, r);
            rs.push_back({n, "z" + std::to_string(z)});
        }
    auto a = assignRacks(*big, rs);
    ASSERT_TRUE(a) << a.error().toString();
    for (const auto& ph : *a) EXPECT_EQ(ph.size(), 192u);

    // meta-98k-roce: one phase per zone, z1-r* must not take z10..z19's racks.
    auto huge = parsePhasePlan(readFile("configs/phases/meta-98k-32phase.yaml"));
    ASSERT_TRUE(huge) << huge.error().toString();
    EXPECT_EQ(huge->phases.size(), 32u);
    rs.clear();
    for (int z = 1; z <= 32; ++z)
        for (int r = 1; r <= 192; ++r) {
            char n[32];
            std::snprintf(n, sizeof n, "z%d-r%03d", z, r);
            rs.push_back({n, "z" + std::to_string(z)});
        }
    auto b = assignRacks(*huge, rs);
    ASSERT_TRUE(b) << b.error().toString();
    ASSERT_EQ(b->size(), 32u);
    for (const auto& ph : *b) EXPECT_EQ(ph.size(), 192u);
}

TEST(PhasePlan, GlobAndDurations) {
    EXPECT_TRUE(globMatch("z1-r00[1-3]", "z1-r002"));
    EXPECT_FALSE(globMatch("z1-r00[1-3]", "z1-r004"));
    EXPECT_TRUE(globMatch("*-r001", "z1-r001"));
    EXPECT_TRUE(globMatch("z?-*", "z7-r100"));
    EXPECT_FALSE(globMatch("z?-*", "z10-r100"));
    EXPECT_TRUE(globMatch("*", ""));
    EXPECT_TRUE(globMatch("[!a]x", "bx"));
    EXPECT_FALSE(globMatch("[!a]x", "ax"));
    EXPECT_EQ(parseDuration("90s"), 90'000);
    EXPECT_EQ(parseDuration("15m"), 900'000);
    EXPECT_EQ(parseDuration("2h"), 7'200'000);
    EXPECT_EQ(parseDuration("1d"), 86'400'000);
    EXPECT_EQ(parseDuration("42"), 42'000);
    EXPECT_FALSE(parseDuration("h"));
    EXPECT_FALSE(parseDuration("-5s"));
}

TEST(PhasePlan, BackoffGrowsIsCappedAndJitterIsDeterministic) {
    RetryPolicy p;
    p.initialMs = 1000;
    p.maxMs = 5000;
    p.multiplier = 2;
    p.jitter = 0.2;
    EXPECT_EQ(backoffMs(p, 1, "r"), 0);
    for (int a = 2; a < 8; ++a) {
        const double base = std::min(5000.0, 1000.0 * (1 << (a - 2)));
        const auto b = backoffMs(p, a, "r1");
        EXPECT_GE(b, base * 0.8 - 1);
        EXPECT_LE(b, base * 1.2 + 1);
        EXPECT_EQ(b, backoffMs(p, a, "r1"));
    }
    // Different racks spread out (jitter) rather than retrying in lock step.
    std::set<std::int64_t> distinct;
    for (int i = 0; i < 20; ++i) distinct.insert(backoffMs(p, 3, "r" + std::to_string(i)));
    EXPECT_GT(distinct.size(), 10u);
}
