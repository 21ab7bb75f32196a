// LeaderLock: one loomd of many on the same database runs the singleton loops (simulator,
// reconciler, rollups). The leader holds a session-level pg_try_advisory_lock on a dedicated
// connection; when its process dies, PostgreSQL ends the session and releases the lock, and
// another loomd takes it on its next attempt (every `retry`, default 2 s). The holder checks its
// session at the same interval and steps down at once when the connection is gone.
//
//   LeaderLock leader(database, kLoomLeaderKey);
//   if (leader.isLeader()) simulator.step();
#pragma once

#include "loom/db/database.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace loom::db {

inline constexpr std::int64_t kLoomLeaderKey = 0x4c4f4f4d4c454144;  // "LOOMLEAD"

class LeaderLock {
public:
    LeaderLock(Database database, std::int64_t key = kLoomLeaderKey,
               std::chrono::milliseconds retry = std::chrono::seconds(2));
    ~LeaderLock();
    LeaderLock(const LeaderLock&) = delete;
    LeaderLock& operator=(const LeaderLock&) = delete;

    bool isLeader() const { return leader_.load(); }
    void stop();  // releases the lock (by closing the session)

private:
    void run();

    Database database_;
    std::int64_t key_;
    std::chrono::milliseconds retry_;
    std::atomic<bool> leader_{false}, stopping_{false};
    std::thread thread_;
};

}  // namespace loom::db
