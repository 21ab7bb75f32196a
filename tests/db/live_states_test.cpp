// db::refreshStates against a real PostgreSQL: the state-only refresh of the live snapshot
// (db/live_states.hpp) sees every state change, keeps the snapshot's order, copies nothing
// when nothing moved, and hands structural changes back for a full load.
#include "loom/db/inventory_repository.hpp"
#include "loom/db/live_states.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

#include <gtest/gtest.h>

namespace {

using namespace loom::inventory;
using Outcome = loom::db::StateRefresh::Outcome;

class LiveStates : public loom::testing::PostgresTest {
protected:
    loom::db::Snapshot applied(loom::db::Connection& conn, const Inventory& desired) {
        auto before = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(before) << before.error().toString();
        auto r = loom::db::applyPlan(conn, plan(desired, before->inventory), desired,
                                     {.actor = "test", .expectedGeneration = before->generation});
        EXPECT_TRUE(r) << r.error().toString();
        auto after = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(after) << after.error().toString();
        return std::move(*after);
    }
    void exec(loom::db::Connection& conn, const std::string& sql) {
        auto r = conn.queryValue(sql);
        ASSERT_TRUE(r) << r.error().toString();
    }
};

template <class T>
const T& byName(const std::vector<T>& v, std::string_view name) {
    for (const auto& e : v)
        if (e.name == name) return e;
    ADD_FAILURE() << "no " << name;
    return v.front();
}

TEST_F(LiveStates, NothingMovedIsUnchanged) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    auto r = loom::db::refreshStates(conn, snap.inventory, snap.generation);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->outcome, Outcome::Unchanged);
    EXPECT_EQ(r->rowsRead, snap.inventory.racks.size() + snap.inventory.hosts.size() +
                               snap.inventory.gpus.size() + snap.inventory.links.size());
}

TEST_F(LiveStates, StateChangesArePatchedInTheSnapshotsOrder) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    const auto& inv = snap.inventory;
    const std::string rack = inv.racks[1].name, gpu = inv.gpus[5].name, link = inv.links[7].name;
    // Updates move the rows' tuples: the table order is no longer the snapshot's.
    exec(conn, "UPDATE racks SET state = 'racked', resource_version = resource_version + 1 "
               "WHERE name = '" + rack + "' RETURNING 1");
    exec(conn, "UPDATE gpus SET state = 'quarantined', resource_version = resource_version + 1 "
               "WHERE name = '" + gpu + "' RETURNING 1");
    loom::db::ProvisioningRepo repo(conn);
    auto n = repo.setLinkStates({link}, {"drained"});
    ASSERT_TRUE(n) << n.error().toString();

    auto r = loom::db::refreshStates(conn, inv, snap.generation);
    ASSERT_TRUE(r) << r.error().toString();
    ASSERT_EQ(r->outcome, Outcome::Patched);
    EXPECT_EQ(r->changedRows, 3u);
    const auto& p = r->inventory;
    ASSERT_EQ(p.racks.size(), inv.racks.size());
    for (std::size_t i = 0; i < inv.links.size(); ++i) ASSERT_EQ(p.links[i].name, inv.links[i].name);
    EXPECT_EQ(byName(p.racks, rack).state, "racked");
    EXPECT_EQ(byName(p.racks, rack).resourceVersion, byName(inv.racks, rack).resourceVersion + 1);
    EXPECT_EQ(byName(p.gpus, gpu).state, "quarantined");
    EXPECT_EQ(byName(p.links, link).state, "drained");
    EXPECT_EQ(byName(p.racks, inv.racks[0].name).state, inv.racks[0].state);

    // The patched snapshot equals a fresh full load, kind by kind, in states.
    auto fresh = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(fresh);
    for (const auto& l : fresh->inventory.links) EXPECT_EQ(byName(p.links, l.name).state, l.state);
    for (const auto& g : fresh->inventory.gpus) EXPECT_EQ(byName(p.gpus, g.name).state, g.state);
    for (const auto& k : fresh->inventory.racks) EXPECT_EQ(byName(p.racks, k.name).state, k.state);

    // Refreshing the patched snapshot again: nothing more moved.
    auto again = loom::db::refreshStates(conn, p, snap.generation);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->outcome, Outcome::Unchanged);
}

TEST_F(LiveStates, AnApplyOrARowBehindItsBackIsAStructuralChange) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    // A new apply: another generation.
    auto grown = applied(conn, loom::testing::sampleCluster(1, 4));
    auto r = loom::db::refreshStates(conn, snap.inventory, snap.generation);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->outcome, Outcome::Structure);
    // Same generation, but a row the snapshot does not have (written outside an apply).
    exec(conn, "DELETE FROM links WHERE name = '" + grown.inventory.links.back().name +
                   "' RETURNING 1");
    auto r2 = loom::db::refreshStates(conn, grown.inventory, grown.generation);
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->outcome, Outcome::Structure);
}

}  // namespace
