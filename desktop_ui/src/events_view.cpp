#include "loom/console/events_view.hpp"

#include "loom/console/xid.hpp"

#include <QChart>
#include <QChartView>
#include <QDateTimeAxis>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonObject>
#include <QSettings>
#include <QShortcut>
#include <QUrl>
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
        case Message:
            return e->xid >= 0 && xidInfo(e->xid) ? QStringLiteral("%1 — %2").arg(e->message, xidInfo(e->xid)->meaning)
                                                  : e->message;
        case Status:
            if (!e->open())
                return e->closedBy.isEmpty() ? QStringLiteral("closed")
                                             : QStringLiteral("closed by %1").arg(e->closedBy);
            return e->stateText();
        case Acknowledged:
            if (!e->acknowledged())
                return QString();
            return QStringLiteral("%1 %2").arg(e->acknowledgedBy.isEmpty() ? QStringLiteral("?") : e->acknowledgedBy,
                                               e->acknowledgedAt.toLocalTime().toString(QStringLiteral("MM-dd hh:mm:ss")));
        }
    }
    if (role == Qt::ForegroundRole && idx.column() == Status && e->open() && !e->acknowledged() &&
        severityRank(e->severity) >= 1)
        return QColor(230, 60, 60);
    if (role == Qt::ForegroundRole && idx.column() == Severity) {
        const int r = severityRank(e->severity);
        return r == 2 ? QColor(230, 60, 60) : r == 1 ? QColor(220, 160, 20) : QVariant();
    }
    if (role == Qt::ToolTipRole && idx.column() == Message)
        return e->xid >= 0 ? QStringLiteral("%1\n%2").arg(e->message, xidSummary(e->xid)) : e->message;
    return {};
}

