#include "jobs_view.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "jobs_routing.hpp"
#include "loom/backend/services.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/database.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/db/job_repo.hpp"
#include "loom/db/lemon_repo.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/inventory/unix_time.hpp"
#include "loom/jobs/hostlist.hpp"
#include "loom/jobs/job_impact.hpp"
#include "loom/jobs/placement.hpp"
#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::backend {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kReloadEvery = std::chrono::seconds(5);
constexpr auto kIdRetry = std::chrono::milliseconds(250);
constexpr std::string_view kKind = "job_degraded";

double round1(double v) { return std::round(v * 10) / 10; }

// What readers see of one job: built by the worker, immutable once published.
struct JobHealth {
    nlohmann::json summary;
    nlohmann::json detail;  // the summary plus the long lists
};

struct OpenEvent {
    std::string kind, severity, location, message;
    std::int64_t openedAtMs = 0;
    std::int64_t id = 0;  // the stored row, once known
    std::string key;      // the hub's key of a telemetry event: finds its id (resolveIds)
};

// What wakes the worker. Shared with the hub's listener through a weak pointer, so a
// listener call racing with the view's end finds either a live inbox or none.
struct Inbox {
    std::mutex m;
    std::condition_variable cv;
    bool stop = false, jobsDirty = true, liveDirty = true;
    std::vector<telemetry::FailureEvent> events;
    std::optional<Clock::time_point> pendingSince;  // the oldest change not yet handled
    TelemetryHub* hub = nullptr;
};

class JobsViewImpl final : public JobsView {
public:
    explicit JobsViewImpl(Services& services) : services_(services) {
        worker_ = std::thread([this] { run(); });
    }
    ~JobsViewImpl() override {
        {
            std::lock_guard lk(in_->m);
            in_->stop = true;
        }
        in_->cv.notify_all();
        worker_.join();
    }

    void jobsChanged() override { wake(in_->jobsDirty); }
    void liveChanged() {
        attachHub();
        wake(in_->liveDirty);
    }

    nlohmann::json health(const std::string& name, bool detail) const override {
        std::lock_guard lk(snapMutex_);
        auto it = snap_.find(name);
        if (it == snap_.end()) return nullptr;
        return detail ? it->second->detail : it->second->summary;
    }

    void appendMetrics(std::string& out) const {
        std::lock_guard lk(snapMutex_);
        out +=
            "# HELP loom_jobs_tracked Running jobs whose health loomd computes.\n"
            "# TYPE loom_jobs_tracked gauge\nloom_jobs_tracked " +
            std::to_string(snap_.size()) + "\n";
        out +=
            "# HELP loom_jobs_degraded Running jobs whose busbw a failure lowered.\n"
            "# TYPE loom_jobs_degraded gauge\nloom_jobs_degraded " +
            std::to_string(degradedCount_) + "\n";
        out +=
            "# HELP loom_jobs_impact_runs_total Per-job impact computations.\n"
            "# TYPE loom_jobs_impact_runs_total counter\nloom_jobs_impact_runs_total " +
            std::to_string(impactRuns_) + "\n";
        out +=
            "# HELP loom_jobs_update_latency_seconds From the change (telemetry event or live "
            "reload) to every job updated and pushed, last update.\n"
            "# TYPE loom_jobs_update_latency_seconds gauge\nloom_jobs_update_latency_seconds " +
            std::to_string(lastLatencyMs_ / 1000.0) + "\n";
    }

private:
    void wake(bool& flag) {
        {
            std::lock_guard lk(in_->m);
            flag = true;
            if (!in_->pendingSince) in_->pendingSince = Clock::now();
        }
        in_->cv.notify_all();
    }

