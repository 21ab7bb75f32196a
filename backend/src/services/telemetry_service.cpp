#include "loom/backend/telemetry_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <variant>

#include "loom/backend/services.hpp"
#include "loom/db/database.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/db/job_repo.hpp"
#include "loom/inventory/unix_time.hpp"
#include "straggler_service.hpp"

namespace loom::backend {
using namespace loom::telemetry;  // the hub, layout and events this service runs

namespace {}  // namespace

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
    r.key = e.key;
    if (!e.source.empty()) r.source = e.source;
    r.origin = e.origin;
    r.downEnds = e.downEnds;
    if (!e.open()) r.closeReason = e.closeReason;
    return r;
}

FailureEvent fromRecord(const db::EventRecord& r) {
    FailureEvent e;
    e.id = r.id;
    e.kind = r.kind;
    e.severity = parseSeverity(r.severity).value_or(Severity::Warning);
    e.location = r.location;
    e.rack = r.rack;
    e.zone = r.zone;
    e.message = r.message;
    e.openedAtMs = r.openedAtMs;
    e.closedAtMs = r.closedAtMs;
    e.labels = r.labels;
    e.key = r.key;
    if (r.source != "telemetry") e.source = r.source;
    e.origin = r.origin;
    e.downEnds = r.downEnds;
    e.closeReason = r.closeReason;
    return e;
}

nlohmann::json eventJson(const db::EventRecord& e) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : e.labels) labels[k] = v;
    return {
        {"id", e.id},
        {"severity", e.severity},
        {"kind", e.kind},
        {"location", e.location},
        {"rack", e.rack},
        {"zone", e.zone},
        {"message", e.message},
        {"openedAt", db::isoTimeMs(e.openedAtMs)},
        {"closedAt", e.closedAtMs ? nlohmann::json(db::isoTimeMs(e.closedAtMs)) : nlohmann::json()},
        {"labels", std::move(labels)},
        {"state", e.open() ? "open" : "closed"},
        {"acknowledgedBy",
         e.acknowledgedBy.empty() ? nlohmann::json() : nlohmann::json(e.acknowledgedBy)},
        {"acknowledgedAt",
         e.acknowledgedAtMs ? nlohmann::json(db::isoTimeMs(e.acknowledgedAtMs)) : nlohmann::json()},
        {"ackComment", e.ackComment},
        {"closedBy", e.closedBy.empty() ? nlohmann::json() : nlohmann::json(e.closedBy)},
        {"closeReason", e.closeReason},
        {"source", e.source},
        {"origin", e.origin},
        {"downEnds", e.downEnds}};
}

struct TelemetryService::Impl {
    Services& services;
    TelemetryServiceOptions options;
    TelemetryHub hub;
    std::unique_ptr<Simulator> simulator;
    std::shared_ptr<const HallLayout> simLayout;
    // The simulator's running jobs as stored Job objects (source "simulator"): what was last
    // written, and the loop's own connection for it.
    std::vector<std::uint64_t> syncedJobs;
    bool jobsSynced = false;
    std::optional<db::Connection> jobConn;
    // The racks of running jobs of other sources, which the simulator's jobs give way to (issue
    // 34 item 5): read every 5 s and at once when a jobs message says the list changed.
    std::shared_ptr<std::atomic<bool>> heldDirty = std::make_shared<std::atomic<bool>>(true);
    std::int64_t nextHeldMs = 0;

    // Writer queue: events in rule order, and completed rollup minutes (leader only) with the
    // fencing token of the term that computed them.
    struct FencedRollup {
        Rollup rollup;
        std::optional<db::Fence> fence;
    };
    using Item = std::variant<FailureEvent, FencedRollup>;
    std::mutex qMutex;
    std::condition_variable qCv;
    std::deque<Item> queue;
    std::uint64_t dropped = 0, written = 0, writeErrors = 0, fencedRollups = 0;
    bool stopping = false;
    // Stored id of each open event this writer wrote, by event key: its close targets that row
    // (which may be another loomd's row for the same condition). Writer thread only.
    std::unordered_map<std::string, std::int64_t> openIds;
    std::atomic<bool> restored{false};
    // Whether this loomd led at the last tick (loop thread only); true at first: start() restored.
    bool ledLastTick = true;

