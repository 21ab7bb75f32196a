// Database: connection strings (URL and key=value), database override, error mapping.
#include "loom/db/database.hpp"
#include "loom/testing/postgres.hpp"

#include <gtest/gtest.h>

namespace {

class DatabaseUrl : public loom::testing::PostgresTest {};

TEST_F(DatabaseUrl, UrlWithDatabaseOverrideReachesThatDatabase) {
    auto* pg = loom::testing::sharedPostgres();
    ASSERT_NE(pg, nullptr);
    auto url = loom::db::Database::fromUrl("postgresql:///postgres?host=" + pg->stateDir().string() +
                                           "&user=postgres");
    auto conn = url.withDatabase(databaseName()).connect();
    ASSERT_TRUE(conn) << conn.error().toString();
    EXPECT_EQ(conn->queryValue("SELECT current_database()")->value(), databaseName());
    // Its connection string carries the override: loops that open their own connections from
    // it (event writer, reconciler) reach the same database, not the URL's.
    auto again = loom::db::Database::fromUrl(url.withDatabase(databaseName()).connectionString()).connect();
    ASSERT_TRUE(again) << again.error().toString();
    EXPECT_EQ(again->queryValue("SELECT current_database()")->value(), databaseName());
}

// loomd's sessions plan without parallel workers (a Gather forks them per execution: a list
// page cost 4x the CPU with two), so a list of peers by name is one process's work.
TEST_F(DatabaseUrl, SessionsRunWithoutParallelWorkers) {
    auto conn = connect();
    EXPECT_EQ(conn.queryValue("SHOW max_parallel_workers_per_gather")->value(), "0");
    // Nor JIT compilation (a rack transition's 6.5 ms statement took 166 ms with it at 98k).
    EXPECT_EQ(conn.queryValue("SHOW jit")->value(), "off");
    auto plan = conn.queryRows(  // parallel priced as free: only the setting forbids it
        "BEGIN; SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0; "
        "SET LOCAL min_parallel_table_scan_size = 0; "
        "EXPLAIN SELECT count(*) FROM pg_attribute");  // a Gather with workers allowed
    ASSERT_TRUE(plan) << plan.error().toString();
    for (auto& row : *plan) EXPECT_EQ(row[0].find("Gather"), std::string::npos) << row[0];
    ASSERT_TRUE(conn.exec("ROLLBACK"));
}

TEST_F(DatabaseUrl, ErrorsAreMappedNotThrown) {
    auto conn = connect();
    auto dup = conn.exec("INSERT INTO sites (name, sort_key) VALUES ('a', 'a'); "
                         "INSERT INTO sites (name, sort_key) VALUES ('a', 'a')");
    ASSERT_FALSE(dup);
    EXPECT_EQ(dup.error().code, loom::Errc::Conflict);
    auto bad = conn.exec("INSERT INTO links (name, sort_key, a_port_id, b_port_id, medium) "
                         "VALUES ('l', 'l', 1, 2, 'wire')");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, loom::Errc::InvalidArgument);
    auto down = loom::db::Database::fromUrl("host=/nonexistent-dir user=postgres").connect();
    ASSERT_FALSE(down);
    EXPECT_EQ(down.error().code, loom::Errc::Unavailable);
}

TEST(DatabaseRedaction, PasswordsNeverShow) {
    EXPECT_EQ(loom::db::Database::fromUrl("postgresql://u:secret@h/db").redacted(),
              "postgresql://u:***@h/db");
    EXPECT_EQ(loom::db::Database::fromUrl("host=h password=secret").redacted(), "host=h password=***");
}

}  // namespace

// Issue 18 item 3: libpq reports a connection that died mid-query ("server closed the
// connection unexpectedly") as an sql_error with no SQLSTATE; that is a lost database (503),
// not a bug (500).
#include "loom/db/native.hpp"

namespace loom::db {
namespace {

Error translated(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (...) {
        return translateException("list events");
    }
}

TEST(DatabaseErrors, ConnectionLossWithoutSqlstateIsUnavailable) {
    auto closed = translated(std::make_exception_ptr(pqxx::sql_error(
        "server closed the connection unexpectedly\n\tThis probably means the server "
        "terminated abnormally\n\tbefore or while processing the request.\n",
        "SELECT 1", "")));
    EXPECT_EQ(closed.code, Errc::Unavailable) << closed.message;
    EXPECT_EQ(closed.message.rfind("list events: database unavailable: ", 0), 0u) << closed.message;
    auto noConn = translated(std::make_exception_ptr(pqxx::sql_error("no connection to the server\n", "", "")));
    EXPECT_EQ(noConn.code, Errc::Unavailable);
    auto shutdown = translated(std::make_exception_ptr(
        pqxx::sql_error("terminating connection due to administrator command", "", "57P01")));
    EXPECT_EQ(shutdown.code, Errc::Unavailable);
    auto broken = translated(std::make_exception_ptr(pqxx::broken_connection("gone")));
    EXPECT_EQ(broken.code, Errc::Unavailable);
    // A real SQL error stays a 500.
    auto bug = translated(std::make_exception_ptr(
        pqxx::sql_error("column \"nope\" does not exist", "SELECT nope", "42703")));
    EXPECT_EQ(bug.code, Errc::Internal);
}

}  // namespace
}  // namespace loom::db
