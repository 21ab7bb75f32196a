// Recorded-shape protocol messages for tests and the benchmark: a hall (GET /api/v1/hall) of
// the meta-24k-roce shape (zones x rows x racks of 2 hosts x 8 GPUs, one RTSW per rack with
// 18 uplinks to the zone's 18 CTSWs, CTSWs with uplinks to the ATSWs) and stream frames
// (snapshots and 1 Hz deltas) with jobs of correlated utilization, exactly as docs/api.md
// describes them. Not a simulator of the cluster: just the wire shapes at full scale.
#pragma once

#include "loom/console/protocol.hpp"

#include <QByteArray>
#include <QJsonObject>

#include <cstdint>
#include <random>
#include <vector>

namespace loom::console {

struct SyntheticShape {
    int zones = 8;
    int rowsPerZone = 8;
    int racksPerRow = 24;  // 8 x 8 x 24 = 1,536 racks = 24,576 GPUs
    int ctswPerZone = 18;
    int atsw = 36;
    int ctswUplinks = 24;
    QString cluster = QStringLiteral("meta-24k-roce");

    static SyntheticShape small() { return {1, 2, 2, 4, 2, 2, QStringLiteral("dev-small")}; }
    int racks() const { return zones * rowsPerZone * racksPerRow; }
    int gpus() const { return racks() * 16; }
};

QByteArray syntheticHallJson(const SyntheticShape& shape);

// Produces frames in the server's order: hello, snapshots of every topic, then one delta per
// topic per tick.
class SyntheticFeed {
public:
    SyntheticFeed(int gpus, int links, std::uint32_t seed = 7);

    QJsonObject hello(const QString& role = QStringLiteral("admin"));
    std::vector<QJsonObject> snapshots();
    // One 1 Hz tick: every GPU of a job moves together; a few GPUs/links fail or recover.
    std::vector<QJsonObject> tick();

    const std::vector<std::uint8_t>& values(Topic t) const { return values_[static_cast<size_t>(t)]; }
    qint64 seq() const { return seq_; }

private:
    std::mt19937 rng_;
    std::array<std::vector<std::uint8_t>, kTopicCount> values_;
    std::vector<int> jobOf_;  // GPU -> job
    std::vector<int> jobUtil_;
    qint64 seq_ = 0;
};

}  // namespace loom::console
