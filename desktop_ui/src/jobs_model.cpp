#include "loom/console/jobs_model.hpp"

#include <QBrush>
#include <QJsonArray>
#include <algorithm>

#include "loom/console/palette.hpp"

namespace loom::console {

namespace {

// A number field that may be absent (then `fallback`) but, when present, must be a number.
Result<double> number(const QJsonObject& o, QStringView key, double fallback,
                      const QString& where) {
    const QJsonValue v = o.value(key);
    if (v.isUndefined() || v.isNull()) return fallback;
    if (!v.isDouble()) return fail(QStringLiteral("%1.%2 is not a number").arg(where, key));
    return v.toDouble();
}

Result<QStringList> strings(const QJsonObject& o, QStringView key, const QString& where) {
    const QJsonValue v = o.value(key);
    if (v.isUndefined() || v.isNull()) return QStringList{};
    if (!v.isArray()) return fail(QStringLiteral("%1.%2 is not an array").arg(where, key));
    QStringList out;
    const QJsonArray a = v.toArray();
    out.reserve(a.size());
    for (qsizetype i = 0; i < a.size(); ++i) {
        if (!a[i].isString())
            return fail(QStringLiteral("%1.%2[%3] is not a string").arg(where, key).arg(i));
        out << a[i].toString();
    }
    return out;
}

}  // namespace

QString Job::healthText() const {
    if (!health.present) return state == u"running" ? QStringLiteral("…") : state;
    // Whether anything is wrong is loomd's word (health.status); the text says what.
    const QString word = health.status.isEmpty() ? QStringLiteral("unknown") : health.status;
    if (word == u"ok") return word;
    QStringList parts;
    if (health.degraded) parts << QStringLiteral("degraded");
    if (health.gpusFailed > 0) parts << QStringLiteral("%1 GPU failed").arg(health.gpusFailed);
    if (health.gpusWarning > 0) parts << QStringLiteral("%1 GPU warning").arg(health.gpusWarning);
    if (health.gpusQuarantined > 0)
        parts << QStringLiteral("%1 GPU quarantined").arg(health.gpusQuarantined);
    if (!health.degraded && !health.linksDown.isEmpty())
        parts << (health.linksDown.size() == 1
                      ? QStringLiteral("1 link down")
                      : QStringLiteral("%1 links down").arg(health.linksDown.size()));
    return parts.isEmpty() ? word : parts.join(QStringLiteral(", "));
}

int Job::severity() const {
    if (!health.present || health.status == u"ok") return 0;
    if (health.status == u"gpu-failed" || (health.status == u"degraded" && health.busBw <= 0))
        return 2;
    return 1;  // degraded with busbw left, links-down, gpu-warning, unknown
}

Result<JobHealth> parseJobHealth(const QJsonValue& value, const QString& job) {
    JobHealth h;
    if (value.isNull() || value.isUndefined()) return h;
    const QString where = QStringLiteral("job %1: health").arg(job);
    if (!value.isObject()) return fail(where + QStringLiteral(" is not an object"));
    const QJsonObject o = value.toObject();
    h.present = true;
    auto bw = number(o, u"busBw", -1, where);
    auto healthy = number(o, u"healthyBusBw", -1, where);
    auto crossed = number(o, u"linksCrossed", 0, where);
    auto events = number(o, u"openEvents", 0, where);
    auto down = strings(o, u"linksDown", where);
    for (const auto* r : {&bw, &healthy, &crossed, &events})
        if (!*r) return fail(r->error());
    if (!down) return fail(down.error());
    h.busBw = *bw;
    h.healthyBusBw = *healthy;
    h.linksCrossed = static_cast<int>(*crossed);
    h.openEvents = static_cast<int>(*events);
    h.linksDown = *down;
    h.degraded = o.value(u"degraded").toBool();
    if (const QJsonValue st = o.value(u"status"); st.isString())
        h.status = st.toString();
    else if (!st.isUndefined() && !st.isNull())
        return fail(where + QStringLiteral(".status is not a string"));
    if (const QJsonValue g = o.value(u"gpus"); g.isObject()) {
        const QJsonObject go = g.toObject();
        const QString gw = where + QStringLiteral(".gpus");
        int* fields[] = {&h.gpusTotal, &h.gpusOk, &h.gpusWarning, &h.gpusFailed,
                         &h.gpusQuarantined};
        const char16_t* keys[] = {u"total", u"ok", u"warning", u"failed", u"quarantined"};
        for (size_t i = 0; i < 5; ++i) {
            auto n = number(go, keys[i], 0, gw);
            if (!n) return fail(n.error());
            *fields[i] = static_cast<int>(*n);
        }
    } else if (!g.isUndefined() && !g.isNull()) {
        return fail(where + QStringLiteral(".gpus is not an object"));
    }
    h.updatedAt = QDateTime::fromString(o.value(u"updatedAt").toString(), Qt::ISODateWithMs);
    return h;
}

Result<Job> parseJob(const QJsonObject& obj) {
    Job j;
    j.name = obj.value(u"name").toString();
    if (j.name.isEmpty()) return fail(QStringLiteral("job: name missing"));
    const QString where = QStringLiteral("job %1").arg(j.name);
    j.owner = obj.value(u"owner").toString();
    j.state = obj.value(u"state").toString();
    j.source = obj.value(u"source").toString();
    j.pattern = obj.value(u"pattern").toString();
    j.nodelist = obj.value(u"nodelist").toString();
    auto hosts = strings(obj, u"hosts", where);
    if (!hosts) return fail(hosts.error());
    j.hosts = *hosts;
    auto hc = number(obj, u"hostCount", static_cast<double>(j.hosts.size()), where);
    auto gpus = number(obj, u"gpus", 0, where);
    if (!hc) return fail(hc.error());
    if (!gpus) return fail(gpus.error());
    j.hostCount = static_cast<int>(*hc);
    j.gpus = static_cast<int>(*gpus);
    auto h = parseJobHealth(obj.value(u"health"), j.name);
    if (!h) return fail(h.error());
    j.health = *h;
    return j;
}

std::vector<int> jobGpus(const HallLayout& layout, const QStringList& hosts) {
    std::vector<int> out;
    for (const QString& host : hosts) {
        const int rack = layout.hostRack.value(host, -1);
        if (rack < 0) continue;
        const HallRack& r = layout.racks[static_cast<size_t>(rack)];
        const QString prefix = host + QStringLiteral("-gpu");
        for (int g = r.gpuOffset; g < r.gpuOffset + r.gpuCount && g < layout.gpus.size(); ++g)
            if (layout.gpus[g].startsWith(prefix)) out.push_back(g);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

void JobModel::reset(std::vector<Job> jobs) {
    beginResetModel();
    jobs_ = std::move(jobs);
    std::sort(jobs_.begin(), jobs_.end(),
              [](const Job& a, const Job& b) { return a.name < b.name; });
    endResetModel();
}

int JobModel::find(const QString& name) const {
    const auto it = std::lower_bound(jobs_.begin(), jobs_.end(), name,
                                     [](const Job& j, const QString& n) { return j.name < n; });
    return it != jobs_.end() && it->name == name ? static_cast<int>(it - jobs_.begin()) : -1;
}

void JobModel::upsert(const Job& job) {
    const int row = find(job.name);
    if (row >= 0) {
        // A write without health (the stream's "job" message) keeps the last summary until the
        // next jobHealth: the job's hosts did not necessarily change.
        Job& j = jobs_[static_cast<size_t>(row)];
        Job next = job;
        if (!next.health.present && job.state == u"running") next.health = j.health;
        if (next == j) return;
        j = std::move(next);
        Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
    } else {
        const auto it = std::lower_bound(jobs_.begin(), jobs_.end(), job.name,
                                         [](const Job& a, const QString& n) { return a.name < n; });
        const int at = static_cast<int>(it - jobs_.begin());
        beginInsertRows({}, at, at);
        jobs_.insert(it, job);
        endInsertRows();
    }
    Q_EMIT jobChanged(job.name);
}

void JobModel::remove(const QString& name) {
    const int row = find(name);
    if (row < 0) return;
    beginRemoveRows({}, row, row);
    jobs_.erase(jobs_.begin() + row);
    endRemoveRows();
    Q_EMIT jobChanged(name);
}

bool JobModel::setHealth(const QString& name, const JobHealth& health) {
    const int row = find(name);
    if (row < 0) return false;
    JobHealth& h = jobs_[static_cast<size_t>(row)].health;
    if (h == health) return true;
    h = health;
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
    Q_EMIT jobChanged(name);
    return true;
}

Result<void> JobModel::apply(const QJsonObject& msg) {
    const QString type = msg.value(u"type").toString();
    if (type == u"job") {
        if (msg.value(u"deleted").toBool()) {
            remove(msg.value(u"name").toString());
            return {};
        }
        auto j = parseJob(msg.value(u"job").toObject());
        if (!j) return fail(QStringLiteral("jobs message: %1").arg(j.error()));
        upsert(*j);
        return {};
    }
    if (type == u"jobHealth") {
        const QString name = msg.value(u"name").toString();
        auto h = parseJobHealth(msg.value(u"health"), name);
        if (!h) return fail(QStringLiteral("jobHealth message: %1").arg(h.error()));
        setHealth(name, *h);  // a job this console has not listed yet arrives with the next list
        return {};
    }
    return {};
}

const Job* JobModel::job(int row) const {
    return row >= 0 && row < static_cast<int>(jobs_.size()) ? &jobs_[static_cast<size_t>(row)]
                                                            : nullptr;
}

int JobModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(jobs_.size());
}

int JobModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant JobModel::data(const QModelIndex& index, int role) const {
    const Job* j = job(index.row());
    if (!j) return {};
    const JobHealth& h = j->health;
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Name:
                return j->name;
            case State:
                return j->state;
            case Health:
                return j->healthText();
            case BusBw:
                if (!h.present || h.busBw < 0) return QStringLiteral("–");
                if (h.degraded && h.healthyBusBw >= 0)
                    return QStringLiteral("%1 % (was %2 %)")
                        .arg(h.busBw, 0, 'f', 1)
                        .arg(h.healthyBusBw, 0, 'f', 1);
                return QStringLiteral("%1 %").arg(h.busBw, 0, 'f', 1);
            case Gpus:
                return j->gpus;
            case LinksDown:
                return h.present ? QVariant(static_cast<int>(h.linksDown.size())) : QVariant();
            case Events:
                return h.present ? QVariant(h.openEvents) : QVariant();
            case Owner:
                return j->owner;
            case Nodelist:
                return j->nodelist;
        }
    }
    if (role == Qt::UserRole) {  // sort keys
        switch (index.column()) {
            case BusBw:
                return h.present ? h.busBw : -1.0;
            case Health:
                return j->severity();
            default:
                return data(index, Qt::DisplayRole);
        }
    }
    if (role == Qt::ForegroundRole && (index.column() == Health || index.column() == BusBw)) {
        const int s = j->severity();
        if (s == 2) return QBrush(QColor(failedColor()));
        if (s == 1) return QBrush(QColor(degradedColor()));
    }
    if (role == Qt::ToolTipRole && index.column() == LinksDown && !h.linksDown.isEmpty())
        return h.linksDown.join(u'\n');
    if (role == Qt::TextAlignmentRole &&
        (index.column() == Gpus || index.column() == LinksDown || index.column() == Events))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant JobModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Name:
            return tr("Job");
        case State:
            return tr("State");
        case Health:
            return tr("Health");
        case BusBw:
            return tr("Bus BW");
        case Gpus:
            return tr("GPUs");
        case LinksDown:
            return tr("Links down");
        case Events:
            return tr("Open events");
        case Owner:
            return tr("Owner");
        case Nodelist:
            return tr("Nodelist");
    }
    return {};
}

}  // namespace loom::console
