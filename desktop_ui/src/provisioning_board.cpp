#include "loom/console/provisioning_board.hpp"

#include "loom/console/palette.hpp"

#include <QApplication>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QMessageBox>
#include <QPainter>
#include <QSplitter>
#include <QStyleOptionProgressBar>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include <map>

namespace loom::console {

namespace {
int roleRank(const QString& role)
{
    if (role == u"admin")
        return 2;
    if (role == u"operator")
        return 1;
    return 0;
}
QString enc(const QString& s) { return QString::fromLatin1(QUrl::toPercentEncoding(s)); }
}  // namespace

// ---- RackTableModel -------------------------------------------------------------------------

RackTableModel::RackTableModel(ClusterState* state, QObject* parent)
    : QAbstractTableModel(parent), state_(state)
{
    connect(state, &ClusterState::layoutChanged, this, [this] {
        beginResetModel();
        endResetModel();
    });
    connect(state, &ClusterState::rackStateChanged, this, [this](int rack, const QString&, const QString&) {
        Q_EMIT dataChanged(index(rack, State), index(rack, State));
    });
}

int RackTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(state_->layout().racks.size());
}

int RackTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

void RackTableModel::refreshMetrics()
{
    if (rowCount() > 0)
        Q_EMIT dataChanged(index(0, Util), index(rowCount() - 1, Failed), {Qt::DisplayRole});
}

