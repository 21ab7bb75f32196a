#include "loom/db/leader.hpp"

#include "loom/db/native.hpp"

#include <pqxx/pqxx>

#include <optional>

namespace loom::db {

LeaderLock::LeaderLock(Database database, std::int64_t key, std::chrono::milliseconds retry)
    : database_(std::move(database)), key_(key), retry_(retry) {
    thread_ = std::thread([this] { run(); });
}

LeaderLock::~LeaderLock() { stop(); }

void LeaderLock::stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    leader_ = false;
}

void LeaderLock::run() {
    std::optional<Connection> conn;
    auto sleepInterruptibly = [this] {
        auto until = std::chrono::steady_clock::now() + retry_;
        while (!stopping_ && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    };
    while (!stopping_) {
        try {
            if (!conn) {
                auto c = database_.connect();
                if (!c) {
                    leader_ = false;
                    sleepInterruptibly();
                    continue;
                }
                conn.emplace(std::move(*c));
            }
            pqxx::nontransaction tx(native(*conn));
            if (!leader_) {
                auto r = tx.exec_params("SELECT pg_try_advisory_lock($1)", key_);
                leader_ = r[0][0].as<bool>();
            } else {
                // Still holding it? (the session is the lock)
                tx.exec("SELECT 1");
            }
        } catch (const std::exception&) {
            leader_ = false;
            conn.reset();
        }
        sleepInterruptibly();
    }
    leader_ = false;
    conn.reset();  // closing the session releases the lock
}

}  // namespace loom::db