    // The hub exists while the server runs; the live-change hook runs only then, so attaching
    // from it never meets a hub being torn down. Events are mirrored here, so the worker itself
    // never touches the hub.
    void attachHub() {
        TelemetryHub* hub = services_.hub();
        if (!hub) return;
        {
            std::lock_guard lk(in_->m);
            if (hub == in_->hub) return;
            in_->hub = hub;
        }
        std::weak_ptr<Inbox> weak = in_;
        hub->addEventListener([weak](const telemetry::FailureEvent& e) {
            auto in = weak.lock();
            if (!in) return;
            {
                std::lock_guard lk(in->m);
                in->events.push_back(e);
                if (!in->pendingSince) in->pendingSince = Clock::now();
            }
            in->cv.notify_all();
        });
        // What the hub restores from the database after the copy below (a restart whose
        // database answered late) counts in the jobs too (issue 39 item 2).
        hub->addRestoreListener([weak](const std::vector<telemetry::FailureEvent>& restored) {
            auto in = weak.lock();
            if (!in) return;
            {
                std::lock_guard lk(in->m);
                in->events.insert(in->events.end(), restored.begin(), restored.end());
                if (!in->pendingSince) in->pendingSince = Clock::now();
            }
            in->cv.notify_all();
        });
        auto open = hub->openEvents();
        {
            std::lock_guard lk(in_->m);
            in_->events.insert(in_->events.begin(), open.begin(), open.end());
        }
        in_->cv.notify_all();
    }

    void run() {
        auto nextReload = Clock::now();
        for (;;) {
            bool jobs = false, live = false;
            std::vector<telemetry::FailureEvent> events;
            std::optional<Clock::time_point> since;
            {
                std::unique_lock lk(in_->m);
                // An id not stored yet is looked for again soon, not at the next reload.
                const auto wakeAt =
                    idsMissing_ ? std::min(nextReload, Clock::now() + kIdRetry) : nextReload;
                in_->cv.wait_until(lk, wakeAt, [&] {
                    return in_->stop || in_->jobsDirty || in_->liveDirty || !in_->events.empty();
                });
                if (in_->stop) return;
                jobs = std::exchange(in_->jobsDirty, false);
                live = std::exchange(in_->liveDirty, false);
                events.swap(in_->events);
                since = std::exchange(in_->pendingSince, std::nullopt);
            }
            // Woken only to look for ids again: that lookup alone, not a whole pass.
            const bool idsOnly = !jobs && !live && events.empty() && Clock::now() < nextReload;
            if (Clock::now() >= nextReload) {
                jobs = true;
                nextReload = Clock::now() + kReloadEvery;
            }
            try {
                std::lock_guard work(workMutex_);
                if (!idsOnly)
                    pass(jobs, live, events);
                else if (routed() && resolveIds())
                    buildHealth();
            } catch (const std::exception& e) {
                spdlog::warn("jobs view: {}", e.what());
            }
            if (since) {
                lastLatencyMs_ =
                    std::chrono::duration<double, std::milli>(Clock::now() - *since).count();
            }
        }
    }

    db::Connection* connection() {
        if (!conn_) {
            auto c = db::Database::fromUrl(services_.databaseUrl()).connect();
            if (!c) {
                spdlog::warn("jobs view: {}", c.error().toString());
                return nullptr;
            }
            conn_.emplace(std::move(*c));
        }
        return &*conn_;
    }

    bool loadJobs() {
        auto* conn = connection();
        if (!conn) return false;
        auto running = db::jobsInState(*conn, jobs::JobState::Running);
        if (!running) {
            spdlog::warn("jobs view: {}", running.error().toString());
            conn_.reset();
            return false;
        }
        std::vector<jobs::JobImpactInput> list;
        list.reserve(running->size());
        for (auto& s : *running)
            list.push_back({s.job.name, std::move(s.job.hosts), s.job.pattern});
        jobList_ = std::move(list);
        loadJobEvents(*conn);
        return true;
    }

    // The jobs' own open events (source jobs: job_degraded, straggler), by job: a job's open
    // events are these and those on its GPUs and links, counted once, here (issue 39 item 2),
    // for the summary's openEvents and the detail's list that every client shows.
    void loadJobEvents(db::Connection& conn) {
        auto own = db::listEvents(conn, {.source = "jobs", .open = true, .limit = 5000});
        if (!own) {
            spdlog::warn("jobs view: {}", own.error().toString());
            return;
        }
        jobEvents_.clear();
        for (const auto& e : own->items) noteJobEvent(e);
    }
    void noteJobEvent(const db::EventRecord& e) {
        std::string job = e.location;
        for (const auto& [k, v] : e.labels)
            if (k == "job") job = v;
        auto& list = jobEvents_[job];
        std::erase_if(list, [&](const OpenEvent& o) { return o.id == e.id; });
        if (e.open())
            list.push_back({e.kind, e.severity, e.location, e.message, e.openedAtMs, e.id});
        if (list.empty()) jobEvents_.erase(job);
    }