QVariant RackTableModel::data(const QModelIndex& idx, int role) const
{
    if (!idx.isValid() || idx.row() >= rowCount())
        return {};
    const auto& r = state_->layout().racks[static_cast<size_t>(idx.row())];
    auto meanUtil = [&]() -> QVariant {
        const auto& v = state_->values(Topic::GpuUtil);
        int sum = 0, n = 0;
        for (int g = r.gpuOffset; g < r.gpuOffset + r.gpuCount && g < static_cast<int>(v.size()); ++g)
            if (v[static_cast<size_t>(g)] <= 100) {
                sum += v[static_cast<size_t>(g)];
                ++n;
            }
        return n ? QVariant(sum / n) : QVariant();
    };
    auto failed = [&] {
        const auto& v = state_->values(Topic::GpuHealth);
        int n = 0;
        for (int g = r.gpuOffset; g < r.gpuOffset + r.gpuCount && g < static_cast<int>(v.size()); ++g)
            n += v[static_cast<size_t>(g)] == 2 || v[static_cast<size_t>(g)] == 3;
        return n;
    };
    if (role == Qt::DisplayRole || role == Qt::UserRole) {
        switch (idx.column()) {
        case Name: return r.name;
        case Zone: return r.zone;
        case Row: return r.row;
        case State: return r.state;
        case Gpus: return r.gpuCount;
        case Util: return meanUtil();
        case Failed: return failed();
        }
    }
    if (role == Qt::DecorationRole && idx.column() == State)
        return QColor(provisioningLut()[provisioningCode(r.state)]);
    if (role == Qt::TextAlignmentRole && idx.column() >= Gpus)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RackTableModel::headerData(int section, Qt::Orientation o, int role) const
{
    if (o != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Rack", "Zone", "Row", "State", "GPUs", "Util %", "Failed GPUs"};
    return section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

void RackFilterProxy::setStateFilter(const QString& state)
{
    state_ = state;
    invalidateFilter();
}

void RackFilterProxy::setTextFilter(const QString& text)
{
    text_ = text;
    invalidateFilter();
}

bool RackFilterProxy::filterAcceptsRow(int row, const QModelIndex& parent) const
{
    const auto* m = sourceModel();
    if (!state_.isEmpty() && m->index(row, RackTableModel::State, parent).data().toString() != state_)
        return false;
    if (text_.isEmpty())
        return true;
    for (int c : {RackTableModel::Name, RackTableModel::Zone, RackTableModel::Row})
        if (m->index(row, c, parent).data().toString().contains(text_, Qt::CaseInsensitive))
            return true;
    return false;
}

// ---- phases ---------------------------------------------------------------------------------

PhaseRow parsePhase(const QJsonObject& o)
{
    // docs/api.md, GET /api/v1/phases: {"name", "status", "message", "progress": {"total",
    // "inService", "inFlight", "notStarted", "failed", "inServicePercent"}, ...}. A "phase"
    // stream message has no progress: total stays -1 and upsert() keeps the counts it had.
    PhaseRow p;
    p.name = o.value(u"name").toString();
    p.state = o.value(u"status").toString();
    if (o.value(u"progress").isObject()) {
        const QJsonObject prog = o.value(u"progress").toObject();
        p.total = prog.value(u"total").toInt();
        p.done = prog.value(u"inService").toInt();
        p.failed = prog.value(u"failed").toInt();
    } else {
        p.total = -1;
    }
    return p;
}

void PhaseTableModel::setPhases(std::vector<PhaseRow> phases)
{
    beginResetModel();
    phases_ = std::move(phases);
    endResetModel();
}

void PhaseTableModel::upsert(const PhaseRow& p)
{
    for (size_t i = 0; i < phases_.size(); ++i)
        if (phases_[i].name == p.name) {
            if (p.total < 0) {  // a status change without counts
                phases_[i].state = p.state;
            } else {
                phases_[i] = p;
            }
            Q_EMIT dataChanged(index(static_cast<int>(i), 0), index(static_cast<int>(i), ColumnCount - 1));
            return;
        }
    beginInsertRows({}, rowCount(), rowCount());
    phases_.push_back(p);
    phases_.back().total = std::max(0, p.total);
    endInsertRows();
}

const PhaseRow* PhaseTableModel::phase(int row) const
{
    return row >= 0 && row < rowCount() ? &phases_[static_cast<size_t>(row)] : nullptr;
}

int PhaseTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(phases_.size());
}

int PhaseTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PhaseTableModel::data(const QModelIndex& idx, int role) const
{
    const PhaseRow* p = phase(idx.row());
    if (!p)
        return {};
    if (role == Qt::DisplayRole) {
        switch (idx.column()) {
        case Name: return p->name;
        case State: return p->state;
        case Progress: return p->percent();
        case Racks: return QStringLiteral("%1 / %2 in service, %3 failed").arg(p->done).arg(p->total).arg(p->failed);
        }
    }
    return {};
}

QVariant PhaseTableModel::headerData(int section, Qt::Orientation o, int role) const
{
    if (o != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Phase", "State", "Progress", "Racks"};
    return section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

void ProgressDelegate::paint(QPainter* p, const QStyleOptionViewItem& opt, const QModelIndex& idx) const
{
    QStyleOptionProgressBar bar;
    bar.rect = opt.rect.adjusted(2, 3, -2, -3);
    bar.minimum = 0;
    bar.maximum = 1000;
    bar.progress = static_cast<int>(idx.data().toDouble() * 10);
    bar.text = QStringLiteral("%1%").arg(idx.data().toDouble(), 0, 'f', 1);
    bar.textVisible = true;
    bar.state = QStyle::State_Enabled | QStyle::State_Horizontal;
    QApplication::style()->drawControl(QStyle::CE_ProgressBar, &bar, p);
}

// ---- board ----------------------------------------------------------------------------------

ProvisioningBoard::ProvisioningBoard(ClusterState* state, ApiClient* api, QWidget* parent)
    : QWidget(parent), state_(state), api_(api)
{
    confirm = [this](const QString& q) {
        return QMessageBox::question(this, tr("Confirm"), q, QMessageBox::Yes | QMessageBox::Cancel,
                                     QMessageBox::Cancel) == QMessageBox::Yes;
    };
    racks_ = new RackTableModel(state, this);
    proxy_ = new RackFilterProxy(this);
    proxy_->setSourceModel(racks_);
    proxy_->setSortRole(Qt::UserRole);
    phases_ = new PhaseTableModel(this);

    phaseView_ = new QTableView(this);
    phaseView_->setModel(phases_);
    phaseView_->setItemDelegateForColumn(PhaseTableModel::Progress, new ProgressDelegate(this));
    phaseView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    phaseView_->setSelectionMode(QAbstractItemView::SingleSelection);
    phaseView_->horizontalHeader()->setSectionResizeMode(PhaseTableModel::Progress, QHeaderView::Stretch);
    // The text columns fit their longest text ("190 / 192 in service, 0 failed" was cut off).
    for (const int c : {static_cast<int>(PhaseTableModel::Name), static_cast<int>(PhaseTableModel::State),
                        static_cast<int>(PhaseTableModel::Racks)})
        phaseView_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    phaseView_->verticalHeader()->hide();

    rackView_ = new QTableView(this);
    rackView_->setModel(proxy_);
    rackView_->setSortingEnabled(true);
    rackView_->sortByColumn(RackTableModel::Name, Qt::AscendingOrder);
    rackView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    rackView_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    rackView_->verticalHeader()->hide();
    rackView_->verticalHeader()->setDefaultSectionSize(20);
    rackView_->horizontalHeader()->setStretchLastSection(true);

    stateFilter_ = new QComboBox(this);
    stateFilter_->addItem(tr("all states"), QString());
    for (const auto& s : provisioningStates())
        stateFilter_->addItem(s, s);
    textFilter_ = new QLineEdit(this);
    textFilter_->setPlaceholderText(tr("filter by rack, zone or row"));
    textFilter_->setClearButtonEnabled(true);
    summary_ = new QLabel(this);
    message_ = new QLabel(this);
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* phaseBox = new QGroupBox(tr("Phases"), this);
    auto* phaseLay = new QVBoxLayout(phaseBox);
    auto* phaseBar = new QHBoxLayout;
    for (const auto& [action, label] : {std::pair{"start", "Start"}, {"pause", "Pause"}, {"resume", "Resume"}, {"abort", "Abort…"}}) {
        auto* b = new QPushButton(tr(label), this);
        buttons_.insert(QLatin1String(action), b);
        phaseBar->addWidget(b);
        const bool destructive = QLatin1String(action) == QLatin1String("abort");
        connect(b, &QPushButton::clicked, this, [this, a = QString::fromLatin1(action), destructive] { phaseAction(a, destructive); });
    }
    auto* reload = new QPushButton(tr("Reload"), this);
    connect(reload, &QPushButton::clicked, this, &ProvisioningBoard::refreshPhases);
    phaseBar->addStretch(1);
    phaseBar->addWidget(reload);
    phaseLay->addLayout(phaseBar);
    phaseLay->addWidget(phaseView_);

    auto* rackBox = new QGroupBox(tr("Racks"), this);
    auto* rackLay = new QVBoxLayout(rackBox);
    auto* filterBar = new QHBoxLayout;
    filterBar->addWidget(stateFilter_);
    filterBar->addWidget(textFilter_, 1);
    filterBar->addWidget(summary_);
    auto* actionBar = new QHBoxLayout;
    for (const auto& [action, label] : {std::pair{"advance", "Advance"}, {"repair", "Repair"}, {"drain", "Drain…"}, {"fail", "Fail…"}}) {
        auto* b = new QPushButton(tr(label), this);
        buttons_.insert(QLatin1String(action), b);
        actionBar->addWidget(b);
        const bool destructive = QLatin1String(action) == QLatin1String("drain") || QLatin1String(action) == QLatin1String("fail");
        connect(b, &QPushButton::clicked, this, [this, a = QString::fromLatin1(action), destructive] { rackAction(a, destructive); });
    }
    actionBar->addStretch(1);
    rackLay->addLayout(filterBar);
    rackLay->addWidget(rackView_, 1);
    rackLay->addLayout(actionBar);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(phaseBox);
    split->addWidget(rackBox);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    auto* lay = new QVBoxLayout(this);
    lay->setContentsMargins(4, 4, 4, 4);
    lay->addWidget(split, 1);
    lay->addWidget(message_);

    connect(stateFilter_, &QComboBox::currentIndexChanged, this, [this](int) {
        proxy_->setStateFilter(stateFilter_->currentData().toString());
    });
    connect(textFilter_, &QLineEdit::textChanged, proxy_, &RackFilterProxy::setTextFilter);
    connect(rackView_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ProvisioningBoard::updateButtons);
    connect(phaseView_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ProvisioningBoard::updateButtons);
    connect(rackView_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
        Q_EMIT rackActivated(i.siblingAtColumn(RackTableModel::Name).data().toString());
    });
    // Racks moving change the phases' progress: refetch it, at most every 2 s.
    auto* phaseRefresh = new QTimer(this);
    phaseRefresh->setSingleShot(true);
    phaseRefresh->setInterval(2000);
    connect(phaseRefresh, &QTimer::timeout, this, &ProvisioningBoard::refreshPhases);
    connect(state, &ClusterState::phaseUpdated, this, [this](const QJsonObject& p) {
        const PhaseRow row = parsePhase(p);
        phases_->upsert(row);
        // A status change without counts: the board must not show "completed" next to the
        // old counts, so the counts are fetched now rather than at the next rack move.
        if (row.total < 0)
            refreshPhases();
    });
    // `loomctl phase apply`: the server's new plan replaces the board's phases at once.
    connect(state, &ClusterState::phasePlanChanged, this, [this](const QString& plan) {
        phases_->setPhases({});
        showMessage(tr("phase plan '%1' applied on the server").arg(plan), false);
        refreshPhases();
    });
    connect(state, &ClusterState::rackStateChanged, this, [phaseRefresh] {
        if (!phaseRefresh->isActive())
            phaseRefresh->start();
    });
    auto updateSummary = [this] {
        std::map<QString, int> counts;
        for (const auto& r : state_->layout().racks)
            ++counts[r.state];
        QStringList parts;
        for (const auto& [s, n] : counts)
            parts << QStringLiteral("%1 %2").arg(n).arg(s);
        summary_->setText(parts.join(QStringLiteral(" · ")));
    };
    connect(state, &ClusterState::layoutChanged, this, updateSummary);
    connect(state, &ClusterState::rackStateChanged, this, updateSummary);
    // Utilization columns follow the stream, but only repaint while the board is visible.
    auto* tick = new QTimer(this);
    tick->start(1000);
    connect(tick, &QTimer::timeout, this, [this] {
        if (isVisible())
            racks_->refreshMetrics();
    });
    updateSummary();
    updateButtons();
}

QPushButton* ProvisioningBoard::button(const QString& action) const { return buttons_.value(action); }

void ProvisioningBoard::setRole(const QString& role)
{
    role_ = role;
    updateButtons();
}

void ProvisioningBoard::updateButtons()
{
    const bool op = roleRank(role_) >= 1;
    const bool admin = roleRank(role_) >= 2;
    const bool racks = !rackView_->selectionModel()->selectedRows().isEmpty();
    const bool phase = !phaseView_->selectionModel()->selectedRows().isEmpty();
    const QString need = role_.isEmpty() ? tr("not connected") : tr("your token's role is %1").arg(role_);
    for (const char* a : {"advance", "repair", "drain", "fail"}) {
        auto* b = buttons_.value(QLatin1String(a));
        b->setEnabled(op && racks);
        b->setToolTip(op ? tr("Select racks first") : tr("Needs the operator role; %1").arg(need));
    }
    for (const char* a : {"start", "pause", "resume", "abort"}) {
        auto* b = buttons_.value(QLatin1String(a));
        b->setEnabled(admin && phase);
        b->setToolTip(admin ? tr("Select a phase first") : tr("Needs the admin role; %1").arg(need));
    }
}

QStringList ProvisioningBoard::selectedRacks() const
{
    QStringList out;
    for (const auto& i : rackView_->selectionModel()->selectedRows(RackTableModel::Name))
        out << i.data().toString();
    return out;
}

void ProvisioningBoard::selectRack(const QString& name)
{
    const int r = state_->layout().rackIndex(name);
    if (r < 0)
        return;
    textFilter_->clear();
    stateFilter_->setCurrentIndex(0);
    const auto pi = proxy_->mapFromSource(racks_->index(r, 0));
    rackView_->selectionModel()->select(pi, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    rackView_->scrollTo(pi);
}

void ProvisioningBoard::showMessage(const QString& text, bool error)
{
    message_->setStyleSheet(error ? QStringLiteral("color:#e04040") : QString());
    message_->setText(text);
}

void ProvisioningBoard::rackAction(const QString& action, bool destructive)
{
    const QStringList racks = selectedRacks();
    if (racks.isEmpty() || !api_)
        return;
    if (destructive &&
        !confirm(tr("%1 %2 rack(s)?\n%3").arg(action).arg(racks.size()).arg(racks.mid(0, 10).join(QStringLiteral(", ")))))
        return;
    QPointer<ProvisioningBoard> self(this);
    auto remaining = std::make_shared<int>(static_cast<int>(racks.size()));
    auto errors = std::make_shared<QStringList>();
    showMessage(tr("%1: %2 rack(s)…").arg(action).arg(racks.size()), false);
    for (const auto& rack : racks) {
        api_->post(QStringLiteral("/api/v1/racks/%1/%2").arg(enc(rack), action), {},
                   [self, rack, action, remaining, errors](Result<QJsonDocument> r) {
                       if (!self)
                           return;
                       if (!r)
                           errors->push_back(QStringLiteral("%1: %2").arg(rack, r.error()));
                       else if (const auto to = r->object().value(u"state").toString(r->object().value(u"to").toString()); !to.isEmpty())
                           self->state_->setRackState(self->state_->layout().rackIndex(rack), to);
                       if (--*remaining == 0)
                           self->showMessage(errors->isEmpty() ? tr("%1: done").arg(action)
                                                               : errors->join(u'\n'),
                                             !errors->isEmpty());
                   });
    }
}

void ProvisioningBoard::phaseAction(const QString& action, bool destructive)
{
    const auto rows = phaseView_->selectionModel()->selectedRows();
    if (rows.isEmpty() || !api_)
        return;
    const PhaseRow* p = phases_->phase(rows.front().row());
    if (!p)
        return;
    const QString name = p->name;
    if (destructive && !confirm(tr("%1 phase %2?").arg(action, name)))
        return;
    QPointer<ProvisioningBoard> self(this);
    api_->post(QStringLiteral("/api/v1/phases/%1/%2").arg(enc(name), action), {},
               [self, name, action](Result<QJsonDocument> r) {
                   if (!self)
                       return;
                   if (!r) {
                       self->showMessage(QStringLiteral("%1 %2: %3").arg(action, name, r.error()), true);
                       return;
                   }
                   self->showMessage(tr("%1 %2: ok").arg(action, name), false);
                   if (r->object().contains(u"name"))
                       self->phases_->upsert(parsePhase(r->object()));
                   self->refreshPhases();
               });
}

void ProvisioningBoard::refreshPhases()
{
    if (!api_)
        return;
    QPointer<ProvisioningBoard> self(this);
    api_->get(QStringLiteral("/api/v1/phases"), [self](Result<QJsonDocument> r) {
        if (!self)
            return;
        if (!r) {
            self->showMessage(tr("GET /api/v1/phases: %1").arg(r.error()), true);
            return;
        }
        const QJsonArray arr = r->object().value(u"phases").toArray();
        std::vector<PhaseRow> rows;
        for (const auto& v : arr)
            rows.push_back(parsePhase(v.toObject()));
        self->phases_->setPhases(std::move(rows));
        self->updateButtons();
    });
}

}  // namespace loom::console
