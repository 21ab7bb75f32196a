#include "loom/db/event_repo.hpp"

#include <gtest/gtest.h>

#include <map>

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

TEST_F(EventRepo, RetriedWritesAreIdempotentAndClosesHitTheirOwnRow) {
    auto conn = connect();
    auto a = ev("gpu_xid", "g1", "critical", kT0);
    a.key = "inst-a:1";
    auto first = insertEvents(conn, {a});
    ASSERT_TRUE(first) << first.error().toString();
    // The same batch again (the answer of the first try was lost): the same row.
    auto retry = insertEvents(conn, {a});
    ASSERT_TRUE(retry);
    EXPECT_EQ((*retry)[0], (*first)[0]);
    // Closed by id; the retried close changes nothing and says so.
    auto c1 = closeEvents(conn, {{"gpu_xid", "g1", kT0 + 1000, (*first)[0], a.key}});
    ASSERT_TRUE(c1);
    EXPECT_EQ((*c1)[0], (*first)[0]);
    auto c2 = closeEvents(conn, {{"gpu_xid", "g1", kT0 + 5000, (*first)[0], a.key}});
    ASSERT_TRUE(c2);
    EXPECT_EQ((*c2)[0], 0);
    // A new XID on the same GPU is a new row; closing it by key leaves the first one alone.
    auto b = ev("gpu_xid", "g1", "critical", kT0 + 10000);
    b.key = "inst-a:2";
    auto second = insertEvents(conn, {b});
    ASSERT_TRUE(second);
    EXPECT_NE((*second)[0], (*first)[0]);
    auto c3 = closeEvents(conn, {{"gpu_xid", "g1", kT0 + 11000, 0, b.key}});
    ASSERT_TRUE(c3);
    EXPECT_EQ((*c3)[0], (*second)[0]);
    auto rows = getEvents(conn, {(*first)[0], (*second)[0]});
    ASSERT_TRUE(rows) << rows.error().toString();
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ((*rows)[0].closedAtMs, kT0 + 1000);  // not moved by the retried close
    EXPECT_EQ((*rows)[1].closedAtMs, kT0 + 11000);
    EXPECT_EQ((*rows)[1].key, "inst-a:2");
    EXPECT_EQ((*rows)[1].source, "telemetry");
    // Another loomd opening the same condition while it is open gets the open row.
    auto c = ev("gpu_xid", "g1", "critical", kT0 + 20000);
    c.key = "inst-a:3";
    auto d = c;
    d.key = "inst-b:1";
    auto mine = insertEvents(conn, {c});
    auto theirs = insertEvents(conn, {d});
    ASSERT_TRUE(mine && theirs);
    EXPECT_EQ((*mine)[0], (*theirs)[0]);
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM events")->value(), "3");
    // Each loomd finds that row by its own key (issue 39: the job detail's ids), the second
    // one's key being an alias of the row; a retry of the second's batch changes nothing.
    auto retried = insertEvents(conn, {d});
    ASSERT_TRUE(retried);
    EXPECT_EQ((*retried)[0], (*mine)[0]);
    auto byKey = eventIdsByKey(conn, {c.key, d.key, "inst-c:1"});
    ASSERT_TRUE(byKey) << byKey.error().toString();
    EXPECT_EQ(*byKey,
              (std::map<std::string, std::int64_t>{{c.key, (*mine)[0]}, {d.key, (*mine)[0]}}));
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM events")->value(), "3");
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM event_key_aliases")->value(), "1");
}

// Issue 34 item 4: a straggler event's identity includes its job. Two jobs slowed by the same
// uplink each get their own open event (in one batch or two), and closing one job's event by its
// key leaves the other job's open.
TEST_F(EventRepo, OneOpenEventPerJobOnTheSameLocation) {
    auto conn = connect();
    auto forJob = [](std::string job, std::string key) {
        auto e = ev("straggler", "z1-r001-rtsw-up7", "warning", kT0);
        e.source = "jobs";
        e.labels = {{"cause", "congested_link"}, {"job", std::move(job)}};
        e.key = std::move(key);
        return e;
    };
    auto a = insertEvents(conn, {forJob("llama", "s:llama:1"), forJob("mistral", "s:mistral:1")});
    ASSERT_TRUE(a) << a.error().toString();
    ASSERT_EQ(a->size(), 2u);
    EXPECT_GT((*a)[0], 0);
    EXPECT_GT((*a)[1], 0);
    EXPECT_NE((*a)[0], (*a)[1]) << "one batch, two jobs: two events";
    auto b = insertEvents(conn, {forJob("gemma", "s:gemma:1")});
    ASSERT_TRUE(b) << b.error().toString();
    EXPECT_NE((*b)[0], (*a)[0]) << "a later job's event is not dropped";
    EXPECT_NE((*b)[0], (*a)[1]);
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM events WHERE closed_at IS NULL")->value(), "3");
    // The same job and location again (another loomd): the open row of that job.
    auto again = insertEvents(conn, {forJob("mistral", "s:mistral:2")});
    ASSERT_TRUE(again);
    EXPECT_EQ((*again)[0], (*a)[1]);
    // Closing gemma's event by its key closes gemma's row only.
    auto c = closeEvents(conn, {{"straggler", "z1-r001-rtsw-up7", kT0 + 5000, 0, "s:gemma:1"}});
    ASSERT_TRUE(c) << c.error().toString();
    EXPECT_EQ((*c)[0], (*b)[0]);
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM events WHERE closed_at IS NULL")->value(), "2");
    // Telemetry events keep one open row per (kind, location).
    auto t1 = insertEvents(conn, {ev("link_down", "l9", "critical", kT0)});
    auto t2 = insertEvents(conn, {ev("link_down", "l9", "critical", kT0 + 1)});
    ASSERT_TRUE(t1 && t2);
    EXPECT_EQ((*t1)[0], (*t2)[0]);
}

