// Alertmanager out (issue 20 item 5): every open event is a firing alert, every closed one a
// resolved alert, sent to each Alertmanager of `alerting.alertmanagers` in loomd.yaml through
// its v2 API (POST /api/v2/alerts), the way Prometheus sends its own alerts.
//
//   AlertSender alerts(server.services(), cfg.alerting);   // nothing runs without alertmanagers
//   alerts.start();                                         // a thread; stop() or the destructor
//   services.addMetricsSource([&](std::string& out) { alerts.appendMetrics(out); });
//
// What is sent: labels alertname (the event kind), cluster, severity, location, rack, zone,
// source and the event's own labels (e.g. xid); annotations summary (the event message),
// description (an XID's meaning and what to do), event_id, acknowledged_by and dashboard (the
// event's page on the web dashboard, also generatorURL). A firing alert's endsAt is four
// resend intervals ahead, so Alertmanager resolves it by itself if loomd goes away; a closed
// event's endsAt is its close time.
//
// When: at once (within ~0.3 s) after any event is opened, closed or acknowledged on any loomd
// of the cluster (the stream's `events` topic), every `resendSeconds` in full (below
// Alertmanager's resolve timeout), and a poll every 5 s. Only the leader sends, so a cluster of
// loomds sends each alert once; a new leader sends everything at once.
//
// Nothing is lost: the events table is the queue. A closed event is sent resolved on every
// cycle for 15 minutes after its close, and for as long as an Alertmanager has not taken it
// (an Alertmanager down for an hour gets the hour's resolutions when it returns). A failed POST
// is retried with exponential backoff (0.5 s doubling to `maxBackoffSeconds`); ingest and the
// event writer never wait for it (the sender has its own thread and database connection).
//
// Limits: at most 50,000 events per cycle (open ones first); alerts are POSTed 1,000 per request.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loom::db {
struct EventRecord;
}

namespace loom::backend {

class Services;

struct AlertingConfig {
    // Base URLs, http:// or https://, with an optional path prefix ("http://am-1:9093",
    // "https://ops.example/alertmanager"). Empty: alerting off.
    std::vector<std::string> alertmanagers;
    std::chrono::seconds resendInterval{60};
    std::chrono::milliseconds timeout{10'000};  // one POST, connect included
    std::chrono::seconds maxBackoff{30};
    // The dashboard's base URL for links ("https://loom.example"); empty: loomd's own URL.
    std::string externalUrl;
    // The `cluster` label; empty: the inventory's cluster name (metadata.name of the spec).
    std::string cluster;
    bool enabled() const { return !alertmanagers.empty(); }
};

// One event as an Alertmanager v2 alert (pure; see above for the fields).
struct AlertContext {
    std::string cluster;
    std::string externalUrl;
    std::chrono::milliseconds resendInterval{60'000};
};
nlohmann::json alertOf(const db::EventRecord& event, const AlertContext& context,
                       std::int64_t nowMs);

class AlertSender {
public:
    // `defaultExternalUrl`: loomd's own URL, used when the config names none.
    AlertSender(Services& services, AlertingConfig config, std::string defaultExternalUrl);
    ~AlertSender();
    AlertSender(const AlertSender&) = delete;
    AlertSender& operator=(const AlertSender&) = delete;

    void start();  // no-op without alertmanagers
    void stop();

    // loom_alertmanager_up, loom_alerts_sent_total, loom_alert_posts_failed_total,
    // loom_alertmanager_last_success_timestamp_seconds (per alertmanager), loom_alerts_firing.
    void appendMetrics(std::string& out) const;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace loom::backend