QVariant EventModel::headerData(int section, Qt::Orientation o, int role) const
{
    if (o != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Opened", "Severity", "Kind", "Location", "Message", "State", "Acknowledged"};
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

void EventFilterProxy::setFailureKinds(unsigned mask, const HallLayout* layout)
{
    failureKinds_ = mask;
    layout_ = layout;
    invalidateFilter();
}

bool EventFilterProxy::filterAcceptsRow(int row, const QModelIndex&) const
{
    const Event* e = static_cast<const EventModel*>(sourceModel())->event(row);
    if (!e)
        return false;
    if (failureKinds_ != kAllFailureKinds && layout_ &&
        !(failureKinds_ & failureBit(eventFailureKind(*e, *layout_))))
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

EventsView::EventsView(ClusterState* state, ApiClient* api, QWidget* parent)
    : QWidget(parent), state_(state), api_(api)
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
    table_->setTextElideMode(Qt::ElideMiddle);
    fitTimer_ = new QTimer(this);
    fitTimer_->setSingleShot(true);
    fitTimer_->setInterval(200);
    connect(fitTimer_, &QTimer::timeout, this, &EventsView::fitColumns);
    connect(model_, &QAbstractItemModel::rowsInserted, fitTimer_, qOverload<>(&QTimer::start));
    connect(model_, &QAbstractItemModel::modelReset, fitTimer_, qOverload<>(&QTimer::start));
    connect(model_, &QAbstractItemModel::dataChanged, fitTimer_, qOverload<>(&QTimer::start));
    fitTimer_->start();  // events already there when the view is made

    ack_ = new QPushButton(tr("Acknowledge…"), this);
    close_ = new QPushButton(tr("Close…"), this);
    ack_->setToolTip(tr("Acknowledge the selected event (operator role): you have seen it and own it"));
    close_->setToolTip(tr("Close the selected event by hand (operator role), with a reason"));
    detail_ = new QLabel(this);
    detail_->setWordWrap(true);
    detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    detail_->setMinimumHeight(36);

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
    auto* actions = new QHBoxLayout;
    actions->addWidget(detail_, 1);
    actions->addWidget(ack_);
    actions->addWidget(close_);
    topLay->addLayout(actions);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(chartView_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* lay = new QVBoxLayout(this);
    lay->setContentsMargins(4, 4, 4, 4);
    lay->addWidget(split);

    restoreFilters();
    connect(severity_, &QComboBox::currentIndexChanged, this, [this](int) {
        proxy_->setMinSeverity(severity_->currentData().toInt());
        saveFilters();
    });
    connect(kind_, &QComboBox::currentIndexChanged, this, [this](int) {
        proxy_->setKind(kind_->currentData().toString());
        saveFilters();
    });
    connect(location_, &QLineEdit::textChanged, this, [this](const QString& t) {
        proxy_->setLocation(t);
        saveFilters();
    });
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &EventsView::showSelected);
    connect(model_, &QAbstractItemModel::dataChanged, this, &EventsView::showSelected);
    connect(ack_, &QPushButton::clicked, this, [this] {
        const Event* e = selectedEvent();
        if (!e)
            return;
        const qint64 id = e->id;
        bool ok = false;
        const QString comment = QInputDialog::getText(this, tr("Acknowledge event %1").arg(id),
                                                      tr("Comment (optional):"), QLineEdit::Normal, {}, &ok);
        if (ok)
            acknowledge(id, comment);
    });
    connect(close_, &QPushButton::clicked, this, [this] {
        const Event* e = selectedEvent();
        if (!e)
            return;
        const qint64 id = e->id;
        bool ok = false;
        const QString reason = QInputDialog::getText(this, tr("Close event %1").arg(id),
                                                     tr("Reason (kept in the event's history):"), QLineEdit::Normal,
                                                     {}, &ok);
        if (ok)
            closeByHand(id, reason);
    });
    showSelected();
    auto activate = [this](const QModelIndex& i) {
        const Event* e = model_->event(proxy_->mapToSource(i).row());
        if (e)
            Q_EMIT focusRequested(e->location, e->rack);
    };
    // One click selects the row (acknowledge and close act on it, the tab stays); a double
    // click or Enter goes to the event's place on the map.
    connect(table_, &QTableView::doubleClicked, this, activate);
    auto* enter = new QShortcut(QKeySequence(Qt::Key_Return), table_);
    enter->setContext(Qt::WidgetShortcut);
    connect(enter, &QShortcut::activated, this, [this, activate] {
        if (table_->currentIndex().isValid())
            activate(table_->currentIndex());
    });
    connect(state, &ClusterState::eventAdded, this, [this](const Event& e) {
        if (kind_->findData(e.kind) < 0)
            kind_->addItem(e.kind, e.kind);
    });
    connect(state, &ClusterState::eventsReset, this, &EventsView::refreshKinds);
    connect(state->failures(), &FailureIndex::filterChanged, this,
            [this](unsigned mask) { proxy_->setFailureKinds(mask, &state_->layout()); });

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

void EventsView::saveFilters()
{
    QSettings s;
    s.setValue(QStringLiteral("events/minSeverity"), severity_->currentData().toInt());
    s.setValue(QStringLiteral("events/kind"), kind_->currentData().toString());
    s.setValue(QStringLiteral("events/location"), location_->text());
}

void EventsView::restoreFilters()
{
    QSettings s;
    const int sev = s.value(QStringLiteral("events/minSeverity"), 0).toInt();
    severity_->setCurrentIndex(std::max(0, severity_->findData(sev)));
    proxy_->setMinSeverity(severity_->currentData().toInt());
    // A kind remembered from last time may not have been seen yet in this session.
    const QString kind = s.value(QStringLiteral("events/kind")).toString();
    if (!kind.isEmpty() && kind_->findData(kind) < 0)
        kind_->addItem(kind, kind);
    kind_->setCurrentIndex(std::max(0, kind_->findData(kind)));
    proxy_->setKind(kind_->currentData().toString());
    location_->setText(s.value(QStringLiteral("events/location")).toString());
    proxy_->setLocation(location_->text());
}

void EventsView::fitColumns()
{
    // Locations (link names are ~40 characters) are never cut: the column is as wide as the
    // longest one in the list. Measured on the model, not only on the rows on screen.
    const QFontMetrics fm(table_->font());
    int widest = fm.horizontalAdvance(QStringLiteral("Location"));
    for (int r = 0; r < model_->rowCount(); ++r)
        widest = std::max(widest, fm.horizontalAdvance(model_->event(r)->location));
    table_->setColumnWidth(EventModel::Location, widest + 16);
    // The other short columns from the model too: resizeColumnToContents measures only the
    // rows on screen, none while the Events tab is hidden, which left State and Acknowledged
    // as wide as their headers (cut off once rows arrived).
    const int rows = std::min(model_->rowCount(), 5000);
    for (const int c : {EventModel::Time, EventModel::Severity, EventModel::Kind, EventModel::Status,
                        EventModel::Acknowledged}) {
        int w = fm.horizontalAdvance(model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString()) + 24;
        for (int r = 0; r < rows; ++r)
            w = std::max(w, fm.horizontalAdvance(model_->index(r, c).data().toString()) + 16);
        table_->setColumnWidth(c, w);
    }
}

const Event* EventsView::selectedEvent() const
{
    const QModelIndex i = table_->currentIndex();
    return i.isValid() ? model_->event(proxy_->mapToSource(i).row()) : nullptr;
}

void EventsView::setRole(const QString& role)
{
    role_ = role;
    showSelected();
}

void EventsView::showSelected()
{
    const Event* e = selectedEvent();
    const bool operatorRole = role_ == u"operator" || role_ == u"admin";
    ack_->setEnabled(e && operatorRole && e->open() && !e->acknowledged() && e->id != 0);
    close_->setEnabled(e && operatorRole && e->open() && e->id != 0);
    if (!operatorRole) {
        const QString why = tr("needs the operator role (this token: %1)").arg(role_.isEmpty() ? tr("none") : role_);
        ack_->setToolTip(why);
        close_->setToolTip(why);
    }
    if (!e) {
        detail_->setText(tr("Select an event: its explanation and who acknowledged or closed it show here."));
        return;
    }
    QString html = QStringLiteral("<b>%1</b> %2 · %3").arg(e->kind.toHtmlEscaped(), e->location.toHtmlEscaped(),
                                                           e->stateText());
    if (e->acknowledged())
        html += tr(" · acknowledged by <b>%1</b> at %2")
                    .arg(e->acknowledgedBy.toHtmlEscaped(),
                         e->acknowledgedAt.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")));
    if (e->acknowledged() && !e->ackComment.isEmpty())
        html += QStringLiteral(" (“%1”)").arg(e->ackComment.toHtmlEscaped());
    if (!e->open())
        html += tr(" · closed%1 at %2")
                    .arg(e->closedBy.isEmpty() ? QString() : tr(" by <b>%1</b>").arg(e->closedBy.toHtmlEscaped()),
                         e->closedAt.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")));
    if (!e->open() && !e->closeReason.isEmpty())
        html += QStringLiteral(" (“%1”)").arg(e->closeReason.toHtmlEscaped());
    if (e->xid >= 0)
        html += QStringLiteral("<br>") + xidSummary(e->xid).toHtmlEscaped();
    detail_->setText(html);
}

void EventsView::acknowledge(qint64 id, const QString& comment, std::function<void(QString)> done)
{
    QJsonObject body;
    if (!comment.isEmpty())
        body.insert(u"comment"_qs, comment);
    post(id, QStringLiteral("ack"), body, std::move(done));
}

void EventsView::closeByHand(qint64 id, const QString& reason, std::function<void(QString)> done)
{
    QJsonObject body;
    if (!reason.isEmpty())
        body.insert(u"reason"_qs, reason);
    post(id, QStringLiteral("close"), body, std::move(done));
}

void EventsView::post(qint64 id, const QString& action, const QJsonObject& body, std::function<void(QString)> done)
{
    if (!api_) {
        if (done)
            done(tr("not connected"));
        return;
    }
    QPointer<EventsView> self(this);
    api_->post(QStringLiteral("/api/v1/events/%1/%2").arg(id).arg(action), body,
               [self, action, id, done = std::move(done)](Result<QJsonDocument> r) {
                   if (!self) {
                       if (done)
                           done(QStringLiteral("view closed"));
                       return;
                   }
                   if (!r) {
                       // The server's own words: "409 conflict: event 17 is closed".
                       self->detail_->setText(QStringLiteral("<span style='color:#e04040'>%1 event %2: %3</span>")
                                                  .arg(action).arg(id).arg(r.error().toHtmlEscaped()));
                       if (done)
                           done(r.error());
                       return;
                   }
                   const QJsonObject o = r->object();
                   const QJsonObject evj = o.contains(u"event") ? o.value(u"event").toObject() : o;
                   if (auto ev = parseEvent(evj); ev && ev->id == id && self->state_)
                       self->state_->upsertEvent(*ev);
                   if (done)
                       done(QString());
               });
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
