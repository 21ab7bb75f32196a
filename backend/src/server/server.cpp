#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>

#include "loom/backend/auth.hpp"
#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/notify.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/db/token_repo.hpp"
#include "loom/inventory/unix_time.hpp"
#include "loom/telemetry/hall_layout.hpp"
#include "shared_state.hpp"

namespace loom::backend {

namespace beast = boost::beast;

namespace {

// Services as loomd's handlers and loops see it; everything forwards to Server::Impl.
class ServicesImpl final : public Services {
public:
    explicit ServicesImpl(Server::Impl& s) : s_(s) {}

    void publish(std::string_view topic, nlohmann::json message) override {
        std::string t(topic);
        // A revocation takes effect here before the response goes out, not when this loomd's
        // own NOTIFY comes back (peers drop their caches on that NOTIFY).
        if (t == "tokens") s_.invalidateAuth();
        if (s_.peerPublisher) {
            auto text = message.dump();
            if (text.size() <= 7000) s_.peerPublisher(t, text);
        }
        s_.publishLocal(t, std::move(message));
    }
    void publishLocal(std::string_view topic, nlohmann::json message) override {
        s_.publishLocal(std::string(topic), std::move(message));
    }
    void inventoryChanged(Change what) override {
        s_.reloadInventory(what == Change::Structure);
    }
    bool liveReady() const override { return s_.liveLoaded.load(); }
    std::vector<std::string> linksOfRack(std::string_view rack) const override {
        std::shared_ptr<const inventory::Inventory> inv;
        std::shared_ptr<const provisioning::LinkOwners> owners;
        {
            std::lock_guard lock(s_.stateMutex);
            inv = s_.inventory;
            owners = s_.linkOwners;
        }
        std::vector<std::string> out;
        if (!inv || !owners) return out;
        std::int32_t r = -1;
        for (std::size_t i = 0; i < inv->racks.size(); ++i)
            if (inv->racks[i].name == rack) r = static_cast<std::int32_t>(i);
        if (r < 0) return out;
        for (std::size_t i = 0; i < owners->rack.size() && i < inv->links.size(); ++i)
            if (owners->rack[i] == r) out.emplace_back(inv->links[i].name);
        return out;
    }
    void onLiveChange(std::function<void()> hook) override {
        std::lock_guard lock(s_.stateMutex);
        s_.inventoryHooks.push_back(std::move(hook));
    }
    void onPublish(std::string topic, std::function<void(const nlohmann::json&)> hook) override {
        std::lock_guard lock(s_.publishHooksMutex);
        auto hooks = std::make_shared<Server::Impl::PublishHooks>(*s_.publishHooks);
        hooks->emplace_back(std::move(topic), std::move(hook));
        s_.publishHooks = std::move(hooks);
    }
    std::shared_ptr<const HallLayout> layout() const override {
        std::lock_guard lock(s_.stateMutex);
        return s_.layout;
    }
    std::shared_ptr<const inventory::Inventory> inventory() const override {
        std::lock_guard lock(s_.stateMutex);
        return s_.inventory;
    }
    TelemetryHub* hub() override { return s_.hub; }
    bool isLeader() const override { return s_.isLeader ? s_.isLeader() : true; }
    std::string databaseUrl() const override { return s_.database.connectionString(); }
    void addMetricsSource(std::function<void(std::string&)> source) override {
        std::lock_guard lock(s_.metricsSourcesMutex);
        s_.metricsSources.push_back(std::move(source));
    }

private:
    Server::Impl& s_;
};

bool isLoopback(const std::string& host) {
    return host == "127.0.0.1" || host == "::1" || host == "localhost" ||
           host.rfind("127.", 0) == 0;
}

// Errors of accept() that say "out of descriptors or memory": the pending connection stays in
// the backlog, so retrying at once fails again at once (1,100 idle connections at
// `ulimit -n 1024` spun 76 % of a core and wrote 2.3 M log lines in ~6 s).
constexpr std::size_t kReservedDescriptors = 128;
constexpr std::size_t kMaxReplayBytes = std::size_t{32} << 20;

bool outOfResources(const beast::error_code& ec) {
    return ec == net::error::no_descriptors || ec == net::error::no_buffer_space ||
           ec == net::error::no_memory || ec.value() == ENFILE;
}

net::awaitable<void> acceptLoop(Server::Impl& s) {
    using namespace std::chrono_literals;
    net::steady_timer backoff(s.acceptor->get_executor());
    auto pause = 10ms;         // doubles while accept keeps failing, up to 1 s
    std::uint64_t failed = 0;  // accept errors since the last log line
    std::chrono::steady_clock::time_point lastLog{};
    for (;;) {
        beast::error_code ec;
        // Each connection gets its own strand: its coroutine never runs concurrently.
        auto socket = co_await s.acceptor->async_accept(net::make_strand(s.ioc),
                                                        net::redirect_error(net::use_awaitable, ec));
        if (ec) {
            if (s.stopping || ec == net::error::operation_aborted) co_return;
            s.metrics.acceptErrors.fetch_add(1);
            ++failed;
            // One line per 10 s at most, saying how many failed since the last one.
            const auto now = std::chrono::steady_clock::now();
            if (now - lastLog >= 10s) {
                spdlog::warn(
                    "accept: {} ({} failed accepts since the last report; open "
                    "connections: {}; retrying in up to 1 s)",
                    ec.message(), failed, s.metrics.httpConnections.load());
                lastLog = now;
                failed = 0;
            }
            // Out of descriptors: wait for connections to end (their timeouts free them).
            backoff.expires_after(outOfResources(ec) ? pause : 1ms);
            co_await backoff.async_wait(net::redirect_error(net::use_awaitable, ec));
            if (s.stopping) co_return;
            pause = std::min<std::chrono::milliseconds>(pause * 2, 1s);
            continue;
        }
        pause = 10ms;
        if (std::size_t(s.metrics.httpConnections.load()) >= s.config.maxConnections) {
            s.metrics.connectionsRejected.fetch_add(1);
            beast::error_code ignored;
            socket.close(ignored);
            continue;
        }
        beast::error_code ignored;
        socket.set_option(net::ip::tcp::no_delay(true), ignored);
        if (s.ssl)
            launchTlsSession(s, std::move(socket));
        else
            launchPlainSession(s, std::move(socket));
    }
}

}  // namespace


std::string base64Encode(const std::uint8_t* data, std::size_t n) {
    static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned(data[i]) << 16) | (unsigned(data[i + 1]) << 8) | data[i + 2];
        out += tbl[v >> 18];
        out += tbl[(v >> 12) & 63];
        out += tbl[(v >> 6) & 63];
        out += tbl[v & 63];
    }
    if (i < n) {
        unsigned v = unsigned(data[i]) << 16;
        if (i + 1 < n) v |= unsigned(data[i + 1]) << 8;
        out += tbl[v >> 18];
        out += tbl[(v >> 12) & 63];
        out += (i + 1 < n) ? tbl[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::string packedSnapshot(std::uint64_t seq, const std::string& topic,
                           const std::vector<std::uint8_t>& bytes) {
    std::string s = R"({"type":"snapshot","seq":)" + std::to_string(seq) + R"(,"ts":)" +
                    std::to_string(unixMs()) + R"(,"topic":")" +
                    topic + R"(","encoding":"u8","count":)" + std::to_string(bytes.size()) +
                    R"(,"data":")";
    s += base64Encode(bytes.data(), bytes.size());
    s += "\"}";
    return s;
}

