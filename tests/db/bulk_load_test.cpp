// The bulk path of apply (db/src/bulk_load.hpp) against a real PostgreSQL: a table that is
// empty is truncated in the apply's transaction (no WAL under wal_level = minimal) and loses
// its keys, unique constraints, indexes and the foreign keys pointing at it until the load is
// in; every one of them must come back exactly, a table holding rows must never be truncated,
// and a violation found when the keys are rebuilt, or any failure, must leave the database as
// it was. bulkForeignKeyRows = 1 runs the bulk path on every kind of a small cluster.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

namespace {

using namespace loom::inventory;
using loom::testing::sampleCluster;

const char* kTables[] = {"sites", "zones",    "rows",  "racks", "hosts",        "gpus",
                         "nics",  "switches", "ports", "links", "storage_nodes"};

class BulkLoad : public loom::testing::PostgresTest {
protected:
    loom::Result<loom::db::ApplyResult> apply(loom::db::Connection& conn, const Inventory& desired,
                                              bool prune = false) {
        auto snap = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(snap) << snap.error().toString();
        Plan p = plan(desired, snap->inventory, {.prune = prune});
        auto r = loom::db::applyPlan(conn, p, desired,
                                     {.actor = "test",
                                      .expectedGeneration = snap->generation,
                                      .bulkForeignKeyRows = 1,
                                      .bulkDeleteForeignKeyRows = 1});
        // The name trigram indexes are built after the commit, as every caller of applyPlan
        // does (NamePattern.* checks that the apply alone leaves them to it).
        if (r) EXPECT_TRUE(loom::db::buildNameIndexes(conn));
        return r;
    }
    std::vector<std::vector<std::string>> rows(loom::db::Connection& conn, const std::string& sql) {
        auto r = conn.queryRows(sql);
        EXPECT_TRUE(r) << sql << ": " << r.error().toString();
        return r.value_or(std::vector<std::vector<std::string>>{});
    }
    std::string value(loom::db::Connection& conn, const std::string& sql) {
        auto v = conn.queryValue(sql);
        EXPECT_TRUE(v) << v.error().toString();
        return v && *v ? **v : std::string("<null>");
    }
    // Every constraint (definition, validated, deferrable) and index of the schema: what the
    // migrations made, which a bulk load must leave as it found it.
    std::vector<std::vector<std::string>> schema(loom::db::Connection& conn) {
        auto out = rows(conn,
                        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), "
                        "convalidated::text, condeferrable::text, condeferred::text "
                        "FROM pg_constraint WHERE connamespace = current_schema()::regnamespace "
                        "ORDER BY 1, 2");
        for (auto& r : rows(conn,
                            "SELECT tablename, indexname, indexdef FROM pg_indexes "
                            "WHERE schemaname = current_schema() ORDER BY 1, 2"))
            out.push_back(r);
        return out;
    }
    // The schema a running loomd has before an apply: the migrations' and the name trigram
    // indexes its background build makes after migrating (migration 0032 drops them for it).
    std::vector<std::vector<std::string>> migratedSchema(loom::db::Connection& conn) {
        EXPECT_TRUE(loom::db::buildNameIndexes(conn));
        return schema(conn);
    }
    std::vector<std::string> fileNodes(loom::db::Connection& conn) {
        std::vector<std::string> out;
        for (const char* t : kTables)
            out.push_back(value(conn, std::string("SELECT pg_relation_filenode('") + t + "')"));
        return out;
    }
    std::string counts(loom::db::Connection& conn) {
        std::string out;
        for (const char* t : kTables)
            out +=
                std::string(t) + "=" + value(conn, std::string("SELECT count(*) FROM ") + t) + " ";
        return out;
    }
    // What is stored equals `desired` (both ways, every spec field).
    void expectStored(loom::db::Connection& conn, const Inventory& desired) {
        auto loaded = loom::db::loadInventory(conn);
        ASSERT_TRUE(loaded) << loaded.error().toString();
        Plan p = plan(desired, *loaded, {.prune = true});
        EXPECT_TRUE(p.empty()) << formatPlan(p);
    }
};

