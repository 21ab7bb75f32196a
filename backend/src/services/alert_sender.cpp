#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "loom/backend/alerting.hpp"
#include "loom/backend/services.hpp"
#include "loom/client/client.hpp"
#include "loom/db/database.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/inventory/model.hpp"
#include "loom/inventory/unix_time.hpp"
#include "loom/telemetry/xid_catalog.hpp"

namespace loom::backend {

using nlohmann::json;

namespace {

using Clock = std::chrono::system_clock;

constexpr std::int64_t kResolvedRetentionMs = 15 * 60 * 1000;  // as Prometheus keeps them
constexpr std::size_t kAlertsPerPost = 1000;
constexpr auto kPoll = std::chrono::seconds(5);
constexpr auto kCoalesce = std::chrono::milliseconds(200);
// Each Alertmanager's /-/healthy is asked this often (and with this deadline), so
// loom_alertmanager_up drops within seconds of it stopping, not at the next resend.
constexpr std::int64_t kProbeMs = 3000;
constexpr auto kProbeTimeout = std::chrono::milliseconds(2000);

// Alertmanager label names are [a-zA-Z_][a-zA-Z0-9_]*; anything else becomes '_'.
std::string labelName(std::string_view s) {
    std::string out(s);
    for (std::size_t i = 0; i < out.size(); ++i) {
        char c = out[i];
        bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (i > 0 && c >= '0' && c <= '9');
        if (!ok) out[i] = '_';
    }
    return out.empty() ? "_" : out;
}

std::string trimSlash(std::string s) {
    while (!s.empty() && s.back() == '/') s.pop_back();
    return s;
}

}  // namespace

json alertOf(const db::EventRecord& e, const AlertContext& ctx, std::int64_t now) {
    json labels = json::object();
    // The event's own labels first, so the fixed ones below always win.
    for (const auto& [k, v] : e.labels)
        if (!v.empty()) labels[labelName(k)] = v;
    labels["alertname"] = e.kind;
    labels["cluster"] = ctx.cluster;
    labels["severity"] = e.severity;
    labels["location"] = e.location;
    labels["source"] = e.source;
    // Alertmanager drops labels with empty values; a zone-less location simply has none.
    if (!e.rack.empty()) labels["rack"] = e.rack;
    if (!e.zone.empty()) labels["zone"] = e.zone;

    json ann = json::object();
    ann["summary"] = e.message.empty() ? e.kind + " at " + e.location : e.message;
    for (const auto& [k, v] : e.labels) {
        if (k != "xid") continue;
        int code = 0;  // not a number: not in the catalogue
        if (auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
            ec != std::errc() || end != v.data() + v.size())
            code = 0;
        if (const auto* x = telemetry::findXid(code))
            ann["description"] =
                "XID " + v + ": " + std::string(x->meaning) + ". " + std::string(x->action) + ".";
        else
            ann["description"] = "XID " + v +
                                 ": not in Loom's list; see NVIDIA's XID catalogue "
                                 "(docs.nvidia.com/deploy/xid-errors).";
    }
    ann["event_id"] = std::to_string(e.id);
    if (!e.acknowledgedBy.empty()) ann["acknowledged_by"] = e.acknowledgedBy;
    const std::string link = trimSlash(ctx.externalUrl) + "/#/events/" + std::to_string(e.id);
    ann["dashboard"] = link;

    json a = {{"labels", std::move(labels)},
              {"annotations", std::move(ann)},
              {"startsAt", db::isoTimeMs(e.openedAtMs)},
              {"generatorURL", link}};
    // Firing: valid for four resend intervals, as Prometheus does, so a loomd that goes away
    // does not leave alerts firing forever. Closed: its close time.
    a["endsAt"] = db::isoTimeMs(e.open() ? now + 4 * ctx.resendInterval.count() : e.closedAtMs);
    return a;
}

struct AlertSender::Impl {
    Services& services;
    AlertingConfig cfg;
    std::string defaultExternalUrl;

