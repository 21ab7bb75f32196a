#include "loom/db/failover_guard.hpp"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "conninfo_quote.hpp"

namespace loom::db::failover {

namespace {

struct Entry {
    std::string conninfo;
    int fd = -1;
    ino_t inode = 0;  // the socket's identity: the fd number may be reused after a close
    std::string host, port;
};

using Server = std::pair<std::string, std::string>;  // host (or hostaddr), port

struct State {
    std::mutex mutex;
    std::condition_variable cv;
    std::unordered_map<const void*, Entry> entries;
    std::map<std::string, Server> primaries;  // by connection string: where the last probe landed
    bool running = false;
    std::atomic<std::uint64_t> cuts{0}, probes{0};
};

// Never destroyed: the guard's thread may still run while static destructors do.
State& state() {
    static State* s = new State;
    return *s;
}

// A string of several hosts that asks for the writable one: what the guard is for.
bool guarded(const std::string& conninfo) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (!opts) {
        if (err) PQfreemem(err);
        return false;
    }
    bool multiHost = false, writable = false;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        if (!o->val) continue;
        const std::string key = o->keyword, val = o->val;
        if (key == "host" || key == "hostaddr")
            multiHost = multiHost || val.find(',') != std::string::npos;
        if (key == "target_session_attrs") writable = val == "read-write" || val == "primary";
    }
    PQconninfoFree(opts);
    return multiHost && writable;
}

std::vector<std::string> splitList(const char* v) {
    std::vector<std::string> out;
    if (!v) return out;
    std::string cur;
    for (const char* p = v;; ++p) {
        if (*p == ',' || *p == '\0') {
            out.push_back(cur);
            cur.clear();
            if (!*p) break;
        } else {
            cur += *p;
        }
    }
    return out;
}

// `conninfo` as key=value with its host, hostaddr and port lists rotated so that `server` comes
// first (or last): libpq tries hosts in order, and a hung server costs a whole connect_timeout
// to each connection that tries it first. Unchanged when `server` is not in the list.
std::string reordered(const std::string& conninfo, const Server& server, bool first) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (!opts) {
        if (err) PQfreemem(err);
        return conninfo;
    }
    std::vector<std::string> hosts, addrs, ports;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        const std::string key = o->keyword;
        if (key == "host") hosts = splitList(o->val);
        if (key == "hostaddr") addrs = splitList(o->val);
        if (key == "port") ports = splitList(o->val);
    }
    const std::size_t n = std::max(hosts.size(), addrs.size());
    if (ports.size() == 1) ports.assign(n, ports[0]);
    std::optional<std::size_t> at;
    for (std::size_t i = 0; i < n && !at; ++i) {
        const bool hostMatches = (i < hosts.size() && hosts[i] == server.first) ||
                                 (i < addrs.size() && addrs[i] == server.first);
        const std::string port = i < ports.size() ? ports[i] : "";
        if (hostMatches && (port == server.second || (port.empty() && server.second == "5432")))
            at = i;
    }
    if (!at || n < 2 || (hosts.size() != n && !hosts.empty()) ||
        (addrs.size() != n && !addrs.empty()) || (ports.size() != n && !ports.empty())) {
        PQconninfoFree(opts);
        return conninfo;
    }
    const std::size_t start = first ? *at : (*at + 1) % n;
    auto rotate = [&](const std::vector<std::string>& v) {
        std::string out;
        for (std::size_t k = 0; k < n; ++k) out += (k ? "," : "") + v[(start + k) % n];
        return out;
    };
    std::string rebuilt;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        if (!o->val) continue;
        const std::string key = o->keyword;
        std::string val = o->val;
        if (key == "host") val = rotate(hosts);
        if (key == "hostaddr") val = rotate(addrs);
        if (key == "port") val = rotate(ports);
        rebuilt += (rebuilt.empty() ? "" : " ") + key + "=" + quoteConninfoValue(val);
    }
    PQconninfoFree(opts);
    return rebuilt;
}

// Where a new connection with this string lands now: the writable server's host and port, or
// nothing when none answered within connect_timeout.
std::optional<Server> probe(const std::string& conninfo) {
    const char* keys[] = {"dbname", "connect_timeout", nullptr};
    const char* vals[] = {conninfo.c_str(), "2", nullptr};
    PGconn* c = PQconnectdbParams(keys, vals, /*expand_dbname=*/1);
    std::optional<Server> out;
    if (c && PQstatus(c) == CONNECTION_OK)
        out.emplace(PQhost(c) ? PQhost(c) : "", PQport(c) ? PQport(c) : "");
    if (c) PQfinish(c);
    return out;
}

