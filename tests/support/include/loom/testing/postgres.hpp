// The PostgreSQL test harness: a real server, never a mock.
//
// One embedded PostgreSQL 15 (loom/db/embedded_postgres.hpp, fsync off) per test binary,
// in a temporary directory /tmp/loom-test-XXXXXX, started on first use and stopped (directory
// removed) at exit. A template database is migrated once (every db/migrations/*.sql); each
// test gets its own fresh database `t_<n>` copied from it with CREATE DATABASE ... TEMPLATE
// (a few ms), dropped when the test ends. Tests can therefore run in any order and write
// anything.
//
//   #include "loom/testing/postgres.hpp"
//   class RackStore : public loom::testing::PostgresTest {};
//   TEST_F(RackStore, CountsRacks) {
//       auto conn = connect();                       // a Connection to this test's database
//       EXPECT_EQ(conn.queryValue("SELECT count(*) FROM racks")->value(), "0");
//       loom::db::Database d = database();           // hand to code that opens its own
//   }
//
// In CMake: target_link_libraries(my_tests PRIVATE loom_test_support).
// Environment: LOOM_TEST_KEEP=1 keeps the temporary directory (and the server running) for a
// post-mortem. A server left behind by a crashed test binary (its owner pid is gone) is
// stopped and its directory removed the next time any test binary starts the harness.
#pragma once

#include "loom/db/database.hpp"
#include "loom/db/embedded_postgres.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace loom::testing {

// The binary's shared server (started on first call). Fails the calling test with a clear
// message (the tail of the server log) if PostgreSQL cannot start.
db::EmbeddedPostgres* sharedPostgres();

// Creates a fresh, migrated database on the shared server and returns its name.
std::string createTestDatabase();
void dropTestDatabase(const std::string& name);

class PostgresTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    // This test's database.
    const db::Database& database() const { return database_; }
    const std::string& databaseName() const { return name_; }
    // A new connection to this test's database; fails the test (fatally) if it cannot.
    db::Connection connect();

private:
    std::string name_;
    db::Database database_;
};

}  // namespace loom::testing
