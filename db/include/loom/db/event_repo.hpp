// Failure events and telemetry rollups (migrations 0004_events.sql, 0007_event_lifecycle.sql).
//
// The server's event writer drains the TelemetryHub's events in order and calls insertEvents /
// closeEvents with consecutive runs of opens and closes (one statement per run); both are
// idempotent by the writer's event key, so a batch retried after a lost answer neither adds
// nor merges rows. Operators acknowledge and close events by hand (ackEvent,
// closeEventByHand); rack transitions arrive as closed `rack_transition` events written by a
// trigger on provisioning_audit. The API lists them with filters and keyset pagination; the
// leader writes one minute of rollups with one COPY.
//
//   auto ids = insertEvents(conn, {rec});                // ids in input order
//   auto page = listEvents(conn, {.severity = "critical", .open = true, .limit = 100});
//   if (page->nextCursor) listEvents(conn, {.cursor = *page->nextCursor, ...});
//   auto e = ackEvent(conn, 42, "alice", "looking at it");   // NotFound for an unknown id
//
// Times are Unix epoch milliseconds (0 = unset); on the wire they become ISO 8601 UTC.
#pragma once

#include "loom/db/database.hpp"
#include "loom/db/leader.hpp"
#include "loom/inventory/error.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::db {

struct EventRecord {
    std::int64_t id = 0;
    std::string kind;
    std::string severity;  // info | warning | critical
    std::string location, rack, zone, message;
    std::int64_t openedAtMs = 0;
    std::int64_t closedAtMs = 0;  // 0 while open
    std::vector<std::pair<std::string, std::string>> labels;
    std::string source = "telemetry";  // telemetry | provisioning | operator | jobs
    std::string key;                   // the writer's event key; empty if none
    std::string acknowledgedBy;        // empty: not acknowledged
    std::int64_t acknowledgedAtMs = 0;
    std::string ackComment;
    std::string closedBy;  // empty: closed by the rules (or still open); else a token name
    std::string closeReason;
    // What reported it ("push", "simulator", "scrape <exporter> <entity>"; empty: not recorded)
    // and, for link_down, the ends that reported down ("nic", "<switch>/p<N>"): migration 0028.
    std::string origin;
    std::vector<std::string> downEnds;

    bool open() const { return closedAtMs == 0; }
};

inline constexpr std::string_view kEventSources[] = {"telemetry", "provisioning", "operator",
                                                    "jobs"};

// Inserts open events in one statement; returns their ids in input order. Idempotent: an event
// whose `key` is already stored returns that row's id (a retry after a lost answer). An event
// whose (kind, location) is already open under another key (another loomd saw the same
// condition) is not duplicated: the id of the open one is returned, and the key is recorded as
// another name of that row (event_key_aliases, migration 0051). Limit: 10,000 per call.
Result<std::vector<std::int64_t>> insertEvents(Connection& conn, const std::vector<EventRecord>& events);

struct EventClose {
    std::string kind, location;
    std::int64_t closedAtMs = 0;
    std::int64_t id = 0;  // when set: exactly this row
    std::string key;      // else when set: the row this key opened
                          // else: the open event of (kind, location)
    std::string reason;   // close_reason (the rules: "recovered (reported by push)")
};
// Closes events in one statement; returns, in input order, the id closed or 0 when nothing
// open matched (already closed: by hand, by another loomd, or by the first try of a retried
// batch). Limit: 10,000 per call.
Result<std::vector<std::int64_t>> closeEvents(Connection& conn, const std::vector<EventClose>& closes);

// The stored events with these ids, in the order of `ids` (ids not found are skipped).
Result<std::vector<EventRecord>> getEvents(Connection& conn, const std::vector<std::int64_t>& ids);

// The stored ids of events by the hub's keys (FailureEvent::key): a view that mirrors the hub's
// open events learns the ids the writer gave them; a key whose event another loomd stored first
// names that row. Keys not stored (yet) are absent.
Result<std::map<std::string, std::int64_t>> eventIdsByKey(Connection& conn,
                                                          const std::vector<std::string>& keys);

