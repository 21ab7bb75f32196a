// Services: what route modules and background loops of loomd share, as one small interface.
//
// The Server holds the one implementation (ServicesImpl in backend/src/server/server.cpp);
// `loomd serve` (backend/app/loomd/serve_command.cpp) passes `server.services()` to every
// register*Routes function (router.hpp). Everything here is thread-safe: handlers call it from
// database pool threads, loops from their own threads.
//
//   services.publish("events", {{"type", "event"}, {"event", eventJson}});  // stream + peers
//   if (services.isLeader()) runRollups();                                  // singleton loops
//   auto layout = services.layout();                                        // current /hall
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom::inventory {
struct Inventory;
}

namespace loom::telemetry {
class HallLayout;
class TelemetryHub;
}  // namespace loom::telemetry

namespace loom::backend {

// The layout and the hub are the telemetry module's; the server and its handlers speak of
// them by these names.
using telemetry::HallLayout;
using telemetry::TelemetryHub;

class Services {
public:
    virtual ~Services() = default;

    // Sends a message to the WebSocket clients subscribed to `topic` ("events", "provisioning",
    // "inventory", "phase") of this loomd and, through PostgreSQL NOTIFY, of every other loomd
    // on the same database. `message` is the stream object without "seq" (each loomd stamps
    // its own). Messages over 7,000 bytes of JSON reach only local clients (NOTIFY's limit).
    virtual void publish(std::string_view topic, nlohmann::json message) = 0;
    // The same for this loomd's clients only (state every loomd derives itself, e.g. the
    // degradation map after a live change).
    virtual void publishLocal(std::string_view topic, nlohmann::json message) = 0;

    // Tells the server the stored inventory or a state changed (apply, a transition, an
    // operator action): it reloads its live state in the background (coalesced: a burst of
    // changes costs one or two reloads) and announces a new layoutVersion/stateVersion on the
    // "inventory" topic. Other loomds learn of the change from the transaction's own NOTIFY
    // (db/src/live_notify.hpp), so calling this is only about this loomd's latency.
    // States: only rows' states moved (a rack or host action): the live state refreshes those
    // (db/live_states.hpp) instead of reloading the whole inventory.
    enum class Change { Structure, States };
    virtual void inventoryChanged(Change what = Change::Structure) = 0;

    // The current hall layout and inventory snapshot (null until the first load finished).
    virtual std::shared_ptr<const HallLayout> layout() const = 0;
    virtual std::shared_ptr<const inventory::Inventory> inventory() const = 0;
    // True once the live state has been loaded (until then /readyz is 503 and ingest refused).
    virtual bool liveReady() const = 0;
    // The links a rack owns (provisioning/link_service.hpp): its cables follow its state.
    virtual std::vector<std::string> linksOfRack(std::string_view rack) const = 0;
    // Called on a pool thread after every live-state reload (fabric state, degradation).
    virtual void onLiveChange(std::function<void()> hook) = 0;
    // Called with every message of `topic` this loomd delivers to its stream clients: published
    // here or by another loomd (through the database's NOTIFY). Runs on the publishing thread:
    // keep it short (set a flag, wake a worker).
    virtual void onPublish(std::string topic, std::function<void(const nlohmann::json&)> hook) = 0;

    // The live telemetry of this loomd (null when the hub is not running).
    virtual TelemetryHub* hub() = 0;

    // True while this loomd holds the cluster-wide leader lock; singleton loops (simulator,
    // reconciler, rollups) run only then. Can change at any time.
    virtual bool isLeader() const = 0;

    // A libpq URL for loops that need their own dedicated connection.
    virtual std::string databaseUrl() const = 0;

    // Adds lines to /metrics: the callback appends Prometheus text (with HELP and TYPE)
    // to the string. Called on a pool thread for every scrape.
    virtual void addMetricsSource(std::function<void(std::string& out)> source) = 0;
};

}  // namespace loom::backend
