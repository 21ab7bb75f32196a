// Lemon strikes (migration 0036; the rule is jobs/lemon.hpp): the straggler service records a
// strike when a straggler event opens on a host or GPU cause, or a GPU fails in a running job;
// loomd counts them per host and GPU over the window (GET /api/v1/lemons, describe host, the
// job detail, placement).
//
//   recordStrikes(conn, jobs::lemonStrikes("llama", suspect, host, nowMs));
//   auto s = strikesSince(conn, nowMs - jobs::kLemonWindowMs);       // every strike in it
//   auto h = strikesOnHosts(conn, {"z1-r001-h0"}, nowMs - window);   // a job's or a host's
//   auto r = strikesInRack(conn, "z1-r001", nowMs - window);           // a rack's hosts'
//   jobs::countLemons(*s, nowMs);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/db/database.hpp"
#include "loom/inventory/error.hpp"
#include "loom/jobs/lemon.hpp"

namespace loom::db {

// One row per (entity, job): a second strike of the same job keeps the newest time and cause.
Result<void> recordStrikes(Connection& conn, const std::vector<jobs::LemonStrike>& strikes);
// Every strike at or after `sinceMs` (Unix ms), oldest first; at most `limit`.
Result<std::vector<jobs::LemonStrike>> strikesSince(Connection& conn, std::int64_t sinceMs,
                                                    int limit = 100'000);
// The strikes on these hosts and their GPUs at or after `sinceMs`.
Result<std::vector<jobs::LemonStrike>> strikesOnHosts(Connection& conn,
                                                      const std::vector<std::string>& hosts,
                                                      std::int64_t sinceMs);
// The strikes on the hosts of this rack (by name) and their GPUs at or after `sinceMs`; none for
// a rack that does not exist.
Result<std::vector<jobs::LemonStrike>> strikesInRack(Connection& conn, const std::string& rack,
                                                     std::int64_t sinceMs);
// Deletes strikes older than `beforeMs`; how many.
Result<int> pruneStrikes(Connection& conn, std::int64_t beforeMs);

}  // namespace loom::db
