#include "loom/backend/telemetry_service.hpp"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

#include <spdlog/spdlog.h>

#include "loom/backend/services.hpp"
#include "loom/db/database.hpp"
#include "loom/db/event_repo.hpp"

namespace loom::backend {

namespace {
std::int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}
}  // namespace

db::EventRecord toRecord(const FailureEvent& e) {
    db::EventRecord r;
    r.id = e.id;
    r.kind = e.kind;
    r.severity = std::string(severityName(e.severity));
    r.location = e.location;
    r.rack = e.rack;
    r.zone = e.zone;
    r.message = e.message;
    r.openedAtMs = e.openedAtMs;
    r.closedAtMs = e.closedAtMs;
    r.labels = e.labels;
    return r;
}

nlohmann::json eventJson(const db::EventRecord& e) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : e.labels) labels[k] = v;
    return {{"id", e.id},
            {"severity", e.severity},
            {"kind", e.kind},
            {"location", e.location},
            {"rack", e.rack},
            {"zone", e.zone},
            {"message", e.message},
            {"openedAt", db::isoTimeMs(e.openedAtMs)},
            {"closedAt", e.closedAtMs ? nlohmann::json(db::isoTimeMs(e.closedAtMs)) : nlohmann::json()},
            {"labels", std::move(labels)}};
}

struct TelemetryService::Impl {
    Services& services;
    TelemetryServiceOptions options;
    TelemetryHub hub;
    std::unique_ptr<Simulator> simulator;
    std::shared_ptr<const HallLayout> simLayout;
    std::string body;

    // Writer queue: events in rule order, and completed rollup minutes (leader only).
    using Item = std::variant<FailureEvent, Rollup>;
    std::mutex qMutex;
    std::condition_variable qCv;
    std::deque<Item> queue;
    std::uint64_t dropped = 0, written = 0, writeErrors = 0;
    bool stopping = false;

    std::mutex loopMutex;
    std::condition_variable loopCv;
    std::thread loopThread, writerThread;
    bool started = false;

    Impl(Services& s, TelemetryServiceOptions o)
        : services(s), options(std::move(o)), hub(s.layout(), options.hub) {}

    void enqueue(Item item) {
        {
            std::lock_guard lk(qMutex);
            if (queue.size() >= options.eventQueueLimit) {
                queue.pop_front();
                ++dropped;
            }
            queue.push_back(std::move(item));
        }
        qCv.notify_one();
    }

    void runOnce(std::int64_t now) {
        if (auto L = services.layout(); L && L != hub.layout()) hub.setLayout(L);
        auto L = hub.layout();
        bool leader = services.isLeader();
        if (options.simulate && leader && L->gpuCount() > 0) {
            if (simLayout != L) {
                simulator = std::make_unique<Simulator>(L, options.simulator);
                simLayout = L;
            }
            simulator->step(now, body);
            if (auto r = hub.ingestText(body, now); !r)
                spdlog::error("simulator produced bad telemetry: {}", r.error().toString());
        }
        hub.tick(now);
        for (auto& r : hub.takeRollups())
            if (leader && options.persist) enqueue(std::move(r));
    }

    void loop() {
        auto period = std::chrono::milliseconds(static_cast<long>(options.tickSeconds * 1000));
        auto next = std::chrono::steady_clock::now();
        std::unique_lock lk(loopMutex);
        while (!stopping) {
            lk.unlock();
            try {
                runOnce(nowMs());
            } catch (const std::exception& e) {
                spdlog::error("telemetry loop: {}", e.what());
            }
            lk.lock();
            next += period;
            // Behind by more than a period (a long GC-like stall): skip, do not burst.
            if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now() + period;
            loopCv.wait_until(lk, next, [&] { return stopping; });
        }
    }

    void publish(const db::EventRecord& r) {
        services.publish("events", {{"type", "event"}, {"event", eventJson(r)}});
    }