    // Brings the routing to the live inventory (jobs_routing.hpp). Returns the links whose state
    // changed, or nullopt after a rebuild.
    std::optional<std::vector<std::int32_t>> syncRouter(bool& rebuilt) {
        rebuilt = false;
        auto inv = services_.inventory();
        auto layout = services_.layout();
        if (!inv || !layout) return std::vector<std::int32_t>{};
        layout_ = layout;
        std::vector<std::string_view> down;
        for (const auto& [key, e] : open_)
            if (e.kind == "link_down") down.push_back(e.location);
        return routing_.sync(inv, layout->layoutVersion(), down, rebuilt);
    }
    bool routed() const { return routing_.built(); }
    jobs::RouterRef routing() const { return routing_.get(); }

    Result<nlohmann::json> place(int gpus, fabric::Collective pattern) override {
        std::lock_guard work(workMutex_);
        std::vector<telemetry::FailureEvent> none;
        pass(false, true, none, /*needRouter=*/true);
        if (!routed() || !layout_)
            return fail(Error::unavailable("the inventory is still loading; retry shortly"));
        const auto& t = routing().topology();
        std::unordered_map<std::string_view, std::int32_t> rackId;
        for (std::size_t i = 0; i < t.rackNames.size(); ++i)
            rackId.emplace(t.rackNames[i], static_cast<std::int32_t>(i));
        std::vector<std::uint8_t> free(t.rackNames.size(), 0);
        auto setRack = [&](const std::string& name, std::uint8_t v) {
            if (auto it = rackId.find(name); it != rackId.end()) free[it->second] = v;
        };
        const auto& L = *layout_;
        for (const auto& hr : L.racks())
            if (hr.state == "in_service") setRack(hr.name, 1);
        for (const auto& j : tracker_.jobs())
            for (auto h : j.hostIds)
                if (t.hostRack[h] != fabric::kNone) free[t.hostRack[h]] = 0;
        auto gpuRack = [&](std::uint32_t g) {
            if (g != telemetry::kNoIndex && L.gpuRack()[g] < L.racks().size())
                setRack(L.racks()[L.gpuRack()[g]].name, 0);
        };
        for (const auto& [key, e] : open_)
            if (e.severity == "critical" && e.kind.starts_with("gpu_"))
                gpuRack(L.gpuByName(e.location));
        for (std::uint32_t g = 0; g < L.gpuAdmin().size(); ++g)
            if (L.gpuAdmin()[g] == telemetry::AdminState::Quarantined) gpuRack(g);
        // Lemons (issue 34 item 6, docs/api.md): racks with a lemon host or GPU are left out
        // while the job fits without them, and taken (last resort) only when it does not.
        std::vector<std::uint8_t> lemonFree = free;
        std::vector<std::string> lemonRacks;
        std::vector<jobs::Lemon> lemons;
        if (auto* conn = connection()) {
            const auto now = unixMs();
            if (auto s = db::strikesSince(*conn, now - jobs::kLemonWindowMs))
                lemons = jobs::countLemons(*s, now);
            else
                conn_.reset();  // placed without them rather than not at all
        }
        for (const auto& lemon : lemons) {
            if (!lemon.lemon) break;  // lemons come first
            auto g = L.gpuByHost(lemon.host, 0);
            if (g == telemetry::kNoIndex || L.gpuRack()[g] >= L.racks().size()) continue;
            const auto& rack = L.racks()[L.gpuRack()[g]].name;
            if (auto it = rackId.find(rack); it != rackId.end() && free[it->second]) {
                lemonFree[it->second] = 0;
                lemonRacks.push_back(rack);
            }
        }
        auto avail = jobs::availableRacks(t, lemonFree);
        auto p = jobs::placeJob(routing(), {.gpus = gpus, .pattern = pattern}, avail);
        bool lemonsUsed = false;
        if (!p && !lemonRacks.empty() && p.error().code == Errc::Conflict) {
            avail = jobs::availableRacks(t, free);
            p = jobs::placeJob(routing(), {.gpus = gpus, .pattern = pattern}, avail);
            lemonsUsed = true;
        }
        if (!p) return fail(p.error());
        auto f = jobs::placeFirstFit(routing(), {.gpus = gpus, .pattern = pattern}, avail);
        if (!f) return fail(f.error());
        auto names = [&](const jobs::Placement& x) {
            std::vector<std::string> out;
            for (auto r : x.racks) out.push_back(t.rackNames[r]);
            std::sort(out.begin(), out.end(), loom::naturalLess);
            return out;
        };
        std::size_t available = 0;
        for (auto a : avail) available += a;
        return nlohmann::json{{"gpus", gpus},
                              {"pattern", std::string(fabric::collectiveName(pattern))},
                              {"gpusPlaced", p->gpus},
                              {"racks", names(*p)},
                              {"hostCount", p->hosts.size()},
                              {"nodelist", jobs::formatHostlist(p->hosts)},
                              {"zones", p->zones},
                              {"busBw", round1(p->busBw)},
                              {"availableRacks", available},
                              {"lemonRacksAvoided", lemonsUsed ? 0 : lemonRacks.size()},
                              {"lemonRacksUsed", lemonsUsed ? lemonRacks.size() : 0},
                              {"firstFit",
                               {{"racks", names(*f)},
                                {"nodelist", jobs::formatHostlist(f->hosts)},
                                {"zones", f->zones},
                                {"busBw", round1(f->busBw)}}}};
    }

