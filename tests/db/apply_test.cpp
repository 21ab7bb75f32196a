// plan/apply against a real PostgreSQL: round trip, idempotency, targeted changes, prune,
// concurrency and crash safety.
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace {

using namespace loom::inventory;
using loom::Errc;
using loom::testing::sampleCluster;

class Apply : public loom::testing::PostgresTest {
protected:
    // plan + apply against what is stored; returns the result (asserting success).
    loom::db::ApplyResult applySpec(loom::db::Connection& conn, const Inventory& desired,
                                    bool prune = false) {
        auto snap = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(snap) << snap.error().toString();
        Plan p = plan(desired, snap->inventory, {.prune = prune});
        auto r = loom::db::applyPlan(conn, p, desired,
                                     {.actor = "test", .expectedGeneration = snap->generation});
        EXPECT_TRUE(r) << r.error().toString();
        return r.value_or(loom::db::ApplyResult{});
    }
    std::string value(loom::db::Connection& conn, const std::string& sql) {
        auto v = conn.queryValue(sql);
        EXPECT_TRUE(v) << v.error().toString();
        return v && *v ? **v : std::string("<null>");
    }
};

// Field-by-field equality of spec fields and names (order-independent).
template <class T>
std::vector<std::string> names(const KindVector<T>& v) {
    std::vector<std::string> out;
    for (const auto& e : v) out.emplace_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
}

TEST_F(Apply, RoundTripLoadsWhatWasApplied) {
    auto conn = connect();
    Inventory desired = sampleCluster(2, 3);
    desired.racks[0].labels = {{"a\tb", "quote\" back\\slash"}, {"owner", "team-ñ"}};
    auto r = applySpec(conn, desired);
    EXPECT_EQ(r.created, desired.totalEntities());
    EXPECT_EQ(r.generation, 1);

    auto loaded = loom::db::loadInventory(conn);
    ASSERT_TRUE(loaded) << loaded.error().toString();
    EXPECT_EQ(loaded->cluster, "sample");
    for (Kind k : kAllKinds) EXPECT_EQ(loaded->count(k), desired.count(k)) << kindName(k);
    EXPECT_EQ(names(loaded->ports), names(desired.ports));
    EXPECT_EQ(names(loaded->links), names(desired.links));
    // Plan of the loaded state against the desired one: nothing differs in any spec field.
    Plan again = plan(desired, *loaded, {.prune = true});
    EXPECT_TRUE(again.empty()) << formatPlan(again);

    auto rack = std::find_if(loaded->racks.begin(), loaded->racks.end(),
                             [&](const Rack& x) { return x.name == desired.racks[0].name; });
    ASSERT_NE(rack, loaded->racks.end());
    Labels want = desired.racks[0].labels;
    EXPECT_EQ(rack->labels, want);
    EXPECT_EQ(rack->resourceVersion, 1);
    auto nic = std::find_if(loaded->nics.begin(), loaded->nics.end(),
                            [](const Nic& n) { return n.name == "z1-stor-n0-nic0"; });
    ASSERT_NE(nic, loaded->nics.end());
    EXPECT_EQ(nic->host, "z1-stor-n0");  // a NIC in a storage node
    EXPECT_EQ(nic->network, Network::Storage);
}

TEST_F(Apply, SecondApplyChangesNothingAndWritesNothing) {
    auto conn = connect();
    Inventory desired = sampleCluster(1, 2);
    applySpec(conn, desired);
    std::string before = value(conn, "SELECT max(updated_at)::text || '/' || sum(resource_version) FROM ports");
    std::string logRows = value(conn, "SELECT count(*) FROM change_log");
    std::string xmin = value(conn, "SELECT max(xmin::text::bigint) FROM racks");

    auto r = applySpec(conn, desired);
    EXPECT_FALSE(r.changed());
    EXPECT_EQ(r.created + r.updated + r.deleted, 0u);
    EXPECT_EQ(r.generation, 1);
    EXPECT_EQ(value(conn, "SELECT max(updated_at)::text || '/' || sum(resource_version) FROM ports"), before);
    EXPECT_EQ(value(conn, "SELECT count(*) FROM change_log"), logRows);
    EXPECT_EQ(value(conn, "SELECT count(*) FROM apply_runs"), "1");
    EXPECT_EQ(value(conn, "SELECT max(xmin::text::bigint) FROM racks"), xmin);
}

TEST_F(Apply, ChangedSpecTouchesOnlyWhatChanged) {
    auto conn = connect();
    Inventory desired = sampleCluster(1, 3);
    applySpec(conn, desired);
    // Operational state set by provisioning must survive a re-apply.
    ASSERT_TRUE(conn.exec("UPDATE racks SET state = 'in_service', serial = 'SN1' WHERE name = 'z1-r002'"));

    desired.racks[1].model = "gt-rack-v2";            // z1-r002: spec change
    desired.racks[1].state = "planned";               // operational: ignored
    desired.hosts.push_back({.name = "z1-r003-h2", .rack = "z1-r003", .slot = 2, .model = "grand-teton"});
    auto r = applySpec(conn, desired);
    EXPECT_EQ(r.created, 1u);
    EXPECT_EQ(r.updated, 1u);
    EXPECT_EQ(r.deleted, 0u);
    EXPECT_EQ(value(conn, "SELECT model || '/' || state || '/' || serial || '/' || resource_version FROM racks WHERE name = 'z1-r002'"),
              "gt-rack-v2/in_service/SN1/2");
    EXPECT_EQ(value(conn, "SELECT count(*) FROM racks WHERE resource_version > 1"), "1");
    EXPECT_EQ(value(conn, "SELECT count(*) FROM hosts WHERE resource_version > 1"), "0");
    EXPECT_EQ(value(conn, "SELECT before::text || ' -> ' || after::text FROM change_log WHERE action = 'update' AND name = 'z1-r002'"),
              R"({"model": "gt-rack"} -> {"model": "gt-rack-v2"})");
    EXPECT_EQ(value(conn, "SELECT (SELECT r.name FROM racks r WHERE r.id = h.rack_id) FROM hosts h WHERE name = 'z1-r003-h2'"),
              "z1-r003");
}

TEST_F(Apply, DeletesOnlyWithPrune) {
    auto conn = connect();
    Inventory desired = sampleCluster(1, 2);
    applySpec(conn, desired);
    Inventory smaller = desired;
    // Drop a host and everything under it (GPUs, NICs, NIC ports, their links).
    const std::string host = "z1-r002-h1";
    std::erase_if(smaller.hosts.mut(), [&](const Host& h) { return h.name == host; });
    std::erase_if(smaller.gpus.mut(), [&](const Gpu& g) { return g.host == host; });
    std::erase_if(smaller.nics.mut(), [&](const Nic& n) { return n.host == host; });
    std::erase_if(smaller.ports.mut(), [&](const Port& p) { return p.device.rfind(host + "-", 0) == 0; });
    std::erase_if(smaller.links.mut(), [&](const Link& l) { return l.aPort.rfind(host + "-", 0) == 0; });
    const std::size_t removed = desired.totalEntities() - smaller.totalEntities();
    ASSERT_EQ(removed, 1u + 8 + 8 + 8 + 8);

    auto snap = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(snap);
    Plan keep = plan(smaller, snap->inventory, {.prune = false});
    EXPECT_TRUE(keep.empty());
    EXPECT_EQ(keep.wouldDelete(), removed);
    EXPECT_NE(formatPlan(keep).find("would delete with --prune"), std::string::npos);
    auto noop = applySpec(conn, smaller, false);
    EXPECT_FALSE(noop.changed());
    EXPECT_EQ(value(conn, "SELECT count(*) FROM hosts"), "4");

    auto r = applySpec(conn, smaller, true);
    EXPECT_EQ(r.deleted, removed);
    EXPECT_EQ(value(conn, "SELECT count(*) FROM hosts"), "3");
    EXPECT_EQ(value(conn, "SELECT count(*) FROM links WHERE name LIKE 'z1-r002-h1-%'"), "0");
    EXPECT_EQ(value(conn, "SELECT before->>'slot' FROM change_log WHERE action = 'delete' AND name = 'z1-r002-h1'"), "1");
}

// Re-cabling in one apply: two links swap their A ends (one UPDATE), and with prune a new
// link takes the ports of a link deleted in the same apply (creates run before deletes). Both
// end states are valid; the unique link-end checks run at commit (migration 0006).
TEST_F(Apply, RecablingSwapsAndReusesPortsInOneApply) {
    auto conn = connect();
    Inventory desired = sampleCluster(1, 2);
    applySpec(conn, desired);
    ASSERT_GE(desired.links.size(), 3u);
    Inventory next = desired;
    std::swap(next.links[0].aPort, next.links[1].aPort);
    Link moved = next.links[2];
    moved.name = moved.name + "-new";
    next.links.erase(next.links.begin() + 2);
    next.links.push_back(moved);

    auto r = applySpec(conn, next, /*prune=*/true);
    EXPECT_EQ(r.updated, 2u);
    EXPECT_EQ(r.created, 1u);
    EXPECT_EQ(r.deleted, 1u);
    auto aPortOf = [&](const Text& link) {
        return value(conn, "SELECT p.name FROM links l JOIN ports p ON p.id = l.a_port_id WHERE l.name = '" +
                               link + "'");
    };
    EXPECT_EQ(aPortOf(desired.links[0].name), desired.links[1].aPort);
    EXPECT_EQ(aPortOf(desired.links[1].name), desired.links[0].aPort);
    EXPECT_EQ(aPortOf(moved.name), desired.links[2].aPort);

    // Two links on one port is still refused (at commit), and nothing is written.
    Inventory bad = next;
    bad.links[1].aPort = bad.links[0].aPort;
    auto snap = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(snap);
    Plan p = plan(bad, snap->inventory, {.prune = true});
    auto failed = loom::db::applyPlan(conn, p, bad, {.actor = "test", .expectedGeneration = snap->generation});
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, Errc::Conflict) << failed.error().toString();
    EXPECT_EQ(aPortOf(desired.links[1].name), desired.links[0].aPort);
    EXPECT_EQ(value(conn, "SELECT count(*) FROM apply_runs"), "2");
}