    struct Manager {
        Manager(std::string base, std::chrono::milliseconds timeout)
            : url(trimSlash(std::move(base))),
              client(client::ClientConfig{.server = url, .timeout = timeout}),
              probe(
                  client::ClientConfig{.server = url, .timeout = std::min(timeout, kProbeTimeout)}),
              resolvedWatermarkMs(unixMs() - kResolvedRetentionMs) {}
        std::string url;
        client::Client client;
        client::Client probe;  // GET /-/healthy
        // Resolutions closed at or after this were all taken (plus the 15-minute retention).
        std::int64_t resolvedWatermarkMs = 0;
        // What this Alertmanager last took per event id: 0 firing, else the close time sent.
        std::unordered_map<std::int64_t, std::int64_t> taken;
        std::int64_t lastFullMs = 0;
        std::int64_t nextAttemptMs = 0;
        std::chrono::milliseconds backoff{0};
        std::atomic<bool> up{false};
        std::atomic<std::int64_t> alertsSent{0}, postsFailed{0}, lastSuccessMs{0};
    };
    std::vector<std::unique_ptr<Manager>> managers;
    std::atomic<std::int64_t> firing{0};
    std::int64_t lastProbeMs = 0;

    std::mutex mutex;
    std::condition_variable wake;
    bool dirty = true;
    bool stopping = false;
    std::thread thread;

    Impl(Services& s, AlertingConfig c, std::string url)
        : services(s), cfg(std::move(c)), defaultExternalUrl(std::move(url)) {
        for (const auto& u : cfg.alertmanagers)
            managers.push_back(std::make_unique<Manager>(u, cfg.timeout));
    }

    void poke() {
        {
            std::lock_guard lock(mutex);
            dirty = true;
        }
        wake.notify_one();
    }

    AlertContext context() const {
        AlertContext ctx;
        ctx.resendInterval = cfg.resendInterval;
        ctx.externalUrl = cfg.externalUrl.empty() ? defaultExternalUrl : cfg.externalUrl;
        ctx.cluster = cfg.cluster;
        if (ctx.cluster.empty())
            if (auto inv = services.inventory(); inv && !inv->cluster.empty())
                ctx.cluster = inv->cluster;
        if (ctx.cluster.empty()) ctx.cluster = "loom";
        return ctx;
    }

    // POSTs `alerts` in chunks (an empty list as one empty POST); `taken` counts the alerts
    // Alertmanager took (a prefix of the list). False with `error` set on the first failure.
    bool post(Manager& m, const std::vector<json>& alerts, std::size_t& taken, std::string& error) {
        taken = 0;
        do {
            const std::size_t n = std::min(kAlertsPerPost, alerts.size() - taken);
            json body = json::array();
            for (std::size_t i = 0; i < n; ++i) body.push_back(alerts[taken + i]);
            client::RequestOptions opts;
            opts.body = body.dump();
            opts.contentType = "application/json";
            auto r = m.client.send("POST", "/api/v2/alerts", std::move(opts));
            if (!r) {
                error = r.error().toString();
                return false;
            }
            if (r->status != 200) {
                error = "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300);
                return false;
            }
            taken += n;
        } while (taken < alerts.size());
        return true;
    }

