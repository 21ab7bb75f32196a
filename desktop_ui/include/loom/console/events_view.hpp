// EventsView: the live event list (newest first) filtered by severity, kind and location,
// and a chart of cluster utilization and open failures over the last hour (Qt Charts,
// sampled once a second from the stream's state). Activating an event asks the main window
// to focus the maps on its location.
#pragma once

#include "loom/console/cluster_state.hpp"

#include <QAbstractTableModel>
#include <QComboBox>
#include <QLineEdit>
#include <QPointer>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QWidget>

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
    enum Column { Time, Severity, Kind, Location, Message, Status, ColumnCount };
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

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
    int minSeverity_ = 0;
    QString kind_;
    QString location_;
};

class EventsView : public QWidget {
    Q_OBJECT
public:
    explicit EventsView(ClusterState* state, QWidget* parent = nullptr);

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

    QPointer<ClusterState> state_;
    EventModel* model_;
    EventFilterProxy* proxy_;
    QTableView* table_;
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
