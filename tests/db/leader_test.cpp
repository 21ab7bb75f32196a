// The leader lease (db/leader.hpp): one holder at a time, takeover at once when the holder's
// session is gone, a stopped holder's lease expires, and a write fenced by an old epoch is
// refused with nothing written (the reconciler's commits and the telemetry rollups). The
// two-process SIGSTOP test is in tests/provisioning.
#include "loom/db/event_repo.hpp"
#include "loom/db/leader.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/testing/postgres.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {

using namespace std::chrono;
using loom::db::LeaderLock;
using loom::db::LeaseOptions;

class Lease : public loom::testing::PostgresTest {
protected:
    static LeaseOptions fast() { return {.name = "test", .ttl = milliseconds(1500), .renew = milliseconds(100)}; }
    static bool waitFor(const std::function<bool()>& cond, milliseconds limit) {
        auto until = steady_clock::now() + limit;
        while (steady_clock::now() < until) {
            if (cond()) return true;
            std::this_thread::sleep_for(milliseconds(10));
        }
        return cond();
    }
    loom::db::Batch configBatch(const std::string& sw) {
        loom::db::Batch b;
        b.configs.push_back({sw, "hostname " + sw + "\n", ""});
        b.configReason = "fence test";
        return b;
    }
};

TEST_F(Lease, OneHolderAndTakeoverWhenItsSessionDies) {
    auto first = std::make_unique<LeaderLock>(database(), fast());
    ASSERT_TRUE(waitFor([&] { return first->isLeader(); }, seconds(5)));
    LeaderLock second(database(), fast());
    std::this_thread::sleep_for(milliseconds(500));
    EXPECT_FALSE(second.isLeader());
    // The holder "dies": PostgreSQL ends its lease session, as when the process is killed.
    // The lease is free before its expiry.
    auto conn = connect();
    auto killed = conn.queryValue(
        "SELECT count(pg_terminate_backend(holder_pid)) FROM leader_leases WHERE name = 'test'");
    ASSERT_TRUE(killed) << killed.error().toString();
    auto t0 = steady_clock::now();
    ASSERT_TRUE(waitFor([&] { return second.isLeader(); }, seconds(3)));
    EXPECT_LT(steady_clock::now() - t0, milliseconds(1000));  // well inside the 1.5 s ttl
    auto f1 = first->fence();
    auto f2 = second.fence();
    ASSERT_TRUE(f2);
    EXPECT_GT(f2->epoch, 1);
    // The first noticed (its renewal is refused) and stepped down.
    EXPECT_TRUE(waitFor([&] { return !first->isLeader(); }, seconds(3)));
    (void)f1;
}

TEST_F(Lease, StopHandsOverAtOnce) {
    auto first = std::make_unique<LeaderLock>(database(), fast());
    ASSERT_TRUE(waitFor([&] { return first->isLeader(); }, seconds(5)));
    LeaderLock second(database(), fast());
    first->stop();
    EXPECT_FALSE(first->isLeader());
    EXPECT_TRUE(waitFor([&] { return second.isLeader(); }, milliseconds(1000)));
}

TEST_F(Lease, AStalledHoldersLeaseIsTakenOnlyWhenItExpires) {
    // A holder whose session is alive but who stopped renewing (SIGSTOP): written by hand,
    // with this test's own live session as the holder's.
    auto ghost = connect();
    ASSERT_TRUE(ghost.exec(
        "INSERT INTO leader_leases (name, holder, epoch, holder_pid, holder_backend_start, "
        "expires_at) SELECT 'test', 'ghost', 7, pid, backend_start, now() + interval '1 second' "
        "FROM pg_stat_activity WHERE pid = pg_backend_pid()"));
    auto t0 = steady_clock::now();
    LeaderLock next(database(), fast());
    ASSERT_TRUE(waitFor([&] { return next.isLeader(); }, seconds(5)));
    auto waited = steady_clock::now() - t0;
    EXPECT_GE(waited, milliseconds(800)) << "taken before the expiry";
    EXPECT_LE(waited, milliseconds(1000 + 500));  // expiry + one renew interval + slack
    EXPECT_EQ(next.fence()->epoch, 8);
}

