#include "loom/console/failures.hpp"

#include "loom/console/cluster_state.hpp"

#include <QDateTime>
#include <QSet>

#include <algorithm>

namespace loom::console {

namespace {
constexpr std::uint8_t kGpuWarning = 1, kGpuFailed = 2, kGpuQuarantined = 3;
constexpr std::uint8_t kLinkUp = 0, kLinkDegraded = 1, kLinkDown = 2;
}  // namespace

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
    connect(state, &ClusterState::layoutChanged, this, [this] {
        rebuildIndexes();
        primed_ = false;
        recompute();
    });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned mask) {
        if (mask & (topicBit(Topic::GpuHealth) | topicBit(Topic::LinkHealth)))
            recompute();
    });
    connect(state, &ClusterState::rackStateChanged, this, [this] { recompute(); });
    connect(state, &ClusterState::eventAdded, this, [this] { recompute(); });
    connect(state, &ClusterState::eventsReset, this, [this] { recompute(); });
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
    recompute();
    Q_EMIT filterChanged(filter_);
}

void FailureIndex::rebuildIndexes()
{
    const HallLayout& h = state_->layout();
    switchLinks_.assign(h.switches.size(), {});
    for (size_t l = 0; l < h.linkEnds.size(); ++l)
        for (const int s : {h.linkEnds[l].aSwitch, h.linkEnds[l].bSwitch})
            if (s >= 0)
                switchLinks_[static_cast<size_t>(s)].push_back(static_cast<int>(l));
    switchRack_.assign(h.switches.size(), -1);
    for (size_t r = 0; r < h.racks.size(); ++r)
        if (const int s = h.switchIndex(h.racks[r].rtsw); s >= 0)
            switchRack_[static_cast<size_t>(s)] = static_cast<int>(r);
}

void FailureIndex::add(Failure f, qint64 nowMs)
{
    const QString key = QString::number(static_cast<int>(f.kind)) + u'|' + f.name;
    auto it = firstSeen_.find(key);
    if (it == firstSeen_.end())
        it = firstSeen_.insert(key, primed_ ? nowMs : 0);
    f.firstSeenMs = *it;
    ++counts_[static_cast<size_t>(f.kind)];
    if (shown(f.kind) && f.rack >= 0 && f.rack < static_cast<int>(rackMarks_.size())) {
        auto& m = rackMarks_[static_cast<size_t>(f.rack)];
        ++m.count;
        m.failed |= f.failed;
        m.rackFailed |= f.kind == FailureKind::Rack;
        m.fresh |= isNew(f, nowMs);
    }
    failures_.push_back(std::move(f));
}

void FailureIndex::recompute()
{
    if (!state_)
        return;
    const HallLayout& h = state_->layout();
    if (switchLinks_.size() != h.switches.size())
        rebuildIndexes();
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    failures_.clear();
    counts_.fill(0);
    rackMarks_.assign(h.racks.size(), RackMark{});

    // GPUs: failed and warning from gpu.health; quarantined GPUs make their host a failure.
    const auto& gh = state_->values(Topic::GpuHealth);
    QString lastQuarantinedHost;
    for (size_t g = 0; g < gh.size() && g < static_cast<size_t>(h.gpus.size()); ++g) {
        const auto v = gh[g];
        if (v != kGpuWarning && v != kGpuFailed && v != kGpuQuarantined)
            continue;
        const int rack = h.gpuRack[g];
        const QString& name = h.gpus[static_cast<qsizetype>(g)];
        if (v == kGpuQuarantined) {
            const QString host = name.left(name.lastIndexOf(u'-'));
            if (host == lastQuarantinedHost)  // GPUs of a host are contiguous
                continue;
            lastQuarantinedHost = host;
            add({FailureKind::Host, rack, rack, static_cast<int>(g), false, host,
                 QStringLiteral("quarantined"), 0},
                now);
            continue;
        }
        add({FailureKind::Gpu, static_cast<int>(g), rack, static_cast<int>(g), v == kGpuFailed, name,
             v == kGpuFailed ? QStringLiteral("failed") : QStringLiteral("warning"), 0},
            now);
    }

    // Links: down and degraded; drained / not in service are states, not failures.
    const auto& lh = state_->values(Topic::LinkHealth);
    for (size_t l = 0; l < lh.size() && l < h.linkEnds.size(); ++l) {
        const auto v = lh[l];
        if (v != kLinkDown && v != kLinkDegraded)
            continue;
        const auto& e = h.linkEnds[l];
        add({FailureKind::Link, static_cast<int>(l), e.rack, e.gpu, v == kLinkDown,
             h.links[static_cast<qsizetype>(l)], v == kLinkDown ? QStringLiteral("down") : QStringLiteral("degraded"),
             0},
            now);
    }

    // Switches: every in-service link with data down (at least two of them: one link down is
    // that link's failure, not its switch's).
    for (size_t s = 0; s < switchLinks_.size(); ++s) {
        int live = 0, down = 0;
        for (const int l : switchLinks_[s]) {
            if (static_cast<size_t>(l) >= lh.size())
                continue;
            const auto v = lh[static_cast<size_t>(l)];
            if (v == kLinkUp || v == kLinkDegraded || v == kLinkDown)
                ++live;
            if (v == kLinkDown)
                ++down;
        }
        if (live >= 2 && down == live)
            add({FailureKind::Switch, static_cast<int>(s), switchRack_[s], -1, true, h.switches[s].name,
                 QStringLiteral("all %1 links down").arg(live), 0},
                now);
    }

    // Racks whose lifecycle state is failed.
    for (size_t r = 0; r < h.racks.size(); ++r)
        if (h.racks[r].state == u"failed")
            add({FailureKind::Rack, static_cast<int>(r), static_cast<int>(r), -1, true, h.racks[r].name,
                 QStringLiteral("failed"), 0},
                now);

    // Open events on a switch or a host (GPU and link events show in the health arrays).
    QSet<QString> named;
    for (const auto& f : failures_)
        if (f.kind == FailureKind::Switch || f.kind == FailureKind::Host)
            named.insert(f.name);
    for (const auto& e : state_->events()) {
        if (!e.open() || severityRank(e.severity) < 1 || named.contains(e.location))
            continue;
        if (const int s = h.switchIndex(e.location); s >= 0) {
            named.insert(e.location);
            add({FailureKind::Switch, s, switchRack_[static_cast<size_t>(s)], -1,
                 severityRank(e.severity) >= 2, e.location, e.kind, 0},
                now);
        } else if (const int r = h.hostRack.value(e.location, -1); r >= 0) {
            named.insert(e.location);
            add({FailureKind::Host, r, r, h.gpuIndex(e.location + QStringLiteral("-gpu0")),
                 severityRank(e.severity) >= 2, e.location, e.kind, 0},
                now);
        }
    }

    // Forget what is gone, so a failure that comes back is new again.
    if (firstSeen_.size() > static_cast<qsizetype>(failures_.size())) {
        QHash<QString, qint64> keep;
        keep.reserve(static_cast<qsizetype>(failures_.size()));
        for (const auto& f : failures_) {
            const QString key = QString::number(static_cast<int>(f.kind)) + u'|' + f.name;
            keep.insert(key, f.firstSeenMs);
        }
        firstSeen_ = std::move(keep);
    }
    // The first picture with health data is what was already open at connect.
    if (state_->hasSnapshot(Topic::GpuHealth) && state_->hasSnapshot(Topic::LinkHealth))
        primed_ = true;
    Q_EMIT changed();
}

}  // namespace loom::console