    // The straggler finder reads `hub` on this loop's thread: declared after it, gone before it.
    StragglerService stragglers{services, [this](FailureEvent e) { enqueue(std::move(e)); },
                                options.persist,
                                static_cast<std::int64_t>(options.stragglerWarmupSeconds * 1000)};

    // The loop's wake-up, shared with the events hook (which may outlive this Impl: hooks stay
    // registered with the server).
    struct LoopWake {
        std::mutex m;
        std::condition_variable cv;
    };
    std::shared_ptr<LoopWake> loopWake = std::make_shared<LoopWake>();
    std::mutex& loopMutex = loopWake->m;
    std::condition_variable& loopCv = loopWake->cv;
    std::thread loopThread, writerThread;
    bool started = false;

    Impl(Services& s, TelemetryServiceOptions o)
        : services(s), options(std::move(o)), hub(s.layout(), options.hub) {
        services.onPublish("jobs", [dirty = heldDirty](const nlohmann::json& m) {
            const auto type = m.is_object() ? m.value("type", std::string()) : std::string();
            if (type == "job") dirty->store(true);
        });
        // Runs on the publishing thread: only notes the id (followStoredEvents reads it).
        services.onPublish("events", [inbox = followInbox, wake = loopWake](const auto& m) {
            if (!noteEventMessage(*inbox, m)) return;
            // Through the loop's mutex: a loop about to wait sees `pending` or this wake.
            std::lock_guard lk(wake->m);
            wake->cv.notify_all();
        });
    }

    // Hands the simulator the racks of every running job it does not own, one list per job.
    void holdRealJobs(const HallLayout& L, std::int64_t now) {
        if (!options.persist || (!heldDirty->load() && now < nextHeldMs)) return;
        nextHeldMs = now + 5000;
        if (!jobConn) {
            auto c = db::Database::fromUrl(services.databaseUrl()).connect();
            if (!c) return;
            jobConn.emplace(std::move(*c));
        }
        auto running = db::jobsInState(*jobConn, jobs::JobState::Running);
        if (!running) {
            jobConn.reset();
            return;
        }
        heldDirty->store(false);
        std::vector<std::vector<std::uint32_t>> held;
        for (const auto& s : *running) {
            if (s.job.source == jobs::JobSource::Simulator) continue;
            std::vector<std::uint32_t> racks;
            for (const auto& h : s.job.hosts) {
                auto g = L.gpuByHost(h, 0);
                if (g == kNoIndex) continue;
                auto r = L.gpuRack()[g];
                if (std::find(racks.begin(), racks.end(), r) == racks.end()) racks.push_back(r);
            }
            if (!racks.empty()) held.push_back(std::move(racks));
        }
        simulator->setHeldRacks(held);
    }

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

    // Takes the open events stored in the database into the hub: at start, at the first tick
    // as the leader (retried every tick while the database is away). Then
    // followStoredEvents keeps them current.
    void restoreOpenEvents() {
        if (!options.persist || restored.load()) return;
        if (followStoredEvents(/*all=*/true)) restored.store(true);
    }