Server::Impl::Impl(ServerConfig c, db::Database d)
    : config(std::move(c)), database(std::move(d)), ioc(std::max(1, config.ioThreads)) {}

void Server::Impl::publishLocal(const std::string& topic, nlohmann::json message) {
    std::shared_ptr<const PublishHooks> hooks;
    {
        std::lock_guard lock(publishHooksMutex);
        hooks = publishHooks;
    }
    for (const auto& [t, hook] : *hooks)
        if (t == topic) hook(message);
    // Numbered and handed to the clients' strands in one order (see eventSeq).
    std::lock_guard order(publishOrderMutex);
    if (topic == "events") {
        // A resync says the numbers before it were not all heard: skip one.
        if (message.value("type", "") == "eventsResync") ++eventSeq;
        message["eventSeq"] = ++eventSeq;
    }
    message["seq"] = nextSeq();
    auto seqValue = message["seq"].get<std::uint64_t>();
    StreamFrame f{std::make_shared<const std::string>(message.dump()), topic, false, {}};
    {
        std::lock_guard lock(replayMutex);
        replay.emplace_back(seqValue, f);
        replayBytes += f.text->size();
        // Bounded in bytes too: a job's message carries its hosts (up to ~2.3 MB), and 4,096
        // of them would be gigabytes held for a resume.
        while (replay.size() > config.replayBuffer ||
               (replayBytes > kMaxReplayBytes && replay.size() > 1)) {
            replayEvicted = replay.front().first;
            replayBytes -= replay.front().second.text->size();
            replay.pop_front();
        }
    }
    broadcast(f);
}

