#include "loom/console/synthetic.hpp"

#include <QJsonArray>
#include <QJsonDocument>

namespace loom::console {

QByteArray syntheticHallJson(const SyntheticShape& s)
{
    QJsonArray zones, rows, racks, gpus, links, switches;
    int gpuOffset = 0;
    for (int z = 1; z <= s.zones; ++z) {
        const QString zn = QStringLiteral("z%1").arg(z);
        zones.append(QJsonObject{{u"name"_qs, zn}});
        for (int c = 1; c <= s.ctswPerZone; ++c)
            switches.append(QJsonObject{{u"name"_qs, QStringLiteral("%1-ctsw%2").arg(zn).arg(c, 2, 10, QChar(u'0'))},
                                        {u"role"_qs, u"ctsw"_qs}, {u"zone"_qs, zn}});
        int rackNo = 0;
        for (int r = 0; r < s.rowsPerZone; ++r) {
            const QString rown = QStringLiteral("%1-row%2").arg(zn).arg(r + 1, 2, 10, QChar(u'0'));
            rows.append(QJsonObject{{u"name"_qs, rown}, {u"zone"_qs, zn}, {u"index"_qs, r}});
            for (int p = 0; p < s.racksPerRow; ++p) {
                const QString rn = QStringLiteral("%1-r%2").arg(zn).arg(++rackNo, 3, 10, QChar(u'0'));
                const QString rtsw = rn + QStringLiteral("-rtsw");
                switches.append(QJsonObject{{u"name"_qs, rtsw}, {u"role"_qs, u"rtsw"_qs}, {u"zone"_qs, zn}});
                QJsonArray hosts;
                for (int h = 0; h < 2; ++h) {
                    const QString hn = QStringLiteral("%1-h%2").arg(rn).arg(h);
                    hosts.append(hn);
                    for (int g = 0; g < 8; ++g) {
                        gpus.append(QStringLiteral("%1-gpu%2").arg(hn).arg(g));
                        links.append(QStringLiteral("%1-nic%2/p1--%3/p%4").arg(hn).arg(g).arg(rtsw).arg(h * 8 + g + 1));
                    }
                }
                for (int u = 0; u < 18; ++u) {
                    const int c = u % s.ctswPerZone + 1;
                    links.append(QStringLiteral("%1/p%2--%3-ctsw%4/p%5")
                                     .arg(rtsw).arg(17 + u).arg(zn).arg(c, 2, 10, QChar(u'0')).arg(rackNo));
                }
                racks.append(QJsonObject{{u"name"_qs, rn}, {u"row"_qs, rown}, {u"position"_qs, p},
                                         {u"state"_qs, rackNo % 23 == 0 ? u"burn_in"_qs : u"in_service"_qs},
                                         {u"hosts"_qs, hosts}, {u"rtsw"_qs, rtsw},
                                         {u"gpuOffset"_qs, gpuOffset}, {u"gpuCount"_qs, 16}});
                gpuOffset += 16;
            }
        }
        for (int c = 1; c <= s.ctswPerZone; ++c)
            for (int u = 0; u < s.ctswUplinks; ++u) {
                const int a = ((z - 1) * s.ctswPerZone + c + u) % s.atsw + 1;
                links.append(QStringLiteral("%1-ctsw%2/p%3--atsw%4/p%5")
                                 .arg(zn).arg(c, 2, 10, QChar(u'0')).arg(200 + u).arg(a, 2, 10, QChar(u'0'))
                                 .arg((z - 1) * 100 + c));
            }
    }
    for (int a = 1; a <= s.atsw; ++a)
        switches.append(QJsonObject{{u"name"_qs, QStringLiteral("atsw%1").arg(a, 2, 10, QChar(u'0'))},
                                    {u"role"_qs, u"atsw"_qs}, {u"zone"_qs, u""_qs}});
    const QJsonObject hall{{u"cluster"_qs, s.cluster}, {u"fabric"_qs, u"roce"_qs}, {u"layoutVersion"_qs, 1},
                           {u"zones"_qs, zones}, {u"rows"_qs, rows}, {u"racks"_qs, racks},
                           {u"gpus"_qs, gpus}, {u"links"_qs, links}, {u"switches"_qs, switches}};
    return QJsonDocument(hall).toJson(QJsonDocument::Compact);
}

SyntheticFeed::SyntheticFeed(int gpus, int links, std::uint32_t seed) : rng_(seed)
{
    for (int t = 0; t < kTopicCount; ++t)
        values_[static_cast<size_t>(t)].assign(static_cast<size_t>(topicIsGpu(static_cast<Topic>(t)) ? gpus : links), 0);
    // Jobs of 256 to 4,096 GPUs on contiguous racks, as a scheduler packs them.
    jobOf_.assign(static_cast<size_t>(gpus), -1);
    int g = 0;
    std::uniform_int_distribution<int> size(16, 256);
    while (g < gpus) {
        const int n = size(rng_) * 16;
        const int job = static_cast<int>(jobUtil_.size());
        jobUtil_.push_back(static_cast<int>(rng_() % 100));
        for (int i = 0; i < n && g < gpus; ++i, ++g)
            jobOf_[static_cast<size_t>(g)] = (job % 7 == 6) ? -1 : job;  // some GPUs idle
    }
    auto& util = values_[static_cast<size_t>(Topic::GpuUtil)];
    auto& temp = values_[static_cast<size_t>(Topic::GpuTemp)];
    for (size_t i = 0; i < util.size(); ++i) {
        util[i] = jobOf_[i] < 0 ? 0 : static_cast<std::uint8_t>(jobUtil_[static_cast<size_t>(jobOf_[i])]);
        temp[i] = static_cast<std::uint8_t>(30 + util[i] / 2);
    }
    auto& lu = values_[static_cast<size_t>(Topic::LinkUtil)];
    for (auto& v : lu)
        v = static_cast<std::uint8_t>(rng_() % 80);
}

QJsonObject SyntheticFeed::hello(const QString& role)
{
    return QJsonObject{{u"type"_qs, u"hello"_qs}, {u"seq"_qs, ++seq_}, {u"server"_qs, u"synthetic"_qs},
                       {u"role"_qs, role}, {u"layoutVersion"_qs, 1}, {u"intervalMs"_qs, 1000}};
}

std::vector<QJsonObject> SyntheticFeed::snapshots()
{
    std::vector<QJsonObject> out;
    for (int t = 0; t < kTopicCount; ++t)
        out.push_back(makeSnapshotMessage(++seq_, static_cast<Topic>(t), values_[static_cast<size_t>(t)]));
    return out;
}

std::vector<QJsonObject> SyntheticFeed::tick()
{
    std::vector<std::pair<std::uint32_t, std::uint8_t>> du, dt, dh, dl, dlh;
    // Compute/communication phases: each job's utilization jumps together.
    for (auto& u : jobUtil_)
        u = std::clamp(u + static_cast<int>(rng_() % 41) - 20, 0, 100);
    auto& util = values_[static_cast<size_t>(Topic::GpuUtil)];
    auto& temp = values_[static_cast<size_t>(Topic::GpuTemp)];
    auto& health = values_[static_cast<size_t>(Topic::GpuHealth)];
    for (size_t i = 0; i < util.size(); ++i) {
        const int job = jobOf_[i];
        const int u = job < 0 ? 0 : std::clamp(jobUtil_[static_cast<size_t>(job)] + static_cast<int>(rng_() % 5) - 2, 0, 100);
        if (health[i] >= 2)
            continue;
        if (u != util[i]) {
            util[i] = static_cast<std::uint8_t>(u);
            du.emplace_back(static_cast<std::uint32_t>(i), util[i]);
        }
        const auto t = static_cast<std::uint8_t>(30 + u / 2);
        if (t != temp[i]) {
            temp[i] = t;
            dt.emplace_back(static_cast<std::uint32_t>(i), t);
        }
    }
    for (int k = 0; k < 3; ++k) {
        const auto i = static_cast<std::uint32_t>(rng_() % health.size());
        health[i] = health[i] == 0 ? static_cast<std::uint8_t>(1 + rng_() % 2) : 0;
        dh.emplace_back(i, health[i]);
    }
    auto& lu = values_[static_cast<size_t>(Topic::LinkUtil)];
    auto& lh = values_[static_cast<size_t>(Topic::LinkHealth)];
    for (size_t j = 0; j < lu.size(); j += 1 + rng_() % 3) {
        lu[j] = static_cast<std::uint8_t>(rng_() % 90);
        dl.emplace_back(static_cast<std::uint32_t>(j), lu[j]);
    }
    if (!lh.empty()) {
        const auto j = static_cast<std::uint32_t>(rng_() % lh.size());
        lh[j] = lh[j] == 0 ? 2 : 0;
        dlh.emplace_back(j, lh[j]);
    }
    return {makeDeltaMessage(++seq_, Topic::GpuUtil, du), makeDeltaMessage(++seq_, Topic::GpuTemp, dt),
            makeDeltaMessage(++seq_, Topic::GpuHealth, dh), makeDeltaMessage(++seq_, Topic::LinkUtil, dl),
            makeDeltaMessage(++seq_, Topic::LinkHealth, dlh)};
}

}  // namespace loom::console