    // One cycle for one Alertmanager over the events read this cycle.
    void sendTo(Manager& m, const std::vector<db::EventRecord>& events,
                const std::set<std::pair<std::string_view, std::string_view>>& openKeys,
                const AlertContext& ctx, std::int64_t now) {
        const bool full = now - m.lastFullMs >= std::int64_t(cfg.resendInterval.count()) * 1000;
        const std::int64_t resolvedSince =
            std::min(m.resolvedWatermarkMs, now - kResolvedRetentionMs);
        std::vector<json> alerts;
        std::vector<std::pair<std::int64_t, std::int64_t>> marks;  // id -> what it will have taken
        for (const auto& e : events) {
            const std::int64_t mark = e.open() ? 0 : e.closedAtMs;
            if (!e.open()) {
                // The same (kind, location) open again: that firing alert has the same labels and
                // supersedes this resolution.
                if (openKeys.count({e.kind, e.location})) continue;
                if (e.closedAtMs < resolvedSince) continue;
            }
            auto it = m.taken.find(e.id);
            const bool changed = it == m.taken.end() || it->second != mark;
            if (!full && !changed) continue;
            alerts.push_back(alertOf(e, ctx, now));
            marks.emplace_back(e.id, mark);
        }
        if (alerts.empty() && !full) return;
        std::string error;
        // A full cycle with nothing to say still POSTs (an empty list): loom_alertmanager_up
        // tells the truth on a quiet cluster.
        std::size_t taken = 0;
        const bool ok = post(m, alerts, taken, error);
        m.alertsSent += std::int64_t(taken);
        for (std::size_t i = 0; i < taken; ++i) m.taken[marks[i].first] = marks[i].second;
        if (ok) {
            if (!m.up.exchange(true) && m.lastSuccessMs.load() != 0)
                spdlog::info("alerting: {} reachable again; {} alert(s) sent", m.url, taken);
            m.lastSuccessMs = now;
            m.backoff = std::chrono::milliseconds(0);
            m.nextAttemptMs = 0;
            if (full) {
                m.lastFullMs = now;
                m.resolvedWatermarkMs = now;
            }
            // Forget what is no longer in the window.
            std::set<std::int64_t> live;
            for (const auto& e : events) live.insert(e.id);
            std::erase_if(m.taken, [&](const auto& kv) { return !live.count(kv.first); });
            return;
        }
        ++m.postsFailed;
        if (m.up.exchange(false) || m.backoff.count() == 0)
            spdlog::warn("alerting: {}: {} ({} alert(s) waiting; retrying with backoff)", m.url,
                         error, alerts.size() - taken);
        m.backoff = m.backoff.count() == 0
                        ? std::chrono::milliseconds(500)
                        : std::min<std::chrono::milliseconds>(m.backoff * 2, cfg.maxBackoff);
        m.nextAttemptMs = now + m.backoff.count();
    }

    // Alertmanager's own health endpoint: up follows it between POSTs. Back from down while
    // alerts wait in backoff: retried now, not at the end of the backoff.
    void probeAll() {
        lastProbeMs = unixMs();
        for (auto& m : managers) {
            auto r = m->probe.send("GET", "/-/healthy", {});
            const bool healthy = r && r->status == 200;
            if (!healthy) {
                if (m->up.exchange(false))
                    spdlog::warn("alerting: {}: /-/healthy: {}", m->url,
                                 r ? "HTTP " + std::to_string(r->status) : r.error().toString());
            } else if (!m->up && m->nextAttemptMs != 0) {
                m->nextAttemptMs = lastProbeMs;
            } else if (!m->up && m->lastSuccessMs.load() != 0) {
                m->up = true;
            }
        }
    }

