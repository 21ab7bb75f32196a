// TelemetryService: the running telemetry of one loomd — the TelemetryHub, its once-a-second
// loop (layout changes, the simulator when this loomd is the leader, detection ticks, rollups)
// and the event writer that stores failure events in PostgreSQL and publishes them on the
// "events" stream topic (and, through Services::publish, to the other loomds).
//
// Wiring in `loomd serve` (after the Server exists, before start()):
//
//   TelemetryServiceOptions topts;
//   topts.hub.detection = loomdConfig.detection;                         // `detection:`
//   topts.simulate = simulateFlag;                                       // --simulate
//   TelemetryService telemetry(server.services(), topts);
//   server.setHub(&telemetry.hub());
//   server.setTopicSource(TelemetryService::topics(),
//       [&](std::string_view t, std::vector<std::uint8_t>& out) { return telemetry.topic(t, out); });
//   server.start(); telemetry.start();  ...  telemetry.stop(); server.stop();
//
// The layout follows Services::layout() by itself (checked every tick). Events are written in
// the order the rules raised them: runs of opens and of closes, one statement per run. If the
// database is down, the writer retries (keeping at most `eventQueueLimit` items, dropping the
// oldest and counting them) and still publishes the events live, without an id.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/db/leader.hpp"

#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::db {
struct EventRecord;
}

namespace loom::backend {

class Services;

struct TelemetryServiceOptions {
    telemetry::HubOptions hub;
    bool simulate = false;
    telemetry::SimulatorConfig simulator;
    double tickSeconds = 1.0;
    // The straggler finder ranks a job this long after it first sees it (jobs::StragglerOptions::
    // warmupMs: its averages settle); tests that drive ticks faster than 1 s shorten it.
    double stragglerWarmupSeconds = 30;
    std::size_t eventQueueLimit = 100000;
    bool persist = true;  // false: no database writes (tests of the loop alone)
    // The leader's fencing token (db::LeaderLock::fence). Rollups are leader-only: each minute
    // is written with the token of the term that computed it, and the database refuses it when
    // that term is over (a leader that stalled and resumed writes nothing). Null: unfenced.
    std::function<std::optional<db::Fence>()> leaderFence;
};

class TelemetryService {
public:
    TelemetryService(Services& services, TelemetryServiceOptions options);
    ~TelemetryService();
    TelemetryService(const TelemetryService&) = delete;
    TelemetryService& operator=(const TelemetryService&) = delete;

    telemetry::TelemetryHub& hub();

    void start();  // starts the loop and writer threads
    void stop();   // idempotent; flushes what the writer can within a second

    // Stream topics served from the hub, and the bytes of one ("gpu.util" ...).
    static std::vector<std::string> topics();
    bool topic(std::string_view name, std::vector<std::uint8_t>& out) const;

    // One loop iteration, for tests: layout check, simulator step, tick, rollups.
    void runOnce(std::int64_t nowMs);

    struct Impl;

private:
    // Lets the server's live-change hook outlive this object safely.
    struct Alive {
        std::mutex mutex;
        Impl* impl = nullptr;
    };
    std::unique_ptr<Impl> impl_;
    std::shared_ptr<Alive> alive_;
};

// The wire form of an event, the same on REST and on the stream (docs/api.md): {"id",
// "severity", "kind", "location", "rack", "zone", "message", "openedAt", "closedAt" (null while
// open), "labels", "state" (open|closed), "acknowledgedBy", "acknowledgedAt" (null until
// acknowledged), "ackComment", "closedBy" (null unless closed by hand), "closeReason",
// "source" (telemetry|provisioning|operator)}.
nlohmann::json eventJson(const db::EventRecord& e);
db::EventRecord toRecord(const telemetry::FailureEvent& e);

}  // namespace loom::backend
