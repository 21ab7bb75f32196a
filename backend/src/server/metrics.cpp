#include "metrics.hpp"

#include <cstdio>

namespace loom::backend {

std::string promEscape(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

std::string_view methodLabel(std::string_view method) {
    // The methods of RFC 9110 and PATCH; anything a client makes up is one series.
    static constexpr std::string_view kKnown[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                  "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    for (auto m : kKnown)
        if (m == method) return m;
    return "other";
}

void Metrics::observeRequest(const std::string& route, std::string_view method, int status,
                             double seconds) {
    // Every label is from a closed set: route patterns (or "unmatched"), methodLabel(), and a
    // status the server chose; clamped anyway so no caller can add series.
    if (status < 100 || status > 599) status = 0;
    std::lock_guard lock(mutex_);
    ++requests_[{route, std::string(methodLabel(method)), status}];
    auto& h = latency_[route];
    for (std::size_t i = 0; i < kBuckets.size(); ++i)
        if (seconds <= kBuckets[i]) ++h.counts[i];
    ++h.count;
    h.sum += seconds;
}

namespace {
std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}
}  // namespace

void Metrics::appendTo(std::string& out) const {
    std::lock_guard lock(mutex_);
    out +=
        "# HELP loom_http_requests_total HTTP requests by route pattern, method and status.\n"
        "# TYPE loom_http_requests_total counter\n";
    for (auto& [k, n] : requests_) {
        auto& [route, method, status] = k;
        out += "loom_http_requests_total{route=\"" + promEscape(route) + "\",method=\"" +
               promEscape(method) + "\",code=\"" + std::to_string(status) + "\"} " +
               std::to_string(n) + "\n";
    }
    out +=
        "# HELP loom_http_request_duration_seconds Time from request read to response "
        "ready, by route pattern.\n"
        "# TYPE loom_http_request_duration_seconds histogram\n";
    for (auto& [route, h] : latency_) {
        std::string l = "route=\"" + promEscape(route) + "\"";
        for (std::size_t i = 0; i < kBuckets.size(); ++i)
            out += "loom_http_request_duration_seconds_bucket{" + l + ",le=\"" + num(kBuckets[i]) +
                   "\"} " + std::to_string(h.counts[i]) + "\n";
        out += "loom_http_request_duration_seconds_bucket{" + l + ",le=\"+Inf\"} " +
               std::to_string(h.count) + "\n";
        out += "loom_http_request_duration_seconds_sum{" + l + "} " + num(h.sum) + "\n";
        out +=
            "loom_http_request_duration_seconds_count{" + l + "} " + std::to_string(h.count) + "\n";
    }
    auto gauge = [&](const char* name, const char* help, double v) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name +
               " " + num(v) + "\n";
    };
    auto counter = [&](const char* name, const char* help, double v) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" +
               name + " " + num(v) + "\n";
    };
    gauge("loom_http_connections", "Open HTTP connections.", double(httpConnections.load()));
    counter("loom_http_connections_rejected_total",
            "Connections closed at accept because of the connection cap.",
            double(connectionsRejected.load()));
    counter("loom_http_accept_errors_total",
            "Failed accepts (out of file descriptors: EMFILE); each backs the accept loop off.",
            double(acceptErrors.load()));
    gauge("loom_ws_clients", "Connected WebSocket stream clients.", double(wsClients.load()));
    counter("loom_ws_frames_sent_total", "WebSocket frames written.", double(wsFramesSent.load()));
    counter("loom_ws_bytes_sent_total", "WebSocket payload bytes written.",
            double(wsBytesSent.load()));
    counter("loom_ws_dropped_frames_total",
            "Stale queued frames dropped for slow clients (replaced by a fresh snapshot).",
            double(wsDropped.load()));
    counter("loom_ws_slow_disconnects_total", "Clients disconnected because they stayed behind.",
            double(wsSlowDisconnects.load()));
    counter("loom_stream_ticks_total", "Stream ticks (delta rounds).", double(streamTicks.load()));
    gauge("loom_stream_tick_seconds", "Duration of the last stream tick.",
          streamTickSeconds.load());
    counter("loom_live_reloads_total",
            "Live-state reloads (inventory and states from the database).",
            double(liveReloads.load()));
    counter("loom_live_reload_failures_total",
            "Live-state reloads that failed (retried each second).",
            double(liveReloadFailures.load()));
    // One series per kind of row (a closed set): the links and the switches the leader set.
    out +=
        "# HELP loom_live_link_fixes_total Links and switches whose stored state the leader "
        "set to follow their racks' states, by kind (link, switch).\n"
        "# TYPE loom_live_link_fixes_total counter\n"
        "loom_live_link_fixes_total{kind=\"link\"} " +
        num(double(liveLinkFixes.load())) +
        "\n"
        "loom_live_link_fixes_total{kind=\"switch\"} " +
        num(double(liveSwitchFixes.load())) + "\n";
    gauge("loom_live_reload_seconds", "Duration of the last live-state reload.",
          liveReloadSeconds.load());
}

}  // namespace loom::backend
