// The parts of an HTTP session that do not depend on the stream type (plain TCP or TLS):
// rendering answers and errors, authentication, the per-route and per-body admission
// guards, a big body's own memory, and running a route on the database pool. Private to
// backend/src/server; http_session_run.hpp holds the coroutines over a stream, compiled
// once per stream type (http_session_plain.cpp, http_session_tls.cpp).
#pragma once

#include "shared_state.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace loom::backend {
namespace beast = boost::beast;
}  // namespace loom::backend

namespace loom::backend::session {

namespace http = boost::beast::http;

inline constexpr std::string_view kStreamPath = "/api/v1/stream";

inline bool wantsYaml(std::string_view accept) {
    return accept.find("yaml") != std::string_view::npos;
}

struct Rendered {
    int status = 200;
    std::string contentType;
    std::string body;
    Pairs headers;
    bool closeAfter = false;
};

Rendered renderError(const Error& e, bool yaml);
Rendered render(Response&& resp, bool yaml);
std::string bearerOf(const http::request<http::string_body>& req, const Pairs& query);
// The token of a browser's WebSocket from Sec-WebSocket-Protocol (see the definition); sets
// `v1` when loom.v1 was offered.
std::string bearerOfProtocols(const http::request<http::string_body>& req, bool& v1);
// Authentication and authorization of a route (on a pool thread). Empty principal name and
// Role::None when the route needs no token.
Result<Principal> authorize(Server::Impl& s, db::Connection* conn, Role needed,
                            const std::string& secret);

// A slot of a route with RouteOptions::maxConcurrent, held from before the body is read
// until the response is written.
class RouteSlot {
public:
    RouteSlot() = default;
    RouteSlot(const RouteSlot&) = delete;
    RouteSlot& operator=(const RouteSlot&) = delete;
    ~RouteSlot() { release(); }
    // False when the route is at its limit (nothing is held then).
    bool acquire(const Route& route) {
        if (route.options.maxConcurrent <= 0) return true;
        if (route.inFlight->fetch_add(1) >= route.options.maxConcurrent) {
            route.inFlight->fetch_sub(1);
            return false;
        }
        counter_ = route.inFlight.get();
        return true;
    }
    bool held() const { return counter_ != nullptr; }
    void release() {
        if (counter_) counter_->fetch_sub(1);
        counter_ = nullptr;
    }

private:
    std::atomic<int>* counter_ = nullptr;
};

// Bytes of request bodies held at once across all connections (ServerConfig::
// maxBodyBytesInFlight), reserved before a body is read and given back after the answer is
// written. A body alone is always taken (its route's limit bounds it).
class BodyReservation {
public:
    BodyReservation() = default;
    BodyReservation(const BodyReservation&) = delete;
    BodyReservation& operator=(const BodyReservation&) = delete;
    ~BodyReservation() { release(); }
    // False when `bytes` more would pass `budget` (nothing is held then).
    bool acquire(std::atomic<std::size_t>& inFlight, std::size_t budget, std::size_t bytes) {
        if (bytes == 0) return true;
        std::size_t now = inFlight.load();
        do {
            if (now != 0 && now + bytes > budget) return false;
        } while (!inFlight.compare_exchange_weak(now, now + bytes));
        counter_ = &inFlight;
        bytes_ = bytes;
        return true;
    }
    void release() {
        if (counter_) counter_->fetch_sub(bytes_);
        counter_ = nullptr;
    }

private:
    std::atomic<std::size_t>* counter_ = nullptr;
    std::size_t bytes_ = 0;
};

// Requests with big bodies or big intermediate trees leave freed pages in malloc's arenas;
// give them back so loomd's RSS returns to its baseline after a burst.
inline constexpr std::size_t kTrimAfterBytes = std::size_t{1} << 20;

struct Job {
    const Route* route = nullptr;
    Pairs captures, query;
    std::string path;
    std::string secret;
    bool yaml = false;
    std::string_view body;  // the request's own string, or a BodyBuffer
};

// Authorizes and runs the matched route on a pool thread; never throws.
Rendered runRoute(Server::Impl& s, const http::request<http::string_body>& req, Job& job,
                  db::Connection* conn);

// A chunked body goes through the parser; this is its read size (the connection's buffer is
// given back after the request).
inline constexpr std::size_t kChunkedReadBuffer = std::size_t{64} << 10;
// Content-Length bodies from this size on get a BodyBuffer of their own.
inline constexpr std::size_t kBigBody = std::size_t{1} << 20;
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

// The memory of one big request body: an anonymous mapping of its own with transparent huge
// pages asked for (MADV_HUGEPAGE), so 64 MiB of body cost 32 page faults instead of 16,384
// (a first touch costs ~10 us on this kind of VM; the faults were half of the intake's CPU),
// and all of it goes back to the system (munmap) when the request is done. Pages are touched
// only as bytes arrive: a Content-Length that is a lie costs address space, not memory.
class BodyBuffer {
public:
    BodyBuffer() = default;
    BodyBuffer(const BodyBuffer&) = delete;
    BodyBuffer& operator=(const BodyBuffer&) = delete;
    ~BodyBuffer() { reset(); }

    // Room for `capacity` bytes; false when the mapping fails.
    bool allocate(std::size_t capacity) {
        reset();
        const std::size_t len = (capacity + kHugePage - 1) / kHugePage * kHugePage;
        // Map one huge page more and trim, so the region starts on a huge-page boundary.
        void* raw = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == MAP_FAILED) return false;
        auto base = reinterpret_cast<std::uintptr_t>(raw);
        const std::uintptr_t aligned = (base + kHugePage - 1) & ~(kHugePage - 1);
        if (aligned > base) ::munmap(raw, aligned - base);
        if (const std::uintptr_t tail = base + len + kHugePage - (aligned + len); tail > 0)
            ::munmap(reinterpret_cast<void*>(aligned + len), tail);
        data_ = reinterpret_cast<char*>(aligned);
        mapped_ = len;
        ::madvise(data_, mapped_, MADV_HUGEPAGE);  // advice only: works without it too
        return true;
    }
    char* data() { return data_; }
    std::size_t size() const { return size_; }
    void setSize(std::size_t n) { size_ = n; }
    std::string_view view() const { return {data_, size_}; }
    void reset() {
        if (data_) ::munmap(data_, mapped_);
        data_ = nullptr;
        mapped_ = size_ = 0;
    }

private:
    char* data_ = nullptr;
    std::size_t mapped_ = 0;
    std::size_t size_ = 0;
};

struct ConnectionCount {
    Metrics& m;
    explicit ConnectionCount(Metrics& metrics) : m(metrics) { m.httpConnections.fetch_add(1); }
    ~ConnectionCount() { m.httpConnections.fetch_sub(1); }
};

// co_spawn's completion: logs a session that ended with an exception.
void logFailure(std::exception_ptr e);

}  // namespace loom::backend::session
