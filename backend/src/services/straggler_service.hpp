// The straggler finder inside loomd (issue 15 item 3): jobs/straggler_finder.hpp run on the
// telemetry loop's 1 Hz tick, on the hub that loop owns (TelemetryService::Impl holds both, so
// the finder never outlives what it reads).
//
// On the leader only (as the job_degraded events of the jobs view): each tick it ranks every
// running job's ranks and uplinks; a transition opens or closes a `straggler` event (source
// `jobs`, location the suspect: a GPU, its NIC cable or an uplink; label `job`) through the
// telemetry service's durable event writer, which stores and publishes it. A job holds one open
// event per suspect location, and a location one per job it slows (issue 34 item 4). A job's
// suspects are published on the `jobs` topic when they change (and every 30 s while there are
// any):
//   {"type": "jobSuspects", "name": "llama", "ranks": 32, "suspects": [...],
//    "straggler": {...} | null, "stragglers": [...], "updatedAt": "..."}
// `stragglers`: the suspects of the job's open events, highest score first; `straggler`: the
// first of them.
// which api_jobs keeps for GET /api/v1/jobs/{name} (docs/api.md, Jobs). The job list is read
// from the database every 5 s and at once when a jobs message says it changed. A new leader
// (or this loomd after a restart) first takes over the straggler events stored open of running
// jobs (the same events stay open, same id and openedAt; they close as any other once the
// straggler is gone) and closes the others, then publishes every running job's suspects once,
// quiet ones too, so that no loomd keeps what a leader that died had said.
// Lemons (jobs/lemon.hpp): each straggler event opened on a host or GPU cause, and each GPU
// failure in a running job, is a strike (db/lemon_repo.hpp); every 30 s and after a strike the
// counts are read, and a host or GPU at the threshold holds an open `lemon` event (source jobs,
// location the host or GPU) until its strikes age out of the window.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/db/database.hpp"
#include "loom/jobs/lemon.hpp"
#include "loom/jobs/straggler_finder.hpp"
#include "loom/telemetry/detection.hpp"

namespace loom::telemetry {
class TelemetryHub;
}

namespace loom::db {
struct EventRecord;
}

namespace loom::backend {

class Services;

// A stored event as the hub's FailureEvent (defined in telemetry_service.cpp beside toRecord):
// how reconcile() takes over an open straggler event of an earlier leader.
telemetry::FailureEvent fromRecord(const db::EventRecord& r);

class StragglerService {
public:
    using Enqueue = std::function<void(telemetry::FailureEvent)>;
    // `enqueue` hands an event to the durable writer; `persist` false: no database (no job list,
    // so the finder idles).
    StragglerService(Services& services, Enqueue enqueue, bool persist,
                     std::int64_t warmupMs = jobs::StragglerOptions{}.warmupMs);

    // One pass, on the telemetry loop's thread after the hub's tick.
    void tick(const telemetry::TelemetryHub& hub, std::int64_t nowMs, bool leader);

    void appendMetrics(std::string& out) const;

    // A failure event the hub raised (any thread): a GPU failing in a running job strikes the
    // GPU and its host (jobs/lemon.hpp); taken at the next tick.
    void noteFailure(const telemetry::FailureEvent& e);

private:
    void loadJobs();
    void reconcile(std::int64_t nowMs);
    void publishSuspects(std::int64_t nowMs);
    telemetry::FailureEvent toEvent(const jobs::StragglerTransition& t,
                                    const telemetry::HallLayout& L, std::int64_t nowMs) const;
    // Lemons (issue 34 item 6): strikes of this tick written, lemon events opened and closed.
    void strike(const jobs::StragglerTransition& t, const telemetry::HallLayout& L,
                std::int64_t nowMs);
    void tendLemons(const telemetry::HallLayout& L, std::int64_t nowMs);

    Services& services_;
    Enqueue enqueue_;
    bool persist_;
    jobs::StragglerFinder finder_;
    std::shared_ptr<std::atomic<bool>> jobsDirty_ = std::make_shared<std::atomic<bool>>(true);
    std::int64_t nextLoadMs_ = 0;
    bool leading_ = false, reconciled_ = false, announceAll_ = false;
    std::optional<db::Connection> conn_;
    // openKey(job, location) -> the open event: a job holds one per suspect location.
    std::unordered_map<std::string, telemetry::FailureEvent> open_;
    struct Published {
        std::string signature;
        std::int64_t atMs = 0;
    };
    std::unordered_map<std::string, Published> published_;  // job -> last suspects message

    // Lemons: strikes waiting to be written, the host -> running job map, the open lemon events
    // by entity, and when the counts are next read.
    std::vector<jobs::LemonStrike> strikes_;
    std::unordered_map<std::string, std::string> hostJob_;
    std::unordered_map<std::string, telemetry::FailureEvent> lemonOpen_;
    std::int64_t nextLemonMs_ = 0, nextPruneMs_ = 0;
    std::mutex failuresMutex_;
    std::vector<telemetry::FailureEvent> failures_;  // from noteFailure

    std::atomic<double> lastCpuSeconds_{0}, cpuSecondsTotal_{0};
    std::atomic<std::uint64_t> ticks_{0}, opened_{0}, jobs_{0}, lemonsOpened_{0};
};

}  // namespace loom::backend
