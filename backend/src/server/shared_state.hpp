// Server::Impl: the state every session of one loomd shares (the Beast examples' shared_state):
// configuration, router, database pool, token cache, metrics, the stream's topic state and
// the list of WebSocket clients. Sessions hold a reference; Server joins every I/O thread
// before it is destroyed, so no session outlives it.
#pragma once

#include "db_pool.hpp"
#include "metrics.hpp"

#include "loom/backend/server.hpp"
#include "loom/db/live_states.hpp"
#include "loom/provisioning/link_service.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace loom::backend {

namespace net = boost::asio;

// A queued stream message. Data frames (packed-array snapshots and deltas) may be dropped and
// replaced by a fresh snapshot for a slow client; everything else is delivered in order.
struct StreamFrame {
    std::shared_ptr<const std::string> text;
    std::string topic;
    bool data = false;
    // For data frames: the self-contained alternative (a snapshot of the same tick) sent to
    // a client that had to drop frames; null when `text` already is one.
    std::shared_ptr<const std::string> snapshot;
};

class WsClient {
public:
    virtual ~WsClient() = default;
    // Thread-safe: posts to the client's strand.
    virtual void deliver(StreamFrame frame) = 0;
    virtual void close(const std::string& reason) = 0;
    // Called by the tick under streamBaseMutex (subscriptions change under it too).
    virtual bool wants(const std::string& topic) const = 0;
};

// The token check cache: secret hash -> principal for kTtl, so a request costs no extra query;
// revocations invalidate it at once on this loomd (and within the TTL elsewhere). While the
// database is unreachable, an answer up to kStaleGrace old still holds (telemetry ingest and
// the live views go on through an outage; no revocation can be committed meanwhile).
struct AuthCache {
    static constexpr std::chrono::seconds kTtl{10};
    static constexpr std::chrono::seconds kStaleGrace{600};
    struct Entry {
        Principal principal;
        bool valid = false;
        std::chrono::steady_clock::time_point at;
    };
    std::mutex mutex;
    std::unordered_map<std::string, Entry> entries;
    std::set<std::string> used;  // token names used since the last last_used_at flush
};

struct Server::Impl {
    Impl(ServerConfig config, db::Database database);

    ServerConfig config;
    db::Database database;
    Router router;
    Metrics metrics;
    AuthCache auth;
    std::atomic<std::size_t> bodyBytesInFlight{0};  // ServerConfig::maxBodyBytesInFlight
    std::unique_ptr<DbPool> pool;
    // One connection for background DDL: the name search indexes that a bulk apply leaves to
    // after its commit are built here, off the request path (buildNameIndexesLater).
    std::unique_ptr<DbPool> maintenance;
    std::atomic<bool> nameIndexesQueued{false};
    std::unique_ptr<Services> services;

    net::io_context ioc;
    std::optional<net::ssl::context> ssl;
    std::optional<net::ip::tcp::acceptor> acceptor;
    std::vector<std::thread> threads;
    std::uint16_t boundPort = 0;
    std::atomic<bool> stopping{false};
    std::mutex stopMutex;
    bool stopped = false;

    // Stream state.
    std::vector<std::string> dataTopics;
    TopicSource topicSource;
    // seq starts at the process's start time in microseconds since the epoch, so a loomd that
    // restarted (or another loomd) never reuses a seq a client saw: a `resumeFrom` from before
    // this process is below seqStart and gets a resync, never a wrong replay.
    const std::uint64_t seqStart = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
    std::atomic<std::uint64_t> seq{seqStart};
    std::mutex clientsMutex;
    std::vector<std::weak_ptr<WsClient>> clients;
    // The `events` topic's own sequence (issue 39 item 2): every events message carries
    // `eventSeq`, one more than the last, and hello the current value; a client that sees a
    // number skipped missed an event message and re-reads the open events. Stamped and
    // delivered under publishOrderMutex, so every client receives them in number order. A
    // LISTEN connection that comes back skips a number (what peers published meanwhile was
    // not heard) with an `eventsResync` message.
    std::mutex publishOrderMutex;
    std::uint64_t eventSeq = 0;  // under publishOrderMutex
    std::uint64_t currentEventSeq() {
        std::lock_guard lock(publishOrderMutex);
        return eventSeq;
    }
    std::mutex replayMutex;
    std::deque<std::pair<std::uint64_t, StreamFrame>> replay;  // non-data messages by seq
    std::size_t replayBytes = 0;  // text bytes held by `replay` (at most kMaxReplayBytes)
    std::uint64_t replayEvicted = seqStart;  // highest seq dropped from `replay`
    // The base of each data topic's next delta: what the last tick published (or, before
    // any tick, what the first subscriber was sent). A subscriber's snapshot is this base,
    // taken under streamBaseMutex together with its subscription, and the tick diffs,
    // advances the base and picks its recipients under the same lock: a client gets either
    // the old base and the delta, or the new base and no delta, never a gap.
    std::mutex streamBaseMutex;
    std::map<std::string, std::vector<std::uint8_t>> previous;  // under streamBaseMutex
    std::optional<net::steady_timer> tickTimer;

