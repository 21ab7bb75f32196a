// The other end of each port's cable as the ports table stores it (migration 0026: link,
// peer_port, peer; issue 12). Apply writes them: in the COPY rows of created ports, and with one
// UPDATE for the ports whose cable or far end an apply changes. After a first apply, re-applies
// that recable ports (ends swapped, links replaced, a port moved to another device, new ports
// on old ones), a prune, and a random sequence of such applies on both write paths (row by row
// and bulk), every port's stored ends equal those computed here from the links and ports that
// the database holds (loaded by the loader, which does not read these columns), and the API
// shows them. Real PostgreSQL (tests/support).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

namespace {

using namespace loom::inventory;

constexpr const char* kNone = "<none>";

class PortCables : public loom::testing::PostgresTest {
protected:
    // plan + apply against what is stored (asserting success).
    loom::db::ApplyResult applySpec(loom::db::Connection& conn, const Inventory& desired,
                                    bool prune, std::size_t bulkRows = 10'000) {
        auto snap = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(snap) << snap.error().toString();
        Plan p = plan(desired, snap->inventory, {.prune = prune});
        auto r = loom::db::applyPlan(conn, p, desired,
                                     {.actor = "test",
                                      .expectedGeneration = snap->generation,
                                      .bulkForeignKeyRows = bulkRows,
                                      .bulkDeleteForeignKeyRows = bulkRows});
        EXPECT_TRUE(r) << r.error().toString();
        return r.value_or(loom::db::ApplyResult{});
    }

    // port -> "link|peerPort|peer" as stored.
    std::map<std::string, std::string> stored(loom::db::Connection& conn) {
        auto rows = conn.queryRows(
            "SELECT name, coalesce(link, '<none>') || '|' || coalesce(peer_port, '<none>') || "
            "'|' || coalesce(peer, '<none>') FROM ports");
        EXPECT_TRUE(rows) << rows.error().toString();
        std::map<std::string, std::string> out;
        if (rows)
            for (const auto& r : *rows) out[r[0]] = r[1];
        return out;
    }

    // The same, computed from the links and ports the database holds.
    std::map<std::string, std::string> computed(loom::db::Connection& conn) {
        auto snap = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(snap) << snap.error().toString();
        std::map<std::string, std::string> deviceOf, out;
        if (!snap) return out;
        for (const auto& p : snap->inventory.ports) {
            deviceOf[std::string(p.name)] = std::string(p.device);
            out[std::string(p.name)] = std::string(kNone) + "|" + kNone + "|" + kNone;
        }
        for (const auto& l : snap->inventory.links) {
            const std::string a(l.aPort), b(l.bPort), name(l.name);
            out[a] = name + "|" + b + "|" + deviceOf[b];
            out[b] = name + "|" + a + "|" + deviceOf[a];
        }
        return out;
    }

    // Every port's stored ends are the computed ones; returns how many ports have a cable.
    std::size_t expectStoredEqualsComputed(loom::db::Connection& conn, const std::string& when) {
        auto want = computed(conn);
        auto got = stored(conn);
        EXPECT_EQ(got.size(), want.size()) << when;
        std::size_t wrong = 0, cabled = 0;
        for (const auto& [port, ends] : want) {
            cabled += !ends.starts_with(kNone);
            auto it = got.find(port);
            if (it == got.end() || it->second != ends) {
                if (++wrong <= 5)
                    ADD_FAILURE() << when << ": " << port << " stores "
                                  << (it == got.end() ? "no row" : it->second) << ", its cable is "
                                  << ends;
            }
        }
        EXPECT_EQ(wrong, 0u) << when;
        return cabled;
    }

