// The provisioning board: phases with progress bars, racks by state in a filterable table,
// and the lifecycle actions (POST /api/v1/racks/{name}/advance|drain|repair|fail,
// POST /api/v1/phases/{name}/start|pause|resume|abort). Buttons follow the token's role
// (operator for racks, admin for phases); destructive actions ask first; a refusal is shown
// exactly as the server wrote it.
#pragma once

#include "loom/console/api_client.hpp"
#include "loom/console/cluster_state.hpp"

#include <QAbstractTableModel>
#include <QComboBox>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QWidget>

#include <functional>

namespace loom::console {

class RackTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Zone, Row, State, Gpus, Util, Failed, ColumnCount };
    explicit RackTableModel(ClusterState* state, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;
    void refreshMetrics();  // utilization/failed columns, at most once per interval

private:
    QPointer<ClusterState> state_;
};

class RackFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setStateFilter(const QString& state);  // empty: all
    void setTextFilter(const QString& text);    // substring of name, zone or row

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
    QString state_;
    QString text_;
};

struct PhaseRow {
    QString name;
    QString state;
    int total = 0;
    int done = 0;
    int failed = 0;
    double percent() const { return total > 0 ? 100.0 * done / total : 0; }
};
PhaseRow parsePhase(const QJsonObject& o);

class PhaseTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, State, Progress, Racks, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    void setPhases(std::vector<PhaseRow> phases);
    void upsert(const PhaseRow& p);
    const PhaseRow* phase(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;

private:
    std::vector<PhaseRow> phases_;
};

class ProgressDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* p, const QStyleOptionViewItem& opt, const QModelIndex& idx) const override;
};

class ProvisioningBoard : public QWidget {
    Q_OBJECT
public:
    ProvisioningBoard(ClusterState* state, ApiClient* api, QWidget* parent = nullptr);

    void setRole(const QString& role);
    void refreshPhases();
    QStringList selectedRacks() const;
    void selectRack(const QString& name);

    // Confirmation hook for destructive actions; tests replace the dialog.
    std::function<bool(const QString& question)> confirm;

    RackTableModel* rackModel() const { return racks_; }
    RackFilterProxy* rackProxy() const { return proxy_; }
    PhaseTableModel* phaseModel() const { return phases_; }
    QTableView* rackView() const { return rackView_; }
    QComboBox* stateFilter() const { return stateFilter_; }
    QLineEdit* textFilter() const { return textFilter_; }
    QLabel* messageLabel() const { return message_; }
    QPushButton* button(const QString& action) const;

Q_SIGNALS:
    void rackActivated(const QString& rack);

private:
    void rackAction(const QString& action, bool destructive);
    void phaseAction(const QString& action, bool destructive);
    void updateButtons();
    void showMessage(const QString& text, bool error);

    QPointer<ClusterState> state_;
    QPointer<ApiClient> api_;
    RackTableModel* racks_;
    RackFilterProxy* proxy_;
    PhaseTableModel* phases_;
    QTableView* rackView_;
    QTableView* phaseView_;
    QComboBox* stateFilter_;
    QLineEdit* textFilter_;
    QLabel* summary_;
    QLabel* message_;
    QHash<QString, QPushButton*> buttons_;
    QString role_;
};

}  // namespace loom::console