std::vector<std::shared_ptr<WsClient>> Server::Impl::liveClients() {
    std::vector<std::shared_ptr<WsClient>> out;
    std::lock_guard lock(clientsMutex);
    std::erase_if(clients, [&](const std::weak_ptr<WsClient>& w) {
        auto c = w.lock();
        if (!c) return true;
        out.push_back(std::move(c));
        return false;
    });
    return out;
}

void Server::Impl::broadcast(const StreamFrame& frame) {
    // Copy the list under the mutex, deliver outside it (each deliver posts to a strand).
    for (auto& c : liveClients())
        if (frame.topic.empty() || c->wants(frame.topic)) c->deliver(frame);
}

void Server::Impl::addClient(std::shared_ptr<WsClient> c) {
    std::lock_guard lock(clientsMutex);
    clients.push_back(c);
}

std::optional<std::vector<StreamFrame>> Server::Impl::replayAfter(std::uint64_t after) {
    std::lock_guard lock(replayMutex);
    // A gap can be replayed only if nothing after `after` has been evicted. (Data frames are
    // never buffered: a resuming client gets fresh snapshots of its data topics instead.)
    // Before what is buffered (or before this process), or after anything this process has
    // published (a seq of another loomd): resync.
    if (after < replayEvicted || after > seq.load()) return std::nullopt;
    std::vector<StreamFrame> out;
    for (auto& [sq, f] : replay)
        if (sq > after) out.push_back(f);
    return out;
}

std::shared_ptr<const std::string> Server::Impl::snapshotBase(const std::string& topic) {
    if (!topicSource) return nullptr;
    auto& base = previous[topic];
    if (base.empty() && !topicSource(topic, base)) return nullptr;
    if (base.empty()) return nullptr;
    return std::make_shared<const std::string>(packedSnapshot(nextSeq(), topic, base));
}

namespace {
// A free function, not a capturing lambda: a coroutine lambda's captures die with the lambda.
net::awaitable<void> tickLoop(Server::Impl& s) {
    while (!s.stopping) {
        s.tickTimer->expires_after(s.config.streamInterval);
        beast::error_code ec;
        co_await s.tickTimer->async_wait(net::redirect_error(net::use_awaitable, ec));
        if (s.stopping) break;
        s.tick();
    }
}
}  // namespace

void Server::Impl::startTick() {
    tickTimer.emplace(net::make_strand(ioc));
    net::co_spawn(tickTimer->get_executor(), tickLoop(*this), [](std::exception_ptr e) {
        if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) {
                spdlog::error("stream tick stopped: {}", x.what());
            }
    });
}

