// `ports?peer__ic=...` given alone (issue 12): the first 2 x (limit + 1) ports in natural order
// are tested per row, and when they do not hold the whole page the set of far ends gives it.
// Both paths, page after page, give exactly the ports whose cable's far end is on a device
// whose name holds the pattern (computed here from the inventory, not written down), in
// natural order. Real PostgreSQL (tests/support).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"
#include "loom/testing/text.hpp"

namespace {

using namespace loom::inventory;
using loom::testing::lowerAscii;

class PeerFilter : public loom::testing::PostgresTest {};

TEST_F(PeerFilter, APatternAloneIsWalkedOrSetAndPagesExactlyInNaturalOrder) {
    auto conn = connect();
    Inventory inv = loom::testing::sampleCluster(2, 12);
    Plan p = plan(inv, Inventory{}, {});
    ASSERT_TRUE(loom::db::applyPlan(conn, p, inv, {.actor = "test"}));
    ASSERT_TRUE(loom::db::buildNameIndexes(conn));
    std::map<std::string, std::string> deviceOf, peerOf;  // port -> device, port -> far device
    for (const auto& port : inv.ports) deviceOf[port.name.str()] = port.device.str();
    for (const auto& l : inv.links) {
        peerOf[l.aPort.str()] = deviceOf[l.bPort.str()];
        peerOf[l.bPort.str()] = deviceOf[l.aPort.str()];
    }
    std::vector<std::string> order;  // every port in natural order
    for (const auto& port : inv.ports) order.emplace_back(port.name);
    std::sort(order.begin(), order.end(), [](auto& a, auto& b) { return loom::naturalLess(a, b); });

    // "rtsw": the CTSW ports that lead the natural order all face an RTSW, so the walk holds
    // every page; "z2-ctsw2", "R007-h1-nic": rare, so the set gives them; "CTSW" both ways.
    for (const std::string pattern : {"rtsw", "z2-ctsw2", "R007-h1-nic", "CTSW"}) {
        std::vector<std::string> expected;
        for (const auto& name : order)
            if (auto it = peerOf.find(name);
                it != peerOf.end() &&
                lowerAscii(it->second).find(lowerAscii(pattern)) != std::string::npos)
                expected.push_back(name);
        ASSERT_FALSE(expected.empty()) << pattern;
        for (int limit : {1, 3, 7, 100}) {
            std::vector<std::string> got;
            loom::db::ListQuery q{.kind = Kind::Port, .limit = limit};
            q.filters = {{"peer__ic", pattern}};
            for (int pages = 0; pages < 10'000; ++pages) {
                auto page = loom::db::listObjects(conn, q);
                ASSERT_TRUE(page) << page.error().toString();
                EXPECT_LE(page->items.size(), std::size_t(limit));
                for (auto& item : page->items) {
                    auto obj = nlohmann::json::parse(item);
                    got.push_back(obj["name"].get<std::string>());
                    EXPECT_EQ(obj["peer"], peerOf[got.back()]) << item;
                }
                if (page->nextCursor.empty()) break;
                q.cursor = page->nextCursor;
            }
            EXPECT_EQ(got, expected) << pattern << ", limit " << limit;
        }
    }
    // A prefix (walked, then set) and a negated pattern (the set, negated).
    std::size_t isw = 0, nic = 0;
    for (const auto& [port, peer] : peerOf) isw += peer.starts_with("z1-ctsw");
    for (const auto& port : inv.ports)
        nic += !(peerOf.count(port.name.str()) &&
                 peerOf[port.name.str()].find("ctsw") != std::string::npos);
    auto count = [&](const std::string& field, const std::string& value) {
        auto page = loom::db::listObjects(
            conn, {.kind = Kind::Port, .limit = 5000, .filters = {{field, value}}});
        EXPECT_TRUE(page) << page.error().toString();
        return page ? page->items.size() : 0;
    };
    EXPECT_EQ(count("peer__isw", "Z1-CTSW"), isw);
    EXPECT_EQ(count("peer__nic", "ctsw"), nic);
}

}  // namespace
