// JobsView: loomd's training jobs (issue 15 item 5) — the list from GET /api/v1/jobs with
// state, health, expected bus bandwidth, GPUs, links down and open events, kept live by the
// stream's `jobs` topic (writes, deletes, `jobHealth` summaries and `jobSuspects`). Selecting a job
// fetches GET /api/v1/jobs/<name> and shows its detail: busbw against its healthy value, the links
// it crosses that are down, bottlenecks, GPUs not ok, its open events (those on its GPUs and links,
// and the job's own job_degraded/straggler events) and its straggler suspects with their evidence;
// and it asks the maps to highlight the job's GPUs (hall) and the links its traffic crosses
// (fabric) through highlightChanged.
#pragma once

#include <QCheckBox>
#include <QHash>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTextBrowser>
#include <QWidget>
#include <vector>

#include "loom/console/api_client.hpp"
#include "loom/console/cluster_state.hpp"
#include "loom/console/jobs_model.hpp"

namespace loom::console {

class JobFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setText(const QString& text);
    void setRunningOnly(bool on);

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
    QString text_;
    bool runningOnly_ = true;
};

class JobsView : public QWidget {
    Q_OBJECT
public:
    JobsView(ClusterState* state, ApiClient* api, QWidget* parent = nullptr);

    JobModel* model() const { return model_; }
    JobFilterProxy* proxy() const { return proxy_; }
    QTableView* table() const { return table_; }
    QTextBrowser* detail() const { return detail_; }
    QCheckBox* runningOnlyBox() const { return runningOnly_; }
    QString headerText() const { return header_->text(); }

    // GET /api/v1/jobs, every page; the list replaces the model when the last page arrives.
    void refresh();
    bool loaded() const { return loaded_; }
    // Selects a job by name (false when it is not listed or filtered out).
    bool selectJob(const QString& name);
    QString selectedJob() const { return selected_; }
    // The last GET /api/v1/jobs/<selected> (empty until it arrives).
    const QJsonObject& detailJson() const { return detailJson_; }
    bool detailLoaded() const { return !detailJson_.isEmpty(); }
    // A list or detail request is on its way (its answer will change what the view shows).
    bool fetching() const { return listInFlight_ || detailInFlight_; }
    const std::vector<int>& selectedGpus() const { return gpus_; }
    const std::vector<int>& selectedLinks() const { return links_; }

Q_SIGNALS:
    // The maps highlight these (empty lists: nothing is selected).
    void highlightChanged(const QString& job, const std::vector<int>& gpus,
                          const std::vector<int>& links);
    void showOnHallRequested();
    void showOnFabricRequested();
    void focusRequested(const QString& location, const QString& rack);

private:
    void onSelection();
    void fetchPage(const QString& cursor, std::vector<Job> acc, int generation);
    void fetchDetail();
    void render();
    void emitHighlight();
    QString eventsHtml(const Job& job) const;
    QString suspectsHtml() const;
    QString stragglersHtml() const;  // the job's open straggler events (issue 34)
    QString lemonsHtml() const;      // the lemons among its hosts and GPUs (issue 34)

    QPointer<ClusterState> state_;
    QPointer<ApiClient> api_;
    JobModel* model_;
    JobFilterProxy* proxy_;
    QTableView* table_;
    QTextBrowser* detail_;
    QLineEdit* filter_;
    QCheckBox* runningOnly_;
    QLabel* header_;
    QPushButton* hallButton_;
    QPushButton* fabricButton_;
    QString listError_;
    bool loaded_ = false;
    int listGeneration_ = 0;
    bool refreshAgain_ = false;
    bool listInFlight_ = false;

    QString selected_;
    QJsonObject detailJson_;
    QString detailError_;
    int detailGeneration_ = 0;
    bool detailInFlight_ = false;
    bool detailAgain_ = false;
    std::vector<int> gpus_;
    std::vector<int> links_;
    QHash<QString, int> linkIndex_;  // link name -> hall link index
};

}  // namespace loom::console