void Server::Impl::tick() {
    auto t0 = std::chrono::steady_clock::now();
    metrics.streamTicks.fetch_add(1);
    // A failed reload is retried; so is one after the LISTEN connection comes back, since
    // changes NOTIFYed while it was down were never heard.
    bool retry = reloadRetry.exchange(false);
    if (peerConnected) {
        const bool up = peerConnected();
        if (up && !peerWasConnected) {
            retry = true;
            // Events other loomds published while we were not listening were not heard: the
            // clients re-read them (a skipped eventSeq).
            publishLocal("events", {{"type", "eventsResync"},
                                    {"reason", "the database notification channel reconnected"}});
        }
        peerWasConnected = up;
    }
    if (retry) reloadInventory();
    if (!topicSource) return;
    std::lock_guard baseLock(streamBaseMutex);
    auto clientsNow = liveClients();
    std::vector<std::uint8_t> cur;
    for (const auto& topic : dataTopics) {
        bool anyone = false;
        for (auto& c : clientsNow)
            if (c->wants(topic)) anyone = true;
        if (!topicSource(topic, cur)) continue;
        auto& prev = previous[topic];
        if (!anyone) {
            prev = cur;  // nobody to tell; new subscribers get a snapshot anyway
            continue;
        }
        std::uint64_t sq = nextSeq();
        auto snapshot = std::make_shared<const std::string>(packedSnapshot(sq, topic, cur));
        std::shared_ptr<const std::string> text;
        if (prev.size() != cur.size()) {
            text = snapshot;
        } else {
            std::string pairs;
            for (std::size_t i = 0; i < cur.size(); ++i) {
                if (cur[i] == prev[i]) continue;
                std::uint32_t idx = std::uint32_t(i);
                pairs += char(idx & 0xff);
                pairs += char((idx >> 8) & 0xff);
                pairs += char((idx >> 16) & 0xff);
                pairs += char((idx >> 24) & 0xff);
                pairs += char(cur[i]);
                // A delta bigger than the snapshot is pointless: send the snapshot.
                if (pairs.size() >= cur.size()) break;
            }
            if (pairs.empty()) {
                prev = cur;
                continue;
            }
            if (pairs.size() >= cur.size()) {
                text = snapshot;
            } else {
                auto msg = std::string(R"({"type":"delta","seq":)") + std::to_string(sq) +
                           R"(,"ts":)" + std::to_string(unixMs()) +
                           R"(,"topic":")" + topic + R"(","encoding":"u8pairs","data":")" +
                           base64Encode(reinterpret_cast<const std::uint8_t*>(pairs.data()),
                                        pairs.size()) +
                           "\"}";
                text = std::make_shared<const std::string>(std::move(msg));
            }
        }
        prev = cur;
        StreamFrame f{text, topic, true, text == snapshot ? nullptr : snapshot};
        for (auto& c : clientsNow)
            if (c->wants(topic)) c->deliver(f);
    }
    metrics.streamTickSeconds.store(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}


Result<Principal> Server::Impl::authenticate(db::Connection* conn, std::string_view secret) {
    auto hash = hashToken(secret);
    auto now = std::chrono::steady_clock::now();
    std::optional<AuthCache::Entry> stale;  // an older answer, for when the database is away
    auto answer = [&](const AuthCache::Entry& e) -> Result<Principal> {
        if (!e.valid) return fail(Error{Errc::Unauthorized, "invalid or revoked token"});
        auth.used.insert(e.principal.name);
        return e.principal;
    };
    {
        std::lock_guard lock(auth.mutex);
        auto it = auth.entries.find(hash);
        if (it != auth.entries.end()) {
            if (now - it->second.at < AuthCache::kTtl) return answer(it->second);
            if (now - it->second.at < AuthCache::kStaleGrace) stale = it->second;
        }
    }
    auto unreachable = [&](Error e) -> Result<Principal> {
        if (!stale) return fail(std::move(e));
        std::lock_guard lock(auth.mutex);
        return answer(*stale);
    };
    if (!conn) return unreachable(Error::unavailable("the database is unreachable; cannot check tokens"));
    auto found = db::findToken(*conn, hash);
    if (!found) return found.error().code == Errc::Unavailable ? unreachable(found.error()) : fail(found.error());
    AuthCache::Entry e;
    e.at = now;
    if (*found) {
        e.valid = true;
        e.principal.name = (*found)->name;
        e.principal.role = parseRole((*found)->role).value_or(Role::None);
    }
    std::lock_guard lock(auth.mutex);
    if (auth.entries.size() > 10000) auth.entries.clear();  // bounded: guessing fills it
    auth.entries[hash] = e;
    return answer(e);
}

void Server::Impl::invalidateAuth() {
    std::lock_guard lock(auth.mutex);
    auth.entries.clear();
}

void Server::Impl::flushTokenUse(db::Connection& conn) {
    std::vector<std::string> names;
    {
        std::lock_guard lock(auth.mutex);
        names.assign(auth.used.begin(), auth.used.end());
        auth.used.clear();
    }
    if (!names.empty()) (void)db::touchTokens(conn, names);
}

Server::Server(ServerConfig config, db::Database database)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(database))) {
    impl_->services = std::make_unique<ServicesImpl>(*impl_);
    registerSystemRoutes(impl_->router, *impl_);
    registerWebRoutes(impl_->router);
}

Server::~Server() { stop(); }

Router& Server::router() { return impl_->router; }
Services& Server::services() { return *impl_->services; }

