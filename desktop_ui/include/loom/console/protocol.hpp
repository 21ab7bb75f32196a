// The wire protocol of loomd as the console sees it (docs/api.md): the floor layout of
// GET /api/v1/hall, the packed u8 arrays of the WebSocket stream (snapshot = base64 bytes,
// delta = base64 little-endian (u32 index, u8 value) pairs) and events.
//
// Parsing never trusts the server: every function returns a Result whose error names the
// offending place ("hall: racks[12].gpuOffset ..."), so a bad message is reported, never a crash.
#pragma once

#include "loom/console/result.hpp"

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace loom::console {

struct HallRow {
    QString name;
    QString zone;
    int index = 0;
};

struct HallRack {
    QString name;
    QString row;
    QString zone;  // from its row
    QString state;
    QString rtsw;
    QStringList hosts;
    int position = 0;
    int gpuOffset = 0;
    int gpuCount = 0;
};

struct HallSwitch {
    QString name;
    QString role;
    QString zone;  // empty above zones (atsw, core)
    int tier = 0;  // 1 rack/leaf, 2 cluster/spine, 3 aggregator/core, 0 other
};

// One backend link split into its end devices ("<aPort>--<bPort>", port "<device>/<port>").
struct HallLink {
    int aSwitch = -1;  // index into switches, -1 when that end is a NIC
    int bSwitch = -1;
    int rack = -1;     // rack of the NIC end (host links) or of the tier-1 switch
    int gpu = -1;      // host links: the GPU of the NIC's rail (NIC i serves GPU i), else -1
    QString host;      // host links: the host of the NIC end
};

struct HallLayout {
    QString cluster;
    QString fabric;
    qint64 layoutVersion = 0;
    QStringList zones;
    std::vector<HallRow> rows;
    std::vector<HallRack> racks;
    QStringList gpus;
    QStringList links;
    std::vector<HallSwitch> switches;

    // Derived indexes, built by parseHall().
    std::vector<int> gpuRack;  // GPU index -> rack index (-1 if no rack claims it)
    std::vector<HallLink> linkEnds;
    QHash<QString, int> rackByName;
    QHash<QString, int> switchByName;
    QHash<QString, int> hostRack;

    int rackIndex(const QString& name) const { return rackByName.value(name, -1); }
    int switchIndex(const QString& name) const { return switchByName.value(name, -1); }
    int gpuIndex(const QString& name) const;  // linear in the rack's GPUs, not in all GPUs
    int zoneIndex(const QString& name) const { return static_cast<int>(zones.indexOf(name)); }
};

int switchTier(const QString& role);
// The host and NIC number of a NIC device or port: "z1-r001-h0-nic3/p1" and the older
// "z1-r001-h0/nic3/p1" both give ("z1-r001-h0", 3); nic = -1 when there is no "nicN".
std::pair<QString, int> nicHostAndIndex(QStringView port);

Result<HallLayout> parseHall(const QByteArray& json);

enum class Topic : std::uint8_t { GpuUtil, GpuTemp, GpuHealth, LinkUtil, LinkHealth };
inline constexpr int kTopicCount = 5;
inline constexpr unsigned topicBit(Topic t) { return 1u << static_cast<unsigned>(t); }
std::optional<Topic> parseTopic(const QString& s);
QString topicName(Topic t);
bool topicIsGpu(Topic t);

inline constexpr std::uint8_t kNoData = 255;

// Snapshot payload: base64 bytes, one per element; `count` must match.
Result<QByteArray> decodeSnapshot(const QJsonObject& msg, int expectedCount);
// Delta payload applied in place; returns the number of entries changed.
Result<int> applyDelta(std::vector<std::uint8_t>& values, const QJsonObject& msg);

// Encoders for tests and the benchmark's recorded frames (the server's side of the wire).
QByteArray encodeU8Pairs(const std::vector<std::pair<std::uint32_t, std::uint8_t>>& pairs);
QJsonObject makeSnapshotMessage(qint64 seq, Topic topic, const std::vector<std::uint8_t>& values);
QJsonObject makeDeltaMessage(qint64 seq, Topic topic,
                             const std::vector<std::pair<std::uint32_t, std::uint8_t>>& pairs);

struct Event {
    qint64 id = 0;
    qint64 seq = 0;
    QString severity;  // info | warning | critical (anything else shown as is)
    QString kind;
    QString location;
    QString rack;
    QString message;
    QDateTime openedAt;
    QDateTime closedAt;
    // Lifecycle (docs/api.md, events): "open", "acknowledged", "closed"; who and when.
    QString state;
    QString acknowledgedBy;
    QDateTime acknowledgedAt;
    QString closedBy;
    QString ackComment;   // what the acknowledging operator wrote
    QString closeReason;  // why it was closed by hand
    QString source;   // "telemetry", "provisioning", "operator"
    int xid = -1;     // labels.xid, or "XID <n>" in the message; -1 when not an XID
    bool open() const { return !closedAt.isValid() && state != u"closed"; }
    bool acknowledged() const { return acknowledgedAt.isValid() || !acknowledgedBy.isEmpty() || state == u"acknowledged"; }
    QString stateText() const;  // "open", "acknowledged", "closed"
};
Result<Event> parseEvent(const QJsonObject& obj);
int severityRank(const QString& severity);  // info 0, warning 1, critical 2 (unknown 0)

}  // namespace loom::console