    void pass(bool reloadJobs, bool live, std::vector<telemetry::FailureEvent>& events,
              bool needRouter = false) {
        bool eventsMoved = false;
        for (auto& e : events) {
            auto key = e.kind + '\n' + e.location;
            if (e.open()) {
                auto& o = open_[key];
                // The same event sent again (a link_down's ends changed) keeps the id found.
                const auto id = e.id != 0 ? e.id : o.key == e.key ? o.id : 0;
                o = {e.kind,       std::string(telemetry::severityName(e.severity)),
                     e.location,   e.message,
                     e.openedAtMs, id,
                     e.key};
            } else {
                open_.erase(key);
            }
            eventsMoved = true;
        }
        // A failed load keeps the old list; the 5 s timer (or the next wake) tries again.
        if (reloadJobs && !loadJobs()) reloadJobs = false;
        if (!needRouter && jobList_.empty() && tracker_.jobs().empty()) {
            idsMissing_ = false;  // no job lists them
            publishSnapshot({});
            return;
        }
        (void)live;
        bool rebuilt = false;
        auto changed = syncRouter(rebuilt);
        if (!routed()) return;
        std::vector<jobs::JobChange> changes;
        auto add = [&](std::vector<jobs::JobChange> c) {
            changes.insert(changes.end(), std::make_move_iterator(c.begin()),
                           std::make_move_iterator(c.end()));
        };
        if (rebuilt)
            add(tracker_.recomputeAll(routing()));
        else if (changed && !changed->empty())
            add(tracker_.linksChanged(routing(), *changed));
        if (reloadJobs || rebuilt) add(tracker_.setJobs(routing(), jobList_));
        impactRuns_ = tracker_.recomputed();
        (void)eventsMoved;
        resolveIds();
        // One order every view can rely on (issue 39): a job's job_degraded closes before its
        // health turns back, and opens after its health said degraded, so no client ever holds
        // "ok" beside an open job_degraded (buildHealth holds a job whose close is not stored).
        writeEvents(changes, Writes::Closes);
        buildHealth();
        // The jobs' health counts their own events: again, with what was just opened.
        if (writeEvents(changes, Writes::Opens)) buildHealth();
    }

    // The hub hands over its events before the writer has stored them: their ids are read by
    // key once stored, so the detail lists every event with the id REST and the stream give it.
    // Unknown ones are asked again at the next pass (a wake in 250 ms while any is missing).
    // Returns whether it found any.
    bool resolveIds() {
        std::vector<std::string> keys;
        for (const auto& [k, e] : open_)
            if (e.id == 0 && !e.key.empty()) keys.push_back(e.key);
        idsMissing_ = false;
        if (keys.empty()) return false;
        auto* conn = connection();
        if (!conn) return false;  // said by connection(); the 5 s reload tries again
        auto ids = db::eventIdsByKey(*conn, keys);
        if (!ids) {
            spdlog::warn("jobs view: {}", ids.error().toString());
            conn_.reset();
            return false;  // the 5 s reload tries again
        }
        bool found = false, missing = false;
        for (auto& [k, e] : open_) {
            if (e.id != 0 || e.key.empty()) continue;
            if (auto it = ids->find(e.key); it != ids->end()) {
                e.id = it->second;
                found = true;
            } else if (e.openedAtMs > unixMs() - 30'000) {  // older: the 5 s reload asks again
                missing = true;
            }
        }
        idsMissing_ = missing;
        return found;
    }