    // Shared inventory-derived state (Services).
    mutable std::mutex stateMutex;
    std::shared_ptr<const HallLayout> layout;
    std::shared_ptr<const inventory::Inventory> inventory;
    std::atomic<std::int64_t> layoutVersion{0};
    TelemetryHub* hub = nullptr;
    std::function<bool()> isLeader;
    std::function<void(const std::string&, const std::string&)> peerPublisher;
    std::function<Result<void>(db::Connection&)> readyCheck;
    std::vector<std::function<void()>> inventoryHooks;  // under stateMutex
    // Services::onPublish: per topic, called by publishLocal. Replaced whole on registration
    // (copy on write), so publishLocal takes the list under publishHooksMutex and calls the
    // hooks outside it: publishers do not queue behind each other's hooks, and a hook may
    // publish.
    using PublishHooks =
        std::vector<std::pair<std::string, std::function<void(const nlohmann::json&)>>>;
    std::mutex publishHooksMutex;
    std::shared_ptr<const PublishHooks> publishHooks = std::make_shared<const PublishHooks>();
    // Who owns each link, indexed like `inventory`'s links.
    std::shared_ptr<const provisioning::LinkOwners> linkOwners;  // under stateMutex
    std::atomic<bool> liveLoaded{false};
    // Live reload, coalesced: at most one runs; requests meanwhile make it run once more.
    // A pending request is a state refresh (db/live_states.hpp: states of the rows only) unless
    // one of them asked for the whole snapshot (an apply, a reconnect, a failed refresh).
    std::mutex reloadMutex;
    bool reloadRunning = false, reloadPending = false;  // under reloadMutex
    bool reloadFull = true;                              // under reloadMutex
    std::int64_t generation = -1;  // inventory_state.generation of `inventory` (reload thread)
    // The last state read's snapshot horizon (db::StateRefresh::snapshotXmin): the next read
    // takes only the rows written since; -1 after a full load. A full state read every 5 min
    // (reload thread).
    std::int64_t stateXmin = -1;
    std::chrono::steady_clock::time_point lastFullStateRead{};
    db::StateNameIndex stateNames;         // rows by name of `inventory`'s lineage (reload thread)
    std::atomic<bool> reloadRetry{false};  // a reload failed: the tick tries again
    std::function<bool()> peerConnected;   // LISTEN connection up (a reconnect reloads)
    bool peerWasConnected = true;          // tick strand only
    std::shared_ptr<std::function<void()>> flushLoop;
    std::mutex metricsSourcesMutex;
    std::vector<std::function<void(std::string&)>> metricsSources;

    std::uint64_t nextSeq() { return seq.fetch_add(1) + 1; }

    // Stream: stamps seq, records for replay, sends to the local clients of `topic`.
    void publishLocal(const std::string& topic, nlohmann::json message);
    void broadcast(const StreamFrame& frame);
    std::vector<std::shared_ptr<WsClient>> liveClients();
    void addClient(std::shared_ptr<WsClient> c);
    // Frames a resuming client missed (seq > after), or nullopt when they are gone.
    std::optional<std::vector<StreamFrame>> replayAfter(std::uint64_t after);
    // A snapshot frame of a data topic's delta base (read from the source when there is no
    // base yet), or null when the source has none. The caller holds streamBaseMutex.
    std::shared_ptr<const std::string> snapshotBase(const std::string& topic);
    void startTick();
    void tick();
    // full: reload the whole snapshot; otherwise refresh the states of its rows.
    void reloadInventory(bool full = true);
    // Builds the name search indexes if an apply left them unbuilt (db::buildNameIndexes), on
    // the maintenance connection; coalesced: at most one build queued behind the running one.
    // Called by the live-state reload whenever it loads a new generation (start, any apply).
    void buildNameIndexesLater();
    void runReloads(db::Connection* conn);
    // One reload; true when the leader corrected stored link states (reload again).
    bool reloadOnce(db::Connection& conn, bool full);

    // The principal of a bearer secret (cached). Runs on a pool thread.
    Result<Principal> authenticate(db::Connection* conn, std::string_view secret);
    void invalidateAuth();
    void flushTokenUse(db::Connection& conn);
};

// /healthz, /readyz, /metrics (api_system.cpp).
void registerSystemRoutes(Router& router, Server::Impl& s);

// Used by the sessions and the listener.
void launchPlainSession(Server::Impl& s, net::ip::tcp::socket socket);
void launchTlsSession(Server::Impl& s, net::ip::tcp::socket socket);
std::string base64Encode(const std::uint8_t* data, std::size_t n);
std::string packedSnapshot(std::uint64_t seq, const std::string& topic,
                           const std::vector<std::uint8_t>& bytes);

}  // namespace loom::backend