    // Every loomd follows the stored open events (issue 39: "a restart, a leader change or a
    // reconnect changes nothing a user can see"). A push or a scrape reaches one loomd, which
    // opens, stores and publishes the event; every loomd hears the publication (the events
    // topic, through NOTIFY) and at once (waitForTick) reads those rows: an open one this hub does
    // not hold is taken as a restore does (with its origin and ends), a closed one it holds is
    // forgotten (closedElsewhere). So the recovery its source then sends to any loomd, leader or
    // not, closes it there, with the same evidence checks, and that loomd writes the close (any
    // loomd writes events; only rollups are the leader's). A NOTIFY missed (the LISTEN
    // connection was down) is caught by the full read every kFullFollowMs.
    // The inbox holds at most kMaxFollowIds ids (80,000 bytes; the vector's capacity at most
    // 16,384 ids, 131,072 bytes): while this loomd cannot read (its database connection is
    // down, peers' publications still come) the ids past the limit are dropped and the next
    // pass reads every open row instead (loom_events_follow_ids_dropped_total).
    static constexpr std::int64_t kFullFollowMs = 10'000;
    static constexpr std::size_t kMaxFollowIds = 10'000;
    struct FollowInbox {
        std::mutex m;
        std::vector<std::int64_t> ids;     // rows published since the last pass
        bool all = false;                  // too many: read every open row instead
        std::uint64_t dropped = 0;         // ids not kept past kMaxFollowIds
        std::atomic<bool> pending{false};  // ids came since the last pass: the loop wakes
    };
    std::shared_ptr<FollowInbox> followInbox = std::make_shared<FollowInbox>();
    std::optional<db::Connection> followConn;  // loop thread only
    std::int64_t nextFullFollowMs = 0;

    // Notes a telemetry event's id from an events message; true when it did.
    static bool noteEventMessage(FollowInbox& inbox, const nlohmann::json& m) {
        if (!m.is_object() || m.value("type", std::string()) != "event") return false;
        const auto it = m.find("event");
        if (it == m.end() || !it->is_object() || it->value("source", std::string()) != "telemetry")
            return false;
        const auto id = it->value("id", std::int64_t{0});
        if (id <= 0) return false;
        std::lock_guard lk(inbox.m);
        if (inbox.ids.size() < kMaxFollowIds) {
            inbox.ids.push_back(id);
        } else {
            inbox.all = true;
            ++inbox.dropped;
        }
        inbox.pending.store(true);
        return true;
    }

    // One pass: every open row when `all` (or asked by the inbox), then the rows published
    // since the last pass, and the rows of held events that the full read no longer lists.
    // False when the database did not answer (the ids wait for the next pass).
    bool followStoredEvents(bool all) {
        if (!options.persist) return true;
        std::vector<std::int64_t> ids;
        {
            std::lock_guard lk(followInbox->m);
            all = all || followInbox->all;
            followInbox->pending.store(false);  // what comes from here on wakes the loop again
            if (!all && followInbox->ids.empty()) return true;  // nothing new: no connection
        }
        if (!followConn) {
            auto c = db::Database::fromUrl(services.databaseUrl()).connect();
            if (!c) {
                spdlog::warn("following open events: {}", c.error().toString());
                return false;
            }
            followConn.emplace(std::move(*c));
        }
        std::vector<FailureEvent> open;
        std::set<std::int64_t> openIds;
        if (all) {
            // First the full read: a close committed after it is published after it, so its id
            // is in the inbox drained below.
            auto rows = db::listOpenTelemetryEvents(*followConn);
            if (!rows) {
                spdlog::warn("following open events: {}", rows.error().toString());
                followConn.reset();
                return false;
            }
            for (const auto& r : *rows) {
                openIds.insert(r.id);
                open.push_back(fromRecord(r));
            }
            for (const auto& e : hub.openEvents())
                if (e.id != 0 && !openIds.contains(e.id)) ids.push_back(e.id);
        }
        {
            std::lock_guard lk(followInbox->m);
            ids.insert(ids.end(), followInbox->ids.begin(), followInbox->ids.end());
            followInbox->ids.clear();
            followInbox->all = false;
        }
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        std::vector<std::pair<FailureEvent, bool>> closed;  // and whether by hand
        if (!ids.empty()) {
            auto rows = db::getEvents(*followConn, ids);
            if (!rows) {
                spdlog::warn("following open events: {}", rows.error().toString());
                followConn.reset();
                std::lock_guard lk(followInbox->m);  // asked again next pass
                followInbox->all = true;
                return false;
            }
            for (const auto& r : *rows) {
                if (r.source != "telemetry") continue;
                if (r.open()) {
                    if (!openIds.contains(r.id)) open.push_back(fromRecord(r));
                } else {
                    closed.emplace_back(fromRecord(r), !r.closedBy.empty());
                }
            }
        }
        if (!open.empty())
            if (auto n = hub.restoreOpenEvents(open); n && all)
                spdlog::info("restored {} open events from the database", n);
        for (const auto& [e, byHand] : closed) hub.closedElsewhere(e, byHand);
        return true;
    }

