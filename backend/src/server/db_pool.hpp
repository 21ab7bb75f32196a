// DbPool: a few threads, each owning one PostgreSQL connection, that run the blocking parts of
// request handling (libpq calls) so the I/O threads never wait on the database.
//
// A job gets the thread's connection, or null when the database cannot be reached right now
// (the job then answers 503). A connection that broke is replaced before the next job, at most
// one attempt per second per thread, so a PostgreSQL restart costs a few 503s, not a restart
// of loomd. The queue is bounded (kMaxQueued): beyond it post() refuses and the caller
// answers 503 at once instead of piling up work.
#pragma once

#include "loom/db/database.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::backend {

class DbPool {
public:
    static constexpr std::size_t kMaxQueued = 10000;
    using Job = std::move_only_function<void(db::Connection*)>;

    DbPool(db::Database database, int threads);
    ~DbPool();
    DbPool(const DbPool&) = delete;
    DbPool& operator=(const DbPool&) = delete;

    // False when the queue is full or the pool is stopping (the job is dropped).
    bool post(Job job);
    void stop();

    int size() const { return int(threads_.size()); }
    std::size_t queued() const;
    int busy() const { return busy_.load(); }
    int connected() const { return connected_.load(); }
    std::uint64_t connectFailures() const { return connectFailures_.load(); }
    std::uint64_t jobsRun() const { return jobsRun_.load(); }
    const db::Database& database() const { return database_; }

private:
    void run(int index);

    db::Database database_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Job> queue_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
    std::atomic<int> busy_{0}, connected_{0};
    std::atomic<std::uint64_t> connectFailures_{0}, jobsRun_{0};
};

// Runs fn(connection*) -> T on the pool and completes with T on the caller's executor (the
// session's strand), e.g. `T r = co_await runOnPool(pool, fn, use_awaitable)`. When the pool
// refuses the job, completes with onRefused().
template <class T, class Fn, class Refused, class CompletionToken>
auto runOnPool(DbPool& pool, Fn fn, Refused onRefused, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(T)>(
        [&pool](auto handler, Fn fn, Refused onRefused) {
            auto ex = boost::asio::get_associated_executor(handler);
            auto work = boost::asio::make_work_guard(ex);
            // The handler is shared between the job and the refusal path; exactly one runs it.
            auto shared = std::make_shared<decltype(handler)>(std::move(handler));
            bool ok = pool.post([fn = std::move(fn), shared, work = std::move(work)](
                                    db::Connection* c) mutable {
                T result = fn(c);
                auto ex2 = work.get_executor();
                boost::asio::post(ex2, [shared, result = std::move(result)]() mutable {
                    (*shared)(std::move(result));
                });
                work.reset();
            });
            if (!ok) {
                boost::asio::post(ex, [shared, r = onRefused()]() mutable {
                    (*shared)(std::move(r));
                });
            }
        },
        token, std::move(fn), std::move(onRefused));
}

}  // namespace loom::backend
