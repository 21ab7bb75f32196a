// EventsView: the live event list (newest first) filtered by severity, kind and location
// (the filters persist in QSettings), with acknowledge / close for operators (who and when
// shown, POST /api/v1/events/{id}/ack|close), the meaning of XID codes, and a chart of
// cluster utilization and open failures over the last hour (Qt Charts, sampled once a second
// from the stream's state). Activating an event asks the main window to focus the maps on
// its location.
#pragma once

#include "loom/console/api_client.hpp"
#include "loom/console/cluster_state.hpp"

#include <QAbstractTableModel>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QLineEdit>
#include <QPointer>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTimer>
#include <QWidget>

#include <functional>
#include <vector>

QT_BEGIN_NAMESPACE
class QChartView;
class QLineSeries;
class QDateTimeAxis;
class QValueAxis;
QT_END_NAMESPACE

namespace loom::console {

class EventModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Time, Severity, Kind, Location, Message, Status, Acknowledged, ColumnCount };
    explicit EventModel(ClusterState* state, QObject* parent = nullptr);

    const Event* event(int row) const;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;

private:
    void reset();
    void add(const Event& e);

    QPointer<ClusterState> state_;
    std::vector<Event> rows_;  // newest first
};

class EventFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setMinSeverity(int rank);
    void setKind(const QString& kind);
    void setLocation(const QString& text);
    // Failure kinds (failures.hpp) to show; kAllFailureKinds shows every event.
    void setFailureKinds(unsigned mask, const HallLayout* layout);
    unsigned failureKinds() const { return failureKinds_; }

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
    int minSeverity_ = 0;
    QString kind_;
    QString location_;
    unsigned failureKinds_ = kAllFailureKinds;
    const HallLayout* layout_ = nullptr;
};

class EventsView : public QWidget {
    Q_OBJECT
public:
    explicit EventsView(ClusterState* state, ApiClient* api = nullptr, QWidget* parent = nullptr);

    // Acknowledge or close an event on the server (operator role); the reply and the stream
    // update the row. done(error) is called with an empty string on success.
    void acknowledge(qint64 id, const QString& comment, std::function<void(QString)> done = {});
    void closeByHand(qint64 id, const QString& reason, std::function<void(QString)> done = {});
    void setRole(const QString& role);
    QPushButton* ackButton() const { return ack_; }
    QPushButton* closeButton() const { return close_; }
    QLabel* detailLabel() const { return detail_; }
    const Event* selectedEvent() const;

    EventModel* model() const { return model_; }
    EventFilterProxy* proxy() const { return proxy_; }
    QTableView* table() const { return table_; }
    QComboBox* severityBox() const { return severity_; }
    QComboBox* kindBox() const { return kind_; }
    QLineEdit* locationEdit() const { return location_; }
    int chartPoints() const;
    void sample(const QDateTime& now);  // one chart sample (the 1 s timer calls this)

    static constexpr int kWindowSeconds = 3600;

Q_SIGNALS:
    void focusRequested(const QString& location, const QString& rack);

private:
    void refreshKinds();
    void saveFilters();
    void restoreFilters();
    void showSelected();
    void fitColumns();
    void post(qint64 id, const QString& action, const QJsonObject& body, std::function<void(QString)> done);

    QPointer<ClusterState> state_;
    QPointer<ApiClient> api_;
    QString role_;
    EventModel* model_;
    EventFilterProxy* proxy_;
    QTableView* table_;
    QPushButton* ack_;
    QPushButton* close_;
    QLabel* detail_;
    QTimer* fitTimer_;
    QComboBox* severity_;
    QComboBox* kind_;
    QLineEdit* location_;
    QChartView* chartView_;
    QLineSeries* util_;
    QLineSeries* failures_;
    QDateTimeAxis* axisX_;
    QValueAxis* axisFail_;
};

}  // namespace loom::console