    // The simulator's jobs become Job objects (issue 15): written when the set of running jobs
    // changed (a start or an end; a few a minute at 24k), in one statement; the jobs it no
    // longer runs become completed. Names: sim-<serial> ("sim-0042"). Retried next tick when
    // the database refused.
    void syncSimulatedJobs(const HallLayout& L) {
        if (!options.persist) return;
        auto running = simulator->runningJobs();
        std::vector<std::uint64_t> serials;
        for (const auto& j : running) serials.push_back(j.serial);
        if (jobsSynced && serials == syncedJobs) return;
        std::vector<jobs::Job> list;
        list.reserve(running.size());
        for (const auto& sj : running) {
            jobs::Job j;
            auto n = std::to_string(sj.serial);
            j.name = "sim-" + std::string(n.size() < 4 ? 4 - n.size() : 0, '0') + n;
            j.owner = "simulator";
            for (auto r : sj.racks)
                if (r < L.racks().size())
                    j.hosts.insert(j.hosts.end(), L.racks()[r].hosts.begin(),
                                   L.racks()[r].hosts.end());
            j.hosts = jobs::normalizedHosts(std::move(j.hosts));
            j.tensorParallel = jobs::kGpusPerHost;
            j.state = jobs::JobState::Running;
            j.source = jobs::JobSource::Simulator;
            if (!j.hosts.empty()) list.push_back(std::move(j));
        }
        writeSimulatedJobs(list, std::move(serials));
    }

    // A leader that does not simulate: the jobs an earlier `loomd serve --simulate` left
    // running are not running (nothing runs them), so they become completed, once per
    // leadership. Otherwise `get jobs` would show them running, with health, forever.
    void endSimulatedJobs() {
        if (!options.persist || jobsSynced) return;
        writeSimulatedJobs({}, {});
    }

    void writeSimulatedJobs(const std::vector<jobs::Job>& list,
                            std::vector<std::uint64_t> serials) {
        if (!jobConn) {
            auto c = db::Database::fromUrl(services.databaseUrl()).connect();
            if (!c) {
                spdlog::warn("simulated jobs: {}", c.error().toString());
                return;
            }
            jobConn.emplace(std::move(*c));
        }
        auto r = db::syncJobs(*jobConn, jobs::JobSource::Simulator, list);
        if (!r) {
            spdlog::warn("simulated jobs: {}", r.error().toString());
            jobConn.reset();
            return;
        }
        syncedJobs = std::move(serials);
        jobsSynced = true;
        if (r->created || r->finished)
            services.publish("jobs", {{"type", "jobsSynced"},
                                      {"source", "simulator"},
                                      {"created", r->created},
                                      {"finished", r->finished}});
    }

