// Notifier: PostgreSQL LISTEN/NOTIFY between loomd processes on one database.
//
// One dedicated connection on its own thread LISTENs on a channel and sends the NOTIFYs queued
// by publish(); messages from other sessions reach the handler on that thread, the process's
// own messages are skipped (by backend pid). A lost connection is re-established every second
// until it is back; messages published while it is down are kept (at most kMaxQueued, oldest
// dropped) and sent after the reconnect. NOTIFY payloads are limited to 7,900 bytes; longer
// ones are refused by publish().
//
//   Notifier n(database, "loom_events", [](std::string_view topic, std::string_view json) {...});
//   n.publish("events", R"({"type":"event",...})");
#pragma once

#include "loom/db/database.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace loom::db {

// The channel loomd's stream fan-out uses, and the topic of the NOTIFY that every transaction
// changing live state sends on it (live_notify.hpp): "live\n{\"source\": ...}".
inline constexpr std::string_view kStreamChannel = "loom_stream";
inline constexpr std::string_view kLiveTopic = "live";

class Notifier {
public:
    static constexpr std::size_t kMaxQueued = 10000;
    static constexpr std::size_t kMaxPayload = 7900;
    using Handler = std::function<void(std::string_view topic, std::string_view payload)>;

    Notifier(Database database, std::string channel, Handler handler);
    ~Notifier();
    Notifier(const Notifier&) = delete;
    Notifier& operator=(const Notifier&) = delete;

    // Queues one message for the other listeners; false when too large or stopping.
    bool publish(std::string_view topic, std::string_view payload);
    bool connected() const { return connected_.load(); }
    std::uint64_t received() const { return received_.load(); }
    std::uint64_t sent() const { return sent_.load(); }
    void stop();

private:
    void run();

    Database database_;
    std::string channel_;
    Handler handler_;
    std::mutex mutex_;
    std::deque<std::string> outbox_;
    std::atomic<bool> stopping_{false}, connected_{false};
    std::atomic<std::uint64_t> received_{0}, sent_{0};
    std::thread thread_;
};

}  // namespace loom::db
