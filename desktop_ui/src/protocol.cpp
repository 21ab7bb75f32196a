#include "loom/console/protocol.hpp"

#include "loom/console/xid.hpp"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

namespace loom::console {

namespace {

QString at(const char* list, qsizetype i, const char* field)
{
    return QStringLiteral("hall: %1[%2].%3").arg(QLatin1String(list)).arg(i).arg(QLatin1String(field));
}

// "z1-r001-h0/nic3/p1" -> "z1-r001-h0/nic3"; "z1-r001-rtsw/p17" -> "z1-r001-rtsw".
QStringView portDevice(QStringView port)
{
    const auto slash = port.lastIndexOf(u'/');
    return slash < 0 ? port : port.left(slash);
}

}  // namespace

std::pair<QString, int> nicHostAndIndex(QStringView port)
{
    // Drop the port ("/p1"), then find "nicN" as the last path part or as a "-nicN" suffix.
    QStringView device = port;
    if (const auto slash = device.lastIndexOf(u'/'); slash >= 0 && device.mid(slash + 1).startsWith(u'p'))
        device = device.left(slash);
    auto number = [](QStringView digits) {
        bool ok = false;
        const int n = digits.toInt(&ok);
        return ok ? n : -1;
    };
    if (const auto slash = device.lastIndexOf(u'/'); slash >= 0) {
        const QStringView last = device.mid(slash + 1);
        return {device.left(slash).toString(), last.startsWith(u"nic") ? number(last.mid(3)) : -1};
    }
    if (const auto dash = device.lastIndexOf(u"-nic"); dash > 0) {
        const int n = number(device.mid(dash + 4));
        if (n >= 0)
            return {device.left(dash).toString(), n};
    }
    return {device.toString(), -1};
}

int switchTier(const QString& role)
{
    if (role == u"rtsw" || role == u"leaf")
        return 1;
    if (role == u"ctsw" || role == u"spine")
        return 2;
    if (role == u"atsw" || role == u"core")
        return 3;
    return 0;
}

int HallLayout::gpuIndex(const QString& name) const
{
    // GPU names start with their host's name, and a host belongs to one rack: search only there.
    const auto dash = name.lastIndexOf(u'-');
    if (dash < 0)
        return -1;
    const int rack = hostRack.value(name.left(dash), -1);
    if (rack < 0)
        return -1;
    const auto& r = racks[static_cast<size_t>(rack)];
    for (int i = r.gpuOffset; i < r.gpuOffset + r.gpuCount; ++i)
        if (gpus[i] == name)
            return i;
    return -1;
}

Result<HallLayout> parseHall(const QByteArray& json)
{
    QJsonParseError perr;
    const auto doc = QJsonDocument::fromJson(json, &perr);
    if (perr.error != QJsonParseError::NoError)
        return fail(QStringLiteral("hall: invalid JSON at offset %1: %2")
                        .arg(perr.offset)
                        .arg(perr.errorString()));
    if (!doc.isObject())
        return fail(QStringLiteral("hall: expected a JSON object"));
    const auto root = doc.object();

    HallLayout h;
    h.cluster = root.value(u"cluster").toString();
    h.fabric = root.value(u"fabric").toString();
    h.layoutVersion = root.value(u"layoutVersion").toInteger();

    for (const auto& z : root.value(u"zones").toArray())
        h.zones.push_back(z.isString() ? z.toString() : z.toObject().value(u"name").toString());

    QHash<QString, int> rowByName;
    const auto rows = root.value(u"rows").toArray();
    for (qsizetype i = 0; i < rows.size(); ++i) {
        const auto o = rows[i].toObject();
        HallRow r{o.value(u"name").toString(), o.value(u"zone").toString(),
                  o.value(u"index").toInt(static_cast<int>(i))};
        if (r.name.isEmpty())
            return fail(at("rows", i, "name") + QStringLiteral(" is missing"));
        if (!r.zone.isEmpty() && !h.zones.contains(r.zone))
            h.zones.push_back(r.zone);
        rowByName.insert(r.name, static_cast<int>(h.rows.size()));
        h.rows.push_back(std::move(r));
    }

    const auto gpus = root.value(u"gpus").toArray();
    h.gpus.reserve(gpus.size());
    for (const auto& g : gpus)
        h.gpus.push_back(g.toString());
    h.gpuRack.assign(static_cast<size_t>(h.gpus.size()), -1);

    const auto racks = root.value(u"racks").toArray();
    h.racks.reserve(static_cast<size_t>(racks.size()));
    for (qsizetype i = 0; i < racks.size(); ++i) {
        const auto o = racks[i].toObject();
        HallRack r;
        r.name = o.value(u"name").toString();
        r.row = o.value(u"row").toString();
        r.state = o.value(u"state").toString();
        r.rtsw = o.value(u"rtsw").toString();
        r.position = o.value(u"position").toInt();
        r.gpuOffset = o.value(u"gpuOffset").toInt(-1);
        r.gpuCount = o.value(u"gpuCount").toInt(-1);
        for (const auto& host : o.value(u"hosts").toArray())
            r.hosts.push_back(host.toString());
        if (r.name.isEmpty())
            return fail(at("racks", i, "name") + QStringLiteral(" is missing"));
        const int row = rowByName.value(r.row, -1);
        if (row < 0)
            return fail(at("racks", i, "row") + QStringLiteral(" names unknown row '%1'").arg(r.row));
        r.zone = h.rows[static_cast<size_t>(row)].zone;
        if (r.gpuOffset < 0 || r.gpuCount < 0 || r.gpuOffset + r.gpuCount > h.gpus.size())
            return fail(at("racks", i, "gpuOffset") +
                        QStringLiteral(" %1 + gpuCount %2 exceeds the %3 GPUs of the hall")
                            .arg(r.gpuOffset)
                            .arg(r.gpuCount)
                            .arg(h.gpus.size()));
        const int rackIdx = static_cast<int>(h.racks.size());
        for (int g = r.gpuOffset; g < r.gpuOffset + r.gpuCount; ++g) {
            if (h.gpuRack[static_cast<size_t>(g)] >= 0)
                return fail(at("racks", i, "gpuOffset") +
                            QStringLiteral(": GPU %1 is already in rack '%2'")
                                .arg(g)
                                .arg(h.racks[static_cast<size_t>(h.gpuRack[static_cast<size_t>(g)])].name));
            h.gpuRack[static_cast<size_t>(g)] = rackIdx;
        }
        for (const auto& host : r.hosts)
            h.hostRack.insert(host, rackIdx);
        h.rackByName.insert(r.name, rackIdx);
        h.racks.push_back(std::move(r));
    }

    const auto switches = root.value(u"switches").toArray();
    h.switches.reserve(static_cast<size_t>(switches.size()));
    for (qsizetype i = 0; i < switches.size(); ++i) {
        const auto o = switches[i].toObject();
        HallSwitch s{o.value(u"name").toString(), o.value(u"role").toString(),
                     o.value(u"zone").toString(), 0};
        if (s.name.isEmpty())
            return fail(at("switches", i, "name") + QStringLiteral(" is missing"));
        s.tier = switchTier(s.role);
        h.switchByName.insert(s.name, static_cast<int>(h.switches.size()));
        h.switches.push_back(std::move(s));
    }
    QHash<QString, int> rackOfRtsw;
    for (size_t r = 0; r < h.racks.size(); ++r)
        if (!h.racks[r].rtsw.isEmpty())
            rackOfRtsw.insert(h.racks[r].rtsw, static_cast<int>(r));

    const auto links = root.value(u"links").toArray();
    h.links.reserve(links.size());
    h.linkEnds.reserve(static_cast<size_t>(links.size()));
    for (const auto& l : links) {
        const QString name = l.toString();
        HallLink e;
        const auto sep = name.indexOf(QLatin1String("--"));
        if (sep > 0) {
            const QStringView a = portDevice(QStringView(name).left(sep));
            const QStringView b = portDevice(QStringView(name).mid(sep + 2));
            e.aSwitch = h.switchByName.value(a.toString(), -1);
            e.bSwitch = h.switchByName.value(b.toString(), -1);
            if (e.aSwitch < 0) {
                auto [host, nic] = nicHostAndIndex(QStringView(name).left(sep));
                e.rack = h.hostRack.value(host, -1);
                if (e.rack >= 0) {
                    if (nic >= 0)
                        e.gpu = h.gpuIndex(host + QStringLiteral("-gpu") + QString::number(nic));
                    e.host = std::move(host);
                }
            } else if (h.switches[static_cast<size_t>(e.aSwitch)].tier == 1)
                e.rack = rackOfRtsw.value(h.switches[static_cast<size_t>(e.aSwitch)].name, -1);
        }
        h.links.push_back(name);
        h.linkEnds.push_back(e);
    }
    return h;
}

std::optional<Topic> parseTopic(const QString& s)
{
    if (s == u"gpu.util")
        return Topic::GpuUtil;
    if (s == u"gpu.temp")
        return Topic::GpuTemp;
    if (s == u"gpu.health")
        return Topic::GpuHealth;
    if (s == u"link.util")
        return Topic::LinkUtil;
    if (s == u"link.health")
        return Topic::LinkHealth;
    return std::nullopt;
}

QString topicName(Topic t)
{
    switch (t) {
    case Topic::GpuUtil: return QStringLiteral("gpu.util");
    case Topic::GpuTemp: return QStringLiteral("gpu.temp");
    case Topic::GpuHealth: return QStringLiteral("gpu.health");
    case Topic::LinkUtil: return QStringLiteral("link.util");
    case Topic::LinkHealth: return QStringLiteral("link.health");
    }
    return {};
}

bool topicIsGpu(Topic t) { return t == Topic::GpuUtil || t == Topic::GpuTemp || t == Topic::GpuHealth; }

Result<QByteArray> decodeSnapshot(const QJsonObject& msg, int expectedCount)
{
    const QString topic = msg.value(u"topic").toString();
    const QString enc = msg.value(u"encoding").toString(QStringLiteral("u8"));
    if (enc != u"u8")
        return fail(QStringLiteral("snapshot %1: unsupported encoding '%2'").arg(topic, enc));
    const auto decoded = QByteArray::fromBase64Encoding(msg.value(u"data").toString().toLatin1(),
                                                        QByteArray::AbortOnBase64DecodingErrors);
    if (!decoded)
        return fail(QStringLiteral("snapshot %1: data is not valid base64").arg(topic));
    const int count = msg.value(u"count").toInt(static_cast<int>((*decoded).size()));
    if (count != (*decoded).size())
        return fail(QStringLiteral("snapshot %1: count %2 but %3 bytes of data")
                        .arg(topic)
                        .arg(count)
                        .arg((*decoded).size()));
    if (count != expectedCount)
        return fail(QStringLiteral("snapshot %1: %2 values but the hall layout has %3")
                        .arg(topic)
                        .arg(count)
                        .arg(expectedCount));
    return *decoded;
}

Result<int> applyDelta(std::vector<std::uint8_t>& values, const QJsonObject& msg)
{
    const QString topic = msg.value(u"topic").toString();
    const QString enc = msg.value(u"encoding").toString(QStringLiteral("u8pairs"));
    if (enc != u"u8pairs")
        return fail(QStringLiteral("delta %1: unsupported encoding '%2'").arg(topic, enc));
    const auto decoded = QByteArray::fromBase64Encoding(msg.value(u"data").toString().toLatin1(),
                                                        QByteArray::AbortOnBase64DecodingErrors);
    if (!decoded)
        return fail(QStringLiteral("delta %1: data is not valid base64").arg(topic));
    const QByteArray& raw = *decoded;
    if (raw.size() % 5 != 0)
        return fail(QStringLiteral("delta %1: %2 bytes is not a whole number of 5-byte pairs")
                        .arg(topic)
                        .arg(raw.size()));
    const auto* p = reinterpret_cast<const unsigned char*>(raw.constData());
    const qsizetype n = raw.size() / 5;
    // Validate first so a bad frame leaves the array untouched.
    for (qsizetype i = 0; i < n; ++i) {
        const std::uint32_t idx = p[i * 5] | (p[i * 5 + 1] << 8) | (p[i * 5 + 2] << 16) |
                                  (static_cast<std::uint32_t>(p[i * 5 + 3]) << 24);
        if (idx >= values.size())
            return fail(QStringLiteral("delta %1: pair %2 has index %3 beyond %4 values")
                            .arg(topic)
                            .arg(i)
                            .arg(idx)
                            .arg(values.size()));
    }
    for (qsizetype i = 0; i < n; ++i) {
        const std::uint32_t idx = p[i * 5] | (p[i * 5 + 1] << 8) | (p[i * 5 + 2] << 16) |
                                  (static_cast<std::uint32_t>(p[i * 5 + 3]) << 24);
        values[idx] = p[i * 5 + 4];
    }
    return static_cast<int>(n);
}

QByteArray encodeU8Pairs(const std::vector<std::pair<std::uint32_t, std::uint8_t>>& pairs)
{
    QByteArray out;
    out.resize(static_cast<qsizetype>(pairs.size() * 5));
    auto* p = reinterpret_cast<unsigned char*>(out.data());
    for (const auto& [idx, v] : pairs) {
        *p++ = idx & 0xff;
        *p++ = (idx >> 8) & 0xff;
        *p++ = (idx >> 16) & 0xff;
        *p++ = (idx >> 24) & 0xff;
        *p++ = v;
    }
    return out;
}

QJsonObject makeSnapshotMessage(qint64 seq, Topic topic, const std::vector<std::uint8_t>& values)
{
    const QByteArray raw(reinterpret_cast<const char*>(values.data()),
                         static_cast<qsizetype>(values.size()));
    return QJsonObject{{u"type"_qs, u"snapshot"_qs},
                       {u"seq"_qs, seq},
                       {u"topic"_qs, topicName(topic)},
                       {u"encoding"_qs, u"u8"_qs},
                       {u"count"_qs, static_cast<qint64>(values.size())},
                       {u"data"_qs, QString::fromLatin1(raw.toBase64())}};
}

QJsonObject makeDeltaMessage(qint64 seq, Topic topic,
                             const std::vector<std::pair<std::uint32_t, std::uint8_t>>& pairs)
{
    return QJsonObject{{u"type"_qs, u"delta"_qs},
                       {u"seq"_qs, seq},
                       {u"topic"_qs, topicName(topic)},
                       {u"encoding"_qs, u"u8pairs"_qs},
                       {u"data"_qs, QString::fromLatin1(encodeU8Pairs(pairs).toBase64())}};
}

Result<Event> parseEvent(const QJsonObject& obj)
{
    Event e;
    e.id = obj.value(u"id").toInteger();
    e.severity = obj.value(u"severity").toString();
    e.kind = obj.value(u"kind").toString();
    e.location = obj.value(u"location").toString();
    e.rack = obj.value(u"rack").toString();
    e.message = obj.value(u"message").toString();
    e.openedAt = QDateTime::fromString(obj.value(u"openedAt").toString(), Qt::ISODateWithMs);
    if (const auto c = obj.value(u"closedAt"); c.isString())
        e.closedAt = QDateTime::fromString(c.toString(), Qt::ISODateWithMs);
    e.state = obj.value(u"state").toString();
    e.acknowledgedBy = obj.value(u"acknowledgedBy").toString();
    if (const auto a = obj.value(u"acknowledgedAt"); a.isString())
        e.acknowledgedAt = QDateTime::fromString(a.toString(), Qt::ISODateWithMs);
    e.closedBy = obj.value(u"closedBy").toString();
    e.ackComment = obj.value(u"ackComment").toString();
    e.closeReason = obj.value(u"closeReason").toString();
    e.source = obj.value(u"source").toString();
    const QString xid = obj.value(u"labels").toObject().value(u"xid").toVariant().toString();
    bool ok = false;
    e.xid = xid.toInt(&ok);
    if (!ok)
        e.xid = e.kind.contains(u"xid") ? xidOfText(e.message) : -1;
    if (e.kind.isEmpty() && e.message.isEmpty())
        return fail(QStringLiteral("event %1: neither kind nor message").arg(e.id));
    return e;
}

QString Event::stateText() const
{
    if (!open())
        return QStringLiteral("closed");
    return acknowledged() ? QStringLiteral("acknowledged") : QStringLiteral("open");
}

int severityRank(const QString& severity)
{
    if (severity == u"critical" || severity == u"error")
        return 2;
    if (severity == u"warning")
        return 1;
    return 0;
}

}  // namespace loom::console
