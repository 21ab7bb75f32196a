#include "straggler_service.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <ctime>
#include <unordered_set>

#include "loom/backend/services.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/db/job_repo.hpp"
#include "loom/db/lemon_repo.hpp"
#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::backend {

namespace {

constexpr std::string_view kKind = "straggler";
constexpr std::int64_t kReloadMs = 5000, kRepublishMs = 30000;
constexpr std::string_view kLemonKind = "lemon";
constexpr std::int64_t kLemonReadMs = 30'000, kLemonPruneMs = 3'600'000;

double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

nlohmann::json suspectJson(const jobs::StragglerSuspect& s) {
    return {{"location", s.location},
            {"gpu", s.gpu.empty() ? nlohmann::json() : nlohmann::json(s.gpu)},
            {"cause", s.cause},
            {"score", std::round(s.score * 10) / 10},
            {"evidence", s.evidence}};
}

std::string openKey(const std::string& job, const std::string& location) {
    return job + '\x1f' + location;
}

}  // namespace

StragglerService::StragglerService(Services& services, Enqueue enqueue, bool persist,
                                   std::int64_t warmupMs)
    : services_(services),
      enqueue_(std::move(enqueue)),
      persist_(persist),
      finder_(jobs::StragglerOptions{.warmupMs = warmupMs}) {
    // A job stored, deleted or synced (here or on another loomd): reload the list next tick.
    // Not the per-job messages the views publish themselves.
    services_.onPublish("jobs", [dirty = jobsDirty_](const nlohmann::json& m) {
        const auto type = m.is_object() ? m.value("type", std::string()) : std::string();
        if (type != "jobHealth" && type != "jobSuspects") dirty->store(true);
    });
}

void StragglerService::loadJobs() {
    if (!conn_) {
        auto c = db::Database::fromUrl(services_.databaseUrl()).connect();
        if (!c) {
            spdlog::warn("straggler finder: {}", c.error().toString());
            return;
        }
        conn_.emplace(std::move(*c));
    }
    auto running = db::jobsInState(*conn_, jobs::JobState::Running);
    if (!running) {
        spdlog::warn("straggler finder: {}", running.error().toString());
        conn_.reset();
        return;  // the old list stays; the next tick tries again
    }
    std::vector<jobs::FinderJob> list;
    list.reserve(running->size());
    hostJob_.clear();
    for (auto& s : *running) {
        for (const auto& h : s.job.hosts) hostJob_.emplace(h, s.job.name);
        list.push_back({s.job.name, std::move(s.job.hosts), s.job.sharesHosts});
    }
    jobs_.store(list.size());
    finder_.setJobs(std::move(list));
    jobsDirty_->store(false);
}

// The stored open straggler events of an earlier leader (or of this loomd before a restart):
// each one of a running job is taken over as it is (same event, same openedAt; the detector
// closes it after its quiet ticks if the straggler is gone), the others are closed.
void StragglerService::reconcile(std::int64_t nowMs) {
    if (!conn_) return;
    auto stored = db::listEvents(
        *conn_, {.kind = std::string(kKind), .source = "jobs", .open = true, .limit = 5000});
    if (!stored) {
        spdlog::warn("straggler finder: {}", stored.error().toString());
        conn_.reset();
        return;
    }
    // The open lemon events: held as they are until their host or GPU is no longer a lemon.
    auto lemons = db::listEvents(
        *conn_, {.kind = std::string(kLemonKind), .source = "jobs", .open = true, .limit = 5000});
    if (!lemons) {
        spdlog::warn("straggler finder: {}", lemons.error().toString());
        conn_.reset();
        return;
    }
    lemonOpen_.clear();
    for (const auto& e : lemons->items) {
        auto& ev = lemonOpen_[e.location] = fromRecord(e);
        ev.source = "jobs";
    }
    nextLemonMs_ = 0;
    std::vector<db::EventClose> closes;
    for (const auto& e : stored->items) {
        auto label = [&](std::string_view k) {
            for (const auto& [key, v] : e.labels)
                if (key == k) return v;
            return std::string();
        };
        const auto job = label("job");
        jobs::StragglerSuspect s{0, e.location, label("gpu"), label("cause"), 0, e.message};
        // The message is "job <job>: straggler <location> (<cause>): <evidence>".
        const auto head = "job " + job + ": straggler " + s.location + " (" + s.cause + "): ";
        if (s.evidence.starts_with(head)) s.evidence.erase(0, head.size());
        const auto key = openKey(job, s.location);
        if (!open_.contains(key) && finder_.adopt(job, std::move(s))) {
            auto& ev = open_[key] = fromRecord(e);
            ev.source = "jobs";
            continue;
        }
        closes.push_back({e.kind, e.location, nowMs, e.id, {}});
    }
    if (!closes.empty()) {
        auto ids = db::closeEvents(*conn_, closes);
        if (!ids) {
            spdlog::warn("straggler finder: {}", ids.error().toString());
            conn_.reset();
            return;
        }
        std::vector<std::int64_t> closed;
        for (auto id : *ids)
            if (id) closed.push_back(id);
        if (auto rows = db::getEvents(*conn_, closed))
            for (const auto& r : *rows)
                services_.publish("events", {{"type", "event"}, {"event", eventJson(r)}});
    }
    reconciled_ = true;
}

