#include "loom/db/migrations.hpp"
#include "loom/testing/postgres.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace {

class Migrations : public loom::testing::PostgresTest {};

TEST_F(Migrations, EmbeddedFilesAreNumberedAndIncludeInventory) {
    const auto& all = loom::db::migrations();
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.front().version, 1);
    EXPECT_EQ(all.front().name, "0001_inventory");
    for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].version, all[i].version);
}

TEST_F(Migrations, SecondRunAppliesNothing) {
    auto conn = connect();
    // The harness's template is migrated already: this run must be a no-op.
    auto r = loom::db::migrate(conn);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->applied, 0);
    EXPECT_EQ(r->version, loom::db::migrations().back().version);
    auto n = conn.queryValue("SELECT count(*) FROM schema_migrations");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->value(), std::to_string(loom::db::migrations().size()));
}

TEST_F(Migrations, FreshDatabaseGetsEverything) {
    auto conn = connect();
    ASSERT_TRUE(conn.exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public"));
    auto r = loom::db::migrate(conn);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->applied, static_cast<int>(loom::db::migrations().size()));
    auto again = loom::db::migrate(conn);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->applied, 0);
    EXPECT_EQ(conn.queryValue("SELECT generation FROM inventory_state")->value(), "0");
}

TEST_F(Migrations, EditedMigrationIsRefused) {
    auto conn = connect();
    ASSERT_TRUE(conn.exec("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1"));
    auto r = loom::db::migrate(conn);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("0001_inventory differs"), std::string::npos)
        << r.error().message;
}

TEST_F(Migrations, ConcurrentMigratorsSerialise) {
    auto a = connect();
    ASSERT_TRUE(a.exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public"));
    std::vector<std::thread> threads;
    std::vector<int> applied(3, -1);
    std::vector<std::string> errors(3);
    for (int i = 0; i < 3; ++i)
        threads.emplace_back([&, i] {
            auto c = database().connect();
            if (!c) return;
            if (auto r = loom::db::migrate(*c)) applied[i] = r->applied;
            else errors[i] = r.error().toString();
        });
    for (auto& t : threads) t.join();
    int total = 0;
    for (int i = 0; i < 3; ++i) {
        ASSERT_GE(applied[i], 0) << errors[i];
        total += applied[i];
    }
    EXPECT_EQ(total, static_cast<int>(loom::db::migrations().size()));
}

}  // namespace
