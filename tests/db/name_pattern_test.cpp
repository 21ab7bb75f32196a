// NetBox's pattern lookups on names (`__ic`, `__isw`, `__iew`) through the trigram indexes of
// migration 0022: apply's bulk path drops them before its COPY and buildNameIndexes builds them
// after its commit, the planner can answer the lists' own predicate from them, and each lookup
// returns exactly the names the spec's inventory has (counted here in C++, not written down).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

namespace {

using namespace loom::inventory;
using loom::testing::sampleCluster;

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

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
    EXPECT_EQ(loom::db::buildNameIndexes(conn).value(), 2);
    EXPECT_EQ(indexes(), "2");
    EXPECT_EQ(loom::db::buildNameIndexes(conn).value(), 0) << "built once";
    // With sequential scans priced out, the list's predicate is answered from the index.
    auto plan = conn.queryRows(
        "BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; "
        "EXPLAIN SELECT name FROM ports t WHERE (t.name)::text ILIKE '%' || 'R003-RTSW' || '%'");
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
        return static_cast<std::size_t>(std::count_if(
            entities.begin(), entities.end(), [&](const auto& e) { return pred(lower(e.name)); }));
    };
    for (std::string v : {"R003-RTSW", "ctsw2/p1", "xyz", "nic7/P"}) {
        const std::string l = lower(v);
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

}  // namespace