TEST_F(Lease, TheOldEpochsWritesAreRefusedAfterATakeover) {
    auto holder = std::make_unique<LeaderLock>(database(), fast());
    ASSERT_TRUE(waitFor([&] { return holder->isLeader(); }, seconds(5)));
    auto oldFence = holder->fence();
    ASSERT_TRUE(oldFence);

    auto conn = connect();
    loom::db::ProvisioningRepo repo(conn);
    auto b = configBatch("sw-a");
    b.fence = oldFence;
    auto ok = repo.commit(b);
    ASSERT_TRUE(ok) << ok.error().toString();

    holder.reset();  // the term ends (here by handing over; a stall ends it by expiry)
    LeaderLock next(database(), fast());
    ASSERT_TRUE(waitFor([&] { return next.isLeader(); }, seconds(5)));

    // The old leader commits what it had prepared: refused, nothing written.
    auto late = configBatch("sw-b");
    late.fence = oldFence;
    auto refused = repo.commit(late);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, loom::Errc::Conflict);
    EXPECT_NE(refused.error().message.find("leadership lost"), std::string::npos)
        << refused.error().message;
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM fabric_config_versions WHERE switch_name = "
                              "'sw-b'")->value_or(""),
              "0");
    // The new term's writes go through.
    auto current = configBatch("sw-c");
    current.fence = next.fence();
    ASSERT_TRUE(current.fence);
    auto fine = repo.commit(current);
    EXPECT_TRUE(fine) << fine.error().toString();
}

// Rollups are leader-only too: a leader that stalled across a takeover and then writes the
// minute it had computed is refused whole (the new leader writes that minute itself).
TEST_F(Lease, AStaleLeadersRollupsAreRefused) {
    auto holder = std::make_unique<LeaderLock>(database(), fast());
    ASSERT_TRUE(waitFor([&] { return holder->isLeader(); }, seconds(5)));
    auto oldFence = holder->fence();
    ASSERT_TRUE(oldFence);
    auto minute = [](std::int64_t ms, const std::string& rack) {
        std::vector<loom::db::RollupRecord> rows(1);
        rows[0].minuteMs = ms;
        rows[0].scope = "rack";
        rows[0].name = rack;
        rows[0].utilAvg = 50;
        rows[0].gpusReporting = 16;
        return rows;
    };
    const std::int64_t t0 = 1'790'000'040'000;  // a whole minute
    auto conn = connect();
    auto first = loom::db::insertRollups(conn, minute(t0, "r1"), oldFence);
    ASSERT_TRUE(first) << first.error().toString();

    holder.reset();
    LeaderLock next(database(), fast());
    ASSERT_TRUE(waitFor([&] { return next.isLeader(); }, seconds(5)));

    auto late = loom::db::insertRollups(conn, minute(t0 + 60'000, "r1"), oldFence);
    ASSERT_FALSE(late);
    EXPECT_TRUE(loom::db::fencedOut(late.error())) << late.error().toString();
    auto count = [&] {
        return conn.queryValue("SELECT count(*) FROM telemetry_rollups WHERE name = 'r1'")->value_or("");
    };
    EXPECT_EQ(count(), "1");
    auto current = loom::db::insertRollups(conn, minute(t0 + 60'000, "r1"), next.fence());
    EXPECT_TRUE(current) << current.error().toString();
    EXPECT_EQ(count(), "2");
    // Another conflict (the minute is already there) is not a fencing.
    auto dup = loom::db::insertRollups(conn, minute(t0 + 60'000, "r1"), next.fence());
    ASSERT_FALSE(dup);
    EXPECT_FALSE(loom::db::fencedOut(dup.error())) << dup.error().toString();
}

}  // namespace
