// LinkNameIndex (fabric/link_sync.hpp): link ids by inventory link name over the topology's own
// names, and the stored-state changes a newer snapshot brings — on dev-small and the 24k RoCE
// reference (55,680 backend links: the open-addressing table's probing over many names).
#include "loom/fabric/link_sync.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "roce_fixtures.hpp"

namespace loom::fabric {
namespace {

using fixtures::fromSpec;

void expectEveryNameFound(const inventory::Inventory& inv) {
    auto topo = buildTopology(inv, {.plannedIsUp = true, .storedLinkStates = true});
    ASSERT_TRUE(topo.has_value()) << topo.error().toString();
    const LinkNameIndex ids(*topo);
    ASSERT_GT(topo->linkCount(), 0);
    for (std::int32_t l = 0; l < topo->linkCount(); ++l)
        ASSERT_EQ(ids.find(*topo, topo->linkNames[l]), l) << topo->linkNames[l];
    // Names that are not links: frontend links, a prefix, a name one character longer, empty.
    std::size_t frontend = 0;
    for (const auto& l : inv.links)
        if (l.network != inventory::Network::Backend && frontend++ < 100)
            EXPECT_EQ(ids.find(*topo, l.name), kNone) << l.name.view();
    const std::string first = topo->linkNames[0];
    EXPECT_EQ(ids.find(*topo, first.substr(0, first.size() - 1)), kNone);
    EXPECT_EQ(ids.find(*topo, first + "x"), kNone);
    EXPECT_EQ(ids.find(*topo, ""), kNone);
    // A copy of the topology (what a router owns after the move) answers the same.
    const Topology copy = *topo;
    EXPECT_EQ(ids.find(copy, topo->linkNames[topo->linkCount() - 1]), topo->linkCount() - 1);
    EXPECT_LE(ids.memoryBytes(),
              4 * sizeof(std::int32_t) * static_cast<std::size_t>(topo->linkCount()) + 64);
}

TEST(LinkNameIndex, FindsEveryLinkOfDevSmallAndTheFullReference) {
    expectEveryNameFound(fromSpec("dev-small.yaml"));
    expectEveryNameFound(fromSpec("meta-24k-roce.yaml"));
}

TEST(LinkNameIndex, AnEmptyIndexFindsNothing) {
    const LinkNameIndex none;
    const Topology empty;
    EXPECT_EQ(none.find(empty, "a--b"), kNone);
    EXPECT_TRUE(none.changes(empty, inventory::Inventory{}).empty());
}

TEST(LinkNameIndex, ChangesListTheLinksWhoseStoredStateMoved) {
    auto inv = fromSpec("dev-small.yaml");
    auto topo = buildTopology(inv, {.plannedIsUp = true, .storedLinkStates = true});
    ASSERT_TRUE(topo.has_value());
    const LinkNameIndex ids(*topo);
    EXPECT_TRUE(ids.changes(*topo, inv).empty());  // the snapshot it was built from
    // A newer snapshot: two backend links active, one drained, a frontend link down.
    std::vector<std::int32_t> backend;
    for (std::size_t i = 0; i < inv.links.size() && backend.size() < 3; ++i)
        if (inv.links[i].network == inventory::Network::Backend)
            backend.push_back(static_cast<std::int32_t>(i));
    ASSERT_EQ(backend.size(), 3u);
    inv.links[backend[0]].state = inventory::Text::shared("active");
    inv.links[backend[1]].state = inventory::Text::shared("active");
    inv.links[backend[2]].state = inventory::Text::shared("drained");
    for (auto& l : inv.links)
        if (l.network != inventory::Network::Backend) {
            l.state = inventory::Text::shared("down");
            break;
        }
    auto changes = ids.changes(*topo, inv);
    ASSERT_EQ(changes.size(), 3u);
    const std::pair<std::int32_t, LinkState> want[] = {
        {ids.find(*topo, inv.links[backend[0]].name), LinkState::Up},
        {ids.find(*topo, inv.links[backend[1]].name), LinkState::Up},
        {ids.find(*topo, inv.links[backend[2]].name), LinkState::Drained}};
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(changes[i], want[i]) << i;
        EXPECT_NE(want[i].first, kNone);
    }
    // Applied to the topology, nothing is left to change.
    for (auto [l, s] : changes) topo->linkState[l] = s;
    EXPECT_TRUE(ids.changes(*topo, inv).empty());
}

// changes() with a Memo (a holder following snapshot after snapshot) answers as changes()
// does: random state changes patched into copies that share the names (as the live refresh
// makes them), the router moved behind the memo's back (a reconciler ahead of the database, a
// link forced down), and a reload whose name and state blocks are all new.
TEST(LinkNameIndex, AMemoAnswersAsChangesDoes) {
    auto inv = fromSpec("dev-small.yaml");
    auto topo = buildTopology(inv, {.plannedIsUp = true, .storedLinkStates = true});
    ASSERT_TRUE(topo.has_value());
    const LinkNameIndex ids(*topo);
    LinkNameIndex::Memo memo;
    std::mt19937 rng(37);
    const char* states[] = {"planned", "active", "drained", "down"};
    auto same = [&](const inventory::Inventory& snap, const std::string& when) {
        auto want = ids.changes(*topo, snap);
        auto got = ids.changes(*topo, snap, memo);
        ASSERT_EQ(got, want) << when;
    };
    same(inv, "the first snapshot");
    std::size_t moved = 0;
    for (int step = 0; step < 200; ++step) {
        auto& links = inv.links.mut();
        for (int k = 0; k < 3; ++k)
            links[rng() % links.size()].state = inventory::Text::shared(states[rng() % 4]);
        // Now and then the router is moved by its holder, not by the snapshot.
        if (step % 7 == 0) {
            const auto l = static_cast<std::int32_t>(rng() % topo->linkCount());
            topo->linkState[l] = LinkState::Down;
        }
        const auto c = ids.changes(*topo, inv);
        moved += c.size();
        same(inv, "step " + std::to_string(step));
        // The holder applies what it was told.
        for (auto [l, s] : c) topo->linkState[l] = s;
    }
    EXPECT_GT(moved, 100u);
    // A full reload: the same names and states in blocks of their own.
    inventory::Inventory reloaded = inv;
    for (auto& l : reloaded.links.mut()) {
        l.name = inventory::Text(l.name.view());
        l.state = inventory::Text(l.state.view());
    }
    topo->linkState[0] = LinkState::Drained;
    same(reloaded, "a reload");
    EXPECT_LE(memo.memoryBytes(), 32 * inv.links.size());
}

}  // namespace
}  // namespace loom::fabric
