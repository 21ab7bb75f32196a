// Lemon strikes (migration 0036) against the real PostgreSQL: one row per host/GPU and job (the
// newest strike kept), read back since a time and by host, pruned by age.
#include "loom/db/lemon_repo.hpp"

#include <gtest/gtest.h>

#include "loom/testing/postgres.hpp"

namespace {

using loom::jobs::LemonStrike;

class LemonRepo : public loom::testing::PostgresTest {};

constexpr std::int64_t kT = 1'790'000'000'000;  // a Unix ms time in 2026

TEST_F(LemonRepo, OneStrikePerEntityAndJobReadBySinceAndHostPrunedByAge) {
    auto conn = connect();
    ASSERT_TRUE(loom::db::recordStrikes(
        conn, {{"h1-gpu2", "gpu", "h1", "a", "thermal_throttle", kT - 5000},
               {"h1", "host", "h1", "a", "thermal_throttle", kT - 5000},
               {"h1", "host", "h1", "a", "xid", kT - 1000},  // the same job: the newest wins
               {"h2", "host", "h2", "b", "host_slow", kT - 3000}}));
    ASSERT_TRUE(loom::db::recordStrikes(conn, {{"h1", "host", "h1", "a", "old", kT - 9000}}))
        << "an older strike of the same job changes nothing";
    auto all = loom::db::strikesSince(conn, kT - 60'000);
    ASSERT_TRUE(all) << all.error().toString();
    ASSERT_EQ(all->size(), 3u);
    EXPECT_EQ(all->back(), (LemonStrike{"h1", "host", "h1", "a", "xid", kT - 1000}));
    auto h1 = loom::db::strikesOnHosts(conn, {"h1"}, kT - 60'000);
    ASSERT_TRUE(h1);
    EXPECT_EQ(h1->size(), 2u) << "the host and its GPU";
    EXPECT_EQ(loom::db::strikesSince(conn, kT - 2000)->size(), 1u);
    auto pruned = loom::db::pruneStrikes(conn, kT - 4000);
    ASSERT_TRUE(pruned);
    EXPECT_EQ(*pruned, 1) << "h1-gpu2's strike";
    EXPECT_FALSE(loom::db::recordStrikes(conn, {{"x", "rack", "x", "a", "c", kT}}));
    EXPECT_EQ(loom::db::strikesSince(conn, 0)->size(), 2u) << "a refused batch writes nothing";
}

}  // namespace
