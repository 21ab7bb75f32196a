// Issue 5's "done when", end to end: a three-phase rollout of dev-small driven only through
// loomctl against a real `loomd serve --simulate` (embedded PostgreSQL, simulated burn-in with
// injected failures), while loomd itself is SIGKILLed and restarted on the same database again
// and again. Afterwards: the phases completed in order, every rack is in service or failed with
// a reason, and each rack's audit trail (read back with `loomctl rack history`) is one unbroken
// chain of allowed transitions ending in its current state — nothing lost, nothing twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "loomd_harness.hpp"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

class RolloutE2e : public ::testing::Test {
protected:
    void SetUp() override {
        if (::access(LOOMD_BIN, X_OK) != 0) GTEST_SKIP() << "loomd is not built: " << LOOMD_BIN;
        ASSERT_EQ(loomd_.prepare("loom-rollout-e2e", source("configs/clusters/dev-small.yaml")),
                  "");
        startLoomd();
    }
    void TearDown() override { loomd_.cleanup(); }

    static std::string source(const std::string& rel) {
        return std::string(LOOM_SOURCE_DIR) + "/" + rel;
    }

    // Simulated burn-in with a high host failure rate (quarantines), and a little wall time per
    // step so that kills land mid-rollout.
    void startLoomd() {
        ASSERT_EQ(loomd_.serve({"--simulate"}, {{"LOOM_PROVISIONING_SEED", "5"},
                                                {"LOOM_PROVISIONING_FAIL_RATE", "0.4"},
                                                {"LOOM_PROVISIONING_DELAY_MS", "400"}}),
                  "");
    }
    void stopLoomd(int sig) { loomd_.stop(sig); }
    ProcessResult loomctl(std::vector<std::string> args) { return loomd_.loomctl(args); }

    json phases() {
        auto r = loomctl({"phase", "list", "-o", "json"});
        if (r.exitCode != 0) return json();
        return json::parse(r.out, nullptr, false);
    }

    static bool finished(const json& doc) {
        if (!doc.is_object() || !doc.contains("items") || doc["items"].empty()) return false;
        for (const auto& p : doc["items"]) {
            auto s = p.value("status", "");
            if (s != "completed" && s != "halted") return false;
        }
        return true;
    }

    LoomdHarness loomd_;
};

