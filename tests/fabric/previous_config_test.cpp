// A switch's earlier config (GET /fabric/config/{sw}?previous=true) is rendered under the earlier
// link states and switch up-ness without copying the router: switchConfig(r, sw, states,
// switches) must be exactly what a copy of the router given setLinkStates(states) and
// setSwitchUp of each switch renders (the way the server did it before, at ~400 MB a request at
// 98k). Random failure and repair sequences of links and switches (a switch follows its rack:
// a failed rack's RTSW goes down with its cables), walked back step by step as the server walks
// its undo steps, on dev-small and the 24k shapes, RoCE (FRR config) and InfiniBand (the LFT,
// Router::lftRowWith).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "loom/fabric/export.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/inventory/spec.hpp"
#include "roce_fixtures.hpp"

namespace loom::fabric {
namespace {

using fixtures::fromSpec;

// Applies `steps` random batches of link changes to a router (fabric links and NIC cables,
// every state), some with a switch going down or back up, remembering each batch's earlier
// states as the server's undo steps do. Then
// walks back: after k undo steps the rendering with the accumulated earlier states must equal
// what a copy rerouted back by those steps renders, for `probes` switches (the changed links'
// ends first, then random ones).
void walkBack(const inventory::Inventory& inv, unsigned seed, int steps, int probes) {
    auto topo = buildTopology(inv);
    ASSERT_TRUE(topo.has_value()) << topo.error().toString();
    Router now(std::move(*topo));
    const auto& t = now.topology();
    std::mt19937 rng(seed);
    static constexpr LinkState kStates[] = {LinkState::Down, LinkState::Drained, LinkState::Up,
                                            LinkState::NotInService};
    using Step = std::vector<std::pair<std::int32_t, LinkState>>;
    using SwitchStep = std::vector<std::pair<std::int32_t, bool>>;
    std::vector<Step> undo;  // oldest first
    std::vector<SwitchStep> switchUndo;
    std::vector<std::int32_t> touched;
    int switchFlips = 0;
    for (int s = 0; s < steps; ++s) {
        Step change, before;
        SwitchStep switchBefore;
        const int n = 1 + static_cast<int>(rng() % 3);
        for (int i = 0; i < n; ++i) {
            // Mostly switch-to-switch links (they reroute), sometimes a NIC cable.
            std::int32_t l = static_cast<std::int32_t>(rng() % t.linkCount());
            for (int tries = 0; tries < 8 && rng() % 5 != 0 && !t.isSwitch(t.linkA[l]); ++tries)
                l = static_cast<std::int32_t>(rng() % t.linkCount());
            before.emplace_back(l, t.linkState[l]);
            change.emplace_back(l, kStates[rng() % 4]);
            touched.push_back(t.linkA[l] < t.switchCount() ? t.linkA[l] : t.linkB[l]);
            touched.push_back(t.linkB[l]);
        }
        now.setLinkStates(change);
        // Every other step a switch goes down (or one that is down comes back).
        if (s % 2 == 1) {
            const auto sw = static_cast<std::int32_t>(rng() % t.switchCount());
            const bool up = t.switchUp[sw] != 0;
            switchBefore.emplace_back(sw, up);
            now.setSwitchUp(sw, !up);
            touched.push_back(sw);
            ++switchFlips;
        }
        undo.push_back(std::move(before));
        switchUndo.push_back(std::move(switchBefore));
    }
    ASSERT_GT(switchFlips, 0) << "seed " << seed;
    std::vector<std::int32_t> probe;
    for (int i = 0; i < probes; ++i)
        probe.push_back(i < static_cast<int>(touched.size()) && i % 2 == 0
                            ? touched[rng() % touched.size()]
                            : static_cast<std::int32_t>(rng() % t.switchCount()));
    Router past = now;  // the old way: a copy walked back
    std::map<std::int32_t, LinkState> earlier;
    std::map<std::int32_t, bool> earlierSwitches;
    int differing = 0;
    for (std::size_t k = undo.size(); k-- > 0;) {
        // A step's switch went after its links: it comes back first.
        for (auto [sw, up] : switchUndo[k]) past.setSwitchUp(sw, up);
        past.setLinkStates(undo[k]);
        for (auto [l, st] : undo[k]) earlier[l] = st;
        for (auto [sw, up] : switchUndo[k]) earlierSwitches[sw] = up;
        const std::vector<std::pair<std::int32_t, LinkState>> states(earlier.begin(),
                                                                     earlier.end());
        const std::vector<std::pair<std::int32_t, bool>> switches(earlierSwitches.begin(),
                                                                  earlierSwitches.end());
        for (auto sw : probe) {
            const auto expected = switchConfig(past, sw);
            const auto got = switchConfig(now, sw, states, switches);
            ASSERT_EQ(got, expected) << "seed " << seed << ", switch " << t.switchNames[sw] << ", "
                                     << (undo.size() - k) << " step(s) back";
            if (got != switchConfig(now, sw)) ++differing;
        }
    }
    // The sequences do change configs (the comparison is not between identical texts only).
    EXPECT_GT(differing, 0) << "seed " << seed;
}

TEST(FabricPreviousConfig, DevSmallRoceEqualsARouterCopyWalkedBack) {
    auto inv = fromSpec("dev-small.yaml");
    for (unsigned seed = 1; seed <= 25; ++seed) walkBack(inv, seed, 6, 6);
}

TEST(FabricPreviousConfig, DevSmallIbEqualsARouterCopyWalkedBack) {
    auto inv = fromSpec("dev-small-ib.yaml");
    for (unsigned seed = 100; seed < 125; ++seed) walkBack(inv, seed, 6, 6);
}

TEST(FabricPreviousConfig, SyntheticIbWithCoresEqualsARouterCopyWalkedBack) {
    auto inv = testbed::makeIb({.pods = 2,
                                .susPerPod = 2,
                                .hostsPerSu = 4,
                                .leavesPerSu = 2,
                                .spinesPerPod = 4,
                                .cores = 4,
                                .ports = 16});
    for (unsigned seed = 200; seed < 240; ++seed) walkBack(inv, seed, 8, 8);
}

// The 24k shapes (meta-24k-roce, meta-24k-ib cabling): a few sequences each; the IB one
// computes a whole LFT row per probe and step (about one single-threaded routing pass).
TEST(FabricPreviousConfig, Meta24kRoceEqualsARouterCopyWalkedBack) {
    auto inv = testbed::makeRoce(testbed::meta24kRoce());
    for (unsigned seed = 300; seed < 303; ++seed) walkBack(inv, seed, 5, 8);
}

TEST(FabricPreviousConfig, Meta24kIbEqualsARouterCopyWalkedBack) {
    auto inv = testbed::makeIb(testbed::meta24kIb());
    walkBack(inv, 400, 3, 3);
}

}  // namespace
}  // namespace loom::fabric
