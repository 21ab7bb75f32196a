// Migration 0037 (NIC identity, issue 35 item 4) on a database that already holds hosts and NICs:
// the upgrade path from 0036 with data. Its fill derives each stored NIC's hca_type from its
// model as the spec parser does (nic_identity.cpp's table), so a stored inventory equals a re-read
// of its spec and the next `loomd apply` of the same spec changes nothing; pci_address stays ''
// (no spec before 0037 could say it). What it did to each kind of NIC is checked row by row.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <string>

#include "loom/db/inventory_repository.hpp"
#include "loom/db/migrations.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/inventory/spec.hpp"
#include "loom/testing/postgres.hpp"

namespace {

using namespace loom::inventory;

class NicIdentityMigration : public loom::testing::PostgresTest {};

TEST_F(NicIdentityMigration, FillsAPopulatedDatabaseAsTheSpecSaysAndTheNextApplyChangesNothing) {
    auto spec =
        loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml");
    ASSERT_TRUE(spec) << spec.error().toString();
    auto conn = connect();
    {
        auto snap = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        Plan p = plan(*spec, snap->inventory);
        auto r = loom::db::applyPlan(conn, p, *spec,
                                     {.actor = "test", .expectedGeneration = snap->generation});
        ASSERT_TRUE(r) << r.error().toString();
    }
    // Back to the schema of 0036 with the same rows: 0037's columns gone (with the digest
    // trigger that names them, restored as 0013 made it), 0037 and its amendment 0044 not
    // applied (the other migrations since change no NIC).
    ASSERT_TRUE(
        conn.exec("ALTER TABLE nics DROP COLUMN hca_type CASCADE, DROP COLUMN pci_address CASCADE; "
                  "CREATE TRIGGER nics_digest AFTER INSERT OR DELETE OR UPDATE OF name, host_id, "
                  "storage_node_id, \"index\", network, model, speed_gbps ON nics "
                  "FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop(); "
                  "DELETE FROM schema_migrations WHERE version IN (37, 44)"));
    auto m = loom::db::migrate(conn);
    ASSERT_TRUE(m) << m.error().toString();
    EXPECT_EQ(m->applied, 2) << "0037 and 0044 were missing";

    // What the fill did, per network and model: dev-small's hosts have 8 ConnectX-7 backend NICs
    // and one ConnectX-6 Dx frontend NIC, its storage nodes two ConnectX-6 Dx, which have no
    // identity (0037 gave them their model's; 0044 takes it back).
    auto rows = conn.queryRows(
        "SELECT network || ' ' || model || ' -> ' || hca_type || ' pci=' || pci_address, "
        "count(*) FROM nics GROUP BY 1 ORDER BY 1");
    ASSERT_TRUE(rows) << rows.error().toString();
    std::map<std::string, std::string> filled;
    for (const auto& r : *rows) filled[r[0]] = r[1];
    std::string report;
    for (const auto& [what, n] : filled) report += what + ": " + n + "\n";
    std::cout << "0037 + 0044 on dev-small at 0036:\n" << report;
    EXPECT_EQ(filled["backend ConnectX-7 -> MT4129 pci="], "64") << report;
    EXPECT_EQ(filled["frontend ConnectX-6-Dx -> MT4125 pci="], "8") << report;
    EXPECT_EQ(filled["storage ConnectX-6-Dx ->  pci="], "4") << report;

    // The next apply of the same spec changes nothing.
    auto snap = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(snap) << snap.error().toString();
    Plan p = plan(*spec, snap->inventory);
    EXPECT_TRUE(p.empty()) << "the next apply would change:\n" << formatPlan(p) << "\n" << report;
    for (const auto& [what, n] : filled)
        EXPECT_TRUE(what.ends_with(" pci=")) << "no PCI address is made up: " << what;
}

}  // namespace
