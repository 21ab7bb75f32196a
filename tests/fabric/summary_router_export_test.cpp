// The RoCE exports written from a SummaryRouter alone (what loomctl fabric export and loomd use,
// without the full switches × racks tables) are byte for byte those written from a full Router:
// FRR configs (with the ATSWs' aggregates and unsuppressed racks), the summarised and the
// per-rack JSON tables and Slurm's topology.conf; and the degradation map and failure impact
// are equal too. Healthy and after every step of random failures and repairs (links, NIC
// cables, batches, switches) in several zones; and on meta-24k-roce.
#include <gtest/gtest.h>

#include <random>

#include "loom/fabric/export.hpp"
#include "loom/fabric/impact.hpp"
#include "loom/fabric/summary_router.hpp"
#include "roce_fixtures.hpp"

namespace loom::fabric {
namespace {

using fixtures::flipRandomSwitch;
using fixtures::randomLinkBatch;
using fixtures::roceTopology;

// Every file of every RoCE format, both ways; returns the number of files compared.
int expectSameExports(const Router& r, const SummaryRouter& sr, const std::string& what) {
    int files = 0;
    for (auto [format, summarise] :
         {std::pair{ExportFormat::Json, true}, std::pair{ExportFormat::Frr, true},
          std::pair{ExportFormat::Json, false}, std::pair{ExportFormat::Frr, false},
          std::pair{ExportFormat::Slurm, true}}) {
        const ExportOptions opt{.summarise = summarise};
        auto a = exportFabric(r, format, opt);
        auto b = exportFabric(sr, format, opt);
        EXPECT_TRUE(a.has_value() && b.has_value()) << what;
        if (!a || !b) return files;
        EXPECT_EQ(a->size(), b->size()) << what;
        for (std::size_t i = 0; i < a->size() && i < b->size(); ++i) {
            EXPECT_EQ((*a)[i].name, (*b)[i].name) << what;
            if ((*a)[i].content != (*b)[i].content) {
                ADD_FAILURE() << what << ": " << exportFormatName(format)
                              << (summarise ? "" : " per rack") << " " << (*a)[i].name
                              << " differs:\n--- router\n"
                              << (*a)[i].content.substr(0, 2000) << "\n--- summary router\n"
                              << (*b)[i].content.substr(0, 2000);
                return files;
            }
            ++files;
        }
    }
    return files;
}

// What loomd's fabric API reads besides the exports: the degradation map (route bandwidths
// between every pair of leaves) and failure impact of random host sets, every collective.
void expectSameReads(const Router& r, const SummaryRouter& sr, std::mt19937& rng,
                     const std::string& what, unsigned oneHostIn = 3) {
    EXPECT_EQ(degradationMap(r), degradationMap(sr)) << what;
    const auto& t = r.topology();
    for (auto c : {Collective::AllReduce, Collective::AllGather, Collective::AllToAll}) {
        std::vector<std::int32_t> hosts;
        for (std::int32_t h = 0; h < static_cast<std::int32_t>(t.hostNames.size()); ++h)
            if (rng() % oneHostIn == 0) hosts.push_back(h);
        if (hosts.empty()) hosts.push_back(0);
        auto a = impact(r, hosts, c);
        auto b = impact(sr, hosts, c);
        ASSERT_TRUE(a.has_value() && b.has_value()) << what;
        EXPECT_EQ(a->busBwNormalized, b->busBwNormalized) << what;
        EXPECT_EQ(a->flows, b->flows) << what;
        EXPECT_EQ(a->unroutedFlows, b->unroutedFlows) << what;
        EXPECT_EQ(a->linksCrossed, b->linksCrossed) << what;
        ASSERT_EQ(a->bottlenecks.size(), b->bottlenecks.size()) << what;
        for (std::size_t i = 0; i < a->bottlenecks.size(); ++i) {
            EXPECT_EQ(a->bottlenecks[i].link, b->bottlenecks[i].link) << what;
            EXPECT_EQ(a->bottlenecks[i].flows, b->bottlenecks[i].flows) << what;
        }
    }
}

TEST(SummaryRouterExport, EqualsTheRoutersExportsUnderRandomFailures) {
    // Few racks per zone: failures often leave no majority group, so the aggregate's tie rule
    // (the group of the lowest rack) is exercised too.
    auto topo = roceTopology(testbed::makeRoce(fixtures::kFourZonesFourRacks));
    int specifics = 0;
    for (unsigned seed = 1; seed <= 16; ++seed) {
        Router r(topo);
        SummaryRouter sr(topo);
        const auto& t = r.topology();
        std::mt19937 rng(seed);
        for (int step = 0; step < 10; ++step) {
            if (rng() % 6 == 0) {
                flipRandomSwitch(rng, t, r, sr);
            } else {
                auto batch = randomLinkBatch(rng, t);
                r.setLinkStates(batch);
                sr.setLinkStates(batch);
            }
            const auto what = "seed " + std::to_string(seed) + " step " + std::to_string(step);
            ASSERT_GT(expectSameExports(r, sr, what), 0) << what;
            expectSameReads(r, sr, rng, what);
            if (::testing::Test::HasFailure()) return;
            for (std::int32_t s = 0; s < t.switchCount(); ++s)
                for (std::int32_t z = 0; z < sr.zoneCount(); ++z)
                    if (z != t.switchZone[s])
                        specifics += static_cast<int>(sr.specifics(s, z).size());
        }
    }
    EXPECT_GT(specifics, 0) << "the failures broke some zone's symmetry somewhere";
}

TEST(SummaryRouterExport, Meta24kRoceEqualsTheRoutersExports) {
    auto topo = roceTopology(testbed::makeRoce(testbed::meta24kRoce()));
    Router r(topo);
    SummaryRouter sr(topo);
    EXPECT_EQ(expectSameExports(r, sr, "healthy"), 4 * 1716 + 1)
        << "json, frr, json per rack, frr per rack: one file per switch; slurm: one";
    // An RTSW uplink in zone 1, a CTSW uplink in zone 3 and a whole CTSW of zone 5 down.
    const auto& t = r.topology();
    std::vector<std::pair<std::int32_t, LinkState>> batch{
        {t.upLinks(t.tierSwitches[1][5])[0], LinkState::Down},
        {t.upLinks(t.tierSwitches[2][2 * 18 + 4])[3], LinkState::Drained}};
    r.setLinkStates(batch);
    sr.setLinkStates(batch);
    r.setSwitchUp(t.tierSwitches[2][4 * 18 + 1], false);
    sr.setSwitchUp(t.tierSwitches[2][4 * 18 + 1], false);
    expectSameExports(r, sr, "after failures");
    std::mt19937 rng(7);
    expectSameReads(r, sr, rng, "after failures", 40);
}

}  // namespace
}  // namespace loom::fabric
