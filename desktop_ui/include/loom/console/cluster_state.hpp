// ClusterState: the console's copy of the live cluster, fed by the stream. Per-GPU and
// per-link metrics are flat u8 arrays in /hall order (exactly the wire format), so a delta is
// a few stores and the maps paint straight from them.
#pragma once

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "loom/console/failures.hpp"
#include "loom/console/protocol.hpp"
#include "loom/console/result.hpp"

namespace loom::console {

class ClusterState : public QObject {
    Q_OBJECT
public:
    explicit ClusterState(QObject* parent = nullptr);

    void setLayout(HallLayout layout);
    const HallLayout& layout() const { return layout_; }
    bool hasLayout() const { return !layout_.racks.empty() || !layout_.gpus.isEmpty(); }

    // One stream message (docs/api.md). Errors name the message; state stays consistent.
    Result<void> handleMessage(const QJsonObject& msg);

    const std::vector<std::uint8_t>& values(Topic t) const {
        return values_[static_cast<size_t>(t)];
    }
    bool hasSnapshot(Topic t) const { return snapshotSeen_ & topicBit(t); }
    qint64 lastSeq() const { return lastSeq_; }
    QString role() const { return role_; }
    QString serverVersion() const { return serverVersion_; }
    int intervalMs() const { return intervalMs_; }
    // Milliseconds since the last metric frame, -1 before the first.
    qint64 dataAgeMs() const { return dataClock_.isValid() ? dataClock_.elapsed() : -1; }

    // Events seen (bounded; newest last).
    const std::deque<Event>& events() const { return events_; }
    void addEvents(const std::vector<Event>& events);  // from GET /events, deduplicated by id
    // A re-read of the events (every connect and reconnect, issue 39): beginEventsReload()
    // before the GETs are sent; replaceEvents() with their answer replaces every event held
    // (loomd's list is the truth: what it closed while this console was away is closed here)
    // and then applies the stream's events that arrived in between, which are newer.
    void beginEventsReload();
    void replaceEvents(std::vector<Event> events);
    bool eventsReloading() const { return reloading_; }
    // One event, new or an update of one already seen (same id): the stream's "event" message
    // and the reply of an acknowledge/close both come through here.
    void upsertEvent(const Event& event);
    const Event* findEvent(qint64 id) const;
    int openFailures() const;
    // Mean utilization over GPUs with data, -1 when none.
    double meanGpuUtil() const;

    // Utilization as the mean over the last `samples` gpu.util frames (one per stream
    // interval), so a map coloured by it does not flicker with every 1 s sample. 1 = as sent.
    void setUtilWindow(int samples);
    int utilWindow() const { return utilWindow_; }
    // What the hall map colours by: the window mean (or the raw values when the window is 1).
    const std::vector<std::uint8_t>& gpuUtilShown() const {
        return utilWindow_ > 1 ? utilMean_ : values(Topic::GpuUtil);
    }

    // Open failures by kind, kept current from the stream (failures.hpp).
    FailureIndex* failures() const { return failures_; }

    void setRackState(int rack, const QString& state);
    // loomd's word for each switch (GET /api/v1/fabric/topology `state`: "up", "down",
    // "drained", "not in service"; its rack's state read as its cables are,
    // fabric::liveSwitchState), indexed like layout().switches; empty before loomd has answered
    // or for a switch it did not name. The console draws and labels a switch by this word,
    // never by its rack's state (the web dashboard reads the same answer).
    const QString& switchState(int sw) const;
    bool hasSwitchStates() const { return !switchStates_.empty(); }
    // Applies loomd's answer (its `switches`); the names it does not know are ignored. Emits
    // switchStatesChanged when any word changed.
    void applySwitchStates(const QJsonObject& topology);
    void clearForReconnect();  // a different server: forget seq so the stream sends a snapshot

    static constexpr size_t kMaxEvents = 5000;

Q_SIGNALS:
    void layoutChanged();
    void layoutStale(qint64 layoutVersion);  // the server has a newer hall: refetch it
    void metricsUpdated(unsigned topicMask);
    void eventAdded(const loom::console::Event& event);
    void eventsReset();
    void rackStateChanged(int rack, const QString& from, const QString& to);
    void switchStatesChanged();
    // loomd's live state moved (an `inventory` message with a new stateVersion, or a
    // `degradation` message): what it says of the fabric (switch states) may have changed.
    void liveStateMoved();
    void phaseUpdated(const QJsonObject& phase);
    void phasePlanChanged(
        const QString& plan);  // a new plan was applied: its phases replace the old
    void helloReceived();
    // An event message was missed (issue 39): the events topic's eventSeq skipped a number
    // (hello gives the start; loomd skips one when it may have missed other loomds' events).
    // The console re-reads the open events.
    void eventsGap(const QString& reason);
    // A message of the `jobs` topic ("job", "jobHealth", "jobSuspects", "jobsSynced"), for the
    // Jobs view.
    void jobMessage(const QJsonObject& msg);
    void byeReceived(const QString& reason);
    // loomd's legend scales (palette.hpp applyLegendScales) changed: recolour and repaint.
    void legendsChanged();

private:
    void resetValues();
    void resetUtilWindow();
    void sampleUtil();

    HallLayout layout_;
    std::array<std::vector<std::uint8_t>, kTopicCount> values_;
    unsigned snapshotSeen_ = 0;
    qint64 lastSeq_ = 0;
    qint64 eventSeq_ = -1;  // the last events-topic number seen on this connection; -1: none
    QString role_;
    QString serverVersion_;
    int intervalMs_ = 1000;
    QElapsedTimer dataClock_;
    std::deque<Event> events_;
    bool reloading_ = false;
    std::vector<Event> sinceReload_;  // stream events while a re-read is in flight
    int utilWindow_ = 1;
    std::vector<std::vector<std::uint8_t>> utilRing_;  // the last utilWindow_ samples
    size_t utilNext_ = 0;
    size_t utilFill_ = 0;
    std::vector<std::uint32_t> utilSum_;
    std::vector<std::uint16_t> utilCount_;
    std::vector<std::uint8_t> utilMean_;
    FailureIndex* failures_;
    std::vector<QString> switchStates_;  // by switch index; empty: loomd has not answered
    qint64 stateVersion_ = -1;
};

}  // namespace loom::console