// Acknowledges an event (open or closed). The first acknowledgement stays: acknowledging an
// acknowledged event returns it unchanged. NotFound for an unknown id.
Result<EventRecord> ackEvent(Connection& conn, std::int64_t id, const std::string& actor,
                             const std::string& comment);

// Closes an open event by hand (closed_by = actor). NotFound for an unknown id; Conflict when
// the event is already closed (the message says by whom and when).
Result<EventRecord> closeEventByHand(Connection& conn, std::int64_t id, const std::string& actor,
                                     const std::string& reason);

// Every open telemetry event (oldest first), for a loomd restoring its detection state at start.
Result<std::vector<EventRecord>> listOpenTelemetryEvents(Connection& conn);

// What Alertmanager is told (backend/alerting.hpp): every open event, and every event closed
// at or after `closedSinceMs` that was ever open (closed_at > opened_at: a rack transition is
// written closed and never alerts), oldest first by id. At most `limit` rows (1..100,000; the
// open ones first, so a flood of closes never hides an open event).
Result<std::vector<EventRecord>> listAlertEvents(Connection& conn, std::int64_t closedSinceMs,
                                                 int limit = 50'000);

struct EventFilter {
    // location matches the event's location or its rack (a rack name lists the rack's events).
    std::optional<std::string> severity, kind, location, rack, zone, source;
    // host: the events of a host and what is in it — the host itself (host_quarantined), its
    // GPUs and NICs ("<host>-..."), and the links with an end on it ("...--<host>-nic...").
    std::optional<std::string> host;
    std::optional<std::int64_t> sinceMs, untilMs;  // on opened_at: since <= opened_at < until
    std::optional<bool> open;
    std::optional<bool> acknowledged;
    int limit = 500;                  // 1..5000
    std::optional<std::int64_t> cursor;  // nextCursor of the previous page
};
struct EventPage {
    std::vector<EventRecord> items;  // newest first (id descending)
    std::optional<std::int64_t> nextCursor;
};
Result<EventPage> listEvents(Connection& conn, const EventFilter& filter);
// How many events the filter matches (limit and cursor ignored): a rack's or a host's open
// events as loomd counts them once (issue 39 item 2), the number the API, loomctl, the console
// and the web show beside the list that the same filter lists.
Result<std::int64_t> countEvents(Connection& conn, const EventFilter& filter);

struct RollupRecord {
    std::int64_t minuteMs = 0;
    std::string scope;  // rack | switch
    std::string name;
    std::optional<double> utilAvg, utilMax, tempAvg, tempMax, powerAvg;
    int gpusReporting = 0, gpusUnhealthy = 0;
    double errors = 0, discards = 0, pfcPause = 0;
    int portsDown = 0;
};
// One COPY for all rows (one minute of the cluster: ~3,300 rows on the 24k cluster). A minute
// already stored for a (scope, name) makes the whole call fail with Conflict. With a fence
// (the leader's token, leader.hpp), nothing is written unless that term is still current
// (Conflict; fencedOut() is true).
Result<void> insertRollups(Connection& conn, const std::vector<RollupRecord>& rows,
                           const std::optional<Fence>& fence = std::nullopt);
// Rows of one scope/name (empty name: all) with sinceMs <= minute < untilMs, oldest first.
// Limit: 10,000 rows.
Result<std::vector<RollupRecord>> listRollups(Connection& conn, const std::string& scope,
                                              const std::string& name, std::int64_t sinceMs,
                                              std::int64_t untilMs);

// "2026-11-22T08:10:00.123Z" <-> epoch ms (helpers shared with the API layer).
std::string isoTimeMs(std::int64_t ms);
std::optional<std::int64_t> parseIsoTimeMs(std::string_view s);

}  // namespace loom::db
