// NetBox's pattern lookups on names (`__ic`, `__isw`, `__iew`) through the trigram indexes of
// migration 0022: apply's bulk path drops them before its COPY and buildNameIndexes builds them
// after its commit, the planner can answer the lists' own predicate from them, and each lookup
// returns exactly the names the spec's inventory has (counted here in C++, not written down).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"
#include "loom/testing/text.hpp"

namespace {

using namespace loom::inventory;
using loom::testing::lowerAscii;
using loom::testing::sampleCluster;

class NamePattern : public loom::testing::PostgresTest {};

TEST_F(NamePattern, LookupsGoThroughTheTrigramIndexAndMatchTheInventory) {
    auto conn = connect();
    Inventory inv = sampleCluster(2, 12);
    auto snap = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(snap);
    Plan p = plan(inv, snap->inventory, {});
    ASSERT_TRUE(loom::db::applyPlan(conn, p, inv, {.actor = "test", .bulkForeignKeyRows = 1}));
    auto indexes = [&] {
        return conn
            .queryValue(
                "SELECT count(*) FROM pg_indexes WHERE indexname IN "
                "('ports_name_trgm', 'links_name_trgm')")
            ->value();
    };
    // The bulk apply dropped them before its COPY and left them to after its commit; the
    // lookups are exact meanwhile (checked below, before and after the build).
    EXPECT_EQ(indexes(), "0");
    const std::size_t beforeBuild =
        loom::db::listObjects(
            conn, {.kind = Kind::Port, .limit = 5000, .filters = {{"name__ic", "R003-RTSW"}}})
            ->items.size();
    EXPECT_EQ(loom::db::buildNameIndexes(conn).value(), 5);  // and 0026's three
    EXPECT_EQ(indexes(), "2");
    EXPECT_EQ(loom::db::buildNameIndexes(conn).value(), 0) << "built once";
    // With sequential scans priced out, the list's predicate is answered from the index.
    auto plan = conn.queryRows(
        "BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; "
        "EXPLAIN SELECT name FROM ports t WHERE lower((t.name)::text) LIKE '%' || "
        "lower('R003-RTSW') || '%'");
    ASSERT_TRUE(plan) << plan.error().toString();
    std::string text;
    for (auto& row : *plan) text += row[0] + "\n";
    EXPECT_NE(text.find("ports_name_trgm"), std::string::npos) << text;
    ASSERT_TRUE(conn.exec("ROLLBACK"));

    auto count = [&](Kind k, const std::string& field, const std::string& value) {
        loom::db::ListQuery q{.kind = k, .limit = 5000, .filters = {{field, value}}};
        auto page = loom::db::listObjects(conn, q);
        EXPECT_TRUE(page) << page.error().toString();
        return page ? page->items.size() : 0;
    };
    auto expected = [&](const auto& entities, auto pred) {
        return static_cast<std::size_t>(
            std::count_if(entities.begin(), entities.end(),
                          [&](const auto& e) { return pred(lowerAscii(e.name.str())); }));
    };
    for (std::string v : {"R003-RTSW", "ctsw2/p1", "xyz", "nic7/P"}) {
        const std::string l = lowerAscii(v);
        EXPECT_EQ(count(Kind::Port, "name__ic", v),
                  expected(inv.ports, [&](const std::string& n) { return n.find(l) != n.npos; }))
            << v;
        EXPECT_EQ(count(Kind::Link, "name__ic", v),
                  expected(inv.links, [&](const std::string& n) { return n.find(l) != n.npos; }))
            << v;
    }
    EXPECT_EQ(count(Kind::Port, "name__isw", "Z2-R010-"),
              expected(inv.ports, [](const std::string& n) { return n.starts_with("z2-r010-"); }));
    EXPECT_EQ(count(Kind::Port, "name__iew", "-RTSW/P17"),
              expected(inv.ports, [](const std::string& n) { return n.ends_with("-rtsw/p17"); }));
    EXPECT_EQ(count(Kind::Port, "name__iew", "-RTSW/P17"), 24u);
    EXPECT_EQ(count(Kind::Port, "name__ic", "R003-RTSW"), beforeBuild);
}

// The state writes find their rows by name (`UPDATE links ... WHERE name = ANY($names)`): the
// trigram indexes are on lower(name) (0032), so they cannot answer that equality. On name,
// pg_trgm's `=` support made the planner pick them: at 98k the reconciler's UPDATE of 160
// cables decoded the posting lists of every trigram of every name for 75 s and more. Here the
// unique btree is taken away and sequential scans are priced out: the trigram index would be
// the planner's only way in, and it must still not be one.
TEST_F(NamePattern, AnEqualityOnNamesNeverGoesThroughTheTrigramIndex) {
    auto conn = connect();
    Inventory inv = sampleCluster(2, 12);
    Plan p = plan(inv, Inventory{}, {});
    ASSERT_TRUE(loom::db::applyPlan(conn, p, inv, {.actor = "test", .bulkForeignKeyRows = 1}));
    ASSERT_TRUE(loom::db::buildNameIndexes(conn));
    for (const char* table : {"links", "ports"}) {
        const std::string t = table;
        auto plan =
            conn.queryRows("BEGIN; ALTER TABLE " + t + " DROP CONSTRAINT " + t +
                           "_name_key CASCADE; SET LOCAL enable_seqscan = off; EXPLAIN UPDATE " +
                           t + " SET state = 'active' WHERE name = ANY(ARRAY(SELECT name FROM " +
                           t + " ORDER BY id LIMIT 200)) AND state <> 'active'");
        ASSERT_TRUE(plan) << plan.error().toString();
        std::string text;
        for (auto& row : *plan) text += row[0] + "\n";
        ASSERT_TRUE(conn.exec("ROLLBACK"));
        EXPECT_EQ(text.find(t + "_name_trgm"), std::string::npos) << text;
        EXPECT_NE(text.find("Seq Scan on " + t), std::string::npos) << text;
    }
}

// A broad pattern (`ports?name__ic=ctsw`, 31k of 124k ports at 24k) finds its page by walking
// the natural order: the sort_key indexes carry the name (0025), and buildNameIndexes vacuums
// what a bulk load filled, so the walk reads the index alone. Its pages, cursor after cursor,
// are exactly the matching names in natural order.
TEST_F(NamePattern, ABroadPatternWalksTheSortKeyIndexAloneAndPagesInNaturalOrder) {
    auto conn = connect();
    Inventory inv = sampleCluster(2, 12);
    Plan p = plan(inv, Inventory{}, {});
    ASSERT_TRUE(loom::db::applyPlan(conn, p, inv, {.actor = "test", .bulkForeignKeyRows = 1}));
    ASSERT_TRUE(loom::db::buildNameIndexes(conn));
    for (const char* table : {"ports", "links"}) {
        auto vm = conn.queryValue(std::string("SELECT relallvisible = relpages AND relpages > 0 "
                                              "FROM pg_class WHERE relname = '") +
                                  table + "'");
        ASSERT_TRUE(vm);
        EXPECT_EQ(vm->value(), "t") << table << ": the visibility map is set after the build";
    }
    auto plan = conn.queryRows(
        "BEGIN; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off; "
        "EXPLAIN (ANALYZE, COSTS OFF) SELECT t.sort_key FROM ports t WHERE (t.name)::text "
        "ILIKE '%' || 'rtsw' || '%' ORDER BY t.sort_key LIMIT 11");
    ASSERT_TRUE(plan) << plan.error().toString();
    std::string text;
    for (auto& row : *plan) text += row[0] + "\n";
    ASSERT_TRUE(conn.exec("ROLLBACK"));
    EXPECT_NE(text.find("Index Only Scan using ports_sort_key"), std::string::npos) << text;
    EXPECT_NE(text.find("Heap Fetches: 0"), std::string::npos) << text;

    // Broad ones (the first names of the walk hold the page) and a rare one (the trigram set),
    // in pages of 1 (a walk of 200 names) and of 7 (800).
    for (auto [kind, value, limit] : {std::tuple{Kind::Port, std::string("RTSW/P1"), 7},
                                      std::tuple{Kind::Link, std::string("ctsw"), 7},
                                      std::tuple{Kind::Port, std::string("r007-rtsw/P1"), 1},
                                      std::tuple{Kind::Port, std::string("r007-rtsw/P1"), 7}}) {
        std::vector<std::string> expected;
        auto want = [&](const auto& entities) {
            for (const auto& e : entities)
                if (lowerAscii(e.name.str()).find(lowerAscii(value)) != std::string::npos)
                    expected.emplace_back(e.name);
        };
        if (kind == Kind::Port)
            want(inv.ports);
        else
            want(inv.links);
        std::sort(expected.begin(), expected.end(),
                  [](auto& a, auto& b) { return loom::naturalLess(a, b); });
        ASSERT_GE(expected.size(), 20u) << value;
        std::vector<std::string> got;
        loom::db::ListQuery q{.kind = kind, .limit = limit, .filters = {{"name__ic", value}}};
        for (int pages = 0; pages < 1000; ++pages) {
            auto page = loom::db::listObjects(conn, q);
            ASSERT_TRUE(page) << page.error().toString();
            for (auto& item : page->items) {
                auto obj = nlohmann::json::parse(item);
                got.push_back(obj["name"].get<std::string>());
                if (kind == Kind::Port) {  // the objects are whole: the device joined
                    EXPECT_FALSE(obj["device"].get<std::string>().empty()) << item;
                }
            }
            if (page->nextCursor.empty()) break;
            q.cursor = page->nextCursor;
        }
        EXPECT_EQ(got, expected) << value << ", limit " << limit;
    }
}

}  // namespace
