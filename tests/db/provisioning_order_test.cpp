// The provisioning rack list in natural order (issue 12): `rack-2` before `rack-10`, as every
// list of the API, and a phase takes its racks in that order. The racks of the sample cluster
// are renamed without zero padding (z1-r2 ... z1-r12), so a bytewise sort would misplace them.
// Real PostgreSQL (tests/support).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "loom/db/inventory_repository.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/provisioning/phase_plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

namespace {

using namespace loom::inventory;

constexpr const char* kAllRacksPlan = R"(apiVersion: loom/v1
kind: PhasePlan
metadata:
  name: all-racks
spec:
  phases:
    - name: first
      racks: {names: [z1-r3, z1-r11]}
    - name: rest
      racks: {pattern: "*"}
)";

class ProvisioningOrder : public loom::testing::PostgresTest {};

TEST_F(ProvisioningOrder, RacksAreListedAndTakenInNaturalOrder) {
    auto conn = connect();
    Inventory inv = loom::testing::sampleCluster(1, 12);
    std::map<std::string, std::string> renamed;  // z1-r001 -> z1-r1
    for (auto& r : inv.racks) {
        auto dash = r.name.rfind("-r");
        if (dash == std::string::npos || r.name.size() < dash + 3) continue;
        std::string to =
            r.name.substr(0, dash + 2) + std::to_string(std::stoi(r.name.substr(dash + 2)));
        renamed[r.name.str()] = to;
        r.name = to;
    }
    auto ref = [&](Text& rack) {
        if (auto it = renamed.find(rack.str()); it != renamed.end()) rack = it->second;
    };
    for (auto& h : inv.hosts) ref(h.rack);
    for (auto& s : inv.switches) ref(s.rack);
    for (auto& s : inv.storageNodes) ref(s.rack);
    ASSERT_GE(renamed.size(), 12u);
    Plan p = plan(inv, Inventory{}, {});
    ASSERT_TRUE(loom::db::applyPlan(conn, p, inv, {.actor = "test"}));

    auto parsed = loom::provisioning::parsePhasePlan(kAllRacksPlan);
    ASSERT_TRUE(parsed) << parsed.error().toString();
    loom::db::ProvisioningRepo repo(conn);
    ASSERT_TRUE(repo.applyPlan(*parsed, kAllRacksPlan, "test"));
    auto st = repo.load();
    ASSERT_TRUE(st) << st.error().toString();

    std::vector<std::string> names;
    for (const auto& r : st->racks) names.emplace_back(r.name);
    ASSERT_EQ(names.size(), inv.racks.size());
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end(),
                               [](auto& a, auto& b) { return loom::naturalLess(a, b); }));
    // The fixture means something: bytewise, z1-r10 would come before z1-r2.
    EXPECT_FALSE(std::is_sorted(names.begin(), names.end()));
    auto at = [&](const std::string& n) {
        return std::find(names.begin(), names.end(), n) - names.begin();
    };
    EXPECT_LT(at("z1-r2"), at("z1-r10"));
    EXPECT_LT(at("z1-r9"), at("z1-r10"));

    // Within each phase, the racks' order follows the list: phase "first" takes z1-r3 before
    // z1-r11, and "rest" takes z1-r2 before z1-r10.
    std::map<int, std::vector<std::pair<int, std::string>>> byPhase;  // phase -> (order, rack)
    for (const auto& r : st->racks)
        if (r.phase >= 0) byPhase[r.phase].push_back({r.order, r.name});
    ASSERT_EQ(byPhase.size(), 2u);
    for (auto& [phase, racks] : byPhase) {
        std::sort(racks.begin(), racks.end());
        for (std::size_t i = 1; i < racks.size(); ++i)
            EXPECT_TRUE(loom::naturalLess(racks[i - 1].second, racks[i].second))
                << "phase " << phase << ": " << racks[i - 1].second << " (order "
                << racks[i - 1].first << ") before " << racks[i].second;
    }
    ASSERT_EQ(byPhase[0].size(), 2u);
    EXPECT_EQ(byPhase[0][0].second, "z1-r3");
    EXPECT_EQ(byPhase[0][1].second, "z1-r11");
}

}  // namespace