    // Writes a run of same-type items; returns false when the database refused (retry later).
    bool writeRun(std::optional<db::Connection>& conn, std::vector<Item>& run) {
        if (!options.persist) {
            for (auto& it : run)
                if (auto* e = std::get_if<FailureEvent>(&it)) publish(toRecord(*e));
            return true;
        }
        if (!conn) {
            auto c = db::Database::fromUrl(services.databaseUrl()).connect();
            if (!c) {
                spdlog::warn("event writer: {}", c.error().toString());
                return false;
            }
            conn.emplace(std::move(*c));
        }
        if (auto* r = std::get_if<Rollup>(&run.front())) {
            auto L = hub.layout();
            std::vector<db::RollupRecord> rows;
            for (auto& item : run) {
                const auto& ru = std::get<Rollup>(item);
                for (const auto& rr : ru.racks) {
                    if (rr.rack >= L->racks().size()) continue;
                    db::RollupRecord x;
                    x.minuteMs = ru.minuteStartMs;
                    x.scope = "rack";
                    x.name = L->racks()[rr.rack].name;
                    auto opt = [](float v) -> std::optional<double> {
                        return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
                    };
                    x.utilAvg = opt(rr.utilAvg);
                    x.utilMax = opt(rr.utilMax);
                    x.tempAvg = opt(rr.tempAvg);
                    x.tempMax = opt(rr.tempMax);
                    x.powerAvg = opt(rr.powerAvgW);
                    x.gpusReporting = static_cast<int>(rr.gpusReporting);
                    x.gpusUnhealthy = static_cast<int>(rr.gpusUnhealthy);
                    rows.push_back(std::move(x));
                }
                for (const auto& sr : ru.switches) {
                    if (sr.sw >= L->switches().size()) continue;
                    db::RollupRecord x;
                    x.minuteMs = ru.minuteStartMs;
                    x.scope = "switch";
                    x.name = L->switches()[sr.sw].name;
                    if (std::isfinite(sr.utilAvg)) x.utilAvg = sr.utilAvg;
                    if (std::isfinite(sr.utilMax)) x.utilMax = sr.utilMax;
                    x.errors = sr.errors;
                    x.discards = sr.discards;
                    x.pfcPause = sr.pfcPause;
                    x.portsDown = static_cast<int>(sr.portsDown);
                    rows.push_back(std::move(x));
                }
            }
            (void)r;
            auto res = db::insertRollups(*conn, rows);
            if (!res) {
                spdlog::warn("rollups: {}", res.error().toString());
                if (res.error().code == Errc::Unavailable) {
                    conn.reset();
                    return false;
                }
                ++writeErrors;  // a conflict (minute already written): do not retry
            }
            return true;
        }
        const auto& first = std::get<FailureEvent>(run.front());
        std::vector<db::EventRecord> recs;
        for (auto& it : run) recs.push_back(toRecord(std::get<FailureEvent>(it)));
        if (first.open()) {
            auto ids = db::insertEvents(*conn, recs);
            if (!ids) {
                spdlog::warn("events: {}", ids.error().toString());
                conn.reset();
                return false;
            }
            for (std::size_t i = 0; i < recs.size(); ++i) recs[i].id = (*ids)[i];
        } else {
            std::vector<db::EventClose> closes;
            for (const auto& r : recs) closes.push_back({r.kind, r.location, r.closedAtMs});
            auto ids = db::closeEvents(*conn, closes);
            if (!ids) {
                spdlog::warn("events: {}", ids.error().toString());
                conn.reset();
                return false;
            }
            for (std::size_t i = 0; i < recs.size(); ++i) recs[i].id = (*ids)[i];
        }
        written += recs.size();
        for (const auto& r : recs) publish(r);
        return true;
    }