    // The port as the API shows it: "link|peerPort|peer".
    std::string shown(loom::db::Connection& conn, const std::string& port) {
        auto obj = loom::db::getObject(conn, Kind::Port, port);
        EXPECT_TRUE(obj) << obj.error().toString();
        if (!obj) return "";
        auto j = nlohmann::json::parse(*obj);
        auto field = [&](const char* k) {
            return j[k].is_null() ? std::string(kNone) : j[k].get<std::string>();
        };
        return field("link") + "|" + field("peerPort") + "|" + field("peer");
    }
};

TEST_F(PortCables, FirstApplyStoresEveryPortsCableAndTheApiShowsIt) {
    auto conn = connect();
    Inventory inv = loom::testing::sampleCluster(2, 6);
    // A port with no cable: null ends.
    inv.ports.push_back({.name = "z1-ctsw1/p99", .device = "z1-ctsw1", .index = 99});
    applySpec(conn, inv, false);
    EXPECT_EQ(expectStoredEqualsComputed(conn, "first apply"), 2 * inv.links.size());
    const auto ends = stored(conn);
    for (const auto& l : {inv.links[0], inv.links[inv.links.size() - 1]}) {
        EXPECT_EQ(shown(conn, std::string(l.aPort)), ends.at(std::string(l.aPort)));
        EXPECT_EQ(shown(conn, std::string(l.bPort)), ends.at(std::string(l.bPort)));
        EXPECT_TRUE(ends.at(std::string(l.aPort))
                        .starts_with(std::string(l.name) + "|" + std::string(l.bPort) + "|"));
    }
    EXPECT_EQ(shown(conn, "z1-ctsw1/p99"), std::string(kNone) + "|" + kNone + "|" + kNone);
}

TEST_F(PortCables, RecablingMovingAndPruningKeepTheStoredEndsTrue) {
    auto conn = connect();
    Inventory inv = loom::testing::sampleCluster(2, 4);
    applySpec(conn, inv, false);
    ASSERT_GE(inv.links.size(), 8u);

    // Two links swap their B ends (two UPDATEs of links); two more are replaced by links with
    // the ends crossed (new names: created, the old ones deleted as their ports are taken).
    Inventory next = inv;
    std::swap(next.links[0].bPort, next.links[1].bPort);
    Link x = next.links[2], y = next.links[3];
    Link xy = x, yx = y;
    xy.name = std::string(x.aPort) + "--" + std::string(y.bPort);
    xy.bPort = y.bPort;
    yx.name = std::string(y.aPort) + "--" + std::string(x.bPort);
    yx.bPort = x.bPort;
    next.links[2] = xy;
    next.links[3] = yx;
    // A new port on a switch, cabled to the A end of link 4, whose old link goes (its B end is
    // left without a cable); and two new ports cabled to each other.
    const std::string freed(next.links[4].bPort), taker = "z1-ctsw1/p90";
    next.ports.push_back({.name = taker, .device = "z1-ctsw1", .index = 90});
    Link take = next.links[4];
    take.name = std::string(take.aPort) + "--" + taker;
    take.bPort = taker;
    next.links[4] = take;
    next.ports.push_back({.name = "z1-ctsw1/p91", .device = "z1-ctsw1", .index = 91});
    next.ports.push_back({.name = "z1-ctsw2/p91", .device = "z1-ctsw2", .index = 91});
    next.links.push_back(
        {.name = "z1-ctsw1/p91--z1-ctsw2/p91", .aPort = "z1-ctsw1/p91", .bPort = "z1-ctsw2/p91"});
    // A port moved to another device: its far end's peer changes, its own cable does not.
    const std::string movedFar(next.links[5].aPort);
    std::string movedPort(next.links[5].bPort);
    for (auto& p : next.ports)
        if (p.name == movedPort) p.device = "z2-ctsw2";
    applySpec(conn, next, false);
    expectStoredEqualsComputed(conn, "recabled");
    EXPECT_EQ(stored(conn)[freed], std::string(kNone) + "|" + kNone + "|" + kNone);
    EXPECT_EQ(shown(conn, freed), stored(conn)[freed]);
    EXPECT_TRUE(stored(conn)[movedFar].ends_with("|z2-ctsw2")) << stored(conn)[movedFar];
    EXPECT_EQ(shown(conn, movedFar), stored(conn)[movedFar]);
    const std::string swapped(inv.links[0].aPort);
    EXPECT_TRUE(stored(conn)[swapped].starts_with(std::string(inv.links[0].name) + "|" +
                                                  std::string(inv.links[1].bPort) + "|"))
        << stored(conn)[swapped];
    EXPECT_EQ(shown(conn, swapped), stored(conn)[swapped]);
    EXPECT_EQ(shown(conn, taker), stored(conn)[taker]);

    // Prune: a rack's links go (their far ends lose the cable), and so do one CTSW's ports.
    Inventory smaller = next;
    std::vector<Link> kept;
    for (const auto& l : smaller.links)
        if (std::string(l.aPort).find("z2-r001") == std::string::npos &&
            std::string(l.bPort).find("z2-ctsw1/") == std::string::npos)
            kept.push_back(l);
    ASSERT_LT(kept.size(), smaller.links.size());
    smaller.links = {};
    for (auto& l : kept) smaller.links.push_back(l);
    std::vector<Port> ports;
    for (const auto& p : smaller.ports)
        if (std::string(p.device) != "z2-ctsw1") ports.push_back(p);
    smaller.ports = {};
    for (auto& p : ports) smaller.ports.push_back(p);
    auto r = applySpec(conn, smaller, true);
    EXPECT_GT(r.deleted, 0u);
    expectStoredEqualsComputed(conn, "pruned");
    EXPECT_EQ(loom::db::listObjects(
                  conn, {.kind = Kind::Port, .limit = 1000, .filters = {{"peer", "z2-ctsw1"}}})
                  ->items.size(),
              0u);
}

// A 24k-like cluster's shape at a smaller scale, changed at random for several applies, each on
// the row-by-row path or the bulk one (which drops keys and indexes around its writes).
TEST_F(PortCables, RandomRecablingStaysTrueOnBothWritePaths) {
    auto conn = connect();
    Inventory inv = loom::testing::sampleCluster(3, 8);
    applySpec(conn, inv, false);
    expectStoredEqualsComputed(conn, "first apply");
    std::mt19937 rng(20261126);
    auto pick = [&](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };
    for (int round = 1; round <= 6; ++round) {
        const bool prune = round % 2 == 0;
        Inventory next = inv;
        // Swapped B ends (updates), in pairs of distinct links.
        for (int i = 0; i < 20; ++i) {
            std::size_t a = pick(next.links.size()), b = pick(next.links.size());
            if (a != b) std::swap(next.links[a].bPort, next.links[b].bPort);
        }
        // Links replaced by new ones with crossed ends (creates, deletes).
        for (int i = 0; i < 10; ++i) {
            std::size_t a = pick(next.links.size()), b = pick(next.links.size());
            if (a == b) continue;
            Link la = next.links[a], lb = next.links[b];
            std::swap(la.bPort, lb.bPort);
            la.name =
                std::string(la.aPort) + "--" + std::string(la.bPort) + "-r" + std::to_string(round);
            lb.name =
                std::string(lb.aPort) + "--" + std::string(lb.bPort) + "-r" + std::to_string(round);
            next.links[a] = la;
            next.links[b] = lb;
        }
        // Ports moved between NICs or between switches of the same kind.
        for (int i = 0; i < 5; ++i) {
            Port& p = next.ports[pick(next.ports.size())];
            for (int tries = 0; tries < 50; ++tries) {
                const Port& q = next.ports[pick(next.ports.size())];
                if (q.deviceKind == p.deviceKind && q.device != p.device) {
                    p.device = q.device;
                    break;
                }
            }
        }
        // New ports cabled to each other and to ports freed by dropping a link.
        const std::string n = std::to_string(round);
        next.ports.push_back(
            {.name = "z1-ctsw1/p5" + n, .device = "z1-ctsw1", .index = 50 + round});
        next.ports.push_back(
            {.name = "z2-ctsw2/p5" + n, .device = "z2-ctsw2", .index = 50 + round});
        next.links.push_back({.name = "z1-ctsw1/p5" + n + "--z2-ctsw2/p5" + n,
                              .aPort = "z1-ctsw1/p5" + n,
                              .bPort = "z2-ctsw2/p5" + n});
        {
            std::size_t d = pick(next.links.size() - 1);
            Link l = next.links[d];
            const std::string port = "z3-ctsw1/p6" + n;
            next.ports.push_back({.name = port, .device = "z3-ctsw1", .index = 60 + round});
            l.name = std::string(l.aPort) + "--" + port;
            l.bPort = port;
            next.links[d] = l;
        }
        // With prune, some links go without a replacement.
        if (prune) {
            std::vector<Link> kept;
            for (const auto& l : next.links)
                if (pick(25) != 0) kept.push_back(l);
            next.links = {};
            for (auto& l : kept) next.links.push_back(l);
        }
        const std::size_t bulk = round % 3 == 0 ? 1 : 10'000;
        applySpec(conn, next, prune, bulk);
        expectStoredEqualsComputed(
            conn, "round " + n + (prune ? ", pruned" : "") + (bulk == 1 ? ", bulk" : ""));
        inv = next;
    }
}

}  // namespace
