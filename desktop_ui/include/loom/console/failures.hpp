// FailureIndex: every open failure by kind (GPU, host, link, switch, rack) as loomd counts it
// (GET /api/v1/failures, telemetry/failures.hpp): the console never re-derives a count, so its
// counter, its hall marks and the web dashboard's are one answer. The maps draw the items on top
// of whatever metric they colour by (each names the rack and GPU it is drawn on: a NIC cable
// down marks its GPU); the counter shows the counts and sets the kind filter the maps and the
// event list follow.
//
// When the stream says something changed (a gpu.health or link.health delta, a rack state, an
// event) the index emits refreshWanted; the Session asks loomd again (debounced, one request in
// flight, and every 5 s while live for what changes without a frame) and hands the answer to
// applyLoomd.
#pragma once

#include "loom/console/protocol.hpp"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>

#include <array>
#include <cstdint>
#include <vector>

namespace loom::console {

class ClusterState;

enum class FailureKind : std::uint8_t { Gpu, Host, Link, Switch, Rack };
inline constexpr int kFailureKindCount = 5;
inline constexpr unsigned failureBit(FailureKind k) { return 1u << static_cast<unsigned>(k); }
inline constexpr unsigned kAllFailureKinds = (1u << kFailureKindCount) - 1;
QString failureKindName(FailureKind k, bool plural = false);

// The failure kind an event belongs to (gpu_* -> GPU, link_* -> link, a switch or host
// location -> switch or host, rack/provisioning kinds -> rack).
FailureKind eventFailureKind(const Event& e, const HallLayout& layout);

struct Failure {
    FailureKind kind = FailureKind::Gpu;
    int rack = -1;         // rack marked on the hall map, -1 when none (spine links, CTSW, ATSW)
    int gpu = -1;          // GPU cell marked on the hall map (GPU failures, a NIC's host link)
    bool failed = true;    // failed (red) or degraded/quarantined (amber/purple)
    QString name;          // what it is: the GPU, host, link, switch or rack name
    QString what;          // loomd's state: "failed", "warning", "down", "quarantined", an event kind
    qint64 firstSeenMs = 0;  // when this console first saw it; 0 = already there at connect
};

// What the hall map draws on one rack: how many failures (after the kind filter) and how bad.
struct RackMark {
    int count = 0;
    bool failed = false;     // any red one
    bool rackFailed = false; // the rack itself is failed
    bool fresh = false;      // any seen in the last kNewMs
};

class FailureIndex : public QObject {
    Q_OBJECT
public:
    explicit FailureIndex(ClusterState* state, QObject* parent = nullptr);

    const std::vector<Failure>& failures() const { return failures_; }
    // loomd's counts: whole even when its list of items is cut at 5,000.
    int count(FailureKind k) const { return counts_[static_cast<size_t>(k)]; }
    int total() const;
    bool truncated() const { return truncated_; }
    // Whether an answer from loomd has been applied since the layout was (re)loaded.
    bool hasAnswer() const { return primed_; }
    // Rack marks for the kinds the filter shows, indexed like layout().racks.
    const std::vector<RackMark>& rackMarks() const { return rackMarks_; }

    unsigned filter() const { return filter_; }
    void setFilter(unsigned kindMask);
    bool shown(FailureKind k) const { return filter_ & failureBit(k); }

    bool isNew(const Failure& f, qint64 nowMs) const
    {
        return f.firstSeenMs > 0 && nowMs - f.firstSeenMs < kNewMs;
    }
    static constexpr qint64 kNewMs = 60'000;  // a halo for a minute after it appears

    // loomd's answer to GET /api/v1/failures. An answer for another layout version is ignored
    // (returns false): the Session is fetching the new hall, and asks again after it.
    bool applyLoomd(const QJsonObject& answer);

Q_SIGNALS:
    void changed();
    void filterChanged(unsigned kindMask);
    void refreshWanted();  // the stream says the failures may have changed: ask loomd

private:
    void rebuildMarks();

    QPointer<ClusterState> state_;
    std::vector<Failure> failures_;
    std::array<int, kFailureKindCount> counts_{};
    std::vector<RackMark> rackMarks_;
    unsigned filter_ = kAllFailureKinds;
    bool truncated_ = false;
    bool primed_ = false;  // the first answer is "at connect", not new
    QHash<QString, qint64> firstSeen_;
};

}  // namespace loom::console
