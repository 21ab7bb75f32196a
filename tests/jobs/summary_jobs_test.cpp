// Job impact and placement on the summarised RoCE tables (fabric::SummaryRouter, what loomd's
// jobs view holds on RoCE instead of a full Router): the same jobs, busbw, links crossed, down
// links, degradations and the same placements as on a full Router of the same fabric, healthy
// and after every step of random link and switch failures and repairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "link_batch.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/jobs/job_impact.hpp"
#include "loom/jobs/placement.hpp"
#include "roce_shapes.hpp"

namespace loom::jobs {
namespace {

using fabric::fixtures::randomLinkBatch;

using fabric::Collective;
using fabric::LinkState;

void expectSameChanges(const std::vector<JobChange>& a, const std::vector<JobChange>& b,
                       const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].name, b[i].name) << what;
        EXPECT_EQ(a[i].degradation, b[i].degradation) << what << " job " << a[i].name;
        EXPECT_EQ(a[i].message, b[i].message) << what << " job " << a[i].name;
    }
}

void expectSameJobs(const JobImpactTracker& a, const JobImpactTracker& b, const std::string& what) {
    ASSERT_EQ(a.jobs().size(), b.jobs().size()) << what;
    for (std::size_t i = 0; i < a.jobs().size(); ++i) {
        const auto &x = a.jobs()[i], &y = b.jobs()[i];
        const auto w = what + " job " + x.name;
        EXPECT_EQ(x.name, y.name) << w;
        EXPECT_EQ(x.busBw, y.busBw) << w;
        EXPECT_EQ(x.healthyBusBw, y.healthyBusBw) << w;
        EXPECT_EQ(x.unroutedFlows, y.unroutedFlows) << w;
        EXPECT_EQ(x.links, y.links) << w;
        EXPECT_EQ(x.downLinks, y.downLinks) << w;
        EXPECT_EQ(x.degraded(), y.degraded()) << w;
        EXPECT_EQ(x.error, y.error) << w;
        ASSERT_EQ(x.bottlenecks.size(), y.bottlenecks.size()) << w;
        for (std::size_t k = 0; k < x.bottlenecks.size(); ++k) {
            EXPECT_EQ(x.bottlenecks[k].link, y.bottlenecks[k].link) << w;
            EXPECT_EQ(x.bottlenecks[k].flows, y.bottlenecks[k].flows) << w;
        }
    }
}

void expectSamePlacement(const fabric::Router& r, const fabric::SummaryRouter& sr, int gpus,
                         Collective c, const std::string& what) {
    const auto avail = availableRacks(r.topology());
    ASSERT_EQ(avail, availableRacks(sr.topology())) << what;
    for (bool firstFit : {false, true}) {
        auto a = firstFit ? placeFirstFit(r, {.gpus = gpus, .pattern = c}, avail)
                          : placeJob(r, {.gpus = gpus, .pattern = c}, avail);
        auto b = firstFit ? placeFirstFit(sr, {.gpus = gpus, .pattern = c}, avail)
                          : placeJob(sr, {.gpus = gpus, .pattern = c}, avail);
        ASSERT_EQ(a.has_value(), b.has_value()) << what;
        if (!a) {
            EXPECT_EQ(a.error().message, b.error().message) << what;
            continue;
        }
        EXPECT_EQ(a->racks, b->racks) << what << (firstFit ? " first fit" : "");
        EXPECT_EQ(a->hosts, b->hosts) << what;
        EXPECT_EQ(a->busBw, b->busBw) << what;
        EXPECT_EQ(a->zones, b->zones) << what;
    }
}

TEST(SummaryJobs, ImpactAndPlacementEqualTheRoutersUnderRandomFailures) {
    auto topo =
        fabric::buildTopology(fabric::testbed::makeRoce(fabric::fixtures::kFourZonesFourRacks));
    ASSERT_TRUE(topo.has_value()) << topo.error().toString();
    int degradations = 0;
    for (unsigned seed = 1; seed <= 12; ++seed) {
        fabric::Router r(*topo);
        fabric::SummaryRouter sr(*topo);
        const auto& t = r.topology();
        std::mt19937 rng(seed);
        // Jobs over random hosts (within a zone and across zones), every collective.
        std::vector<JobImpactInput> jobs;
        for (int k = 0; k < 6; ++k) {
            JobImpactInput j{"job" + std::to_string(k), {}, Collective(k % 3)};
            for (const auto& h : t.hostNames)
                if (rng() % (k < 3 ? 4 : 2) == 0) j.hosts.push_back(h);
            if (j.hosts.empty()) j.hosts.push_back(t.hostNames[0]);
            jobs.push_back(std::move(j));
        }
        JobImpactTracker a, b;
        expectSameChanges(a.setJobs(r, jobs), b.setJobs(sr, jobs), "seed " + std::to_string(seed));
        expectSamePlacement(r, sr, 8, Collective::AllReduce, "healthy");
        for (int step = 0; step < 10; ++step) {
            const auto what = "seed " + std::to_string(seed) + " step " + std::to_string(step);
            std::vector<std::int32_t> changed;
            if (rng() % 6 == 0) {
                auto sw = static_cast<std::int32_t>(rng() % t.switchCount());
                bool up = rng() % 3 == 0;
                r.setSwitchUp(sw, up);
                sr.setSwitchUp(sw, up);
                for (auto l : t.upLinks(sw)) changed.push_back(l);
                for (auto l : t.downLinks(sw)) changed.push_back(l);
            } else {
                auto batch = randomLinkBatch(rng, t);
                r.setLinkStates(batch);
                sr.setLinkStates(batch);
                for (auto [l, s] : batch) changed.push_back(l);
            }
            std::sort(changed.begin(), changed.end());
            changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
            expectSameChanges(a.linksChanged(r, changed), b.linksChanged(sr, changed), what);
            expectSameJobs(a, b, what);
            expectSamePlacement(r, sr, 4 + 4 * static_cast<int>(rng() % 6), Collective(rng() % 3),
                                what);
            if (::testing::Test::HasFailure()) return;
            for (const auto& j : a.jobs()) degradations += j.degraded();
        }
        expectSameChanges(a.recomputeAll(r), b.recomputeAll(sr), "recompute");
        expectSameJobs(a, b, "recompute");
    }
    EXPECT_GT(degradations, 0) << "the failures degraded some job somewhere";
}

}  // namespace
}  // namespace loom::jobs