    void runOnce(std::int64_t now) {
        bool leader = services.isLeader();
        // A loomd that takes the lead restores what is stored open, as a restart does: its hub
        // heard only what was sent to it, not what the leader before it saw, so the recovery
        // of an event that leader opened closed nothing here (issue 39 item 1).
        if (leader && !ledLastTick) restored.store(false);
        ledLastTick = leader;
        if (!restored.load()) {
            restoreOpenEvents();
            if (restored.load()) nextFullFollowMs = now + kFullFollowMs;
        } else {
            const bool all = now >= nextFullFollowMs;
            if (followStoredEvents(all) && all) nextFullFollowMs = now + kFullFollowMs;
        }
        if (auto L = services.layout(); L && L != hub.layout()) hub.setLayout(L);
        auto L = hub.layout();
        if (options.simulate && leader && L->gpuCount() > 0) {
            if (simLayout != L) {
                // Same structure, new states (a rack moved): the simulated world goes on with
                // its jobs; a new structure starts a new world.
                if (simulator && simLayout && simLayout->layoutVersion() == L->layoutVersion())
                    simulator->setLayout(L);
                else
                    simulator = std::make_unique<Simulator>(L, options.simulator);
                simLayout = L;
                heldDirty->store(true);  // jobs on racks that left service ended: hold again
            }
            holdRealJobs(*L, now);
            // In chunks: the whole page of a 98k-GPU step is ~100 MB, a chunk 256 KB; the hub
            // ends with the same values either way (each sample is stored on its own).
            bool bad = false;
            IngestIdentity simulated;
            simulated.origin = "simulator";
            simulator->step(now, [&](std::string_view chunk) {
                if (auto r = hub.ingestText(chunk, now, simulated); !r && !bad) {
                    bad = true;
                    spdlog::error("simulator produced bad telemetry: {}", r.error().toString());
                }
            });
            syncSimulatedJobs(*L);
        } else if (!options.simulate && leader) {
            endSimulatedJobs();
        }
        if (!leader) jobsSynced = false;  // a next leadership syncs again
        hub.tick(now);
        stragglers.tick(hub, now, leader);
        std::optional<db::Fence> fence;
        if (leader && options.leaderFence) {
            fence = options.leaderFence();
            leader = fence.has_value();  // the lease ended since isLeader(): not ours to write
        }
        for (auto& r : hub.takeRollups())
            if (leader && options.persist) enqueue(FencedRollup{std::move(r), fence});
    }

    void loop() {
        auto period = std::chrono::milliseconds(static_cast<long>(options.tickSeconds * 1000));
        auto next = std::chrono::steady_clock::now();
        std::unique_lock lk(loopMutex);
        while (!stopping) {
            lk.unlock();
            try {
                runOnce(unixMs());
            } catch (const std::exception& e) {
                spdlog::error("telemetry loop: {}", e.what());
            }
            lk.lock();
            next += period;
            // Behind by more than a period (a long GC-like stall): skip, do not burst.
            if (next < std::chrono::steady_clock::now())
                next = std::chrono::steady_clock::now() + period;
            waitForTick(lk, next);
        }
    }

