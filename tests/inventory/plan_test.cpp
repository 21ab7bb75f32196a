// plan(): pure diff of desired vs current inventories.
#include "loom/inventory/plan.hpp"

#include <gtest/gtest.h>

namespace {

using namespace loom::inventory;

Inventory small() {
    Inventory inv;
    inv.cluster = "c1";
    inv.sites = {{.name = "s1"}};
    inv.zones = {{.name = "z1", .site = "s1"}};
    inv.rows = {{.name = "z1-row01", .zone = "z1"}};
    for (int i = 1; i <= 3; ++i)
        inv.racks.push_back({.name = "z1-r00" + std::to_string(i), .row = "z1-row01", .zone = "z1",
                             .position = i - 1, .model = "gt-rack"});
    inv.hosts = {{.name = "z1-r001-h0", .rack = "z1-r001", .model = "grand-teton"}};
    inv.switches = {{.name = "z1-r001-rtsw", .role = SwitchRole::Rtsw, .zone = "z1", .rack = "z1-r001", .portCount = 34}};
    inv.ports = {{.name = "z1-r001-rtsw/p1", .device = "z1-r001-rtsw", .index = 1},
                 {.name = "z1-r001-rtsw/p2", .device = "z1-r001-rtsw", .index = 2}};
    inv.links = {{.name = "l1", .aPort = "z1-r001-rtsw/p1", .bPort = "z1-r001-rtsw/p2", .lengthM = 2.5}};
    return inv;
}

TEST(Plan, EmptyCurrentCreatesEverythingInKindOrder) {
    Inventory d = small();
    Plan p = plan(d, Inventory{.cluster = "c1"});
    EXPECT_EQ(p.creates(), d.totalEntities());
    EXPECT_EQ(p.updates(), 0u);
    EXPECT_EQ(p.deletes(), 0u);
    EXPECT_EQ(p.of(Kind::Rack).createNames,
              (std::vector<std::string_view>{"z1-r001", "z1-r002", "z1-r003"}));
    EXPECT_EQ(p.of(Kind::Rack).creates, (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_FALSE(p.empty());
}

TEST(Plan, IdenticalInventoriesAreEmpty) {
    Plan p = plan(small(), small(), {.prune = true});
    EXPECT_TRUE(p.empty());
    EXPECT_EQ(formatPlan(p), "no changes\n");
}

TEST(Plan, OperationalFieldsAreNeverCompared) {
    Inventory current = small();
    current.racks[0].state = "in_service";
    current.racks[0].serial = "SN-1";
    current.racks[0].resourceVersion = 7;
    current.hosts[0].state = "burn_in";
    current.links[0].state = "down";
    current.ports[0].state = "active";
    Inventory desired = small();
    EXPECT_TRUE(plan(desired, current).empty());
}

TEST(Plan, SpecFieldChangesAreUpdatesWithBeforeAndAfter) {
    Inventory current = small();
    Inventory desired = small();
    desired.racks[1].model = "gt-rack-v2";
    desired.racks[1].labels = {{"tier", "gpu"}};
    desired.links[0].lengthM = 3;
    Plan p = plan(desired, current);
    ASSERT_EQ(p.of(Kind::Rack).updates.size(), 1u);
    const Update& u = p.of(Kind::Rack).updates[0];
    EXPECT_EQ(u.name, "z1-r002");
    EXPECT_EQ(u.desiredIndex, 1u);
    ASSERT_EQ(u.changes.size(), 2u);
    EXPECT_EQ(u.changes[0].field, "model");
    EXPECT_EQ(u.changes[0].before, "gt-rack");
    EXPECT_EQ(u.changes[0].after, "gt-rack-v2");
    EXPECT_EQ(u.changes[1].field, "labels");
    EXPECT_EQ(u.changes[1].after, "tier=gpu");
    ASSERT_EQ(p.of(Kind::Link).updates.size(), 1u);
    EXPECT_EQ(p.of(Kind::Link).updates[0].changes[0].after, "3");
    EXPECT_EQ(p.updates(), 2u);
    EXPECT_EQ(p.creates(), 0u);
}

TEST(Plan, RemovedEntitiesAreDeletedOnlyWithPrune) {
    Inventory current = small();
    Inventory desired = small();
    desired.racks.pop_back();  // z1-r003
    Plan keep = plan(desired, current, {.prune = false});
    EXPECT_TRUE(keep.empty());
    EXPECT_EQ(keep.wouldDelete(), 1u);
    EXPECT_EQ(keep.of(Kind::Rack).wouldDelete, (std::vector<std::string>{"z1-r003"}));
    EXPECT_EQ(formatPlan(keep),
              "rack: 0 to create, 0 to update, 0 to delete; 1 would delete with --prune (z1-r003)\n"
              "no changes (1 would delete with --prune)\n");
    Plan prune = plan(desired, current, {.prune = true});
    EXPECT_EQ(prune.deletes(), 1u);
    EXPECT_EQ(prune.of(Kind::Rack).deletes, (std::vector<std::string>{"z1-r003"}));
    EXPECT_FALSE(prune.empty());
}

TEST(Plan, LinkOnAPortTheSpecRecablesIsDeletedWithoutPrune) {
    // Stored: l1 on p1--p2 and l2 on p3--p4. Desired: l3 on p1--p4 (recabled), l2 and l1 gone.
    Inventory current = small();
    current.ports.push_back({.name = "z1-r001-rtsw/p3", .device = "z1-r001-rtsw", .index = 3});
    current.ports.push_back({.name = "z1-r001-rtsw/p4", .device = "z1-r001-rtsw", .index = 4});
    current.ports.push_back({.name = "z1-r001-rtsw/p5", .device = "z1-r001-rtsw", .index = 5});
    current.ports.push_back({.name = "z1-r001-rtsw/p6", .device = "z1-r001-rtsw", .index = 6});
    current.links.push_back({.name = "l2", .aPort = "z1-r001-rtsw/p3", .bPort = "z1-r001-rtsw/p4"});
    current.links.push_back({.name = "l4", .aPort = "z1-r001-rtsw/p5", .bPort = "z1-r001-rtsw/p6"});
    Inventory desired = current;
    desired.links = {{.name = "l3", .aPort = "z1-r001-rtsw/p1", .bPort = "z1-r001-rtsw/p4"}};
    Plan p = plan(desired, current);
    // l1 holds p1 and l2 holds p4, both used by l3: deleted; l4 is only unnamed: kept.
    EXPECT_EQ(p.of(Kind::Link).deletes, (std::vector<std::string>{"l1", "l2"}));
    EXPECT_EQ(p.of(Kind::Link).wouldDelete, (std::vector<std::string>{"l4"}));
    EXPECT_EQ(p.of(Kind::Link).createNames, (std::vector<std::string_view>{"l3"}));
    Plan pruned = plan(desired, current, {.prune = true});
    EXPECT_EQ(pruned.of(Kind::Link).deletes.size(), 3u);
    EXPECT_TRUE(pruned.of(Kind::Link).wouldDelete.empty());
}

TEST(Plan, DuplicateDesiredNamesAreReported) {
    Inventory desired = small();
    desired.racks.push_back(desired.racks[0]);
    Plan p = plan(desired, Inventory{});
    EXPECT_TRUE(p.hasDuplicates());
    EXPECT_EQ(p.of(Kind::Rack).duplicates, (std::vector<std::string>{"z1-r001"}));
    EXPECT_EQ(p.of(Kind::Rack).creates.size(), 3u);
}

TEST(Plan, ClusterMetadataChangesCount) {
    Inventory current = small();
    Inventory desired = small();
    desired.fabric = FabricType::Infiniband;
    Plan p = plan(desired, current);
    EXPECT_FALSE(p.empty());
    ASSERT_EQ(p.clusterChanges.size(), 1u);
    EXPECT_EQ(p.clusterChanges[0].after, "infiniband");
}

TEST(Plan, FormatListsFirstNamesPerKind) {
    Inventory d;
    for (int i = 0; i < 8; ++i) d.racks.push_back({.name = "r" + std::to_string(i)});
    std::string text = formatPlan(plan(d, Inventory{}), 3);
    EXPECT_EQ(text,
              "rack: 8 to create (r0, r1, r2, ...), 0 to update, 0 to delete\n"
              "plan: 8 to create, 0 to update, 0 to delete\n");
}

TEST(Plan, SummarizeGivesCountsAndFirstNamesForEveryKind) {
    Inventory current = small();
    Inventory desired = small();
    desired.racks[0].model = "x";
    desired.hosts.push_back({.name = "z1-r001-h1", .rack = "z1-r001"});
    auto s = summarize(plan(desired, current, {.prune = true}), 5);
    ASSERT_EQ(s.size(), static_cast<std::size_t>(kKindCount));
    const KindSummary& racks = s[static_cast<int>(Kind::Rack)];
    EXPECT_EQ(racks.kind, "racks");
    EXPECT_EQ(racks.updates, 1u);
    EXPECT_EQ(racks.updateNames, (std::vector<std::string>{"z1-r001"}));
    const KindSummary& hosts = s[static_cast<int>(Kind::Host)];
    EXPECT_EQ(hosts.creates, 1u);
    EXPECT_EQ(hosts.createNames, (std::vector<std::string>{"z1-r001-h1"}));
}

TEST(Plan, LargeInventoryPlansInLinearTime) {
    // 100k ports: a quadratic plan would take minutes (hash maps keep it linear).
    Inventory d;
    d.ports.reserve(100'000);
    for (int i = 0; i < 100'000; ++i)
        d.ports.push_back({.name = "sw" + std::to_string(i / 64) + "/p" + std::to_string(i % 64)});
    Inventory c = d;
    c.ports[123].speedGbps = 200;
    Plan p = plan(d, c);
    EXPECT_EQ(p.updates(), 1u);
    EXPECT_EQ(p.of(Kind::Port).updates[0].changes[0].field, "speedGbps");
}

}  // namespace
