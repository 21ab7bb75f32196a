#include "loom/db/notify.hpp"

#include "loom/db/native.hpp"

#include <pqxx/pqxx>

#include <chrono>

namespace loom::db {

namespace {

// Frames are "<topic>\n<payload>" so one channel carries every topic.
class Receiver final : public pqxx::notification_receiver {
public:
    Receiver(pqxx::connection_base& c, const std::string& channel, int selfPid,
             const Notifier::Handler& h, std::atomic<std::uint64_t>& received)
        : pqxx::notification_receiver(c, channel), selfPid_(selfPid), handler_(h),
          received_(received) {}
    void operator()(const std::string& payload, int backendPid) override {
        if (backendPid == selfPid_) return;
        auto nl = payload.find('\n');
        if (nl == std::string::npos) return;
        received_.fetch_add(1);
        handler_(std::string_view(payload).substr(0, nl), std::string_view(payload).substr(nl + 1));
    }

private:
    int selfPid_;
    const Notifier::Handler& handler_;
    std::atomic<std::uint64_t>& received_;
};

}  // namespace

Notifier::Notifier(Database database, std::string channel, Handler handler)
    : database_(std::move(database)), channel_(std::move(channel)), handler_(std::move(handler)) {
    thread_ = std::thread([this] { run(); });
}

Notifier::~Notifier() { stop(); }

void Notifier::stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
}

bool Notifier::publish(std::string_view topic, std::string_view payload) {
    if (stopping_ || topic.size() + payload.size() + 1 > kMaxPayload) return false;
    std::string frame;
    frame.reserve(topic.size() + payload.size() + 1);
    frame += topic;
    frame += '\n';
    frame += payload;
    std::lock_guard lock(mutex_);
    if (outbox_.size() >= kMaxQueued) outbox_.pop_front();
    outbox_.push_back(std::move(frame));
    return true;
}

void Notifier::run() {
    while (!stopping_) {
        auto c = database_.connect();
        if (!c) {
            connected_ = false;
            std::this_thread::sleep_for(std::chrono::seconds(1));
            continue;
        }
        try {
            auto& conn = native(*c);
            Receiver receiver(conn, channel_, conn.backendpid(), handler_, received_);
            connected_ = true;
            while (!stopping_) {
                std::deque<std::string> batch;
                {
                    std::lock_guard lock(mutex_);
                    batch.swap(outbox_);
                }
                while (!batch.empty()) {
                    try {
                        pqxx::nontransaction tx(conn);
                        tx.exec_params("SELECT pg_notify($1, $2)", channel_, batch.front());
                        batch.pop_front();
                        sent_.fetch_add(1);
                    } catch (...) {
                        // Put the unsent ones back in front; the reconnect sends them.
                        std::lock_guard lock(mutex_);
                        for (auto it = batch.rbegin(); it != batch.rend(); ++it)
                            outbox_.push_front(std::move(*it));
                        throw;
                    }
                }
                // Wakes on a notification or after 50 ms to send what publish() queued.
                conn.await_notification(0, 50000);
                if (!conn.is_open()) throw pqxx::broken_connection("connection closed");
            }
        } catch (const std::exception&) {
            connected_ = false;
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
    }
    connected_ = false;
}

}  // namespace loom::db