    void run() {
        std::optional<db::Connection> conn;
        bool wasLeader = false;
        while (true) {
            {
                std::unique_lock lock(mutex);
                auto deadline = std::chrono::steady_clock::now() + kPoll;
                const std::int64_t now = unixMs();
                // Resends and retries are due only while leading: a follower waits for an event
                // message or the poll (its managers' "next full send" is long past).
                if (wasLeader)
                    for (const auto& m : managers) {
                        std::int64_t due =
                            m->nextAttemptMs
                                ? m->nextAttemptMs
                                : m->lastFullMs + std::int64_t(cfg.resendInterval.count()) * 1000;
                        auto in = std::chrono::milliseconds(std::max<std::int64_t>(0, due - now));
                        deadline = std::min(deadline, std::chrono::steady_clock::now() + in);
                    }
                {
                    auto in = std::chrono::milliseconds(
                        std::max<std::int64_t>(0, lastProbeMs + kProbeMs - now));
                    deadline = std::min(deadline, std::chrono::steady_clock::now() + in);
                }
                wake.wait_until(lock, deadline, [&] { return stopping || dirty; });
                if (stopping) return;
                const bool wasDirty = dirty;
                dirty = false;
                if (wasDirty) {
                    // A burst of event messages (a rack failing) costs one cycle.
                    wake.wait_for(lock, kCoalesce, [&] { return stopping; });
                    if (stopping) return;
                    dirty = false;
                }
            }
            if (unixMs() - lastProbeMs >= kProbeMs) probeAll();
            if (!services.isLeader()) {
                if (wasLeader) {
                    for (auto& m : managers) m->taken.clear();  // a later term sends all again
                    firing = 0;
                }
                wasLeader = false;
                continue;
            }
            if (!wasLeader)
                for (auto& m : managers) m->lastFullMs = 0;  // a new leader sends everything
            wasLeader = true;

            const std::int64_t now = unixMs();
            bool anyDue = false;
            for (const auto& m : managers) anyDue = anyDue || m->nextAttemptMs <= now;
            if (!anyDue) continue;
            std::int64_t since = now - kResolvedRetentionMs;
            for (const auto& m : managers) since = std::min(since, m->resolvedWatermarkMs);
            if (!conn) {
                auto c = db::Database::fromUrl(services.databaseUrl()).connect();
                if (!c) {
                    spdlog::warn("alerting: {}", c.error().toString());
                    continue;  // the next poll retries
                }
                conn.emplace(std::move(*c));
            }
            auto events = db::listAlertEvents(*conn, since);
            if (!events) {
                spdlog::warn("alerting: {}", events.error().toString());
                conn.reset();
                continue;
            }
            std::set<std::pair<std::string_view, std::string_view>> openKeys;
            std::int64_t open = 0;
            for (const auto& e : *events)
                if (e.open()) {
                    openKeys.emplace(e.kind, e.location);
                    ++open;
                }
            firing = open;
            const AlertContext ctx = context();
            for (auto& m : managers)
                if (m->nextAttemptMs <= now) sendTo(*m, *events, openKeys, ctx, now);
        }
    }
};

AlertSender::AlertSender(Services& services, AlertingConfig config, std::string defaultExternalUrl)
    : impl_(std::make_shared<Impl>(services, std::move(config), std::move(defaultExternalUrl))) {}

AlertSender::~AlertSender() { stop(); }

void AlertSender::start() {
    if (!impl_->cfg.enabled() || impl_->thread.joinable()) return;
    auto* impl = impl_.get();
    // The hook may outlive this sender (Services has no way to remove one): it holds a weak
    // reference.
    std::weak_ptr<Impl> weak = impl_;
    impl->services.onPublish("events", [weak](const json&) {
        if (auto i = weak.lock()) i->poke();
    });
    impl->thread = std::thread([impl] { impl->run(); });
    spdlog::info("alerting: sending events to {} Alertmanager(s), resent every {} s",
                 impl->managers.size(), impl->cfg.resendInterval.count());
}

void AlertSender::stop() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    impl_->wake.notify_all();
    if (impl_->thread.joinable()) impl_->thread.join();
}

void AlertSender::appendMetrics(std::string& out) const {
    if (!impl_->cfg.enabled()) return;
    auto series = [&](const char* name, const char* type, const char* help, auto value) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
        for (const auto& m : impl_->managers)
            out += std::string(name) + "{alertmanager=\"" + m->url + "\"} " + value(*m) + "\n";
    };
    series("loom_alertmanager_up", "gauge",
           "1 if this Alertmanager answers /-/healthy (asked every 3 s) and took the last POST.",
           [](const Impl::Manager& m) { return std::string(m.up ? "1" : "0"); });
    series("loom_alerts_sent_total", "counter", "Alerts this Alertmanager took.",
           [](const Impl::Manager& m) { return std::to_string(m.alertsSent.load()); });
    series("loom_alert_posts_failed_total", "counter", "Failed POSTs to this Alertmanager.",
           [](const Impl::Manager& m) { return std::to_string(m.postsFailed.load()); });
    series("loom_alertmanager_last_success_timestamp_seconds", "gauge",
           "When this Alertmanager last took every alert sent (Unix time; 0: never).",
           [](const Impl::Manager& m) { return std::to_string(m.lastSuccessMs.load() / 1000); });
    out +=
        "# HELP loom_alerts_firing Open events sent as firing alerts.\n"
        "# TYPE loom_alerts_firing gauge\nloom_alerts_firing " +
        std::to_string(impl_->firing.load()) + "\n";
}

}  // namespace loom::backend
