// The fencing check of leader-only transactions (see leader.hpp). Inside the writer's
// transaction, just before commit: locks the lease row FOR SHARE (a takeover waits for our
// commit, or we see its new epoch) and checks that the lease is still ours by the database
// clock. Throws FencedOut, which the caller turns into a Conflict.
#pragma once

#include "loom/db/leader.hpp"

#include <pqxx/pqxx>

#include <stdexcept>
#include <string>

namespace loom::db {

struct FencedOut : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void checkFence(pqxx::work& tx, const Fence& fence);

}  // namespace loom::db