    void buildHealth() {
        const auto& t = routing().topology();
        const auto nowIso = db::isoTimeMs(unixMs());
        std::unordered_map<std::string, std::shared_ptr<const JobHealth>> next;
        // Events by location, for the GPUs and links of each job.
        std::unordered_map<std::string_view, std::vector<const OpenEvent*>> at;
        for (const auto& [key, e] : open_) at[e.location].push_back(&e);
        std::size_t degraded = 0;
        for (const auto& j : tracker_.jobs()) {
            // Recovered, but its job_degraded is still open (the close did not reach the
            // database, or a loomd that is not the leader has not read it yet): the job keeps
            // the degraded health it had until the event closes.
            if (!j.degraded() && degradedEventOpen(j.name))
                if (auto prev = snap_.find(j.name);
                    prev != snap_.end() && prev->second->summary.value("degraded", false)) {
                    ++degraded;
                    next.emplace(j.name, prev->second);
                    continue;
                }
            nlohmann::json gpusNotOk = nlohmann::json::array();
            nlohmann::json evs = nlohmann::json::array();
            int ok = 0, warning = 0, failed = 0, quarantined = 0, total = 0;
            // Each place once: a down link is among the job's links and its down links.
            std::unordered_set<std::string_view> listed;
            auto addEvents = [&](std::string_view loc) {
                auto it = at.find(loc);
                if (it == at.end() || !listed.insert(loc).second) return;
                for (const auto* e : it->second) {
                    nlohmann::json ev{{"kind", e->kind},
                                      {"severity", e->severity},
                                      {"location", e->location},
                                      {"message", e->message},
                                      {"openedAt", db::isoTimeMs(e->openedAtMs)}};
                    // Not yet stored (a moment after it opened): no id rather than a wrong one.
                    if (e->id != 0) ev["id"] = e->id;
                    evs.push_back(std::move(ev));
                }
            };
            for (const auto& h : j.hosts) {
                if (!layout_) break;
                auto hi = layout_->hostByName(h);
                if (hi == telemetry::kNoIndex) continue;
                for (int k = 0; k < jobs::kGpusPerHost; ++k) {
                    auto g = layout_->gpuOfHost(hi, k);
                    if (g == telemetry::kNoIndex) continue;
                    ++total;
                    const auto& name = layout_->gpuNames()[g];
                    std::string state = "ok";
                    if (layout_->gpuAdmin()[g] == telemetry::AdminState::Quarantined)
                        state = "quarantined";
                    if (auto it = at.find(name); it != at.end()) {
                        for (const auto* e : it->second)
                            state = e->severity == "critical" || state == "failed" ? "failed"
                                    : state == "quarantined"                       ? state
                                                                                   : "warning";
                        addEvents(name);
                    }
                    if (state == "ok")
                        ++ok;
                    else if (state == "warning")
                        ++warning;
                    else if (state == "failed")
                        ++failed;
                    else
                        ++quarantined;
                    if (state != "ok") gpusNotOk.push_back({{"name", name}, {"health", state}});
                }
            }
            nlohmann::json linksDown = nlohmann::json::array();
            for (auto l : j.downLinks) linksDown.push_back(t.linkNames[l]);
            for (auto l : j.links) addEvents(t.linkNames[l]);
            for (auto l : j.downLinks) addEvents(t.linkNames[l]);
            if (auto it = jobEvents_.find(j.name); it != jobEvents_.end())
                for (const auto& e : it->second)
                    evs.push_back({{"id", e.id},
                                   {"kind", e.kind},
                                   {"severity", e.severity},
                                   {"location", e.location},
                                   {"message", e.message},
                                   {"openedAt", db::isoTimeMs(e.openedAtMs)}});
            degraded += j.degraded();
            nlohmann::json summary{
                {"busBw", round1(j.busBw)},
                {"healthyBusBw", round1(j.healthyBusBw)},
                {"degraded", j.degraded()},
                {"gpus",
                 {{"total", total},
                  {"ok", ok},
                  {"warning", warning},
                  {"failed", failed},
                  {"quarantined", quarantined}}},
                {"linksCrossed", j.links.size()},
                {"linksDown", linksDown},
                {"openEvents", evs.size()},
                {"status", std::string(jobs::jobHealthStatus({.degraded = j.degraded(),
                                                              .modelError = !j.error.empty(),
                                                              .gpusFailed = failed,
                                                              .gpusWarning = warning,
                                                              .gpusQuarantined = quarantined,
                                                              .linksDown = j.downLinks.size()}))},
            };
            if (!j.error.empty()) summary["error"] = j.error;
            auto prev = snap_.find(j.name);
            auto h = std::make_shared<JobHealth>();
            // The stamp moves only with the content: a push is a change, not a heartbeat.
            const bool same =
                prev != snap_.end() && prev->second->summary.contains("updatedAt") && [&] {
                    auto p = prev->second->summary;
                    p.erase("updatedAt");
                    return p == summary;
                }();
            summary["updatedAt"] =
                same ? prev->second->summary["updatedAt"] : nlohmann::json(nowIso);
            h->summary = summary;
            if (same && prev->second->detail.value("version", std::uint64_t{0}) == j.version &&
                prev->second->detail["events"] == evs &&
                prev->second->detail["gpusNotOk"] == gpusNotOk) {
                h->detail = prev->second->detail;
            } else {
                h->detail = summary;
                nlohmann::json links = nlohmann::json::array();
                for (auto l : j.links) links.push_back(t.linkNames[l]);
                nlohmann::json bottlenecks = nlohmann::json::array();
                for (const auto& b : j.bottlenecks)
                    bottlenecks.push_back({{"link", b.name},
                                           {"direction", b.up ? "up" : "down"},
                                           {"flows", b.flows},
                                           {"gbpsPerFlow", b.gbpsPerFlow}});
                h->detail["links"] = std::move(links);
                h->detail["bottlenecks"] = std::move(bottlenecks);
                h->detail["gpusNotOk"] = std::move(gpusNotOk);
                h->detail["events"] = std::move(evs);
                h->detail["unknownHosts"] = j.unknownHosts;
                h->detail["version"] = j.version;
            }
            if (!same)
                services_.publishLocal(
                    "jobs", {{"type", "jobHealth"}, {"name", j.name}, {"health", h->summary}});
            next.emplace(j.name, std::move(h));
        }
        {
            std::lock_guard lk(snapMutex_);
            degradedCount_ = degraded;
        }
        publishSnapshot(std::move(next));
    }

