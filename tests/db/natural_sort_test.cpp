// Natural order on the server (issue 12, migration 0021): every inventory row carries
// sort_key = naturalSortKey(name), written by apply (bulk and row-by-row paths) and kept by
// PATCH; lists are ordered by it and their cursors page by it; a database from before 0021 gets
// its keys at migrate. Real PostgreSQL (tests/support).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/migrations.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

namespace {

using namespace loom::inventory;
using loom::testing::sampleCluster;

constexpr const char* kTables[] = {"sites", "zones",    "rows",  "racks", "hosts",        "gpus",
                                   "nics",  "switches", "ports", "links", "storage_nodes"};

class NaturalSort : public loom::testing::PostgresTest {
protected:
    void apply(loom::db::Connection& conn, const Inventory& desired, std::size_t bulkRows) {
        auto snap = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        Plan p = plan(desired, snap->inventory, {});
        auto r = loom::db::applyPlan(conn, p, desired,
                                     {.actor = "test",
                                      .expectedGeneration = snap->generation,
                                      .bulkForeignKeyRows = bulkRows});
        ASSERT_TRUE(r) << r.error().toString();
    }
    // Every row of every inventory table: its key is the name's key (none NULL); returns the
    // number of rows checked.
    std::size_t checkKeys(loom::db::Connection& conn) {
        std::size_t rows = 0;
        for (const char* t : kTables) {
            auto r =
                conn.queryRows(std::string("SELECT name, coalesce(sort_key, '<null>') FROM ") + t);
            EXPECT_TRUE(r) << r.error().toString();
            if (!r) continue;
            for (const auto& row : *r) {
                EXPECT_EQ(row[1], loom::naturalSortKey(row[0])) << t << " " << row[0];
                ++rows;
            }
        }
        return rows;
    }
    // Every page of a list, following nextCursor; the names in the order the pages gave them.
    std::vector<std::string> allPages(loom::db::Connection& conn, loom::db::ListQuery q) {
        std::vector<std::string> names;
        for (int pages = 0; pages < 1000; ++pages) {
            auto page = loom::db::listObjects(conn, q);
            EXPECT_TRUE(page) << page.error().toString();
            if (!page) break;
            for (auto& item : page->items)
                names.push_back(nlohmann::json::parse(item)["name"].get<std::string>());
            if (page->nextCursor.empty()) break;
            q.cursor = page->nextCursor;
        }
        return names;
    }
};

TEST_F(NaturalSort, EveryWriterFillsTheKey) {
    auto conn = connect();
    // The bulk path (indexes dropped and rebuilt around the COPY) and the row-by-row one.
    Inventory inv = sampleCluster(1, 12);
    apply(conn, inv, 1);
    const std::size_t first = checkKeys(conn);
    EXPECT_EQ(first, inv.sites.size() + inv.zones.size() + inv.rows.size() + inv.racks.size() +
                         inv.hosts.size() + inv.gpus.size() + inv.nics.size() +
                         inv.switches.size() + inv.ports.size() + inv.links.size() +
                         inv.storageNodes.size());
    // A grown spec (creates below the bulk threshold) and a changed field (an update).
    Inventory grown = sampleCluster(2, 12);
    grown.racks[0].model = "gt-rack-v2";
    apply(conn, grown, 10'000);
    // Labels, annotations and an operational field set by hand.
    loom::db::ObjectPatch patch{.labels = R"({"owner": "team-a"})",
                                .annotations = R"({"ticket": "T-1"})",
                                .fields = {{"serial", "SN-1"}},
                                .actor = "test"};
    ASSERT_TRUE(loom::db::patchObject(conn, Kind::Rack, "z1-r002", patch));
    ASSERT_TRUE(loom::db::patchObject(conn, Kind::Port, "z1-r002-rtsw/p10",
                                      {.labels = R"({"cable": "checked"})", .actor = "test"}));
    EXPECT_GT(checkKeys(conn), first);
    // The check of 0021 refuses a row without a key, whoever writes it.
    EXPECT_FALSE(conn.exec("INSERT INTO sites (name) VALUES ('s-no-key')"));
    EXPECT_FALSE(conn.exec("UPDATE ports SET sort_key = NULL WHERE name = 'z1-r001-rtsw/p1'"));
}

TEST_F(NaturalSort, ListsAndTheirPagesAreInNaturalOrder) {
    auto conn = connect();
    apply(conn, sampleCluster(2, 12), 10'000);
    // One RTSW's 18 ports, five a page: p1 p2 ... p9 p10 ... p18, each once.
    loom::db::ListQuery q{.kind = Kind::Port, .limit = 5};
    q.filters = {{"switch", "z1-r001-rtsw"}};
    auto ports = allPages(conn, q);
    ASSERT_EQ(ports.size(), 18u);
    for (int p = 1; p <= 18; ++p) EXPECT_EQ(ports[p - 1], "z1-r001-rtsw/p" + std::to_string(p));
    // Every kind, every page: in naturalLess order, each object once, none left out.
    for (Kind k : kAllKinds) {
        auto names = allPages(conn, {.kind = k, .limit = 7});
        auto expected =
            conn.queryRows(std::string("SELECT name FROM ") + kTables[static_cast<int>(k)]);
        ASSERT_TRUE(expected);
        EXPECT_EQ(names.size(), expected->size()) << kindName(k);
        EXPECT_TRUE(std::is_sorted(names.begin(), names.end(), [](auto& a, auto& b) {
            return loom::naturalLess(a, b);
        })) << kindName(k);
        EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    }
    // Names a lexical sort would misplace: z1-ctsw2's port 10 after its port 9.
    auto ctsw =
        allPages(conn, {.kind = Kind::Port, .limit = 100, .filters = {{"name__isw", "z1-ctsw2/"}}});
    ASSERT_EQ(ctsw.size(), 12u);
    EXPECT_EQ(ctsw[8], "z1-ctsw2/p9");
    EXPECT_EQ(ctsw[9], "z1-ctsw2/p10");
}

TEST_F(NaturalSort, MigrateFillsTheKeysOfRowsWrittenBefore0021) {
    auto conn = connect();
    apply(conn, sampleCluster(1, 4), 10'000);
    // As a database made before 0021: no keys, the check not yet validated.
    ASSERT_TRUE(conn.exec(
        "ALTER TABLE ports DROP CONSTRAINT ports_sort_key_set; UPDATE ports SET sort_key = NULL; "
        "ALTER TABLE ports ADD CONSTRAINT ports_sort_key_set CHECK (sort_key IS NOT NULL) NOT "
        "VALID"));
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM ports WHERE sort_key IS NULL")->value(),
              conn.queryValue("SELECT count(*) FROM ports")->value());
    auto r = loom::db::migrate(conn);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->applied, 0);
    EXPECT_GT(checkKeys(conn), 0u);
    EXPECT_EQ(conn.queryValue("SELECT convalidated::text FROM pg_constraint WHERE conname = "
                              "'ports_sort_key_set'")
                  ->value(),
              "true");
}

}  // namespace