    void writer() {
        std::optional<db::Connection> conn;
        int failures = 0;
        for (;;) {
            std::vector<Item> run;
            {
                std::unique_lock lk(qMutex);
                qCv.wait(lk, [&] { return stopping || !queue.empty(); });
                if (queue.empty()) return;
                // A run: consecutive opens, consecutive closes, or rollups.
                auto kindOf = [](const Item& i) {
                    if (auto* e = std::get_if<FailureEvent>(&i)) return e->open() ? 0 : 1;
                    return 2;
                };
                int k = kindOf(queue.front());
                while (!queue.empty() && kindOf(queue.front()) == k && run.size() < 5000) {
                    run.push_back(std::move(queue.front()));
                    queue.pop_front();
                }
            }
            if (writeRun(conn, run)) {
                failures = 0;
                continue;
            }
            ++failures;
            ++writeErrors;
            if (failures >= 3 || stopping) {
                // The database stays away: the live view still gets the events, without ids.
                for (auto& it : run)
                    if (auto* e = std::get_if<FailureEvent>(&it)) publish(toRecord(*e));
                failures = 0;
                continue;
            }
            {
                // Put the run back in front, in order, and wait before retrying.
                std::unique_lock lk(qMutex);
                for (auto it = run.rbegin(); it != run.rend(); ++it) queue.push_front(std::move(*it));
                qCv.wait_for(lk, std::chrono::seconds(1), [&] { return stopping; });
            }
        }
    }
};

TelemetryService::TelemetryService(Services& services, TelemetryServiceOptions options)
    : impl_(std::make_unique<Impl>(services, std::move(options))) {
    auto* impl = impl_.get();
    impl->hub.addEventListener([impl](const FailureEvent& e) { impl->enqueue(e); });
    services.addMetricsSource([impl](std::string& out) {
        impl->hub.appendMetrics(out);
        std::uint64_t dropped, written, errors;
        std::size_t queued;
        {
            std::lock_guard lk(impl->qMutex);
            dropped = impl->dropped;
            written = impl->written;
            errors = impl->writeErrors;
            queued = impl->queue.size();
        }
        out += "# HELP loom_event_writer_written_total Events stored in PostgreSQL.\n"
               "# TYPE loom_event_writer_written_total counter\nloom_event_writer_written_total " +
               std::to_string(written) +
               "\n# HELP loom_event_writer_dropped_total Events dropped: writer queue full.\n"
               "# TYPE loom_event_writer_dropped_total counter\nloom_event_writer_dropped_total " +
               std::to_string(dropped) +
               "\n# HELP loom_event_writer_errors_total Failed event or rollup writes.\n"
               "# TYPE loom_event_writer_errors_total counter\nloom_event_writer_errors_total " +
               std::to_string(errors) +
               "\n# HELP loom_event_writer_queue Events and rollups waiting to be written.\n"
               "# TYPE loom_event_writer_queue gauge\nloom_event_writer_queue " +
               std::to_string(queued) + "\n";
    });
}

TelemetryService::~TelemetryService() { stop(); }

TelemetryHub& TelemetryService::hub() { return impl_->hub; }

void TelemetryService::start() {
    if (impl_->started) return;
    impl_->started = true;
    impl_->loopThread = std::thread([this] { impl_->loop(); });
    impl_->writerThread = std::thread([this] { impl_->writer(); });
}

void TelemetryService::stop() {
    if (!impl_ || !impl_->started) return;
    {
        std::lock_guard a(impl_->loopMutex);
        std::lock_guard b(impl_->qMutex);
        if (impl_->stopping) return;
        impl_->stopping = true;
    }
    impl_->loopCv.notify_all();
    impl_->qCv.notify_all();
    if (impl_->loopThread.joinable()) impl_->loopThread.join();
    if (impl_->writerThread.joinable()) impl_->writerThread.join();
}

std::vector<std::string> TelemetryService::topics() {
    std::vector<std::string> t;
    for (int i = 0; i < kTopicCount; ++i) t.emplace_back(topicName(static_cast<Topic>(i)));
    return t;
}

bool TelemetryService::topic(std::string_view name, std::vector<std::uint8_t>& out) const {
    auto t = parseTopic(name);
    if (!t) return false;
    impl_->hub.packedInto(*t, out);
    return true;
}

void TelemetryService::runOnce(std::int64_t now) { impl_->runOnce(now); }

}  // namespace loom::backend
