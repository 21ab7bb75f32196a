// Links follow their racks (provisioning/link_service.hpp): the one rule, its inverses, and the
// property that incremental reroutes driven by it leave the fabric exactly where a router built
// from the racks' states alone would be — on dev-small and on the 24k reference cluster. Switches
// follow too (follow_rack.hpp): the fabric reads a switch's state as its rack's cables
// (fabric::liveSwitchState), and the reroutes take the switches with the cables.
#include "loom/provisioning/link_service.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/inventory/spec.hpp"
#include "loom/provisioning/follow_rack.hpp"

namespace loom::provisioning {
namespace {

using RS = RackState;

inventory::Inventory loadSpec(const std::string& name) {
    auto inv =
        inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + name);
    EXPECT_TRUE(inv) << inv.error().toString();
    return inv ? std::move(*inv) : inventory::Inventory{};
}

TEST(LinkService, EveryRackStateHasOneMeaningForItsCables) {
    EXPECT_EQ(linkServiceFor(RS::Planned), LinkService::NotInService);
    EXPECT_EQ(linkServiceFor(RS::BurnIn), LinkService::NotInService);
    EXPECT_EQ(linkServiceFor(RS::Validated), LinkService::NotInService);
    EXPECT_EQ(linkServiceFor(RS::InService), LinkService::Active);
    EXPECT_EQ(linkServiceFor(RS::Draining), LinkService::Active);  // traffic moves away first
    EXPECT_EQ(linkServiceFor(RS::Drained), LinkService::Drained);
    EXPECT_EQ(linkServiceFor(RS::Maintenance), LinkService::Drained);
    EXPECT_EQ(linkServiceFor(RS::Failed), LinkService::Down);
    EXPECT_EQ(linkServiceFor(RS::Repair), LinkService::Down);
    EXPECT_EQ(linkServiceFor(RS::Decommissioned), LinkService::NotInService);
    for (auto s :
         {LinkService::NotInService, LinkService::Active, LinkService::Drained, LinkService::Down})
        EXPECT_EQ(parseLinkService(linkStateName(s)), s);
    EXPECT_FALSE(parseLinkService("bogus"));
}

// The fabric reads a switch's stored state (its rack's name for it, follow_rack.hpp) as that
// rack's cables: up exactly while they are active, down, drained or not in service with them.
TEST(LinkService, TheFabricReadsASwitchAsItsRacksCables) {
    auto asLink = [](LinkService s) {
        switch (s) {
            case LinkService::Active:
                return fabric::LinkState::Up;
            case LinkService::Down:
                return fabric::LinkState::Down;
            case LinkService::Drained:
                return fabric::LinkState::Drained;
            case LinkService::NotInService:
                break;
        }
        return fabric::LinkState::NotInService;
    };
    for (int i = 0; i < kRackStateCount; ++i) {
        const auto r = static_cast<RS>(i);
        EXPECT_EQ(fabric::liveSwitchState(switchStateFor(r)), asLink(linkServiceFor(r)))
            << stateName(r);
    }
    EXPECT_EQ(fabric::liveSwitchState("bogus"), fabric::LinkState::NotInService);
}

TEST(LinkService, RackCablesFollowTheRackAndTheCoreFollowsItsZone) {
    auto inv = loadSpec("dev-small.yaml");
    auto owners = LinkOwners::of(inv);
    ASSERT_EQ(owners.rack.size(), inv.links.size());
    std::vector<RS> states(inv.racks.size(), RS::Planned);
    auto want = desiredLinkStates(owners, states);
    for (auto w : want) EXPECT_EQ(w, LinkService::NotInService);

    // One compute rack in service: exactly its cables, and the links that serve its zone.
    std::size_t r = 0;
    while (r < inv.racks.size() && inv.racks[r].name != "z1-r001") ++r;
    ASSERT_LT(r, inv.racks.size());
    states[r] = RS::InService;
    want = desiredLinkStates(owners, states);
    int rackLinks = 0, coreLinks = 0;
    for (std::size_t i = 0; i < inv.links.size(); ++i) {
        if (owners.rack[i] == static_cast<std::int32_t>(r)) {
            EXPECT_EQ(want[i], LinkService::Active) << inv.links[i].name;
            ++rackLinks;
        } else if (owners.rack[i] == LinkOwners::kNoRack) {
            EXPECT_EQ(want[i], LinkService::Active) << inv.links[i].name;
            ++coreLinks;
        } else {
            EXPECT_EQ(want[i], LinkService::NotInService) << inv.links[i].name;
        }
    }
    EXPECT_GE(rackLinks, 16 + 2);  // NIC cables and RTSW uplinks at least
    // Drained, failed: the rack's cables say so; with no rack of the zone active the core rests.
    states[r] = RS::Drained;
    want = desiredLinkStates(owners, states);
    for (std::size_t i = 0; i < inv.links.size(); ++i) {
        if (owners.rack[i] == static_cast<std::int32_t>(r))
            EXPECT_EQ(want[i], LinkService::Drained);
        if (owners.rack[i] == LinkOwners::kNoRack) EXPECT_EQ(want[i], LinkService::NotInService);
    }
    states[r] = RS::Failed;
    want = desiredLinkStates(owners, states);
    for (std::size_t i = 0; i < inv.links.size(); ++i)
        if (owners.rack[i] == static_cast<std::int32_t>(r)) EXPECT_EQ(want[i], LinkService::Down);
}

// Random operator sequences (advance, drain, fail, repair) from a hall in service; after each
// transition the router is rerouted incrementally with the links whose state changed. At the
// end it must equal a router built from scratch from the final racks' states alone.
void propertyHolds(const std::string& spec, int steps, std::uint64_t seed) {
    auto inv = loadSpec(spec);
    ASSERT_FALSE(inv.racks.empty());
    auto owners = LinkOwners::of(inv);
    std::vector<RS> states(inv.racks.size(), RS::InService);
    // The switches' ids in the topology, by inventory index (kNone: not in the fabric).
    std::vector<std::int32_t> switchId;
    auto routedFrom = [&](const std::vector<LinkService>& want,
                          const std::vector<std::string_view>& wantSwitch) {
        auto topo = fabric::buildTopology(inv, {.plannedIsUp = true});
        EXPECT_TRUE(topo) << topo.error().toString();
        std::unordered_map<std::string_view, std::int32_t> byName;
        for (std::int32_t l = 0; l < topo->linkCount(); ++l) byName.emplace(topo->linkNames[l], l);
        for (std::size_t i = 0; i < inv.links.size(); ++i)
            if (auto it = byName.find(inv.links[i].name); it != byName.end())
                topo->linkState[it->second] = fabric::linkStateFrom(linkStateName(want[i]), false);
        switchId.clear();
        for (std::size_t i = 0; i < inv.switches.size(); ++i) {
            switchId.push_back(topo->findSwitch(inv.switches[i].name));
            if (switchId.back() != fabric::kNone)
                topo->switchUp[switchId.back()] =
                    fabric::liveSwitchState(wantSwitch[i]) == fabric::LinkState::Up;
        }
        return std::pair{fabric::Router(std::move(*topo)), std::move(byName)};
    };
    auto current = desiredLinkStates(owners, states);
    auto currentSwitch = desiredSwitchStates(owners, states);
    auto [live, byName] = routedFrom(current, currentSwitch);

    std::mt19937_64 rng(seed);
    int transitions = 0;
    for (int step = 0; step < steps; ++step) {
        const auto r = rng() % inv.racks.size();
        // What an operator can do next (the transition table decides, as the API does).
        std::vector<RS> next;
        for (auto to : allowedNext(states[r]))
            if (to != RS::Decommissioned) next.push_back(to);  // no operator action leads there
        if (next.empty()) continue;
        states[r] = next[rng() % next.size()];
        ++transitions;
        auto want = desiredLinkStates(owners, states);
        std::vector<std::pair<std::int32_t, fabric::LinkState>> changes;
        for (std::size_t i = 0; i < want.size(); ++i) {
            if (want[i] == current[i]) continue;
            if (auto it = byName.find(inv.links[i].name); it != byName.end())
                changes.emplace_back(it->second,
                                     fabric::linkStateFrom(linkStateName(want[i]), false));
        }
        live.setLinkStates(changes);
        current = std::move(want);
        auto wantSwitch = desiredSwitchStates(owners, states);
        std::vector<std::pair<std::int32_t, bool>> switches;
        for (std::size_t i = 0; i < wantSwitch.size(); ++i)
            if (wantSwitch[i] != currentSwitch[i] && switchId[i] != fabric::kNone)
                switches.emplace_back(
                    switchId[i], fabric::liveSwitchState(wantSwitch[i]) == fabric::LinkState::Up);
        std::sort(switches.begin(), switches.end());
        live.setSwitchesUp(switches);
        currentSwitch = std::move(wantSwitch);
    }
    EXPECT_GT(transitions, steps / 2);
    // Whatever path led here, the links are what the racks' states say...
    EXPECT_EQ(current, desiredLinkStates(owners, states));
    // ...and the incrementally rerouted fabric is the one a fresh build of that state gives.
    auto fresh = routedFrom(current, currentSwitch);
    EXPECT_EQ(live.firstDifference(fresh.first), "");
}

TEST(LinkService, RandomActionSequencesLeaveTheFabricWhereTheRacksSayDevSmall) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) propertyHolds("dev-small.yaml", 60, seed);
}

TEST(LinkService, RandomActionSequencesLeaveTheFabricWhereTheRacksSay24k) {
    propertyHolds("meta-24k-roce.yaml", 200, 7);
}

}  // namespace
}  // namespace loom::provisioning
