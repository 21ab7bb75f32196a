// Growing and shrinking a cluster (issue 14): any sequence of applies, with and without
// --prune, between variants of a spec ends equal to a clean apply of the last spec, on the small
// path (row-by-row foreign-key checks) and on the bulk path (foreign keys dropped and re-added
// around the COPY, which once failed with 55006 "pending trigger events" on links).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>

#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/digest.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/inventory/spec.hpp"
#include "loom/testing/postgres.hpp"

namespace {

using namespace loom::inventory;

std::string clusterPath(const std::string& name) {
    return std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + name;
}

class Growth : public loom::testing::PostgresTest {
protected:
    // plan + apply against what is stored; fails the test on error.
    void applySpec(loom::db::Connection& conn, const Inventory& desired, bool prune,
                   std::size_t bulkRows, const std::string& what) {
        auto snap = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << what << ": " << snap.error().toString();
        Plan p = plan(desired, snap->inventory, {.prune = prune});
        auto r =
            loom::db::applyPlan(conn, p, desired,
                                {.actor = "test",
                                 .expectedGeneration = snap->generation,
                                 .bulkForeignKeyRows = bulkRows,
                                 .bulkDeleteForeignKeyRows = std::min<std::size_t>(bulkRows, 256)});
        ASSERT_TRUE(r) << what << ": " << r.error().toString();
    }

    // Everything the spec names is stored with the spec's fields; with `exact`, nothing else is.
    void expectHolds(loom::db::Connection& conn, const Inventory& desired, bool exact,
                     const std::string& what) {
        auto loaded = loom::db::loadInventory(conn);
        ASSERT_TRUE(loaded) << what << ": " << loaded.error().toString();
        Plan p = plan(desired, *loaded, {.prune = exact});
        EXPECT_TRUE(p.empty()) << what << ": " << formatPlan(p);
        if (!exact) return;
        for (Kind k : kAllKinds)
            EXPECT_EQ(loaded->count(k), desired.count(k)) << what << " " << kindName(k);
    }

