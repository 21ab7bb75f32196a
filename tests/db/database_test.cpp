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

TEST_F(DatabaseUrl, ErrorsAreMappedNotThrown) {
    auto conn = connect();
    auto dup = conn.exec("INSERT INTO sites (name) VALUES ('a'); INSERT INTO sites (name) VALUES ('a')");
    ASSERT_FALSE(dup);
    EXPECT_EQ(dup.error().code, loom::Errc::Conflict);
    auto bad = conn.exec("INSERT INTO links (name, a_port_id, b_port_id, medium) VALUES ('l', 1, 2, 'wire')");
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