telemetry::FailureEvent StragglerService::toEvent(const jobs::StragglerTransition& t,
                                                  const telemetry::HallLayout& L,
                                                  std::int64_t nowMs) const {
    telemetry::FailureEvent e;
    e.kind = std::string(kKind);
    e.severity = telemetry::Severity::Warning;
    e.location = t.suspect.location;
    e.message = t.message;
    e.openedAtMs = nowMs;
    e.source = "jobs";
    auto rack = telemetry::kNoIndex;
    if (auto g = L.gpuByName(t.suspect.gpu); g != telemetry::kNoIndex)
        rack = L.gpuRack()[g];
    else if (auto l = L.linkByName(t.suspect.location); l != telemetry::kNoIndex)
        rack = L.links()[l].rackIndex;
    if (rack < L.racks().size()) {
        e.rack = L.racks()[rack].name;
        e.zone = L.racks()[rack].zone;
    }
    e.labels = {{"job", t.job}, {"cause", t.suspect.cause}};
    if (!t.suspect.gpu.empty()) e.labels.emplace_back("gpu", t.suspect.gpu);
    e.key = "straggler:" + t.job + ":" + e.location + ":" + std::to_string(nowMs);
    return e;
}

void StragglerService::tick(const telemetry::TelemetryHub& hub, std::int64_t nowMs, bool leader) {
    if (!persist_) return;
    if (!leader) {
        if (leading_) {
            // Another loomd leads now: it closes what this one left open (reconcile).
            finder_.reset();
            open_.clear();
            for (const auto& [job, p] : published_)
                services_.publish("jobs", {{"type", "jobSuspects"},
                                           {"name", job},
                                           {"suspects", nlohmann::json::array()},
                                           {"straggler", nullptr},
                                           {"stragglers", nlohmann::json::array()},
                                           {"updatedAt", db::isoTimeMs(nowMs)}});
            published_.clear();
        }
        leading_ = false;
        reconciled_ = false;
        return;
    }
    // Newly leading: whatever the boards of every loomd hold came from an earlier leader,
    // which may have died without a word; the first pass speaks for every job.
    if (!leading_) announceAll_ = true;
    leading_ = true;
    if (jobsDirty_->load() || nowMs >= nextLoadMs_) {
        loadJobs();
        nextLoadMs_ = nowMs + kReloadMs;
    }
    if (!reconciled_) reconcile(nowMs);
    if (!reconciled_) return;  // the database is away: no event the writer could not match

    const double cpu0 = threadCpuSeconds();
    auto transitions = finder_.tick(hub, nowMs);
    const double cpu = threadCpuSeconds() - cpu0;
    lastCpuSeconds_.store(cpu);
    cpuSecondsTotal_.store(cpuSecondsTotal_.load() + cpu);
    ++ticks_;

    auto L = hub.layout();
    for (const auto& t : transitions) {
        if (t.opened) {
            strike(t, *L, nowMs);
            auto e = toEvent(t, *L, nowMs);
            open_[openKey(t.job, t.suspect.location)] = e;
            ++opened_;
            enqueue_(std::move(e));
        } else if (auto it = open_.find(openKey(t.job, t.suspect.location)); it != open_.end()) {
            auto e = std::move(it->second);
            open_.erase(it);
            e.closedAtMs = nowMs;
            enqueue_(std::move(e));
        }
    }
    publishSuspects(nowMs);
    tendLemons(*L, nowMs);
}

