// Server: loomd's HTTP + WebSocket front end (Boost.Beast, C++20 coroutines).
//
// Each connection is a coroutine on its own strand; request handlers run on a database thread
// pool; the WebSocket stream sends coalesced deltas of the telemetry hub once per interval.
// All limits are in ServerConfig, with the defaults stated there.
//
//   Server server(config, database);
//   registerInventoryRoutes(server.router(), server.services());   // before start()
//   if (auto r = server.start(); !r) die(r.error());
//   std::cout << "loomd listening on " << server.url() << std::endl;
//   server.waitForSignal();                                         // SIGINT / SIGTERM
//   server.stop("server shutting down");
#pragma once

#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/db/database.hpp"
#include "loom/inventory/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace loom::backend {

struct ServerConfig {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8480;  // 0 = any free port
    std::string tlsCert, tlsKey;  // PEM files; both set = HTTPS and WSS only
    bool insecure = false;        // allow plain HTTP on a non-loopback address

    int ioThreads = 2;
    int dbThreads = 4;
    std::size_t maxConnections = 2048;           // beyond: closed at accept
    std::size_t headerLimit = 16 * 1024;         // bytes of request line + headers -> 431
    std::chrono::seconds headerTimeout{10};      // to receive a complete header (slowloris)
    std::chrono::seconds bodyTimeout{120};       // to receive a body once the header is in
    std::chrono::seconds idleTimeout{60};        // keep-alive wait for the next request
    // Request bodies being received or handled at once, all connections together (each counts
    // its Content-Length, a chunked one its route's limit): beyond, 503 + Retry-After before
    // the body is read. One body larger than this is still taken when it is alone (the
    // route's own limit bounds it). 1 GiB: four 256 MiB telemetry pushes. loomd.yaml:
    // server.maxBodyMiBInFlight.
    std::size_t maxBodyBytesInFlight = std::size_t{1} << 30;

    std::chrono::milliseconds streamInterval{1000};  // delta coalescing interval
    std::size_t wsQueueFrames = 64;     // frames queued per client before it counts as slow
    int wsSlowTicks = 5;                // consecutive overflowing intervals before "bye"
    std::size_t wsMaxMessage = 64 * 1024;  // largest client -> server message
    std::size_t replayBuffer = 4096;    // event/provisioning/inventory messages kept for resume
    // permessage-deflate (RFC 7692) for stream clients that offer it (browsers; Beast clients
    // with client_enable; Qt WebSockets 6.4 does not offer it and gets plain frames). zlib
    // level 1; 0 turns it off. loomd.yaml: stream.deflateLevel.
    int wsDeflateLevel = 1;
};

class Server {
public:
    Server(ServerConfig config, db::Database database);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    Router& router();
    Services& services();

    // Sets the source of the data topics of the stream (the telemetry hub's packed arrays):
    // returns the current bytes of a topic ("gpu.util", ...), or nothing when unknown.
    using TopicSource = std::function<bool(std::string_view topic, std::vector<std::uint8_t>&)>;
    void setTopicSource(std::vector<std::string> topics, TopicSource source);
    // Extra /readyz check run on a pool thread (e.g. migrations applied); null = ok.
    void setReadyCheck(std::function<Result<void>(db::Connection&)> check);
    void setHub(TelemetryHub* hub);
    void setLeaderFlag(std::function<bool()> isLeader);
    // Where Services::publish sends messages for other loomds (NOTIFY); null = local only.
    void setPeerPublisher(std::function<void(const std::string& topic, const std::string& json)>);
    // Whether the LISTEN connection is up: after it comes back the live state is reloaded
    // (changes committed while it was down were never heard).
    void setPeerHealth(std::function<bool()> connected);
    // Delivers a message that another loomd published (LISTEN) to local stream clients;
    // topic "live" (a committed change, db/src/live_notify.hpp) reloads the live state instead,
    // and "inventory" (a peer's announcement of the same change) is dropped.
    void deliverFromPeer(const std::string& topic, const std::string& json);

    // Binds and starts serving (threads run in the background).
    Result<void> start();
    std::uint16_t port() const;
    std::string url() const;  // "http://127.0.0.1:PORT" (https when TLS)

    // Blocks until SIGINT or SIGTERM.
    void waitForSignal();
    // Stops accepting, closes WebSockets with `reason`, finishes, joins threads. Idempotent.
    void stop(const std::string& reason = "server shutting down");

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace loom::backend