TEST_F(RolloutE2e, ThreePhasesThroughLoomctlSurviveRepeatedSigkill) {
    // With no plan stored, `phase start` with no name says what to do.
    auto none = loomctl({"phase", "start"});
    EXPECT_EQ(none.exitCode, 1) << none.out << none.err;
    EXPECT_NE(none.err.find("loomctl phase apply -f"), std::string::npos) << none.err;
    auto plan = loomctl({"phase", "apply", "-f", source("configs/phases/dev-small-3phase.yaml")});
    ASSERT_EQ(plan.exitCode, 0) << plan.out << plan.err;
    // The plan's gate: phase-2 cannot start before the canary passed.
    auto early = loomctl({"phase", "start", "phase-2"});
    EXPECT_NE(early.exitCode, 0);
    EXPECT_NE(early.err.find("canary"), std::string::npos) << early.err;
    // No name: the plan's first pending phase (the README's tour: `loomctl phase start`).
    auto start = loomctl({"phase", "start"});
    ASSERT_EQ(start.exitCode, 0) << start.out << start.err;
    EXPECT_EQ(start.out.rfind("phase/canary started", 0), 0u) << start.out;

    // Kill loomd (SIGKILL, no warning) at random moments while the rollout runs; restart it on
    // the same state directory each time.
    std::mt19937 rng(20261122);
    std::uniform_int_distribution<int> pause(150, 700);
    int kills = 0, killsMidRollout = 0;
    const auto deadline = std::chrono::steady_clock::now() + 150s;
    json doc;
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(pause(rng)));
        doc = phases();
        if (finished(doc) && kills >= 20) break;
        if (kills < 20) {
            if (!finished(doc)) ++killsMidRollout;
            stopLoomd(SIGKILL);
            ++kills;
            startLoomd();
            ASSERT_FALSE(HasFatalFailure());
        }
    }
    ASSERT_TRUE(finished(doc)) << "rollout did not finish in time: " << doc.dump(2);
    EXPECT_EQ(kills, 20);
    EXPECT_GE(killsMidRollout, 10) << "most kills should land while racks are moving";

    // Phases in order: each started after the previous one finished.
    const auto& items = doc["items"];
    ASSERT_EQ(items.size(), 3u) << doc.dump(2);
    for (std::size_t i = 1; i < items.size(); ++i) {
        ASSERT_TRUE(items[i]["startedAt"].is_string()) << items[i].dump();
        ASSERT_TRUE(items[i - 1]["finishedAt"].is_string()) << items[i - 1].dump();
        EXPECT_GE(items[i]["startedAt"].get<std::string>(),
                  items[i - 1]["finishedAt"].get<std::string>())
            << items[i]["name"] << " started before " << items[i - 1]["name"] << " finished";
    }

    // Every rack in service, or failed with the reason; its history is one unbroken chain.
    std::map<std::string, std::string> rackState;
    int inService = 0, failed = 0;
    for (const auto& p : items)
        for (const auto& r : p["racks"]) {
            const std::string name = r["name"], st = r["state"];
            rackState[name] = st;
            if (st == "in_service")
                ++inService;
            else if (st == "failed") {
                ++failed;
                EXPECT_FALSE(r.value("reason", "").empty()) << name << " failed without a reason";
            } else {
                ADD_FAILURE() << name << " ended in " << st;
            }
        }
    std::cout << "rollout: " << kills << " SIGKILLs of loomd (" << killsMidRollout
              << " mid-rollout); " << inService << " racks in service, " << failed << " failed\n";
    EXPECT_EQ(rackState.size(), 4u);
    EXPECT_GE(inService, 2);
    for (const auto& [name, st] : rackState) {
        auto h = loomctl({"rack", "history", name, "-o", "json"});
        ASSERT_EQ(h.exitCode, 0) << h.err;
        auto hist = json::parse(h.out, nullptr, false);
        ASSERT_TRUE(hist.is_object()) << h.out;
        std::string cur = "planned";
        std::set<std::string> keys;
        for (const auto& a : hist["items"]) {
            if (a.value("kind", "") != "rack") continue;
            EXPECT_EQ(a.value("from", ""), cur) << name << ": a transition was lost or done twice";
            EXPECT_TRUE(keys.insert(a.value("key", "")).second) << name << ": key recorded twice";
            cur = a.value("to", "");
        }
        EXPECT_EQ(cur, st) << name << ": history does not end in the current state";
    }
    // The injected burn-in failures left quarantined hosts behind (a rack passes with at most
    // one, per the plan).
    auto quarantined = loomctl({"get", "hosts", "--field", "state=quarantined", "-o", "name"});
    ASSERT_EQ(quarantined.exitCode, 0) << quarantined.err;
    EXPECT_FALSE(quarantined.out.empty()) << "no burn-in failure was injected";
    std::cout << "quarantined hosts:\n" << quarantined.out;
    // The human-readable form too.
    auto table = loomctl({"rack", "history", "z1-r001"});
    EXPECT_EQ(table.exitCode, 0);
    EXPECT_NE(table.out.find("EXECUTOR"), std::string::npos) << table.out;
    auto list = loomctl({"phase", "list"});
    EXPECT_EQ(list.exitCode, 0);
    EXPECT_NE(list.out.find("dev-small-3phase"), std::string::npos) << list.out;
    EXPECT_NE(list.out.find("completed"), std::string::npos) << list.out;
    // Every phase has finished: nothing to start, and the error lists the phases.
    auto again = loomctl({"phase", "start"});
    EXPECT_EQ(again.exitCode, 1);
    EXPECT_NE(again.err.find("no phase of plan dev-small-3phase is pending"), std::string::npos)
        << again.err;
    EXPECT_NE(again.err.find("canary ("), std::string::npos) << again.err;

    // Operator actions through loomctl. An illegal one exits non-zero with the server's 409
    // naming the current state and what is allowed.
    std::string live;
    for (const auto& [name, st] : rackState)
        if (st == "in_service") live = name;
    ASSERT_FALSE(live.empty());
    auto illegal = loomctl({"rack", "repair", live});
    EXPECT_NE(illegal.exitCode, 0);
    EXPECT_NE(illegal.err.find("in_service"), std::string::npos) << illegal.err;
    EXPECT_NE(illegal.err.find("draining"), std::string::npos) << "allowed states: " << illegal.err;
    auto drain = loomctl({"rack", "drain", live, "--reason", "optic swap"});
    EXPECT_EQ(drain.exitCode, 0) << drain.err;
    EXPECT_NE(drain.out.find("draining"), std::string::npos) << drain.out;
    auto quarantine = loomctl({"host", "quarantine", live + "-h0", "--reason", "xid 79"});
    EXPECT_EQ(quarantine.exitCode, 0) << quarantine.err;
    for (const auto& [name, st] : rackState)
        if (st == "failed") {
            auto repair = loomctl({"rack", "repair", name});
            EXPECT_EQ(repair.exitCode, 0) << repair.err;
        }
}

}  // namespace
}  // namespace loom::testing