    // The stored state equals a clean apply of `last` into a fresh database: every kind's
    // entities, compared field by field both ways.
    void expectSameAsClean(loom::db::Connection& conn, const Inventory& last,
                           const std::string& what) {
        std::string fresh = loom::testing::createTestDatabase();
        {
            auto clean = database().withDatabase(fresh).connect();
            ASSERT_TRUE(clean) << clean.error().toString();
            applySpec(*clean, last, false, 10'000, what + " (clean)");
            auto a = loom::db::loadInventory(conn);
            auto b = loom::db::loadInventory(*clean);
            ASSERT_TRUE(a && b);
            for (Kind k : kAllKinds)
                EXPECT_EQ(a->count(k), b->count(k)) << what << " " << kindName(k);
            Plan ab = plan(*a, *b, {.prune = true});
            Plan ba = plan(*b, *a, {.prune = true});
            EXPECT_TRUE(ab.empty()) << what << ": " << formatPlan(ab);
            EXPECT_TRUE(ba.empty()) << what << ": " << formatPlan(ba);
        }
        loom::testing::dropTestDatabase(fresh);
    }
};

// One random variant of dev-small: racks added or removed, uplinks recabled, a tier resized,
// cables swapped, entities renamed, labels and models changed.
struct Variant {
    int zones = 1, racks = 4, uplinks = 16, ctsw = 4, hostsOfR2 = -1, storageRacks = 1;
    bool swapCables = false, renameRacks = false, relabel = false;
    std::string describe() const {
        return "zones=" + std::to_string(zones) + " racks=" + std::to_string(racks) +
               " uplinks=" + std::to_string(uplinks) + " ctsw=" + std::to_string(ctsw) +
               " hostsOfR2=" + std::to_string(hostsOfR2) +
               " storageRacks=" + std::to_string(storageRacks) + (swapCables ? " swap" : "") +
               (renameRacks ? " rename" : "") + (relabel ? " relabel" : "");
    }
};

Inventory expandVariant(const ClusterSpec& base, const Variant& v) {
    ClusterSpec s = base;
    ZoneSpec z = s.zones.at(0);
    s.zones.clear();
    for (int i = 0; i < v.zones; ++i) {
        ZoneSpec zi = z;
        zi.name = "z" + std::to_string(i + 1);
        zi.racks = v.racks;
        s.zones.push_back(zi);
    }
    s.fabric.tier1.uplinks = v.uplinks;
    s.fabric.tier2.count = v.ctsw;
    s.storage.racks = v.storageRacks;
    if (v.renameRacks) s.naming.rack = "{zone}-rack{n:03}";
    const std::string r2 = v.renameRacks ? "z1-rack002" : "z1-r002";
    if (v.hostsOfR2 >= 0) s.rackOverrides.push_back({.name = r2, .hosts = v.hostsOfR2});
    if (v.relabel) {
        s.siteDescription = "relabelled";
        s.zones[0].labels = {{"owner", "growth-test"}};
        s.rackOverrides.push_back(
            {.name = v.renameRacks ? "z1-rack001" : "z1-r001", .model = "ORv3-tall"});
    }
    if (v.swapCables) {
        const std::string r1 = v.renameRacks ? "z1-rack001" : "z1-r001";
        s.cablingOverrides.push_back(
            {.op = CablingOverride::Op::Swap, .a = r1 + "-rtsw/p17", .b = r1 + "-rtsw/p18"});
    }
    auto inv = expandClusterSpec(s);
    if (!inv) ADD_FAILURE() << v.describe() << ": " << inv.error().toString();
    return inv ? std::move(*inv) : Inventory{};
}

TEST_F(Growth, RandomSpecSequencesEndLikeACleanApply) {
    std::ifstream in(clusterPath("dev-small.yaml"));
    std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto base = parseClusterSpec(doc);
    ASSERT_TRUE(base) << base.error().toString();

    std::mt19937 rng(1411);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    for (int seq = 0; seq < 6; ++seq) {
        std::string fresh = loom::testing::createTestDatabase();
        std::optional<loom::db::Connection> conn;
        if (auto c = database().withDatabase(fresh).connect()) conn.emplace(std::move(*c));
        ASSERT_TRUE(conn) << "cannot connect to " << fresh;
        // Even sequences take the bulk path (foreign keys dropped) for every table created.
        const std::size_t bulkRows = seq % 2 == 0 ? 1 : 10'000;
        Inventory last;
        std::string trail =
            "seq " + std::to_string(seq) + " bulk " + std::to_string(bulkRows) + ":";
        const int steps = pick(3, 5);
        for (int step = 0; step < steps; ++step) {
            Variant v;
            v.zones = pick(1, 2);
            v.racks = 2 * pick(1, 4);
            v.uplinks = pick(0, 1) ? 16 : 8;
            v.ctsw = pick(0, 1) ? 4 : 2;
            v.hostsOfR2 = pick(0, 2) == 0 ? pick(0, 2) : -1;
            v.storageRacks = pick(1, 2);
            v.swapCables = pick(0, 2) == 0;
            v.renameRacks = pick(0, 3) == 0;
            v.relabel = pick(0, 1) == 1;
            const bool prune = pick(0, 1) == 1;
            last = expandVariant(*base, v);
            trail += " -> [" + v.describe() + (prune ? " --prune]" : "]");
            applySpec(*conn, last, prune, bulkRows, trail);
            if (HasFatalFailure()) return;
            expectHolds(*conn, last, prune, trail);
        }
        // Whatever the path, a pruning apply of the last spec converges to a clean apply of it.
        applySpec(*conn, last, true, bulkRows, trail + " final --prune");
        if (HasFatalFailure()) return;
        expectSameAsClean(*conn, last, trail);
        conn.reset();  // closed before its database is dropped
        loom::testing::dropTestDatabase(fresh);
    }
}

// The digest shortcut (0013) is sound: whenever the stored digests match a spec (with or
// without --prune), planning that spec against the stored inventory finds nothing to do; and
// it is useful: right after an apply that stored them they match. Random sequences of variants
// as above, plus writes by others: an operational column (state) keeps the digest, a spec
// column written outside apply drops that table's digest until the next apply.
TEST_F(Growth, DigestsMatchOnlyWhenThePlanIsEmpty) {
    std::ifstream in(clusterPath("dev-small.yaml"));
    std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto base = parseClusterSpec(doc);
    ASSERT_TRUE(base) << base.error().toString();
    auto conn = connect();
    auto check = [&](const Inventory& spec, const std::string& what) {
        auto d = contentDigests(spec);
        auto snap = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        for (bool prune : {false, true}) {
            auto same = loom::db::storedDigestsMatch(conn, d, prune);
            ASSERT_TRUE(same) << same.error().toString();
            Plan p = plan(spec, snap->inventory, {.prune = prune});
            if (*same) {
                EXPECT_TRUE(p.empty()) << what << (prune ? " --prune: " : ": ") << formatPlan(p);
            }
        }
    };
    auto apply = [&](const Inventory& spec, bool prune, const std::string& what) {
        auto d = contentDigests(spec);
        auto snap = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        Plan p = plan(spec, snap->inventory, {.prune = prune});
        auto r = loom::db::applyPlan(
            conn, p, spec,
            {.actor = "test", .expectedGeneration = snap->generation, .digests = &d});
        ASSERT_TRUE(r) << what << ": " << r.error().toString();
        auto same = loom::db::storedDigestsMatch(conn, d, prune);
        ASSERT_TRUE(same && *same) << what << ": the digests just stored do not match";
    };
    std::mt19937 rng(1413);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<Inventory> seen;
    std::string trail;
    int matched = 0;
    for (int step = 0; step < 10; ++step) {
        Variant v;
        v.zones = pick(1, 2);
        v.racks = 2 * pick(1, 3);
        v.uplinks = pick(0, 1) ? 16 : 8;
        v.hostsOfR2 = pick(0, 2) == 0 ? pick(0, 2) : -1;
        v.swapCables = pick(0, 2) == 0;
        v.relabel = pick(0, 1) == 1;
        const bool prune = pick(0, 1) == 1;
        seen.push_back(expandVariant(*base, v));
        trail += " -> [" + v.describe() + (prune ? " --prune]" : "]");
        apply(seen.back(), prune, trail);
        if (HasFatalFailure()) return;
        // Every spec seen so far (most differ from what is stored now).
        for (std::size_t i = 0; i < seen.size(); ++i) {
            check(seen[i], trail + " checking spec " + std::to_string(i));
            auto same = loom::db::storedDigestsMatch(conn, contentDigests(seen[i]), false);
            matched += same && *same;
        }
    }
    EXPECT_GE(matched, 10);  // at least the spec just applied, every step

    const Inventory& last = seen.back();
    const auto d = contentDigests(last);
    // Provisioning writes operational columns only: the digests stay.
    ASSERT_TRUE(
        conn.exec("UPDATE racks SET state = 'in_service', serial = 'SN1' WHERE name = 'z1-r002'"));
    ASSERT_TRUE(conn.exec("UPDATE links SET state = 'active'"));
    auto same = loom::db::storedDigestsMatch(conn, d, false);
    ASSERT_TRUE(same && *same);
    // A spec column written outside apply: that table's digest goes, and nothing matches.
    ASSERT_TRUE(conn.exec("UPDATE hosts SET model = 'hand-edited' WHERE name = 'z1-r001-h0'"));
    same = loom::db::storedDigestsMatch(conn, d, false);
    ASSERT_TRUE(same);
    EXPECT_FALSE(*same);
    check(last, "after a hand edit");
    // The next apply of the spec reverts the edit (one update) and stores the digests again.
    auto snap = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(snap);
    EXPECT_EQ(plan(last, snap->inventory).updates(), 1u);
    apply(last, false, "re-apply after a hand edit");
    // Rows deleted by hand: the digest goes too.
    ASSERT_TRUE(conn.exec("DELETE FROM links WHERE name = (SELECT min(name) FROM links)"));
    same = loom::db::storedDigestsMatch(conn, d, false);
    ASSERT_TRUE(same);
    EXPECT_FALSE(*same);
    check(last, "after a hand delete");
}

// The shipped reference clusters: dev-small -> 24k -> dev-small, without and with --prune
// (the sequence that failed with 55006), then a clean-apply comparison.
TEST_F(Growth, DevSmallTo24kAndBack) {
    auto small = loadClusterSpecFile(clusterPath("dev-small.yaml"));
    auto big = loadClusterSpecFile(clusterPath("meta-24k-roce.yaml"));
    ASSERT_TRUE(small && big);
    auto conn = connect();
    applySpec(conn, *small, false, 10'000, "dev-small");
    applySpec(conn, *big, false, 10'000, "dev-small -> 24k");
    ASSERT_FALSE(HasFatalFailure());
    expectHolds(conn, *big, false, "dev-small -> 24k");
    applySpec(conn, *big, true, 10'000, "-> 24k --prune");
    ASSERT_FALSE(HasFatalFailure());
    expectHolds(conn, *big, true, "-> 24k --prune");
    applySpec(conn, *small, false, 10'000, "-> dev-small");
    ASSERT_FALSE(HasFatalFailure());
    expectHolds(conn, *small, false, "-> dev-small");
    applySpec(conn, *small, true, 10'000, "-> dev-small --prune");
    ASSERT_FALSE(HasFatalFailure());
    expectSameAsClean(conn, *small, "dev-small -> 24k -> dev-small --prune");
    // And straight into the big cluster with --prune from the small one.
    applySpec(conn, *big, true, 10'000, "dev-small -> 24k --prune");
    ASSERT_FALSE(HasFatalFailure());
    expectSameAsClean(conn, *big, "dev-small -> 24k --prune");
}

// The whole shipped growth path of issue 14 with the 98k cluster: dev-small -> 24k -> 98k
// -> dev-small, without and with --prune. ~1 M entities: 63 s and 0.6 GB RSS on the loaded
// 2-core machine, so it runs only with LOOM_TEST_98K=1 (skipped otherwise; bench/README.md).
TEST_F(Growth, DevSmallTo24kTo98kAndBack) {
    const char* big = std::getenv("LOOM_TEST_98K");
    if (!big || std::string(big) != "1")
        GTEST_SKIP() << "set LOOM_TEST_98K=1 (about a minute, 0.6 GB)";
    auto small = loadClusterSpecFile(clusterPath("dev-small.yaml"));
    auto mid = loadClusterSpecFile(clusterPath("meta-24k-roce.yaml"));
    auto huge = loadClusterSpecFile(clusterPath("meta-98k-roce.yaml"));
    ASSERT_TRUE(small && mid && huge);
    auto conn = connect();
    applySpec(conn, *small, false, 10'000, "dev-small");
    applySpec(conn, *mid, false, 10'000, "-> 24k");
    ASSERT_FALSE(HasFatalFailure());
    applySpec(conn, *huge, false, 10'000, "-> 98k");
    ASSERT_FALSE(HasFatalFailure());
    expectHolds(conn, *huge, false, "-> 98k");
    applySpec(conn, *huge, true, 10'000, "-> 98k --prune");
    ASSERT_FALSE(HasFatalFailure());
    expectHolds(conn, *huge, true, "-> 98k --prune");
    applySpec(conn, *small, false, 10'000, "-> dev-small");
    ASSERT_FALSE(HasFatalFailure());
    expectHolds(conn, *small, false, "-> dev-small");
    applySpec(conn, *small, true, 10'000, "-> dev-small --prune");
    ASSERT_FALSE(HasFatalFailure());
    expectSameAsClean(conn, *small, "dev-small -> 24k -> 98k -> dev-small --prune");
}

}  // namespace
