#include "db_pool.hpp"

#include "loom/db/native.hpp"

#include <spdlog/spdlog.h>

#include <optional>

namespace loom::backend {

DbPool::DbPool(db::Database database, int threads) : database_(std::move(database)) {
    if (threads < 1) threads = 1;
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this, i] { run(i); });
}

DbPool::~DbPool() { stop(); }

void DbPool::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && threads_.empty()) return;
        stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    // Jobs still queued complete with no connection so their callers are not left waiting.
    std::deque<Job> rest;
    {
        std::lock_guard lock(mutex_);
        rest.swap(queue_);
    }
    for (auto& j : rest) j(nullptr);
}

bool DbPool::post(Job job) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || queue_.size() >= kMaxQueued) return false;
        queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
}

std::size_t DbPool::queued() const {
    std::lock_guard lock(mutex_);
    return queue_.size();
}

void DbPool::run(int index) {
    std::optional<db::Connection> conn;
    auto lastAttempt = std::chrono::steady_clock::time_point{};
    bool wasConnected = false;
    for (;;) {
        Job job;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_) break;
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        // Replace a connection that broke (PostgreSQL restarted, network cut) before the job.
        if (conn && !db::native(*conn).is_open()) {
            conn.reset();
            if (wasConnected) connected_.fetch_sub(1);
            wasConnected = false;
        }
        if (!conn) {
            auto now = std::chrono::steady_clock::now();
            if (now - lastAttempt >= std::chrono::seconds(1) ||
                lastAttempt == std::chrono::steady_clock::time_point{}) {
                lastAttempt = now;
                auto c = database_.connect();
                if (c) {
                    conn.emplace(std::move(*c));
                    connected_.fetch_add(1);
                    wasConnected = true;
                } else {
                    connectFailures_.fetch_add(1);
                    spdlog::warn("db pool thread {}: {}", index, c.error().message);
                }
            }
        }
        busy_.fetch_add(1);
        try {
            job(conn ? &*conn : nullptr);
        } catch (const std::exception& e) {
            // Jobs catch their own failures; this is a last line so a thread never dies.
            spdlog::error("db pool thread {}: job threw: {}", index, e.what());
        }
        busy_.fetch_sub(1);
        jobsRun_.fetch_add(1);
    }
    if (wasConnected) connected_.fetch_sub(1);
}

}  // namespace loom::backend