TEST_F(Apply, UnknownReferenceIsAClearErrorAndWritesNothing) {
    auto conn = connect();
    Inventory desired = sampleCluster(1, 1);
    desired.hosts[0].rack = "no-such-rack";
    auto snap = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(snap);
    auto r = loom::db::applyPlan(conn, plan(desired, snap->inventory), desired, {.actor = "t"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_NE(r.error().message.find("z1-r001-h0: rack \"no-such-rack\" does not exist"),
              std::string::npos) << r.error().message;
    EXPECT_EQ(value(conn, "SELECT count(*) FROM sites"), "0");
    EXPECT_EQ(value(conn, "SELECT generation FROM inventory_state"), "0");
}

TEST_F(Apply, StalePlanIsAConflict) {
    auto conn = connect();
    Inventory desired = sampleCluster(1, 1);
    auto snap = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(snap);
    Plan p = plan(desired, snap->inventory);
    applySpec(conn, desired);  // someone else applied in between
    auto r = loom::db::applyPlan(conn, p, desired,
                                 {.actor = "late", .expectedGeneration = snap->generation});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::Conflict);
    EXPECT_NE(r.error().message.find("changed since it was planned"), std::string::npos);
}

TEST_F(Apply, ConcurrentAppliesOneWinsOtherConflicts) {
    Inventory desired = sampleCluster(2, 4);
    auto c1 = connect();
    auto c2 = connect();
    auto s1 = loom::db::loadSnapshot(c1);
    ASSERT_TRUE(s1);
    Plan p = plan(desired, s1->inventory);

    // The first apply pauses inside its transaction (while COPYing) until the second has
    // tried; the second must fail at once, naming the first.
    std::atomic<bool> firstInside{false}, secondDone{false};
    loom::Result<loom::db::ApplyResult> r1 = loom::fail(loom::Error::internal("not run"));
    loom::Result<loom::db::ApplyResult> r2 = loom::fail(loom::Error::internal("not run"));
    std::thread t1([&] {
        r1 = loom::db::applyPlan(
            c1, p, desired,
            {.actor = "alice", .expectedGeneration = s1->generation,
             .progress = [&](std::string_view stage, std::size_t, std::size_t) {
                 if (stage.starts_with("create") && !firstInside) {
                     firstInside = true;
                     while (!secondDone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
                 }
             }});
    });
    while (!firstInside) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    r2 = loom::db::applyPlan(c2, p, desired, {.actor = "bob", .expectedGeneration = s1->generation});
    secondDone = true;
    t1.join();

    ASSERT_TRUE(r1) << r1.error().toString();
    ASSERT_FALSE(r2);
    EXPECT_EQ(r2.error().code, Errc::Conflict);
    EXPECT_NE(r2.error().message.find("another apply is in progress (started by alice at "),
              std::string::npos) << r2.error().message;
    auto c3 = connect();
    EXPECT_EQ(value(c3, "SELECT count(*) FROM gpus"), std::to_string(desired.gpus.size()));
    EXPECT_EQ(value(c3, "SELECT count(*) FROM apply_runs"), "1");
    EXPECT_EQ(value(c3, "SELECT generation FROM inventory_state"), "1");
}

TEST_F(Apply, KilledMidCopyLeavesNothingPartial) {
    Inventory desired = sampleCluster(8, 16);  // > 4096 ports, so progress fires mid-COPY
    ASSERT_GT(desired.ports.size(), 4096u);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The child opens its own session, applies, and dies by SIGKILL in the middle of
        // COPYing ports, after sites..nics were streamed in the same transaction.
        auto conn = database().connect();
        if (!conn) _exit(3);
        auto snap = loom::db::loadSnapshot(*conn);
        if (!snap) _exit(4);
        Plan p = plan(desired, snap->inventory);
        (void)loom::db::applyPlan(*conn, p, desired,
                                  {.actor = "doomed",
                                   .progress = [](std::string_view stage, std::size_t done, std::size_t) {
                                       if (stage == "create ports" && done > 0) raise(SIGKILL);
                                   }});
        _exit(5);  // not reached if the kill happened
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), SIGKILL);

    auto conn = connect();
    // The server notices the dead client and rolls back; wait for the backend to go away.
    for (int i = 0; i < 200; ++i) {
        if (value(conn, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'loom apply%'") == "0") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    for (Kind k : kAllKinds) {
        auto n = loom::db::countRows(conn, k);
        ASSERT_TRUE(n);
        EXPECT_EQ(*n, 0u) << kindName(k);
    }
    EXPECT_EQ(value(conn, "SELECT count(*) FROM change_log"), "0");
    EXPECT_EQ(value(conn, "SELECT generation FROM inventory_state"), "0");
    // And a normal apply afterwards succeeds (the advisory lock died with the session).
    auto r = applySpec(conn, desired);
    EXPECT_EQ(r.created, desired.totalEntities());
}

TEST_F(Apply, ChangeLogHasOneRowPerEntityAndSummaries) {
    auto conn = connect();
    Inventory desired = sampleCluster(1, 1);
    auto r = applySpec(conn, desired);
    EXPECT_EQ(value(conn, "SELECT count(*) FROM change_log WHERE name <> '*'"),
              std::to_string(desired.totalEntities()));
    EXPECT_EQ(value(conn, "SELECT after->>'created' FROM change_log WHERE kind = 'gpu' AND name = '*'"),
              std::to_string(desired.gpus.size()));
    EXPECT_EQ(value(conn, "SELECT actor FROM apply_runs WHERE id = " + std::to_string(r.applyRunId)), "test");
}

}  // namespace
