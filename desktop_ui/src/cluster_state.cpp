#include "loom/console/cluster_state.hpp"

#include <QJsonArray>
#include <QSet>
#include <algorithm>
#include <utility>

namespace loom::console {

ClusterState::ClusterState(QObject* parent)
    : QObject(parent), failures_(new FailureIndex(this, this)) {}

void ClusterState::setLayout(HallLayout layout) {
    layout_ = std::move(layout);
    switchStates_.clear();  // indexed by the old layout's switches: asked again
    resetValues();
    Q_EMIT layoutChanged();
}

void ClusterState::resetValues() {
    for (int t = 0; t < kTopicCount; ++t) {
        const bool gpu = topicIsGpu(static_cast<Topic>(t));
        values_[static_cast<size_t>(t)].assign(
            static_cast<size_t>(gpu ? layout_.gpus.size() : layout_.links.size()), kNoData);
    }
    snapshotSeen_ = 0;
    resetUtilWindow();
}

void ClusterState::setUtilWindow(int samples) {
    samples = std::clamp(samples, 1, 3600);
    if (samples == utilWindow_) return;
    utilWindow_ = samples;
    resetUtilWindow();
    if (hasSnapshot(Topic::GpuUtil))
        sampleUtil();  // start the new window from what is on screen now
    Q_EMIT metricsUpdated(topicBit(Topic::GpuUtil));
}

void ClusterState::resetUtilWindow() {
    const size_t n = values_[static_cast<size_t>(Topic::GpuUtil)].size();
    utilRing_.assign(utilWindow_ > 1 ? static_cast<size_t>(utilWindow_) : 0, {});
    utilNext_ = utilFill_ = 0;
    utilSum_.assign(utilWindow_ > 1 ? n : 0, 0);
    utilCount_.assign(utilWindow_ > 1 ? n : 0, 0);
    utilMean_.assign(utilWindow_ > 1 ? n : 0, kNoData);
}

void ClusterState::sampleUtil() {
    if (utilWindow_ <= 1) return;
    const auto& now = values_[static_cast<size_t>(Topic::GpuUtil)];
    const size_t n = now.size();
    auto& slot = utilRing_[utilNext_];
    if (utilFill_ == utilRing_.size()) {  // full: the oldest sample leaves the window
        for (size_t g = 0; g < n && g < slot.size(); ++g)
            if (slot[g] <= 100) {
                utilSum_[g] -= slot[g];
                --utilCount_[g];
            }
    } else {
        ++utilFill_;
    }
    slot = now;
    for (size_t g = 0; g < n; ++g) {
        if (now[g] <= 100) {
            utilSum_[g] += now[g];
            ++utilCount_[g];
        }
        utilMean_[g] =
            utilCount_[g] == 0
                ? kNoData
                : static_cast<std::uint8_t>((utilSum_[g] + utilCount_[g] / 2) / utilCount_[g]);
    }
    utilNext_ = (utilNext_ + 1) % utilRing_.size();
}

void ClusterState::clearForReconnect() {
    lastSeq_ = 0;
    role_.clear();
    serverVersion_.clear();
}

void ClusterState::setRackState(int rack, const QString& state) {
    if (rack < 0 || rack >= static_cast<int>(layout_.racks.size())) return;
    auto& r = layout_.racks[static_cast<size_t>(rack)];
    if (r.state == state) return;
    const QString from = r.state;
    r.state = state;
    Q_EMIT rackStateChanged(rack, from, state);
}

const QString& ClusterState::switchState(int sw) const {
    static const QString kNone;
    return sw >= 0 && sw < static_cast<int>(switchStates_.size())
               ? switchStates_[static_cast<size_t>(sw)]
               : kNone;
}

void ClusterState::applySwitchStates(const QJsonObject& topology) {
    std::vector<QString> next(layout_.switches.size());
    for (const auto& v : topology.value(u"switches").toArray()) {
        const QJsonObject o = v.toObject();
        const int sw = layout_.switchIndex(o.value(u"name").toString());
        if (sw < 0) continue;
        // An older loomd says `up` alone.
        next[static_cast<size_t>(sw)] = o.contains(u"state")      ? o.value(u"state").toString()
                                        : o.value(u"up").toBool() ? QStringLiteral("up")
                                                                  : QStringLiteral("down");
    }
    if (next == switchStates_) return;
    switchStates_ = std::move(next);
    Q_EMIT switchStatesChanged();
}

Result<void> ClusterState::handleMessage(const QJsonObject& msg) {
    const QString type = msg.value(u"type").toString();
    const qint64 seq = msg.value(u"seq").toInteger(0);
    if (seq > lastSeq_) lastSeq_ = seq;

    if (type == u"hello") {
        role_ = msg.value(u"role").toString();
        serverVersion_ = msg.value(u"server").toString();
        intervalMs_ = msg.value(u"intervalMs").toInt(1000);
        const qint64 lv = msg.value(u"layoutVersion").toInteger(0);
        eventSeq_ = msg.value(u"eventSeq").toInteger(-1);
        Q_EMIT helloReceived();
        if (lv != 0 && lv != layout_.layoutVersion) Q_EMIT layoutStale(lv);
        return {};
    }
    if (type == u"snapshot" || type == u"delta") {
        const QString topicStr = msg.value(u"topic").toString();
        const auto topic = parseTopic(topicStr);
        if (!topic)
            return {};  // a topic this console does not draw: ignore, as the API allows growth
        auto& vals = values_[static_cast<size_t>(*topic)];
        if (type == u"snapshot") {
            auto data = decodeSnapshot(msg, static_cast<int>(vals.size()));
            if (!data) return fail(QStringLiteral("seq %1: %2").arg(seq).arg(data.error()));
            std::copy(data->cbegin(), data->cend(), vals.begin());
            snapshotSeen_ |= topicBit(*topic);
        } else {
            auto n = applyDelta(vals, msg);
            if (!n) return fail(QStringLiteral("seq %1: %2").arg(seq).arg(n.error()));
        }
        dataClock_.start();
        if (*topic == Topic::GpuUtil) sampleUtil();
        Q_EMIT metricsUpdated(topicBit(*topic));
        return {};
    }
    if (msg.contains(u"eventSeq")) {
        // At or below the last: a message replayed after resumeFrom, which this console has.
        const qint64 es = msg.value(u"eventSeq").toInteger(-1);
        if (eventSeq_ >= 0 && es > eventSeq_ + 1)
            Q_EMIT eventsGap(QStringLiteral("eventSeq %1 -> %2").arg(eventSeq_).arg(es));
        if (es > eventSeq_) eventSeq_ = es;
    }
    if (type == u"event") {
        auto ev = parseEvent(msg.value(u"event").toObject());
        if (!ev) return fail(QStringLiteral("seq %1: %2").arg(seq).arg(ev.error()));
        ev->seq = seq;
        upsertEvent(*ev);
        return {};
    }
    if (type == u"provisioning") {
        const QString rack = msg.value(u"rack").toString();
        const int idx = layout_.rackIndex(rack);
        if (idx < 0)
            return fail(QStringLiteral("seq %1: provisioning message for unknown rack '%2'")
                            .arg(seq)
                            .arg(rack));
        setRackState(idx, msg.value(u"to").toString());
        return {};
    }
    if (type == u"phase") {
        Q_EMIT phaseUpdated(msg.value(u"phase").toObject());
        return {};
    }
    if (type == u"phaseplan") {
        Q_EMIT phasePlanChanged(msg.value(u"plan").toString());
        return {};
    }
    if (type == u"inventory") {
        const qint64 lv = msg.value(u"layoutVersion").toInteger(0);
        if (lv != layout_.layoutVersion) Q_EMIT layoutStale(lv);
        const qint64 sv = msg.value(u"stateVersion").toInteger(-1);
        if (sv != stateVersion_) {
            stateVersion_ = sv;
            Q_EMIT liveStateMoved();
        }
        return {};
    }
    if (type == u"degradation") {
        Q_EMIT liveStateMoved();
        return {};
    }
    if (type == u"job" || type == u"jobHealth" || type == u"jobSuspects" || type == u"jobsSynced") {
        Q_EMIT jobMessage(msg);
        return {};
    }
    if (type == u"bye") {
        Q_EMIT byeReceived(msg.value(u"reason").toString());
        return {};
    }
    if (type == u"error") {
        // loomd writes {"type":"error","message":...}; an {"error":{code,message}} body is
        // accepted too.
        const auto err = msg.value(u"error").toObject();
        const QString text = msg.contains(u"message")
                                 ? msg.value(u"message").toString()
                                 : QStringLiteral("%1: %2").arg(err.value(u"code").toString(),
                                                                err.value(u"message").toString());
        return fail(QStringLiteral("server: %1").arg(text));
    }
    return {};  // unknown message types are forward compatible
}

void ClusterState::upsertEvent(const Event& ev) {
    if (reloading_ && sinceReload_.size() < kMaxEvents) sinceReload_.push_back(ev);
    // An update (acknowledged, closed) replaces the event with the same id.
    auto it = std::find_if(events_.begin(), events_.end(),
                           [&](const Event& e) { return e.id != 0 && e.id == ev.id; });
    if (it != events_.end()) {
        const qint64 seq = it->seq;
        *it = ev;
        if (it->seq == 0) it->seq = seq;
    } else {
        events_.push_back(ev);
        if (events_.size() > kMaxEvents) events_.pop_front();
    }
    Q_EMIT eventAdded(ev);
}

const Event* ClusterState::findEvent(qint64 id) const {
    for (const auto& e : events_)
        if (e.id == id) return &e;
    return nullptr;
}

void ClusterState::addEvents(const std::vector<Event>& events) {
    for (const auto& ev : events) {
        const bool dup = ev.id != 0 && std::any_of(events_.begin(), events_.end(),
                                                   [&](const Event& e) { return e.id == ev.id; });
        if (!dup) events_.push_back(ev);
    }
    std::stable_sort(events_.begin(), events_.end(),
                     [](const Event& a, const Event& b) { return a.openedAt < b.openedAt; });
    while (events_.size() > kMaxEvents) events_.pop_front();
    Q_EMIT eventsReset();
}

void ClusterState::beginEventsReload() {
    reloading_ = true;
    sinceReload_.clear();
}

void ClusterState::replaceEvents(std::vector<Event> events) {
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.openedAt < b.openedAt; });
    events_.clear();
    QSet<qint64> seen;
    for (auto& ev : events) {
        if (ev.id != 0 && seen.contains(ev.id)) continue;
        seen.insert(ev.id);
        events_.push_back(std::move(ev));
    }
    reloading_ = false;
    // The stream's messages since the GETs were sent carry every change after them, in order.
    for (const auto& ev : std::exchange(sinceReload_, {})) {
        auto it = std::find_if(events_.begin(), events_.end(),
                               [&](const Event& e) { return e.id != 0 && e.id == ev.id; });
        if (it != events_.end())
            *it = ev;
        else
            events_.push_back(ev);
    }
    while (events_.size() > kMaxEvents) events_.pop_front();
    Q_EMIT eventsReset();
}

int ClusterState::openFailures() const {
    return static_cast<int>(std::count_if(events_.begin(), events_.end(), [](const Event& e) {
        return e.open() && severityRank(e.severity) >= 1;
    }));
}

double ClusterState::meanGpuUtil() const {
    const auto& v = values(Topic::GpuUtil);
    std::uint64_t sum = 0;
    std::uint64_t n = 0;
    for (const auto x : v)
        if (x <= 100) {
            sum += x;
            ++n;
        }
    return n == 0 ? -1.0 : static_cast<double>(sum) / static_cast<double>(n);
}

}  // namespace loom::console