void Server::setTopicSource(std::vector<std::string> topics, TopicSource source) {
    impl_->dataTopics = std::move(topics);
    impl_->topicSource = std::move(source);
}
void Server::setReadyCheck(std::function<Result<void>(db::Connection&)> check) {
    impl_->readyCheck = std::move(check);
}
void Server::setHub(TelemetryHub* hub) { impl_->hub = hub; }
void Server::setPeerHealth(std::function<bool()> connected) {
    impl_->peerConnected = std::move(connected);
}
void Server::setLeaderFlag(std::function<bool()> isLeader) { impl_->isLeader = std::move(isLeader); }
void Server::setPeerPublisher(std::function<void(const std::string&, const std::string&)> p) {
    impl_->peerPublisher = std::move(p);
}

void Server::deliverFromPeer(const std::string& topic, const std::string& json) {
    auto msg = nlohmann::json::parse(json, nullptr, false);
    if (msg.is_discarded() || !msg.is_object()) return;
    if (topic == db::kLiveTopic) {
        // A committed change anywhere on the database (live_notify.hpp): refresh ours
        // (coalesced; announces the new versions to our clients). An apply may change the
        // structure: the whole snapshot; anything else changes states: those alone (a
        // structural change is still caught there, by the inventory's generation).
        const auto source = msg.value("source", std::string());
        impl_->reloadInventory(source == "apply" || source.empty());
        return;
    }
    if (topic == "inventory") {
        // Another loomd's announcement of an apply: the apply's own commit already sent the
        // `live` NOTIFY that reloads us, and our reload announces our versions; a second
        // reload for the same change would only repeat the work.
        return;
    }
    if (topic == "tokens") {
        impl_->invalidateAuth();
        return;
    }
    impl_->publishLocal(topic, std::move(msg));
}

Result<void> Server::start() {
    auto& s = *impl_;
    bool tls = !s.config.tlsCert.empty() || !s.config.tlsKey.empty();
    if (tls && (s.config.tlsCert.empty() || s.config.tlsKey.empty()))
        return fail(Error::invalid("--tls-cert and --tls-key go together"));
    if (!tls && !s.config.insecure && !isLoopback(s.config.host))
        return fail(Error::invalid("refusing plain HTTP on non-loopback address " + s.config.host +
                                   ": use --tls-cert/--tls-key, or --insecure"));
    if (tls) {
        s.ssl.emplace(net::ssl::context::tls_server);
        beast::error_code ec;
        s.ssl->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                           net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                           net::ssl::context::no_tlsv1_1);
        s.ssl->use_certificate_chain_file(s.config.tlsCert, ec);
        if (ec) return fail(Error::invalid("--tls-cert " + s.config.tlsCert + ": " + ec.message()));
        s.ssl->use_private_key_file(s.config.tlsKey, net::ssl::context::pem, ec);
        if (ec) return fail(Error::invalid("--tls-key " + s.config.tlsKey + ": " + ec.message()));
    }
    beast::error_code ec;
    auto address = net::ip::make_address(s.config.host == "localhost" ? "127.0.0.1" : s.config.host,
                                         ec);
    if (ec) return fail(Error::invalid("--listen: '" + s.config.host + "' is not an IP address"));
    net::ip::tcp::endpoint ep(address, s.config.port);
    s.acceptor.emplace(net::make_strand(s.ioc));
    s.acceptor->open(ep.protocol(), ec);
    if (!ec) s.acceptor->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) s.acceptor->bind(ep, ec);
    if (!ec) s.acceptor->listen(net::socket_base::max_listen_connections, ec);
    if (ec)
        return fail(Error::unavailable("cannot listen on " + s.config.host + ":" +
                                       std::to_string(s.config.port) + ": " + ec.message()));
    s.boundPort = s.acceptor->local_endpoint().port();
    // Connections beyond what the descriptor limit leaves (the database pool, scrapes, files
    // and the stream need some) are closed at accept like those over maxConnections, instead
    // of making accept fail with EMFILE.
    if (rlimit nofile{};
        ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
        const std::size_t fit = std::max<std::size_t>(
            16,
            nofile.rlim_cur > kReservedDescriptors ? nofile.rlim_cur - kReservedDescriptors : 0);
        if (s.config.maxConnections > fit) {
            spdlog::info(
                "server.maxConnections {} lowered to {}: the open-file limit is {} "
                "(ulimit -n), {} kept for the database and files",
                s.config.maxConnections, fit, nofile.rlim_cur, kReservedDescriptors);
            s.config.maxConnections = fit;
        }
    }
    s.pool = std::make_unique<DbPool>(s.database, s.config.dbThreads);
    s.maintenance = std::make_unique<DbPool>(s.database, 1);
    net::co_spawn(s.acceptor->get_executor(), acceptLoop(s), [](std::exception_ptr e) {
        if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) {
                spdlog::error("listener stopped: {}", x.what());
            }
    });
    s.startTick();
    // last_used_at is written once a minute in one statement, not per request.
    auto flushTimer = std::make_shared<net::steady_timer>(s.ioc);
    auto flush = std::make_shared<std::function<void()>>();
    *flush = [&s, flushTimer, weak = std::weak_ptr<std::function<void()>>(flush)] {
        flushTimer->expires_after(std::chrono::seconds(60));
        flushTimer->async_wait([&s, weak](beast::error_code ec) {
            if (ec || s.stopping) return;
            s.pool->post([&s](db::Connection* c) {
                if (c) s.flushTokenUse(*c);
            });
            if (auto f = weak.lock()) (*f)();
        });
    };
    s.flushLoop = flush;
    (*flush)();
    s.reloadInventory();
    for (int i = 0; i < std::max(1, s.config.ioThreads); ++i)
        s.threads.emplace_back([&s] { s.ioc.run(); });
    return {};
}