TEST_F(BulkLoad, FirstApplyTruncatesEmptyTablesAndRestoresEveryConstraintAndIndex) {
    auto conn = connect();
    const auto before = migratedSchema(conn);
    const auto nodesBefore = fileNodes(conn);
    ASSERT_GT(before.size(), 60u);  // 11 tables x (pkey, name key, FKs, sort key index...)

    Inventory desired = sampleCluster(2, 4);
    auto r = apply(conn, desired);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->created, desired.totalEntities());

    EXPECT_EQ(schema(conn), before);
    // Every table was empty: each got a new file (the truncate), which is what spares the WAL.
    const auto nodesAfter = fileNodes(conn);
    for (std::size_t i = 0; i < std::size(kTables); ++i)
        EXPECT_NE(nodesAfter[i], nodesBefore[i]) << kTables[i];
    expectStored(conn, desired);
    // The constraints are live again: a second link on a used port, a duplicate name and a
    // dangling reference are refused row by row.
    EXPECT_FALSE(
        conn.exec("INSERT INTO links (name, sort_key, a_port_id, b_port_id) "
                  "SELECT 'dup', 'dup', a_port_id, b_port_id FROM links LIMIT 1"));
    EXPECT_FALSE(conn.exec("INSERT INTO sites (name, sort_key) VALUES ('s1', 's1')"));
    EXPECT_FALSE(conn.exec("INSERT INTO gpus (name, sort_key, host_id) VALUES ('g', 'g', -5)"));
}

TEST_F(BulkLoad, TablesHoldingRowsAreNeverTruncated) {
    auto conn = connect();
    Inventory small = sampleCluster(1, 2);
    ASSERT_TRUE(apply(conn, small));
    const auto before = migratedSchema(conn);
    const auto nodes = fileNodes(conn);
    // Grow: every kind gets new rows on top of the stored ones (bulk path, tables not empty).
    Inventory big = sampleCluster(2, 4);
    auto r = apply(conn, big);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_GT(r->created, 0u);
    EXPECT_EQ(fileNodes(conn), nodes);
    EXPECT_EQ(schema(conn), before);
    expectStored(conn, big);
    // And shrink back with prune (the foreign keys pointing at shrinking tables dropped).
    r = apply(conn, small, true);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(schema(conn), before);
    expectStored(conn, small);
}

TEST_F(BulkLoad, ViolationFoundWhenKeysAreRebuiltFailsAndLeavesTheDatabaseAsItWas) {
    auto conn = connect();
    const auto before = migratedSchema(conn);
    const auto nodes = fileNodes(conn);
    // Two links on the same port: the plan has no duplicate names, so only the unique key on
    // the link ends (rebuilt after the COPY on this path) can refuse it.
    Inventory desired = sampleCluster(1, 2);
    ASSERT_GE(desired.links.size(), 2u);
    desired.links[1].aPort = desired.links[0].aPort;
    auto r = apply(conn, desired);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("links_a_port_id_key"), std::string::npos)
        << r.error().message;
    EXPECT_EQ(schema(conn), before);
    EXPECT_EQ(fileNodes(conn), nodes);
    EXPECT_EQ(counts(conn),
              "sites=0 zones=0 rows=0 racks=0 hosts=0 gpus=0 nics=0 switches=0 "
              "ports=0 links=0 storage_nodes=0 ");
    EXPECT_EQ(value(conn, "SELECT generation FROM inventory_state"), "0");

    // A failure in the middle of the COPY (an unknown reference) likewise.
    desired = sampleCluster(1, 2);
    desired.links.back().bPort = "no-such-port";
    r = apply(conn, desired);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("\"no-such-port\" does not exist"), std::string::npos)
        << r.error().message;
    EXPECT_EQ(schema(conn), before);
    EXPECT_EQ(fileNodes(conn), nodes);

    // And after both, the same database takes a clean first apply.
    desired = sampleCluster(1, 2);
    ASSERT_TRUE(apply(conn, desired));
    expectStored(conn, desired);
}

}  // namespace
