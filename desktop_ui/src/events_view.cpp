#include "loom/console/events_view.hpp"

#include <QChart>
#include <QChartView>
#include <QDateTimeAxis>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QSplitter>
#include <QTimer>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>

namespace loom::console {

EventModel::EventModel(ClusterState* state, QObject* parent) : QAbstractTableModel(parent), state_(state)
{
    connect(state, &ClusterState::eventsReset, this, &EventModel::reset);
    connect(state, &ClusterState::eventAdded, this, &EventModel::add);
    reset();
}

void EventModel::reset()
{
    beginResetModel();
    rows_.assign(state_->events().rbegin(), state_->events().rend());
    endResetModel();
}

void EventModel::add(const Event& e)
{
    if (e.id != 0)
        for (size_t i = 0; i < rows_.size(); ++i)
            if (rows_[i].id == e.id) {
                rows_[i] = e;
                Q_EMIT dataChanged(index(static_cast<int>(i), 0), index(static_cast<int>(i), ColumnCount - 1));
                return;
            }
    beginInsertRows({}, 0, 0);
    rows_.insert(rows_.begin(), e);
    endInsertRows();
    if (rows_.size() > ClusterState::kMaxEvents) {
        const int last = static_cast<int>(rows_.size()) - 1;
        beginRemoveRows({}, last, last);
        rows_.pop_back();
        endRemoveRows();
    }
}

const Event* EventModel::event(int row) const
{
    return row >= 0 && row < rowCount() ? &rows_[static_cast<size_t>(row)] : nullptr;
}

int EventModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int EventModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant EventModel::data(const QModelIndex& idx, int role) const
{
    const Event* e = event(idx.row());
    if (!e)
        return {};
    if (role == Qt::DisplayRole) {
        switch (idx.column()) {
        case Time: return e->openedAt.toLocalTime().toString(QStringLiteral("MM-dd hh:mm:ss"));
        case Severity: return e->severity;
        case Kind: return e->kind;
        case Location: return e->location;
        case Message: return e->message;
        case Status: return e->open() ? QStringLiteral("open") : QStringLiteral("closed");
        }
    }
    if (role == Qt::ForegroundRole && idx.column() == Severity) {
        const int r = severityRank(e->severity);
        return r == 2 ? QColor(230, 60, 60) : r == 1 ? QColor(220, 160, 20) : QVariant();
    }
    if (role == Qt::ToolTipRole && idx.column() == Message)
        return e->message;
    return {};
}

QVariant EventModel::headerData(int section, Qt::Orientation o, int role) const
{
    if (o != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Opened", "Severity", "Kind", "Location", "Message", "Status"};
    return section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

void EventFilterProxy::setMinSeverity(int rank)
{
    minSeverity_ = rank;
    invalidateFilter();
}
void EventFilterProxy::setKind(const QString& kind)
{
    kind_ = kind;
    invalidateFilter();
}
void EventFilterProxy::setLocation(const QString& text)
{
    location_ = text;
    invalidateFilter();
}

bool EventFilterProxy::filterAcceptsRow(int row, const QModelIndex&) const
{
    const Event* e = static_cast<const EventModel*>(sourceModel())->event(row);
    if (!e)
        return false;
    if (severityRank(e->severity) < minSeverity_)
        return false;
    if (!kind_.isEmpty() && e->kind != kind_)
        return false;
    if (!location_.isEmpty() && !e->location.contains(location_, Qt::CaseInsensitive) &&
        !e->rack.contains(location_, Qt::CaseInsensitive))
        return false;
    return true;
}

EventsView::EventsView(ClusterState* state, QWidget* parent) : QWidget(parent), state_(state)
{
    model_ = new EventModel(state, this);
    proxy_ = new EventFilterProxy(this);
    proxy_->setSourceModel(model_);
    table_ = new QTableView(this);
    table_->setModel(proxy_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->verticalHeader()->setDefaultSectionSize(20);
    table_->horizontalHeader()->setSectionResizeMode(EventModel::Message, QHeaderView::Stretch);
    table_->setWordWrap(false);

    severity_ = new QComboBox(this);
    severity_->addItem(tr("all severities"), 0);
    severity_->addItem(tr("warning and up"), 1);
    severity_->addItem(tr("critical only"), 2);
    kind_ = new QComboBox(this);
    kind_->addItem(tr("all kinds"), QString());
    location_ = new QLineEdit(this);
    location_->setPlaceholderText(tr("location (GPU, host, rack, switch, link)"));
    location_->setClearButtonEnabled(true);

    util_ = new QLineSeries;
    util_->setName(tr("mean GPU utilization %"));
    failures_ = new QLineSeries;
    failures_->setName(tr("open failures"));
    auto* chart = new QChart;
    chart->addSeries(util_);
    chart->addSeries(failures_);
    chart->setTheme(QChart::ChartThemeDark);
    chart->setTitle(tr("Last hour"));
    chart->legend()->setAlignment(Qt::AlignBottom);
    axisX_ = new QDateTimeAxis;
    axisX_->setFormat(QStringLiteral("hh:mm"));
    axisX_->setTickCount(7);
    auto* axisUtil = new QValueAxis;
    axisUtil->setRange(0, 100);
    axisUtil->setLabelFormat(QStringLiteral("%d"));
    axisFail_ = new QValueAxis;
    axisFail_->setRange(0, 10);
    axisFail_->setLabelFormat(QStringLiteral("%d"));
    chart->addAxis(axisX_, Qt::AlignBottom);
    chart->addAxis(axisUtil, Qt::AlignLeft);
    chart->addAxis(axisFail_, Qt::AlignRight);
    util_->attachAxis(axisX_);
    util_->attachAxis(axisUtil);
    failures_->attachAxis(axisX_);
    failures_->attachAxis(axisFail_);
    const auto now = QDateTime::currentDateTime();
    axisX_->setRange(now.addSecs(-kWindowSeconds), now);
    chartView_ = new QChartView(chart, this);
    chartView_->setRenderHint(QPainter::Antialiasing);
    chartView_->setMinimumHeight(220);

    auto* bar = new QHBoxLayout;
    bar->addWidget(severity_);
    bar->addWidget(kind_);
    bar->addWidget(location_, 1);
    auto* top = new QWidget(this);
    auto* topLay = new QVBoxLayout(top);
    topLay->setContentsMargins(0, 0, 0, 0);
    topLay->addLayout(bar);
    topLay->addWidget(table_, 1);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(chartView_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* lay = new QVBoxLayout(this);
    lay->setContentsMargins(4, 4, 4, 4);
    lay->addWidget(split);

    connect(severity_, &QComboBox::currentIndexChanged, this,
            [this](int) { proxy_->setMinSeverity(severity_->currentData().toInt()); });
    connect(kind_, &QComboBox::currentIndexChanged, this,
            [this](int) { proxy_->setKind(kind_->currentData().toString()); });
    connect(location_, &QLineEdit::textChanged, proxy_, &EventFilterProxy::setLocation);
    auto activate = [this](const QModelIndex& i) {
        const Event* e = model_->event(proxy_->mapToSource(i).row());
        if (e)
            Q_EMIT focusRequested(e->location, e->rack);
    };
    connect(table_, &QTableView::clicked, this, activate);
    connect(table_, &QTableView::activated, this, activate);
    connect(state, &ClusterState::eventAdded, this, [this](const Event& e) {
        if (kind_->findData(e.kind) < 0)
            kind_->addItem(e.kind, e.kind);
    });
    connect(state, &ClusterState::eventsReset, this, &EventsView::refreshKinds);

    auto* timer = new QTimer(this);
    timer->start(1000);
    connect(timer, &QTimer::timeout, this, [this] { sample(QDateTime::currentDateTime()); });
}

void EventsView::refreshKinds()
{
    for (const auto& e : state_->events())
        if (kind_->findData(e.kind) < 0)
            kind_->addItem(e.kind, e.kind);
}

int EventsView::chartPoints() const { return static_cast<int>(util_->count()); }

void EventsView::sample(const QDateTime& now)
{
    if (!state_ || !state_->hasSnapshot(Topic::GpuUtil))
        return;
    const qint64 t = now.toMSecsSinceEpoch();
    util_->append(static_cast<qreal>(t), state_->meanGpuUtil());
    const int open = state_->openFailures();
    failures_->append(static_cast<qreal>(t), open);
    // Keep one hour: drop the oldest points in one go rather than one by one.
    const qint64 cutoff = t - kWindowSeconds * 1000LL;
    int drop = 0;
    while (drop < util_->count() && util_->at(drop).x() < cutoff)
        ++drop;
    if (drop > 60) {
        util_->removePoints(0, drop);
        failures_->removePoints(0, drop);
    }
    axisX_->setRange(now.addSecs(-kWindowSeconds), now);
    if (open > axisFail_->max() * 0.9)
        axisFail_->setMax(std::max(10.0, open * 1.5));
}

}  // namespace loom::console