    void publishSnapshot(std::unordered_map<std::string, std::shared_ptr<const JobHealth>> next) {
        std::lock_guard lk(snapMutex_);
        snap_ = std::move(next);
        if (snap_.empty()) degradedCount_ = 0;
    }

    bool degradedEventOpen(const std::string& job) const {
        auto it = jobEvents_.find(job);
        return it != jobEvents_.end() &&
               std::any_of(it->second.begin(), it->second.end(),
                           [](const OpenEvent& e) { return e.kind == kKind; });
    }

    // The leader writes job_degraded events: one per degraded job, closed on recovery. A new
    // leader (or a restart) first closes what is stored open for a job that is not degraded,
    // then opens one for each degraded job (one open per job and kind: a stored one stays).
    // The closes are written before the jobs' health is built, the opens after (pass()).
    // Returns whether it stored anything.
    enum class Writes { Closes, Opens };
    bool writeEvents(const std::vector<jobs::JobChange>& changes, Writes which) {
        if (!services_.isLeader()) {
            reconciled_ = reconcileOpens_ = false;
            return false;
        }
        auto* conn = connection();
        if (!conn) return false;
        const auto now = unixMs();
        std::vector<db::EventRecord> opens;
        std::vector<db::EventClose> closes;
        if (which == Writes::Closes) {
            if (!reconciled_) {
                auto stored = db::listEvents(
                    *conn,
                    {.kind = std::string(kKind), .source = "jobs", .open = true, .limit = 5000});
                if (!stored) {
                    conn_.reset();
                    return false;
                }
                for (const auto& e : stored->items) {
                    const auto* j = tracker_.find(e.location);
                    if (!j || !j->degraded()) closes.push_back({e.kind, e.location, now, e.id, {}});
                }
                reconciled_ = reconcileOpens_ = true;
            }
            for (const auto& c : changes)
                if (c.degradation == jobs::Degradation::Closed)
                    closes.push_back({std::string(kKind), c.name, now, 0, {}});
        } else {
            if (reconcileOpens_)
                for (const auto& j : tracker_.jobs())
                    if (j.degraded())
                        opens.push_back(
                            record(j, jobs::degradedMessage(routing().topology(), j), now));
            reconcileOpens_ = false;
            for (const auto& c : changes) {
                const auto* j = tracker_.find(c.name);
                if (c.degradation == jobs::Degradation::Opened && j)
                    opens.push_back(record(*j, c.message, now));
            }
        }
        std::vector<std::int64_t> ids;
        if (!closes.empty()) {
            auto r = db::closeEvents(*conn, closes);
            if (!r) {
                spdlog::warn("jobs view: {}", r.error().toString());
                conn_.reset();
                reconciled_ = reconcileOpens_ = false;
                return false;
            }
            for (auto id : *r)
                if (id) ids.push_back(id);
        }
        if (!opens.empty()) {
            auto r = db::insertEvents(*conn, opens);
            if (!r) {
                spdlog::warn("jobs view: {}", r.error().toString());
                conn_.reset();
                reconciled_ = false;
                return false;
            }
            ids.insert(ids.end(), r->begin(), r->end());
        }
        if (ids.empty()) return false;
        auto rows = db::getEvents(*conn, ids);
        if (!rows) return false;
        for (const auto& e : *rows) {
            noteJobEvent(e);
            services_.publish("events", {{"type", "event"}, {"event", eventJson(e)}});
        }
        return true;
    }