void StragglerService::noteFailure(const telemetry::FailureEvent& e) {
    if (!persist_ || !e.open() || !e.kind.starts_with("gpu_")) return;
    std::lock_guard lk(failuresMutex_);
    if (failures_.size() < 10'000) failures_.push_back(e);
}

void StragglerService::strike(const jobs::StragglerTransition& t, const telemetry::HallLayout& L,
                              std::int64_t nowMs) {
    std::string host;
    if (auto g = L.gpuByName(t.suspect.gpu); g != telemetry::kNoIndex)
        host = L.gpuHost()[g];
    else if (L.hostByName(t.suspect.location) != telemetry::kNoIndex)
        host = t.suspect.location;
    for (auto& s : jobs::lemonStrikes(t.job, t.suspect, host, nowMs))
        strikes_.push_back(std::move(s));
}

void StragglerService::tendLemons(const telemetry::HallLayout& L, std::int64_t nowMs) {
    std::vector<telemetry::FailureEvent> failed;
    {
        std::lock_guard lk(failuresMutex_);
        failed.swap(failures_);
    }
    for (const auto& e : failed) {
        auto g = L.gpuByName(e.location);
        if (g == telemetry::kNoIndex) continue;
        const auto& host = L.gpuHost()[g];
        auto j = hostJob_.find(host);
        if (j == hostJob_.end()) continue;  // a GPU failing outside a job strikes no job
        for (auto& s : jobs::failureStrikes(j->second, e.kind, telemetry::severityName(e.severity),
                                            e.location, host, nowMs))
            strikes_.push_back(std::move(s));
    }
    if (!conn_) return;
    const bool struck = !strikes_.empty();
    if (struck) {
        if (auto r = db::recordStrikes(*conn_, strikes_); !r) {
            spdlog::warn("lemons: {}", r.error().toString());
            conn_.reset();
            return;  // kept: written at the next tick
        }
        strikes_.clear();
    }
    if (!struck && nowMs < nextLemonMs_) return;
    nextLemonMs_ = nowMs + kLemonReadMs;
    if (nowMs >= nextPruneMs_) {
        nextPruneMs_ = nowMs + kLemonPruneMs;
        if (auto r = db::pruneStrikes(*conn_, nowMs - jobs::kLemonWindowMs); !r)
            spdlog::warn("lemons: {}", r.error().toString());
    }
    auto strikes = db::strikesSince(*conn_, nowMs - jobs::kLemonWindowMs);
    if (!strikes) {
        spdlog::warn("lemons: {}", strikes.error().toString());
        conn_.reset();
        return;
    }
    std::unordered_set<std::string> lemons;
    for (const auto& l : jobs::countLemons(*strikes, nowMs)) {
        if (!l.lemon) break;  // lemons come first
        lemons.insert(l.entity);
        if (lemonOpen_.contains(l.entity)) continue;
        telemetry::FailureEvent e;
        e.kind = std::string(kLemonKind);
        e.severity = telemetry::Severity::Warning;
        e.location = l.entity;
        e.message = jobs::lemonMessage(l);
        e.openedAtMs = nowMs;
        e.source = "jobs";
        if (auto g = L.gpuByHost(l.host, 0); g != telemetry::kNoIndex) {
            const auto r = L.gpuRack()[g];
            if (r < L.racks().size()) {
                e.rack = L.racks()[r].name;
                e.zone = L.racks()[r].zone;
            }
        }
        e.labels = {{"entity", l.kind}, {"host", l.host}, {"jobs", std::to_string(l.jobs)}};
        e.key = "lemon:" + l.entity + ":" + std::to_string(nowMs);
        lemonOpen_[l.entity] = e;
        ++lemonsOpened_;
        enqueue_(std::move(e));
    }
    for (auto it = lemonOpen_.begin(); it != lemonOpen_.end();) {
        if (lemons.contains(it->first)) {
            ++it;
            continue;
        }
        auto e = std::move(it->second);
        it = lemonOpen_.erase(it);
        e.closedAtMs = nowMs;
        enqueue_(std::move(e));
    }
}

void StragglerService::publishSuspects(std::int64_t nowMs) {
    std::unordered_set<std::string> seen;
    for (const auto& j : finder_.current()) {
        seen.insert(j.job);
        std::string sig;
        for (const auto& s : j.open) sig += s.location + ";";
        sig += "|";
        for (const auto& s : j.suspects) sig += s.location + "/" + s.cause + ";";
        auto& p = published_[j.job];
        const bool quiet = j.suspects.empty() && j.open.empty();
        if (sig == p.signature && (quiet || nowMs - p.atMs < kRepublishMs)) continue;
        if (p.signature.empty() && quiet && !announceAll_) {
            p.signature = sig;  // nothing to say about a job that never had a suspect
            continue;
        }
        p = {sig, nowMs};
        nlohmann::json suspects = nlohmann::json::array();
        for (const auto& s : j.suspects) suspects.push_back(suspectJson(s));
        nlohmann::json stragglers = nlohmann::json::array();
        for (const auto& s : j.open) {
            auto x = suspectJson(s);
            if (auto it = open_.find(openKey(j.job, s.location)); it != open_.end())
                x["openedAt"] = db::isoTimeMs(it->second.openedAtMs);
            stragglers.push_back(std::move(x));
        }
        nlohmann::json straggler = stragglers.empty() ? nlohmann::json() : stragglers.front();
        services_.publish("jobs", {{"type", "jobSuspects"},
                                   {"name", j.job},
                                   {"ranks", j.ranks},
                                   {"suspects", std::move(suspects)},
                                   {"straggler", std::move(straggler)},
                                   {"stragglers", std::move(stragglers)},
                                   {"updatedAt", db::isoTimeMs(nowMs)}});
    }
    if (finder_.current().size() >= jobs_.load()) announceAll_ = false;  // every job spoken for
    // Jobs that ended: their suspects go.
    for (auto it = published_.begin(); it != published_.end();) {
        if (seen.contains(it->first)) {
            ++it;
            continue;
        }
        services_.publish("jobs", {{"type", "jobSuspects"},
                                   {"name", it->first},
                                   {"suspects", nlohmann::json::array()},
                                   {"straggler", nullptr},
                                   {"stragglers", nlohmann::json::array()},
                                   {"updatedAt", db::isoTimeMs(nowMs)}});
        it = published_.erase(it);
    }
}

void StragglerService::appendMetrics(std::string& out) const {
    out +=
        "# HELP loom_straggler_tick_seconds CPU time of the straggler finder's last 1 Hz pass "
        "over every running job (leader only).\n"
        "# TYPE loom_straggler_tick_seconds gauge\nloom_straggler_tick_seconds " +
        std::to_string(lastCpuSeconds_.load()) +
        "\n# HELP loom_straggler_tick_seconds_total CPU time of the straggler finder in all "
        "(its rate is the cores it takes).\n"
        "# TYPE loom_straggler_tick_seconds_total counter\nloom_straggler_tick_seconds_total " +
        std::to_string(cpuSecondsTotal_.load()) +
        "\n# HELP loom_straggler_ticks_total Passes of the straggler finder.\n"
        "# TYPE loom_straggler_ticks_total counter\nloom_straggler_ticks_total " +
        std::to_string(ticks_.load()) +
        "\n# HELP loom_straggler_jobs Running jobs the straggler finder watches.\n"
        "# TYPE loom_straggler_jobs gauge\nloom_straggler_jobs " +
        std::to_string(jobs_.load()) +
        "\n# HELP loom_straggler_events_opened_total Straggler events opened by this loomd.\n"
        "# TYPE loom_straggler_events_opened_total counter\nloom_straggler_events_opened_total " +
        std::to_string(opened_.load()) +
        "\n# HELP loom_lemon_events_opened_total Lemon events opened by this loomd (a host or GPU "
        "the suspect or a failure in several jobs).\n"
        "# TYPE loom_lemon_events_opened_total counter\nloom_lemon_events_opened_total " +
        std::to_string(lemonsOpened_.load()) + "\n";
}

}  // namespace loom::backend
