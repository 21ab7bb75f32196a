// FailureIndex: every open failure the console knows of, by kind (GPU, host, link, switch,
// rack), derived from the live stream: gpu.health (failed, warning, quarantined hosts),
// link.health (down, degraded; drained and not-in-service links are not failures), rack states
// (failed), switches whose in-service links are all down, and open events located on a host or
// a switch. The maps draw it on top of whatever metric they colour by; the counter shows its
// counts and sets the kind filter the maps and the event list follow.
//
// Recomputed from the packed arrays on every health delta (a linear scan of ~80k bytes at 24k
// GPUs, well under a millisecond), so it can never drift from what the stream says.
#pragma once

#include "loom/console/protocol.hpp"

#include <QHash>
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
    int index = -1;        // GPU, link, switch or rack index of the layout; host: its rack
    int rack = -1;         // rack marked on the hall map, -1 when none (spine links, CTSW, ATSW)
    int gpu = -1;          // GPU cell marked on the hall map (GPU failures, a NIC's host link)
    bool failed = true;    // failed (red) or degraded/quarantined (amber/purple)
    QString name;          // what it is: the GPU, host, link, switch or rack name
    QString what;          // "failed", "degraded", "down", "quarantined", rack state, event kind
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
    int count(FailureKind k) const { return counts_[static_cast<size_t>(k)]; }
    int total() const;
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

    void recompute();

Q_SIGNALS:
    void changed();
    void filterChanged(unsigned kindMask);

private:
    void rebuildIndexes();
    void add(Failure f, qint64 nowMs);

    QPointer<ClusterState> state_;
    std::vector<Failure> failures_;
    std::array<int, kFailureKindCount> counts_{};
    std::vector<RackMark> rackMarks_;
    unsigned filter_ = kAllFailureKinds;
    bool primed_ = false;  // the first complete picture is "at connect", not new
    QHash<QString, qint64> firstSeen_;
    // Layout indexes: switch -> its links, RTSW -> rack.
    std::vector<std::vector<int>> switchLinks_;
    std::vector<int> switchRack_;
};

}  // namespace loom::console