// A server that hangs shows on a connection as a request it has not answered: data sent after
// the last data received, and nothing back for a while. The kernel keeps both times per TCP
// socket (tcp_info, in ms), so no query path has to report what it is waiting for. A socket
// that is no longer established (the server closed or died) is as good a reason to look.
// A socket without tcp_info (a Unix socket) is always worth a look.
constexpr unsigned kUnansweredMs = 500;
constexpr auto kQuietProbeEvery = std::chrono::seconds(30);

bool worthAProbe(const Entry& e) {
    if (e.fd < 0) return false;
    struct stat st {};
    if (fstat(e.fd, &st) != 0 || st.st_ino != e.inode) return false;  // gone: nothing to cut
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(e.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return true;
    if (info.tcpi_state != TCP_ESTABLISHED) return true;
    return info.tcpi_last_data_sent < info.tcpi_last_data_recv &&
           info.tcpi_last_data_sent >= kUnansweredMs;
}

void loop() {
    auto& s = state();
    std::unique_lock lock(s.mutex);
    auto lastProbe = std::chrono::steady_clock::time_point{};
    while (!s.entries.empty()) {
        // A probe is a new connection (a forked backend on the server): made when a connection
        // has waited 0.5 s for an answer, or its socket closed, and every 30 s otherwise (so
        // that preferred() knows the primary before anyone needs it) — not once a second
        // whatever happens.
        bool look = std::chrono::steady_clock::now() - lastProbe >= kQuietProbeEvery;
        for (const auto& [_, e] : s.entries) {
            if (look) break;
            look = !s.primaries.count(e.conninfo) || worthAProbe(e);
        }
        if (!look) {
            s.cv.wait_for(lock, std::chrono::milliseconds(250));
            continue;
        }
        lastProbe = std::chrono::steady_clock::now();
        // Each string once, the server its last probe reached tried last: when that one hangs,
        // the probe still finds the new primary at once.
        std::map<std::string, std::string> strings;
        for (const auto& [_, e] : s.entries) {
            if (strings.count(e.conninfo)) continue;
            auto known = s.primaries.find(e.conninfo);
            strings[e.conninfo] = known == s.primaries.end()
                                      ? e.conninfo
                                      : reordered(e.conninfo, known->second, /*first=*/false);
        }
        lock.unlock();
        std::map<std::string, Server> primaries;
        for (const auto& [ci, ordered] : strings) {
            s.probes.fetch_add(1);
            if (auto p = probe(ordered)) primaries.emplace(ci, std::move(*p));
        }
        lock.lock();
        for (const auto& [ci, server] : primaries) s.primaries[ci] = server;
        for (auto& [_, e] : s.entries) {
            auto it = primaries.find(e.conninfo);
            if (it == primaries.end() || e.fd < 0) continue;
            if (it->second.first == e.host && it->second.second == e.port) continue;
            struct stat st {};
            // Still the socket we tracked (not a reused fd number), then cut it: the thread
            // blocked on it gets an error at once and its owner reconnects.
            if (fstat(e.fd, &st) == 0 && st.st_ino == e.inode) {
                ::shutdown(e.fd, SHUT_RDWR);
                s.cuts.fetch_add(1);
                std::cerr << "loom: database failover: a connection to " << e.host << ":" << e.port
                          << " cut, the primary is now " << it->second.first << ":"
                          << it->second.second << "\n";
            }
            e.fd = -1;  // cut or gone: never touched again
        }
        s.cv.wait_for(lock, std::chrono::seconds(1));
    }
    s.running = false;
}

}  // namespace

void track(const void* owner, const std::string& conninfo, int fd, const char* host,
           const char* port) {
    if (fd < 0 || !guarded(conninfo)) return;
    struct stat st {};
    if (fstat(fd, &st) != 0) return;
    auto& s = state();
    std::lock_guard lock(s.mutex);
    s.entries[owner] = Entry{conninfo, fd, st.st_ino, host ? host : "", port ? port : ""};
    if (!s.running) {
        s.running = true;
        std::thread(loop).detach();
    }
}

void untrack(const void* owner) {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    s.entries.erase(owner);
}

std::string preferred(const std::string& conninfo) {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    auto it = s.primaries.find(conninfo);
    return it == s.primaries.end() ? conninfo : reordered(conninfo, it->second, /*first=*/true);
}

std::uint64_t cuts() { return state().cuts.load(); }

std::uint64_t probes() { return state().probes.load(); }

}  // namespace loom::db::failover