    // Until the next tick; meanwhile a published event is followed at once (at most every
    // 100 ms), not at the next tick: a recovery that closed an event on another loomd clears it
    // here within milliseconds.
    void waitForTick(std::unique_lock<std::mutex>& lk, std::chrono::steady_clock::time_point next) {
        using Clock = std::chrono::steady_clock;
        while (!stopping) {
            const auto t = Clock::now();
            if (t >= next) return;
            const bool pending = followInbox->pending.load();
            if (pending && t >= followAfter) {
                lk.unlock();
                try {
                    if (restored.load())
                        followStoredEvents(false);
                    else
                        followInbox->pending.store(false);  // the tick restores everything
                } catch (const std::exception& e) {
                    spdlog::error("following open events: {}", e.what());
                }
                lk.lock();
                followAfter = Clock::now() + std::chrono::milliseconds(100);
                continue;
            }
            if (pending)
                loopCv.wait_until(lk, std::min(next, followAfter), [&] { return stopping; });
            else
                loopCv.wait_until(lk, next,
                                  [&] { return stopping || followInbox->pending.load(); });
        }
    }
    std::chrono::steady_clock::time_point followAfter{};  // loop thread only

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
        if (auto* r = std::get_if<FencedRollup>(&run.front())) {
            auto L = hub.layout();
            std::vector<db::RollupRecord> rows;
            // One commit for the run, fenced by its oldest term: a run that spans a lost and
            // regained leadership is refused whole rather than half-written by a stale term.
            std::optional<db::Fence> fence = r->fence;
            for (auto& item : run) {
                const auto& ru = std::get<FencedRollup>(item).rollup;
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
            auto res = db::insertRollups(*conn, rows, fence);
            if (!res) {
                spdlog::warn("rollups: {}", res.error().toString());
                if (res.error().code == Errc::Unavailable) {
                    conn.reset();
                    return false;
                }
                // A conflict: the minute is already written, or this term is over (fenced):
                // do not retry.
                std::lock_guard lk(qMutex);
                ++writeErrors;
                if (db::fencedOut(res.error())) ++fencedRollups;
            }
            return true;
        }
        const auto& first = std::get<FailureEvent>(run.front());
        std::vector<db::EventRecord> recs;
        for (auto& it : run) recs.push_back(toRecord(std::get<FailureEvent>(it)));
        // Both statements are idempotent (event keys, closes of open rows only), so a run whose
        // answer was lost is simply written again.
        std::vector<std::int64_t> stored;   // ids written, in run order
        std::vector<std::size_t> storedAt;  // their index in recs
        if (first.open()) {
            auto ids = db::insertEvents(*conn, recs);
            if (!ids) return writeFailed(conn, ids.error());
            std::vector<FailureEvent> learnt;
            for (std::size_t i = 0; i < recs.size(); ++i) {
                if ((*ids)[i] == 0) continue;
                if (!recs[i].key.empty()) openIds[recs[i].key] = (*ids)[i];
                stored.push_back((*ids)[i]);
                storedAt.push_back(i);
                FailureEvent& e = learnt.emplace_back();
                e.kind = recs[i].kind;
                e.location = recs[i].location;
                e.key = recs[i].key;
                e.id = (*ids)[i];
            }
            // The hub knows each open event by its row, which may be another loomd's row for
            // the same condition: a close published by id then finds it (closedElsewhere).
            hub.learnStoredIds(learnt);
        } else {
            std::vector<db::EventClose> closes;
            for (const auto& r : recs) {
                db::EventClose c{r.kind, r.location, r.closedAtMs, r.id, r.key, r.closeReason};
                if (auto it = openIds.find(r.key); !r.key.empty() && it != openIds.end())
                    c.id = it->second;
                closes.push_back(std::move(c));
            }
            auto ids = db::closeEvents(*conn, closes);
            if (!ids) return writeFailed(conn, ids.error());
            for (std::size_t i = 0; i < recs.size(); ++i) {
                if (!recs[i].key.empty()) openIds.erase(recs[i].key);
                // 0: already closed (by hand, by another loomd, or by a retried first try);
                // whoever closed it published it.
                if ((*ids)[i] != 0) {
                    stored.push_back((*ids)[i]);
                    storedAt.push_back(i);
                }
            }
        }
        {
            std::lock_guard lk(qMutex);
            written += recs.size();
        }
        // Publish the rows as stored: the one shape of REST, with ids and acknowledgements.
        auto rows = db::getEvents(*conn, stored);
        if (rows) {
            for (const auto& r : *rows) publish(r);
            return true;
        }
        // Stored, but the connection went before the read: publish what the writer knows.
        spdlog::warn("events written, reading them back failed: {}", rows.error().toString());
        conn.reset();
        for (std::size_t k = 0; k < stored.size(); ++k) {
            auto& r = recs[storedAt[k]];
            r.id = stored[k];
            publish(r);
        }
        return true;
    }

    bool writeFailed(std::optional<db::Connection>& conn, const Error& e) {
        spdlog::warn("event writer: {}", e.toString());
        conn.reset();
        return false;
    }

    // Drains the queue in order, one run of opens, closes or rollups at a time. A run the
    // database refuses goes back to the front and is retried with backoff (0.1 s doubling to
    // 5 s) for as long as it takes: events are never published unstored, merged or skipped.
    // Only a full queue (eventQueueLimit) or stop() with the database away loses events, and
    // both are counted in loom_event_writer_dropped_total.
    void writer() {
        std::optional<db::Connection> conn;
        auto backoff = std::chrono::milliseconds(100);
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
                backoff = std::chrono::milliseconds(100);
                continue;
            }
            std::unique_lock lk(qMutex);
            ++writeErrors;
            if (stopping) {
                // Shutting down with the database away: what is left is lost (and counted).
                dropped += run.size() + queue.size();
                queue.clear();
                return;
            }
            // Put the run back in front, in order, and wait before retrying.
            for (auto it = run.rbegin(); it != run.rend(); ++it) queue.push_front(std::move(*it));
            qCv.wait_for(lk, backoff, [&] { return stopping; });
            backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
        }
    }
};

