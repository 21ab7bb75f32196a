#include "loom/console/failures.hpp"

#include "loom/console/cluster_state.hpp"

#include <QDateTime>
#include <QJsonArray>

#include <algorithm>

namespace loom::console {

QString failureKindName(FailureKind k, bool plural)
{
    switch (k) {
    case FailureKind::Gpu: return plural ? QStringLiteral("GPUs") : QStringLiteral("GPU");
    case FailureKind::Host: return plural ? QStringLiteral("hosts") : QStringLiteral("host");
    case FailureKind::Link: return plural ? QStringLiteral("links") : QStringLiteral("link");
    case FailureKind::Switch: return plural ? QStringLiteral("switches") : QStringLiteral("switch");
    case FailureKind::Rack: return plural ? QStringLiteral("racks") : QStringLiteral("rack");
    }
    return {};
}

FailureKind eventFailureKind(const Event& e, const HallLayout& layout)
{
    if (e.kind.startsWith(u"gpu"))
        return FailureKind::Gpu;
    if (e.kind.startsWith(u"link") || e.location.contains(QLatin1String("--")))
        return FailureKind::Link;
    if (e.kind.startsWith(u"switch") || layout.switchIndex(e.location) >= 0)
        return FailureKind::Switch;
    // "<switch>/p<N>": a port, i.e. a link end.
    if (layout.switchIndex(e.location.section(u'/', 0, 0)) >= 0)
        return FailureKind::Link;
    if (e.kind.startsWith(u"host") || layout.hostRack.contains(e.location))
        return FailureKind::Host;
    if (layout.gpuIndex(e.location) >= 0)
        return FailureKind::Gpu;
    return FailureKind::Rack;
}

FailureIndex::FailureIndex(ClusterState* state, QObject* parent) : QObject(parent), state_(state)
{
    // A new layout: the old answer names places of another hall.
    connect(state, &ClusterState::layoutChanged, this, [this] {
        failures_.clear();
        counts_.fill(0);
        truncated_ = false;
        primed_ = false;
        firstSeen_.clear();
        rebuildMarks();
        Q_EMIT changed();
        Q_EMIT refreshWanted();
    });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned mask) {
        if (mask & (topicBit(Topic::GpuHealth) | topicBit(Topic::LinkHealth)))
            Q_EMIT refreshWanted();
    });
    connect(state, &ClusterState::rackStateChanged, this, [this] { Q_EMIT refreshWanted(); });
    connect(state, &ClusterState::eventAdded, this, [this] { Q_EMIT refreshWanted(); });
    connect(state, &ClusterState::eventsReset, this, [this] { Q_EMIT refreshWanted(); });
}

int FailureIndex::total() const
{
    int n = 0;
    for (const int c : counts_)
        n += c;
    return n;
}

void FailureIndex::setFilter(unsigned kindMask)
{
    kindMask &= kAllFailureKinds;
    if (kindMask == 0)
        kindMask = kAllFailureKinds;
    if (kindMask == filter_)
        return;
    filter_ = kindMask;
    rebuildMarks();
    Q_EMIT changed();
    Q_EMIT filterChanged(filter_);
}

void FailureIndex::rebuildMarks()
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    rackMarks_.assign(state_ ? state_->layout().racks.size() : 0, RackMark{});
    for (const Failure& f : failures_) {
        if (!shown(f.kind) || f.rack < 0 || f.rack >= static_cast<int>(rackMarks_.size()))
            continue;
        auto& m = rackMarks_[static_cast<size_t>(f.rack)];
        ++m.count;
        m.failed |= f.failed;
        m.rackFailed |= f.kind == FailureKind::Rack;
        m.fresh |= isNew(f, now);
    }
}

bool FailureIndex::applyLoomd(const QJsonObject& answer)
{
    if (!state_)
        return false;
    const HallLayout& h = state_->layout();
    const QJsonValue version = answer.value(u"layoutVersion");
    if (version.isDouble() && static_cast<qint64>(version.toDouble()) != h.layoutVersion)
        return false;
    static const QHash<QString, FailureKind> kinds{{QStringLiteral("gpu"), FailureKind::Gpu},
                                                  {QStringLiteral("host"), FailureKind::Host},
                                                  {QStringLiteral("link"), FailureKind::Link},
                                                  {QStringLiteral("switch"), FailureKind::Switch},
                                                  {QStringLiteral("rack"), FailureKind::Rack}};
    const QJsonObject counts = answer.value(u"counts").toObject();
    for (auto it = kinds.begin(); it != kinds.end(); ++it)
        counts_[static_cast<size_t>(*it)] = std::max(0, counts.value(it.key()).toInt());
    truncated_ = answer.value(u"truncated").toBool();

    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const QJsonArray items = answer.value(u"items").toArray();
    std::vector<Failure> next;
    next.reserve(static_cast<size_t>(items.size()));
    QHash<QString, qint64> seen;
    seen.reserve(items.size());
    for (const QJsonValue& v : items) {
        const QJsonObject o = v.toObject();
        const auto kind = kinds.find(o.value(u"kind").toString());
        if (kind == kinds.end())
            continue;  // a kind a newer loomd counts: its count is shown, there is no mark
        Failure f;
        f.kind = *kind;
        f.name = o.value(u"name").toString();
        f.what = o.value(u"state").toString();
        f.failed = o.value(u"failed").toBool();
        // Where loomd draws it: by name, so a console never guesses a cable's GPU.
        f.rack = o.value(u"rack").isString() ? h.rackIndex(o.value(u"rack").toString()) : -1;
        f.gpu = o.value(u"gpu").isString() ? h.gpuIndex(o.value(u"gpu").toString()) : -1;
        const QString key = QString::number(static_cast<int>(f.kind)) + u'|' + f.name;
        const auto at = firstSeen_.constFind(key);
        f.firstSeenMs = at != firstSeen_.cend() ? *at : (primed_ ? now : 0);
        seen.insert(key, f.firstSeenMs);
        next.push_back(std::move(f));
    }
    failures_ = std::move(next);
    firstSeen_ = std::move(seen);  // forget what is gone: a failure that comes back is new
    primed_ = true;
    rebuildMarks();
    Q_EMIT changed();
    return true;
}

}  // namespace loom::console
