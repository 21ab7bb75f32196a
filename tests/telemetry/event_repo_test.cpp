#include "loom/db/event_repo.hpp"

#include <gtest/gtest.h>

#include "loom/testing/postgres.hpp"

namespace loom::db {
namespace {

class EventRepo : public loom::testing::PostgresTest {};

constexpr std::int64_t kT0 = 1'700'000'000'000;

EventRecord ev(std::string kind, std::string location, std::string severity, std::int64_t at) {
    EventRecord e;
    e.kind = std::move(kind);
    e.location = std::move(location);
    e.severity = std::move(severity);
    e.rack = "z1-r001";
    e.zone = "z1";
    e.message = e.location + ": something \"quoted\"\tand tabbed";
    e.openedAtMs = at;
    return e;
}

TEST_F(EventRepo, InsertCloseAndOneOpenPerKindAndLocation) {
    auto conn = connect();
    auto a = ev("gpu_xid", "z1-r001-h0-gpu3", "critical", kT0);
    a.labels = {{"xid", "79"}};
    auto ids = insertEvents(conn, {a, ev("link_down", "l1", "critical", kT0 + 5)});
    ASSERT_TRUE(ids) << ids.error().toString();
    ASSERT_EQ(ids->size(), 2u);
    EXPECT_GT((*ids)[0], 0);
    EXPECT_NE((*ids)[0], (*ids)[1]);
    // The same open (kind, location) again: no duplicate, the open id comes back.
    auto again = insertEvents(conn, {ev("gpu_xid", "z1-r001-h0-gpu3", "critical", kT0 + 9)});
    ASSERT_TRUE(again);
    EXPECT_EQ((*again)[0], (*ids)[0]);
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM events")->value(), "2");

    auto closed = closeEvents(conn, {{"gpu_xid", "z1-r001-h0-gpu3", kT0 + 60000}, {"nope", "x", kT0}});
    ASSERT_TRUE(closed) << closed.error().toString();
    EXPECT_EQ((*closed)[0], (*ids)[0]);
    EXPECT_EQ((*closed)[1], 0);
    // Reopening after the close makes a new event.
    auto re = insertEvents(conn, {ev("gpu_xid", "z1-r001-h0-gpu3", "critical", kT0 + 70000)});
    ASSERT_TRUE(re);
    EXPECT_GT((*re)[0], (*ids)[1]);

    auto all = listEvents(conn, {});
    ASSERT_TRUE(all) << all.error().toString();
    ASSERT_EQ(all->items.size(), 3u);
    EXPECT_FALSE(all->nextCursor);
    const auto& first = all->items.back();  // oldest last
    EXPECT_EQ(first.kind, "gpu_xid");
    EXPECT_EQ(first.openedAtMs, kT0);
    EXPECT_EQ(first.closedAtMs, kT0 + 60000);
    EXPECT_EQ(first.message, a.message);
    ASSERT_EQ(first.labels.size(), 1u);
    EXPECT_EQ(first.labels[0].second, "79");
}

TEST_F(EventRepo, FiltersAndKeysetPagination) {
    auto conn = connect();
    std::vector<EventRecord> batch;
    for (int i = 0; i < 25; ++i)
        batch.push_back(ev(i % 2 ? "link_down" : "gpu_temp", "loc" + std::to_string(i),
                           i % 5 == 0 ? "critical" : "warning", kT0 + i * 1000));
    ASSERT_TRUE(insertEvents(conn, batch));
    ASSERT_TRUE(closeEvents(conn, {{"gpu_temp", "loc0", kT0 + 100000}}));

    EventFilter f;
    f.limit = 10;
    std::vector<std::int64_t> seen;
    for (;;) {
        auto page = listEvents(conn, f);
        ASSERT_TRUE(page) << page.error().toString();
        for (auto& e : page->items) seen.push_back(e.id);
        if (!page->nextCursor) break;
        f.cursor = page->nextCursor;
    }
    ASSERT_EQ(seen.size(), 25u);
    EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));

    EventFilter crit;
    crit.severity = "critical";
    EXPECT_EQ(listEvents(conn, crit)->items.size(), 5u);
    crit.open = true;
    EXPECT_EQ(listEvents(conn, crit)->items.size(), 4u);
    EventFilter kind;
    kind.kind = "link_down";
    kind.sinceMs = kT0 + 10000;
    kind.untilMs = kT0 + 20000;
    auto k = listEvents(conn, kind);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->items.size(), 5u);  // 11, 13, 15, 17, 19
    EventFilter loc;
    loc.location = "loc7";
    EXPECT_EQ(listEvents(conn, loc)->items.size(), 1u);
    loc.location = "z1-r001";  // a rack: everything located in it
    EXPECT_EQ(listEvents(conn, loc)->items.size(), 25u);
    EventFilter closed;
    closed.open = false;
    EXPECT_EQ(listEvents(conn, closed)->items.size(), 1u);

    EventFilter bad;
    bad.limit = 0;
    EXPECT_FALSE(listEvents(conn, bad));
    bad.limit = 10;
    bad.severity = "fatal";
    auto b = listEvents(conn, bad);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().path, "severity");
}

TEST_F(EventRepo, RollupsWithOneCopy) {
    auto conn = connect();
    std::vector<RollupRecord> rows;
    for (int i = 0; i < 100; ++i) {
        RollupRecord r;
        r.minuteMs = kT0 - kT0 % 60000;
        r.scope = i < 50 ? "rack" : "switch";
        r.name = "n" + std::to_string(i);
        if (i % 7) r.utilAvg = 42.5;
        r.utilMax = 99;
        r.errors = i;
        r.portsDown = i % 3;
        rows.push_back(r);
    }
    auto ok = insertRollups(conn, rows);
    ASSERT_TRUE(ok) << ok.error().toString();
    auto back = listRollups(conn, "switch", "", kT0 - 60000, kT0 + 60000);
    ASSERT_TRUE(back) << back.error().toString();
    ASSERT_EQ(back->size(), 50u);
    auto one = listRollups(conn, "rack", "n7", kT0 - 60000, kT0 + 60000);
    ASSERT_TRUE(one);
    ASSERT_EQ(one->size(), 1u);
    EXPECT_FALSE((*one)[0].utilAvg);  // NULL round trip
    EXPECT_EQ((*one)[0].utilMax, 99);
    EXPECT_EQ((*one)[0].errors, 7);
    // The same minute again is a conflict, and nothing half-written stays.
    auto dup = insertRollups(conn, rows);
    ASSERT_FALSE(dup);
    EXPECT_EQ(dup.error().code, Errc::Conflict);
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM telemetry_rollups")->value(), "100");
}

TEST(EventTime, IsoRoundTrip) {
    EXPECT_EQ(isoTimeMs(0), "1970-01-01T00:00:00.000Z");
    EXPECT_EQ(isoTimeMs(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
    EXPECT_EQ(parseIsoTimeMs("2023-11-14T22:13:20.123Z"), 1'700'000'000'123);
    EXPECT_EQ(parseIsoTimeMs("2023-11-14T23:13:20+01:00"), 1'700'000'000'000);
    EXPECT_EQ(parseIsoTimeMs("2023-11-14"), 1'699'920'000'000);
    EXPECT_EQ(parseIsoTimeMs("1700000000000"), 1'700'000'000'000);
    EXPECT_FALSE(parseIsoTimeMs("yesterday"));
    EXPECT_FALSE(parseIsoTimeMs("2023-13-01"));
    EXPECT_FALSE(parseIsoTimeMs("2023-11-14T22:13:20Zjunk"));
}

}  // namespace
}  // namespace loom::db