std::uint16_t Server::port() const { return impl_->boundPort; }

std::string Server::url() const {
    std::string host = impl_->config.host;
    if (host == "0.0.0.0" || host == "localhost") host = "127.0.0.1";
    if (host == "::") host = "[::1]";
    else if (host.find(':') != std::string::npos) host = "[" + host + "]";
    return std::string(impl_->ssl ? "https://" : "http://") + host + ":" +
           std::to_string(impl_->boundPort);
}

void Server::waitForSignal() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    int sig = 0;
    sigwait(&set, &sig);
    spdlog::info("signal {}: shutting down", sig);
}

void Server::stop(const std::string& reason) {
    auto& s = *impl_;
    {
        std::lock_guard lock(s.stopMutex);
        if (s.stopped) return;
        s.stopped = true;
    }
    s.stopping = true;
    if (s.acceptor) {
        net::post(s.acceptor->get_executor(), [&s] {
            beast::error_code ec;
            s.acceptor->close(ec);
        });
    }
    if (s.tickTimer) net::post(s.tickTimer->get_executor(), [&s] { s.tickTimer->cancel(); });
    // WebSocket clients get a bye with the reason, then a close frame.
    for (auto& c : s.liveClients()) c->close(reason);
    if (!s.threads.empty()) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (s.metrics.wsClients.load() > 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (s.pool) {
        s.pool->post([&s](db::Connection* c) {
            if (c) s.flushTokenUse(*c);
        });
    }
    s.ioc.stop();
    for (auto& t : s.threads)
        if (t.joinable()) t.join();
    s.threads.clear();
    if (s.pool) s.pool->stop();
    if (s.maintenance) s.maintenance->stop();  // waits for a build that is running
    // The live-change hooks own views with worker threads of their own (the jobs view) that
    // publish; they are ended here, while what publishing needs (publishHooks, the clients,
    // the replay) still exists: as members they would be destroyed after publishHooks, and a
    // worker still publishing meanwhile read freed memory. Dropped outside stateMutex: a
    // worker that is ending may take it.
    std::vector<std::function<void()>> hooks;
    {
        std::lock_guard lock(s.stateMutex);
        hooks.swap(s.inventoryHooks);
    }
    hooks.clear();
}

void Server::Impl::buildNameIndexesLater() {
    if (!maintenance || stopping || nameIndexesQueued.exchange(true)) return;
    const bool posted = maintenance->post([this](db::Connection* c) {
        // Cleared first: an apply committed during this build queues one more round, which
        // builds what that apply dropped again.
        nameIndexesQueued = false;
        if (!c || stopping) return;
        const auto start = std::chrono::steady_clock::now();
        auto built = db::buildNameIndexes(*c);
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
        if (!built)
            spdlog::warn("name search indexes: {} (lists stay correct, without them slower on "
                         "rare name patterns; the next apply or start tries again)",
                         built.error().message);
        else if (*built > 0)
            spdlog::info("name search indexes: {} built in {} ms", *built, ms);
    });
    if (!posted) nameIndexesQueued = false;
}

}  // namespace loom::backend
