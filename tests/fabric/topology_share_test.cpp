// SharedArray and TopologyArrays (topology.hpp): two topologies of one structure built apart
// (loomd's fabric state, jobs view and reconciler each build theirs) end up reading one set of
// arrays, each keeping its own link states; routers over shared arrays answer as routers over
// their own; a different structure keeps its own arrays; nothing is kept alive by the registry.
#include <gtest/gtest.h>

#include <random>

#include "loom/fabric/summary_router.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/fabric/topology.hpp"
#include "roce_shapes.hpp"

namespace loom::fabric {
namespace {

constexpr auto kShape = fixtures::twoCtswClos(3, 4);

Topology live(const inventory::Inventory& inv) {
    auto t = buildTopology(inv, {.plannedIsUp = true, .storedLinkStates = true});
    EXPECT_TRUE(t.has_value()) << t.error().toString();
    return t ? std::move(*t) : Topology{};
}

// Every shared array of a and b reads one buffer (or not one of them does).
void expectShared(const Topology& a, const Topology& b, bool shared) {
    EXPECT_EQ(a.nicNames.sameBuffer(b.nicNames), shared);
    EXPECT_EQ(a.nicHost.sameBuffer(b.nicHost), shared);
    EXPECT_EQ(a.nicRail.sameBuffer(b.nicRail), shared);
    EXPECT_EQ(a.nicLink.sameBuffer(b.nicLink), shared);
    EXPECT_EQ(a.hostNames.sameBuffer(b.hostNames), shared);
    EXPECT_EQ(a.linkNames.sameBuffer(b.linkNames), shared);
    EXPECT_EQ(a.linkA.sameBuffer(b.linkA), shared);
    EXPECT_EQ(a.linkB.sameBuffer(b.linkB), shared);
    EXPECT_EQ(a.linkAPort.sameBuffer(b.linkAPort), shared);
    EXPECT_EQ(a.linkBPort.sameBuffer(b.linkBPort), shared);
    EXPECT_EQ(a.linkCapGbps.sameBuffer(b.linkCapGbps), shared);
    EXPECT_EQ(a.adjOffset.sameBuffer(b.adjOffset), shared);
    EXPECT_EQ(a.adjLink.sameBuffer(b.adjLink), shared);
    EXPECT_EQ(a.adjUpBegin.sameBuffer(b.adjUpBegin), shared);
}

TEST(TopologyShare, ACopySharesTheArraysAndAMoveLeavesNothingBehind) {
    auto t = live(testbed::makeRoce(kShape));
    Topology copy = t;
    expectShared(t, copy, true);
    EXPECT_FALSE(t.linkState.data() == copy.linkState.data());  // states are each one's own
    Topology moved = std::move(copy);
    expectShared(t, moved, true);
    EXPECT_TRUE(copy.linkNames.empty());  // NOLINT(bugprone-use-after-move): what a move leaves
    EXPECT_EQ(copy.linkA.data(), nullptr);
    EXPECT_EQ(moved.linkCount(), t.linkCount());
}

TEST(TopologyShare, TwoBuildsOfOneStructureShareAndRouteTheirOwnStates) {
    const auto inv = testbed::makeRoce(kShape);
    TopologyArrays arrays;
    auto a = live(inv);
    auto b = live(inv);
    expectShared(a, b, false);
    EXPECT_EQ(arrays.share(a), 0u);  // the first: nothing to adopt yet
    EXPECT_GT(arrays.share(b), 0u);
    expectShared(a, b, true);
    // Routers over the shared arrays, one with a link down, against routers over arrays of
    // their own with the same states: every route the same, and each router its own states.
    std::mt19937 rng(7);
    const auto fresh = [&] { return live(inv); };
    for (auto& t : {&a, &b})
        for (auto& s : t->linkState) s = LinkState::Up;
    SummaryRouter ra(a), rb(b);
    auto ownA = fresh(), ownB = fresh();
    for (auto& t : {&ownA, &ownB})
        for (auto& s : t->linkState) s = LinkState::Up;
    SummaryRouter oa(ownA), ob(ownB);
    for (int step = 0; step < 20; ++step) {
        const auto l = static_cast<std::int32_t>(rng() % a.linkCount());
        const auto st = rng() % 2 ? LinkState::Down : LinkState::Up;
        rb.setLinkState(l, st);  // only b's routing moves
        ob.setLinkState(l, st);
        for (std::int32_t sw = 0; sw < a.switchCount(); ++sw)
            for (std::int32_t ti = 0; ti < ra.targetCount(); ++ti) {
                auto ga = ra.group(ra.lookup(sw, ti)), gb = rb.group(rb.lookup(sw, ti));
                auto oga = oa.group(oa.lookup(sw, ti)), ogb = ob.group(ob.lookup(sw, ti));
                ASSERT_TRUE(std::equal(ga.begin(), ga.end(), oga.begin(), oga.end()))
                    << "step " << step << " switch " << sw << " target " << ti;
                ASSERT_TRUE(std::equal(gb.begin(), gb.end(), ogb.begin(), ogb.end()))
                    << "step " << step << " switch " << sw << " target " << ti;
            }
        EXPECT_EQ(ra.topology().linkState[l], LinkState::Up);
        EXPECT_EQ(rb.topology().linkState[l], st);
    }
    expectShared(ra.topology(), rb.topology(), true);
}

TEST(TopologyShare, ADifferentStructureKeepsItsOwnArrays) {
    auto inv = testbed::makeRoce(kShape);
    TopologyArrays arrays;
    auto a = live(inv);
    arrays.share(a);
    // One uplink fewer: other link names, ends and adjacency; the same hosts and NICs.
    for (std::size_t i = 0; i < inv.links.size(); ++i)
        if (inv.links[i].name.view().find("ctsw") != std::string_view::npos &&
            inv.links[i].name.view().find("atsw") != std::string_view::npos) {
            inv.links.erase(inv.links.begin() + static_cast<std::ptrdiff_t>(i));
            break;
        }
    auto b = live(inv);
    const auto want = live(inv);
    arrays.share(b);
    EXPECT_FALSE(a.linkNames.sameBuffer(b.linkNames));
    EXPECT_FALSE(a.linkA.sameBuffer(b.linkA));
    EXPECT_FALSE(a.adjLink.sameBuffer(b.adjLink));
    EXPECT_TRUE(a.hostNames.sameBuffer(b.hostNames));  // equal: shared
    EXPECT_EQ(b.linkCount(), a.linkCount() - 1);
    EXPECT_TRUE(b.linkNames == want.linkNames);
    EXPECT_TRUE(b.linkA == want.linkA);
    EXPECT_TRUE(b.adjLink == want.adjLink);
    EXPECT_TRUE(b.adjUpBegin == want.adjUpBegin);
    // The next build of b's structure adopts b's arrays, not a's.
    auto c = live(inv);
    arrays.share(c);
    expectShared(b, c, true);
}

TEST(TopologyShare, TheRegistryKeepsNoArrayAlive) {
    const auto inv = testbed::makeRoce(kShape);
    TopologyArrays arrays;
    std::weak_ptr<const std::vector<std::string>> names;
    {
        auto a = live(inv);
        arrays.share(a);
        names = a.linkNames.owner();
        EXPECT_FALSE(names.expired());
    }
    EXPECT_TRUE(names.expired());
    auto b = live(inv);
    EXPECT_EQ(arrays.share(b), 0u);  // nothing left to adopt
}

}  // namespace
}  // namespace loom::fabric
