// routesDown on the SummaryRouter (what the provisioning reconciler asks of a fabric
// enablement's uplink peers on RoCE) equals the full Router's mode == Down, for every
// (switch, rack) pair of dev-small and the 24k RoCE reference: healthy, and after every step of
// random sequences of link changes (every state, batches of 1-3) and switch failures/repairs,
// applied incrementally to both routers.
#include "loom/fabric/routes_down.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "loom/fabric/testbed.hpp"
#include "loom/inventory/spec.hpp"
#include "roce_fixtures.hpp"

namespace loom::fabric {
namespace {

using fixtures::fromSpec;

struct Counts {
    long pairs = 0, down = 0, differing = 0;
};

// Every (switch, rack target): the summary's answer against the router's mode.
void compareAll(const Router& r, const SummaryRouter& sum, const std::string& what, Counts& n) {
    ASSERT_EQ(sum.targetCount(), r.targetCount()) << what;
    const auto& t = r.topology();
    for (std::int32_t s = 0; s < t.switchCount(); ++s)
        for (std::int32_t k = 0; k < r.targetCount(); ++k) {
            const bool want = routesDown(r, s, k);
            const bool got = routesDown(sum, s, k);
            ++n.pairs;
            n.down += want;
            if (got == want) continue;
            if (n.differing++ < 5)
                ADD_FAILURE() << what << ": " << t.switchNames[s] << " -> rack of "
                              << t.switchNames[r.targetSwitch(k)] << ": summary says "
                              << (got ? "down" : "not down") << ", router mode "
                              << static_cast<int>(r.mode(s, k));
        }
}

// `seeds` sequences of `steps` random steps from the healthy fabric: a batch of 1-3 link
// changes (mostly switch-to-switch links, every state) or, one step in four, a switch going
// down (two times in three) or coming back up. Both routers follow incrementally; every pair
// is compared after every step.
void checkSequences(const inventory::Inventory& inv, unsigned firstSeed, int seeds, int steps) {
    const auto topo = fixtures::roceTopology(inv);
    ASSERT_EQ(topo.type, inventory::FabricType::Roce);
    static constexpr LinkState kStates[] = {LinkState::Down, LinkState::Drained, LinkState::Up,
                                            LinkState::NotInService};
    Counts n;
    for (unsigned seed = firstSeed; seed < firstSeed + seeds; ++seed) {
        Router r(topo);
        SummaryRouter sum(topo);
        std::mt19937 rng(seed);
        const std::string tag = "seed " + std::to_string(seed);
        compareAll(r, sum, tag + ", healthy", n);
        for (int step = 1; step <= steps; ++step) {
            const auto& t = r.topology();
            if (rng() % 4 == 0) {
                fixtures::flipRandomSwitch(rng, t, r, sum);
            } else {
                std::vector<std::pair<std::int32_t, LinkState>> change;
                const int m = 1 + static_cast<int>(rng() % 3);
                for (int i = 0; i < m; ++i) {
                    auto l = static_cast<std::int32_t>(rng() % t.linkCount());
                    for (int tries = 0; tries < 8 && rng() % 5 != 0 && !t.isSwitch(t.linkA[l]);
                         ++tries)
                        l = static_cast<std::int32_t>(rng() % t.linkCount());
                    change.emplace_back(l, kStates[rng() % 4]);
                }
                r.setLinkStates(change);
                sum.setLinkStates(change);
            }
            compareAll(r, sum, tag + ", step " + std::to_string(step), n);
            if (n.differing > 0) break;
        }
        if (n.differing > 0) break;
    }
    EXPECT_EQ(n.differing, 0) << "of " << n.pairs << " pairs";
    // Not a comparison of two constant answers: both kinds of pair occur.
    EXPECT_GT(n.down, 0);
    EXPECT_LT(n.down, n.pairs);
    std::cout << "[ pairs    ] " << n.pairs << " compared, " << n.down << " down, " << n.differing
              << " different\n";
}

TEST(FabricRoutesDown, DevSmallSummaryEqualsRouterModeDown) {
    checkSequences(fromSpec("dev-small.yaml"), 1, 12, 12);
}

TEST(FabricRoutesDown, FourZonesSummaryEqualsRouterModeDown) {
    checkSequences(testbed::makeRoce(fixtures::kFourZonesSixRacks), 50, 12, 12);
}

TEST(FabricRoutesDown, Meta24kRoceSummaryEqualsRouterModeDown) {
    checkSequences(fromSpec("meta-24k-roce.yaml"), 100, 3, 6);
}

}  // namespace
}  // namespace loom::fabric