TelemetryService::TelemetryService(Services& services, TelemetryServiceOptions options)
    : impl_(std::make_unique<Impl>(services, std::move(options))),
      alive_(std::make_shared<Alive>()) {
    auto* impl = impl_.get();
    alive_->impl = impl;
    impl->hub.addEventListener([impl](const FailureEvent& e) {
        impl->enqueue(e);
        impl->stragglers.noteFailure(e);  // a GPU failing in a job strikes it (lemons)
    });
    // The hub takes a new live state (rack and link states, a new structure) at once, not at
    // the next tick: detection of a rack that just entered service starts with it.
    services.onLiveChange([alive = alive_, &services] {
        std::lock_guard lock(alive->mutex);
        if (!alive->impl) return;
        if (auto L = services.layout(); L && L != alive->impl->hub.layout())
            alive->impl->hub.setLayout(L);
    });
    services.addMetricsSource([impl](std::string& out) {
        impl->hub.appendMetrics(out);
        impl->stragglers.appendMetrics(out);
        std::uint64_t dropped, written, errors, fenced;
        std::size_t queued;
        {
            std::lock_guard lk(impl->qMutex);
            dropped = impl->dropped;
            written = impl->written;
            errors = impl->writeErrors;
            fenced = impl->fencedRollups;
            queued = impl->queue.size();
        }
        std::size_t inboxIds;
        std::uint64_t inboxDropped;
        {
            std::lock_guard lk(impl->followInbox->m);
            inboxIds = impl->followInbox->ids.size();
            inboxDropped = impl->followInbox->dropped;
        }
        out +=
            "# HELP loom_event_writer_written_total Events stored in PostgreSQL.\n"
            "# TYPE loom_event_writer_written_total counter\nloom_event_writer_written_total " +
            std::to_string(written) +
            "\n# HELP loom_event_writer_dropped_total Events dropped: writer queue full.\n"
            "# TYPE loom_event_writer_dropped_total counter\nloom_event_writer_dropped_total " +
            std::to_string(dropped) +
            "\n# HELP loom_event_writer_errors_total Failed event or rollup writes.\n"
            "# TYPE loom_event_writer_errors_total counter\nloom_event_writer_errors_total " +
            std::to_string(errors) +
            "\n# HELP loom_rollups_fenced_total Rollup minutes refused because this loomd's leader "
            "term was over when they were written (a stalled leader that resumed).\n"
            "# TYPE loom_rollups_fenced_total counter\nloom_rollups_fenced_total " +
            std::to_string(fenced) +
            "\n# HELP loom_event_writer_queue Events and rollups waiting to be written.\n"
            "# TYPE loom_event_writer_queue gauge\nloom_event_writer_queue " +
            std::to_string(queued) +
            "\n# HELP loom_events_follow_inbox_ids Published event ids waiting for this loomd "
            "to read their rows (at most 10000).\n"
            "# TYPE loom_events_follow_inbox_ids gauge\nloom_events_follow_inbox_ids " +
            std::to_string(inboxIds) +
            "\n# HELP loom_events_follow_ids_dropped_total Published event ids dropped past "
            "the inbox's limit; a full read of the open events follows them.\n"
            "# TYPE loom_events_follow_ids_dropped_total counter\n"
            "loom_events_follow_ids_dropped_total " +
            std::to_string(inboxDropped) + "\n";
    });
}

TelemetryService::~TelemetryService() {
    {
        std::lock_guard lock(alive_->mutex);
        alive_->impl = nullptr;
    }
    stop();
}

TelemetryHub& TelemetryService::hub() { return impl_->hub; }

void TelemetryService::start() {
    if (impl_->started) return;
    impl_->started = true;
    // Before the first tick: the open events of the database are the hub's starting state.
    impl_->restoreOpenEvents();
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
