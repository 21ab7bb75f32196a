// LeaderLock: one loomd of many on the same database runs the singleton loops (simulator,
// reconciler, rollups). Leadership is a lease row (leader_leases, migration 0008): the holder
// renews it every `renew` (default 1 s) for `ttl` (default 5 s) on a dedicated connection;
// another loomd takes it when it has expired, or at once when the holder's lease session is
// gone (its process was killed: PostgreSQL ends the session). A holder that is stopped
// (SIGSTOP, a long GC-like stall, a hung disk) keeps its session but stops renewing, so the
// lease expires and is taken over within ttl + renew.
//
// Every takeover increments the lease's epoch: a fencing token. A stalled leader that resumes
// believes nothing (isLeader() is false once its own clock says the lease ran out), and a write
// it had in flight is refused by the database: each leader-only transaction calls
// checkFence() (db/src/fence.hpp) just before it commits, which locks the lease row and checks
// holder, epoch and expiry.
//
//   LeaderLock leader(database);
//   if (auto fence = leader.fence()) repo.commit(batch, *fence);
#pragma once

#include "loom/db/database.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace loom::db {

// What a leader-only write carries: the database refuses it unless the lease `lease` is still
// held by `holder` at `epoch`.
struct Fence {
    std::string lease;
    std::string holder;
    std::int64_t epoch = 0;
};

// True for the Conflict a fenced commit returns: the writer's term is over (another loomd
// leads now); the write was refused whole and must not be retried under the old token.
bool fencedOut(const Error& e);

struct LeaseOptions {
    std::string name = "loomd";
    std::chrono::milliseconds ttl{5000};
    std::chrono::milliseconds renew{1000};  // also the retry interval of a follower
};

class LeaderLock {
public:
    explicit LeaderLock(Database database, LeaseOptions options = {});
    ~LeaderLock();
    LeaderLock(const LeaderLock&) = delete;
    LeaderLock& operator=(const LeaderLock&) = delete;

    // True while the lease is ours by our own clock: renewed less than ttl - renew ago.
    bool isLeader() const;
    // The fencing token of the current term; nullopt when not leader.
    std::optional<Fence> fence() const;
    const std::string& holder() const { return holder_; }
    void stop();  // gives the lease up (expires it) and ends the session

private:
    void run();

    Database database_;
    LeaseOptions options_;
    std::string holder_;  // host:pid:random, unique per LeaderLock
    mutable std::mutex mutex_;
    std::int64_t epoch_ = 0;
    std::chrono::steady_clock::time_point validUntil_{};
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace loom::db