    db::EventRecord record(const jobs::JobImpact& j, const std::string& message, std::int64_t now) {
        db::EventRecord r;
        r.kind = std::string(kKind);
        r.severity = j.busBw <= 0 ? "critical" : "warning";
        r.location = j.name;
        r.message = message;
        r.openedAtMs = now;
        r.source = "jobs";
        r.key = "jobs:" + j.name + ":" + std::to_string(now);
        std::string links;
        for (auto l : j.downLinks) {
            if (!links.empty()) links += ',';
            links += routing().topology().linkNames[l];
            if (links.size() > 1000) break;
        }
        r.labels = {{"job", j.name},
                    {"busBw", std::to_string(round1(j.busBw)).substr(0, 5)},
                    {"links", links}};
        return r;
    }

    Services& services_;
    std::shared_ptr<Inbox> in_ = std::make_shared<Inbox>();

    // The worker's own state (and place()'s: both hold workMutex_).
    std::mutex workMutex_;
    std::optional<db::Connection> conn_;
    JobsRouting routing_;
    std::shared_ptr<const telemetry::HallLayout> layout_;
    std::unordered_map<std::string, OpenEvent> open_;  // kind \n location -> event
    // An open event's id is not stored yet: look again soon. Read by run() outside workMutex_.
    std::atomic<bool> idsMissing_{false};
    std::unordered_map<std::string, std::vector<OpenEvent>> jobEvents_;  // job -> its own
    jobs::JobImpactTracker tracker_;
    std::vector<jobs::JobImpactInput> jobList_;
    bool reconciled_ = false;
    bool reconcileOpens_ = false;  // reconciled: the opens of the degraded jobs are still to write

    // What readers see.
    mutable std::mutex snapMutex_;
    std::unordered_map<std::string, std::shared_ptr<const JobHealth>> snap_;
    std::size_t degradedCount_ = 0;
    std::atomic<std::uint64_t> impactRuns_{0};
    std::atomic<double> lastLatencyMs_{0};

    std::thread worker_;  // last: started when everything above exists
};

}  // namespace

std::weak_ptr<JobsView> makeJobsView(Services& services) {
    auto view = std::make_shared<JobsViewImpl>(services);
    std::weak_ptr<JobsViewImpl> weak = view;
    services.onLiveChange([view] { view->liveChanged(); });
    // A job stored, deleted or synced — here or on another loomd — reaches the view as its
    // stream message, not after the next 5 s reload. Its own jobHealth messages and the
    // straggler finder's jobSuspects are not news.
    services.onPublish("jobs", [weak](const nlohmann::json& m) {
        if (m.is_object() && (m.value("type", std::string()) == "jobHealth" ||
                              m.value("type", std::string()) == "jobSuspects"))
            return;
        if (auto v = weak.lock()) v->jobsChanged();
    });
    services.addMetricsSource([weak](std::string& out) {
        if (auto v = weak.lock()) v->appendMetrics(out);
    });
    return weak;
}

}  // namespace loom::backend