TEST_F(EventRepo, AcknowledgeAndCloseByHand) {
    auto conn = connect();
    auto ids = insertEvents(conn, {ev("link_down", "l9", "critical", kT0)});
    ASSERT_TRUE(ids);
    auto id = (*ids)[0];
    auto a = ackEvent(conn, id, "alice", "on it");
    ASSERT_TRUE(a) << a.error().toString();
    EXPECT_EQ(a->acknowledgedBy, "alice");
    EXPECT_GT(a->acknowledgedAtMs, 0);
    EXPECT_EQ(a->ackComment, "on it");
    EXPECT_TRUE(a->open());
    auto b = ackEvent(conn, id, "bob", "me too");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->acknowledgedBy, "alice");  // the first acknowledgement stays
    EXPECT_EQ(b->ackComment, "on it");
    auto closed = closeEventByHand(conn, id, "bob", "cable replaced");
    ASSERT_TRUE(closed) << closed.error().toString();
    EXPECT_FALSE(closed->open());
    EXPECT_EQ(closed->closedBy, "bob");
    EXPECT_EQ(closed->closeReason, "cable replaced");
    auto again = closeEventByHand(conn, id, "carol", "");
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, Errc::Conflict);
    EXPECT_NE(again.error().message.find("bob"), std::string::npos);
    // The rules' close of the same event later changes nothing.
    auto late = closeEvents(conn, {{"link_down", "l9", kT0 + 99000, id, ""}});
    ASSERT_TRUE(late);
    EXPECT_EQ((*late)[0], 0);
    EXPECT_EQ(ackEvent(conn, 999999, "x", "").error().code, Errc::NotFound);
    EXPECT_EQ(closeEventByHand(conn, 999999, "x", "").error().code, Errc::NotFound);
    auto acked = listEvents(conn, {.acknowledged = true});
    ASSERT_TRUE(acked);
    EXPECT_EQ(acked->items.size(), 1u);
    auto open = listOpenTelemetryEvents(conn);
    ASSERT_TRUE(open);
    EXPECT_TRUE(open->empty());
}

TEST_F(EventRepo, RackTransitionsBecomeEventsWithTheirAuditRow) {
    auto conn = connect();
    ASSERT_TRUE(conn.exec("INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, "
                          "to_state, reason, phase, idempotency_key) VALUES "
                          "('reconciler', 'rack', 'z9-r001', 'burn_in', 'validated', 'diag ok', 'p1', 'k1'), "
                          "('alice', 'host', 'z9-r001-h0', 'ready', 'quarantined', '', '', 'k2')"));
    auto page = listEvents(conn, {.kind = "rack_transition"});
    ASSERT_TRUE(page) << page.error().toString();
    ASSERT_EQ(page->items.size(), 1u);  // racks only
    const auto& e = page->items[0];
    EXPECT_EQ(e.source, "provisioning");
    EXPECT_EQ(e.severity, "info");
    EXPECT_EQ(e.location, "z9-r001");
    EXPECT_EQ(e.rack, "z9-r001");
    EXPECT_EQ(e.message, "z9-r001: burn_in -> validated (diag ok)");
    EXPECT_EQ(e.openedAtMs, e.closedAtMs);
    EXPECT_GT(e.openedAtMs, 0);
    std::map<std::string, std::string> labels(e.labels.begin(), e.labels.end());
    EXPECT_EQ(labels["from"], "burn_in");
    EXPECT_EQ(labels["to"], "validated");
    EXPECT_EQ(labels["actor"], "reconciler");
    EXPECT_EQ(labels["phase"], "p1");
    // A failed audit insert (a replayed idempotency key) leaves no event behind.
    EXPECT_FALSE(conn.exec("INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, "
                           "to_state, idempotency_key) VALUES ('x', 'rack', 'z9-r001', 'a', 'b', 'k1')"));
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM events")->value(), "1");
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
