// The console's copy of loomd's training jobs (docs/api.md, Jobs): parsed from
// GET /api/v1/jobs (list items carry the health summary) and kept current by the stream's
// `jobs` topic ({"type": "job"} writes and deletes, {"type": "jobHealth"} summaries).
// JobModel is the table the Jobs view shows; jobGpus() maps a job's hosts onto the hall's GPU
// indices so the maps can highlight them.
#pragma once

#include <QAbstractTableModel>
#include <QDateTime>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <vector>

#include "loom/console/protocol.hpp"
#include "loom/console/result.hpp"

namespace loom::console {

struct JobHealth {
    bool present = false;  // null for jobs not running (and for a moment after a write)
    double busBw = -1;
    double healthyBusBw = -1;
    bool degraded = false;
    // loomd's word for it (jobs::jobHealthStatus: degraded, gpu-failed, unknown, links-down,
    // gpu-warning, ok); empty when loomd sent none (read as "unknown").
    QString status;
    int gpusTotal = 0, gpusOk = 0, gpusWarning = 0, gpusFailed = 0, gpusQuarantined = 0;
    int linksCrossed = 0;
    QStringList linksDown;
    int openEvents = 0;
    QDateTime updatedAt;

    bool operator==(const JobHealth&) const = default;
};

struct Job {
    QString name;
    QString owner;
    QString state;  // pending | running | completed | failed
    QString source;
    QString pattern;
    QString nodelist;
    QStringList hosts;
    int hostCount = 0;
    int gpus = 0;
    JobHealth health;

    // "degraded", "GPUs failed", "ok", or the state for jobs that do not run.
    QString healthText() const;
    // 0 ok / not running, 1 warning (degraded busbw, warning GPUs), 2 critical (busbw 0, failed
    // GPUs).
    int severity() const;

    bool operator==(const Job&) const = default;
};

// Errors name the field ("job: name missing", "job llama: health.busBw is not a number").
Result<Job> parseJob(const QJsonObject& obj);
Result<JobHealth> parseJobHealth(const QJsonValue& value, const QString& job);

// The hall GPU indices of a job's hosts (hosts not in the hall are skipped).
std::vector<int> jobGpus(const HallLayout& layout, const QStringList& hosts);

class JobModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Name,
        State,
        Health,
        BusBw,
        Gpus,
        LinksDown,
        Events,
        Owner,
        Nodelist,
        ColumnCount
    };
    using QAbstractTableModel::QAbstractTableModel;

    void reset(std::vector<Job> jobs);
    // upsert and setHealth signal only a change: the Jobs view refetches the selected job's
    // detail on jobChanged, and that detail is upserted back (an echo must not be news).
    void upsert(const Job& job);
    void remove(const QString& name);
    // A jobHealth message: only the summary changes. Returns false for an unknown job.
    bool setHealth(const QString& name, const JobHealth& health);
    // One stream message of the `jobs` topic; errors name the message.
    Result<void> apply(const QJsonObject& msg);

    int find(const QString& name) const;
    const Job* job(int row) const;
    const std::vector<Job>& jobs() const { return jobs_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;

Q_SIGNALS:
    void jobChanged(const QString& name);  // added, changed, deleted or its health moved

private:
    std::vector<Job> jobs_;  // in name order
};

}  // namespace loom::console
