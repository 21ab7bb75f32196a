#include "loom/db/leader.hpp"

#include "fence.hpp"
#include "loom/db/native.hpp"

#include <pqxx/pqxx>

#include <unistd.h>

#include <iostream>
#include <optional>
#include <random>

namespace loom::db {
namespace {

std::string makeHolderId() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::random_device rd;
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%08x%08x", rd(), rd());
    return std::string(host) + ":" + std::to_string(getpid()) + ":" + suffix;
}

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

// The holder's lease session is identified by pid and start time (a pid alone may be reused):
// a lease whose session is gone is free at once, without waiting for its expiry.
constexpr const char* kAcquire =
    "UPDATE leader_leases l SET holder = $2, epoch = l.epoch + 1, "
    " holder_pid = pg_backend_pid(), "
    " holder_backend_start = (SELECT backend_start FROM pg_stat_activity "
    "                         WHERE pid = pg_backend_pid()), "
    " acquired_at = now(), renewed_at = now(), expires_at = now() + make_interval(secs => $3) "
    "WHERE l.name = $1 AND (l.expires_at <= now() OR l.holder = $2 OR NOT EXISTS ("
    " SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.holder_pid "
    " AND a.backend_start = l.holder_backend_start)) "
    "RETURNING l.epoch";

constexpr const char* kRenew =
    "UPDATE leader_leases SET renewed_at = now(), expires_at = now() + make_interval(secs => $4), "
    " holder_pid = pg_backend_pid(), "
    " holder_backend_start = (SELECT backend_start FROM pg_stat_activity "
    "                         WHERE pid = pg_backend_pid()) "
    "WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > now() RETURNING epoch";

}  // namespace

bool fencedOut(const Error& e) {
    return e.code == Errc::Conflict && e.message.starts_with("leadership lost: ");
}

void checkFence(pqxx::work& tx, const Fence& fence) {
    // A leader stopped between this check and its COMMIT would hold the row lock and block the
    // takeover: PostgreSQL ends such a session after a few idle seconds.
    tx.exec("SET LOCAL idle_in_transaction_session_timeout = '5s'");
    auto r = tx.exec_params(
        "SELECT 1 FROM leader_leases WHERE name = $1 AND holder = $2 AND epoch = $3 "
        "AND expires_at > clock_timestamp() FOR SHARE",
        fence.lease, fence.holder, fence.epoch);
    if (r.empty()) {
        auto now = tx.exec_params("SELECT epoch, holder FROM leader_leases WHERE name = $1",
                                  fence.lease);
        std::string who = now.empty() ? "nobody"
                                      : std::string(now[0][1].c_str()) + " (epoch " +
                                            now[0][0].c_str() + ")";
        throw FencedOut("leadership lost: lease '" + fence.lease + "' epoch " +
                        std::to_string(fence.epoch) + " is over (now held by " + who +
                        "); this leader's write is refused");
    }
}

LeaderLock::LeaderLock(Database database, LeaseOptions options)
    : database_(std::move(database)), options_(std::move(options)), holder_(makeHolderId()) {
    thread_ = std::thread([this] { run(); });
}

LeaderLock::~LeaderLock() { stop(); }

bool LeaderLock::isLeader() const {
    std::lock_guard lock(mutex_);
    return epoch_ != 0 && std::chrono::steady_clock::now() < validUntil_;
}

std::optional<Fence> LeaderLock::fence() const {
    std::lock_guard lock(mutex_);
    if (epoch_ == 0 || std::chrono::steady_clock::now() >= validUntil_) return std::nullopt;
    return Fence{options_.name, holder_, epoch_};
}

void LeaderLock::stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    epoch_ = 0;
}

void LeaderLock::run() {
    using clock = std::chrono::steady_clock;
    std::optional<Connection> conn;
    auto sleepInterruptibly = [this] {
        auto until = clock::now() + options_.renew;
        while (!stopping_ && clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    };
    // Our clock's view of the lease ends a renew interval before the database's: the renewal
    // is timed from before the statement was sent, and a margin covers clock-rate drift.
    const auto localTtl = options_.ttl - options_.renew;
    while (!stopping_) {
        try {
            if (!conn) {
                auto c = database_.connect();
                if (!c) {
                    sleepInterruptibly();
                    continue;
                }
                conn.emplace(std::move(*c));
                pqxx::nontransaction tx(native(*conn));
                // A renewal never waits long behind a writer's fencing lock.
                tx.exec("SET lock_timeout = '2s'");
                tx.exec_params("SELECT set_config('application_name', $1, false)",
                               "loom leader " + holder_);
                tx.exec_params("INSERT INTO leader_leases (name) VALUES ($1) ON CONFLICT DO NOTHING",
                               options_.name);
            }
            std::int64_t epoch;
            {
                std::lock_guard lock(mutex_);
                epoch = epoch_;
            }
            const auto sentAt = clock::now();
            pqxx::nontransaction tx(native(*conn));
            if (epoch != 0) {
                auto r = tx.exec_params(kRenew, options_.name, holder_, epoch, seconds(options_.ttl));
                std::lock_guard lock(mutex_);
                if (r.empty()) {
                    std::cerr << "loom: leader: lease '" << options_.name << "' epoch " << epoch
                              << " was lost\n";
                    epoch_ = 0;
                } else {
                    validUntil_ = sentAt + localTtl;
                }
            } else {
                auto r = tx.exec_params(kAcquire, options_.name, holder_, seconds(options_.ttl));
                if (!r.empty()) {
                    std::lock_guard lock(mutex_);
                    epoch_ = r[0][0].as<std::int64_t>();
                    validUntil_ = sentAt + localTtl;
                    std::cerr << "loom: leader: took lease '" << options_.name << "' (epoch "
                              << epoch_ << ")\n";
                }
            }
        } catch (const std::exception& e) {
            // Keep the term until our clock ends it: the database may be back before that.
            std::cerr << "loom: leader: lease '" << options_.name << "': " << e.what() << "\n";
            conn.reset();
        }
        sleepInterruptibly();
    }
    // Hand over at once instead of letting the others wait for the expiry.
    std::int64_t epoch;
    {
        std::lock_guard lock(mutex_);
        epoch = epoch_;
        epoch_ = 0;
    }
    if (conn && epoch != 0) {
        try {
            pqxx::nontransaction tx(native(*conn));
            tx.exec_params("UPDATE leader_leases SET expires_at = now() "
                           "WHERE name = $1 AND holder = $2 AND epoch = $3",
                           options_.name, holder_, epoch);
        } catch (const std::exception&) {
            // The session is gone: the others see that too.
        }
    }
    conn.reset();
}

}  // namespace loom::db
