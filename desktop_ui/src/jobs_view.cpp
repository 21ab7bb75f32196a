#include "loom/console/jobs_view.hpp"

#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QScrollBar>
#include <QSplitter>
#include <QUrl>
#include <QVBoxLayout>

#include "loom/console/palette.hpp"

namespace loom::console {

namespace {

QString htmlCell(const QString& html, const QString& style = {}) {
    return style.isEmpty() ? QStringLiteral("<td>%1</td>").arg(html)
                           : QStringLiteral("<td style='%1'>%2</td>").arg(style, html);
}

// A score to one decimal, or a dash when there is none.
QString scoreCell(const QJsonValue& score) {
    return htmlCell(score.isDouble() ? QString::number(score.toDouble(), 'f', 1)
                                     : QStringLiteral("–"));
}

// The detail's tables: a heading, a header row, and the rows the caller built.
QString titledTable(const QString& title, const QStringList& headers, const QString& rows) {
    QString head;
    for (const auto& h : headers) head += QStringLiteral("<th align=left>%1</th>").arg(h);
    return QStringLiteral("<h4>%1</h4><table cellspacing=0 cellpadding=2><tr>%2</tr>%3</table>")
        .arg(title, head, rows);
}

QString locationLink(const QString& location) {
    return QStringLiteral("<a href='loc:%1'>%2</a>")
        .arg(QString::fromLatin1(QUrl::toPercentEncoding(location)), location.toHtmlEscaped());
}

QString colorStyle(QRgb c, bool bold = true) {
    return QStringLiteral("color:%1%2")
        .arg(QColor(c).name(), bold ? QStringLiteral(";font-weight:bold") : QString());
}

// Whether an event is about this job: its own (job_degraded: location = the job) or one whose
// message names it ("job llama: straggler ..."), as the finder's events do.
bool eventOfJob(const Event& e, const QString& job) {
    return e.location == job || e.message.startsWith(QStringLiteral("job %1 ").arg(job)) ||
           e.message.startsWith(QStringLiteral("job %1:").arg(job));
}

}  // namespace

void JobFilterProxy::setText(const QString& text) {
    text_ = text.trimmed();
    invalidateFilter();
}

void JobFilterProxy::setRunningOnly(bool on) {
    runningOnly_ = on;
    invalidateFilter();
}

bool JobFilterProxy::filterAcceptsRow(int row, const QModelIndex&) const {
    const auto* m = static_cast<const JobModel*>(sourceModel());
    const Job* j = m ? m->job(row) : nullptr;
    if (!j) return false;
    if (runningOnly_ && j->state != u"running") return false;
    if (text_.isEmpty()) return true;
    return j->name.contains(text_, Qt::CaseInsensitive) ||
           j->owner.contains(text_, Qt::CaseInsensitive) ||
           j->nodelist.contains(text_, Qt::CaseInsensitive) || j->hosts.contains(text_);
}

JobsView::JobsView(ClusterState* state, ApiClient* api, QWidget* parent)
    : QWidget(parent),
      state_(state),
      api_(api),
      model_(new JobModel(this)),
      proxy_(new JobFilterProxy(this)) {
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(Qt::UserRole);
    table_ = new QTableView(this);
    table_->setModel(proxy_);
    table_->setSortingEnabled(true);
    table_->sortByColumn(JobModel::Name, Qt::AscendingOrder);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setAlternatingRowColors(true);
    detail_ = new QTextBrowser(this);
    detail_->setOpenLinks(false);
    detail_->setMinimumWidth(360);

    filter_ = new QLineEdit(this);
    filter_->setPlaceholderText(tr("filter: job, owner, host"));
    filter_->setClearButtonEnabled(true);
    runningOnly_ = new QCheckBox(tr("running only"), this);
    runningOnly_->setChecked(true);
    header_ = new QLabel(this);
    hallButton_ = new QPushButton(tr("Show on hall map"), this);
    fabricButton_ = new QPushButton(tr("Show on fabric map"), this);
    auto* clear = new QPushButton(tr("Clear selection"), this);
    auto* reload = new QPushButton(tr("Reload"), this);
    hallButton_->setEnabled(false);
    fabricButton_->setEnabled(false);

    auto* bar = new QHBoxLayout;
    bar->addWidget(filter_, 1);
    bar->addWidget(runningOnly_);
    bar->addWidget(hallButton_);
    bar->addWidget(fabricButton_);
    bar->addWidget(clear);
    bar->addWidget(reload);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(table_);
    split->addWidget(detail_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* lay = new QVBoxLayout(this);
    lay->addLayout(bar);
    lay->addWidget(header_);
    lay->addWidget(split, 1);

    connect(filter_, &QLineEdit::textChanged, proxy_, &JobFilterProxy::setText);
    connect(runningOnly_, &QCheckBox::toggled, proxy_, &JobFilterProxy::setRunningOnly);
    connect(hallButton_, &QPushButton::clicked, this, &JobsView::showOnHallRequested);
    connect(fabricButton_, &QPushButton::clicked, this, &JobsView::showOnFabricRequested);
    connect(clear, &QPushButton::clicked, this, [this] { table_->clearSelection(); });
    connect(reload, &QPushButton::clicked, this, &JobsView::refresh);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &JobsView::onSelection);
    connect(detail_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
        if (url.scheme() != u"loc") return;
        const QString location = QUrl::fromPercentEncoding(url.path().toLatin1());
        const HallLayout& h = state_->layout();
        const QString host = location.section(u'-', 0, 2);  // "z1-r001-h0-gpu3" -> "z1-r001-h0"
        const int rack = h.hostRack.value(host, -1);
        Q_EMIT focusRequested(location,
                              rack >= 0 ? h.racks[static_cast<size_t>(rack)].name : QString());
    });
    connect(model_, &JobModel::jobChanged, this, [this](const QString& name) {
        header_->setText(tr("%1 jobs listed, %2 running").arg(model_->rowCount()).arg([this] {
            int n = 0;
            for (const auto& j : model_->jobs()) n += j.state == u"running";
            return n;
        }()));
        if (name != selected_) return;
        if (model_->find(name) < 0) {
            table_->clearSelection();
            return;
        }
        fetchDetail();  // the summary moved: the detail (links, events, suspects) did too
    });
    connect(state, &ClusterState::jobMessage, this, [this](const QJsonObject& msg) {
        const QString type = msg.value(u"type").toString();
        if (type == u"jobsSynced") {
            refresh();  // the simulator rewrote its set: one list instead of guessing
            return;
        }
        if (type == u"jobSuspects") {
            // The straggler finder's word moved without the job's health: the detail carries
            // the suspects (fetched, not patched, so an answer in flight cannot undo it).
            if (msg.value(u"name").toString() == selected_) fetchDetail();
            return;
        }
        if (auto r = model_->apply(msg); !r) header_->setText(r.error());
        // A health push for a job this console has not listed (written on another loomd
        // before we listed): the next list brings it.
        if (type == u"jobHealth" && model_->find(msg.value(u"name").toString()) < 0) refresh();
    });
    connect(state, &ClusterState::layoutChanged, this, [this] {
        linkIndex_.clear();
        const QStringList& links = state_->layout().links;
        linkIndex_.reserve(links.size());
        for (int j = 0; j < links.size(); ++j) linkIndex_.insert(links[j], j);
        refresh();
        if (!selected_.isEmpty()) fetchDetail();  // GPU and link indexes moved with the layout
    });
    // A (re)connection: what changed meanwhile is not replayed for jobs; list again.
    connect(state, &ClusterState::helloReceived, this, [this] {
        if (state_->hasLayout()) refresh();
    });
    connect(state, &ClusterState::eventAdded, this, [this](const Event& e) {
        if (selected_.isEmpty()) return;
        // The job's own event moved: loomd's detail lists it (or no longer does).
        if (eventOfJob(e, selected_)) fetchDetail();
    });
    render();
}

void JobsView::refresh() {
    if (!api_) return;
    if (listInFlight_) {
        refreshAgain_ = true;  // one more list after this one, not one per message
        return;
    }
    listInFlight_ = true;
    fetchPage({}, {}, ++listGeneration_);
}

void JobsView::fetchPage(const QString& cursor, std::vector<Job> acc, int generation) {
    QString path = QStringLiteral("/api/v1/jobs?limit=500");
    if (!cursor.isEmpty())
        path += QStringLiteral("&cursor=") + QString::fromLatin1(QUrl::toPercentEncoding(cursor));
    QPointer<JobsView> self(this);
    api_->get(path, [self, generation, acc = std::move(acc)](Result<QJsonDocument> r) mutable {
        if (!self || generation != self->listGeneration_) return;
        auto done = [&] {
            self->listInFlight_ = false;
            if (self->refreshAgain_) {
                self->refreshAgain_ = false;
                self->refresh();
            }
        };
        if (!r) {
            self->listError_ = QStringLiteral("GET /api/v1/jobs: %1").arg(r.error());
            self->header_->setText(self->listError_);
            done();
            return;
        }
        const QJsonObject o = r->object();
        const QJsonArray items = o.value(u"items").toArray();
        for (qsizetype i = 0; i < items.size(); ++i) {
            auto j = parseJob(items[i].toObject());
            if (!j) {
                self->listError_ =
                    QStringLiteral("GET /api/v1/jobs: items[%1]: %2").arg(i).arg(j.error());
                continue;  // one bad job does not hide the others
            }
            acc.push_back(std::move(*j));
        }
        const QString next = o.value(u"nextCursor").toString();
        if (!next.isEmpty()) {
            self->fetchPage(next, std::move(acc), generation);
            return;
        }
        const QString keep = self->selected_;
        self->model_->reset(std::move(acc));
        self->loaded_ = true;
        int running = 0;
        for (const auto& j : self->model_->jobs()) running += j.state == u"running";
        self->header_->setText(
            self->listError_.isEmpty()
                ? tr("%1 jobs listed, %2 running").arg(self->model_->rowCount()).arg(running)
                : self->listError_);
        self->listError_.clear();
        // The reset dropped the selection; keep the job selected if it is still there, with
        // its detail fetched again: the list is taken after a reconnect or a loomd restart,
        // when what changed meanwhile came with no stream message.
        if (!keep.isEmpty() && !self->selectJob(keep)) {
            self->selected_.clear();
            self->onSelection();
        } else if (!keep.isEmpty()) {
            self->render();
            self->fetchDetail();
        }
        done();
    });
}

bool JobsView::selectJob(const QString& name) {
    const int row = model_->find(name);
    if (row < 0) return false;
    const QModelIndex pi = proxy_->mapFromSource(model_->index(row, 0));
    if (!pi.isValid()) return false;
    if (selected_ == name && table_->selectionModel()->isRowSelected(pi.row(), {})) return true;
    table_->selectionModel()->select(
        pi, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->scrollTo(pi);
    return true;
}

void JobsView::onSelection() {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    const Job* j = rows.isEmpty() ? nullptr : model_->job(proxy_->mapToSource(rows.first()).row());
    const QString name = j ? j->name : QString();
    hallButton_->setEnabled(j != nullptr);
    fabricButton_->setEnabled(j != nullptr);
    if (name == selected_ && !name.isEmpty()) return;
    selected_ = name;
    detailJson_ = {};
    detailError_.clear();
    links_.clear();
    gpus_ = j ? jobGpus(state_->layout(), j->hosts) : std::vector<int>{};
    emitHighlight();  // the GPUs at once; the links when the detail arrives
    render();
    if (j) fetchDetail();
}

void JobsView::fetchDetail() {
    if (selected_.isEmpty() || !api_) return;
    if (detailInFlight_) {
        detailAgain_ = true;
        return;
    }
    detailInFlight_ = true;
    const int generation = ++detailGeneration_;
    const QString name = selected_;
    QPointer<JobsView> self(this);
    api_->get(
        QStringLiteral("/api/v1/jobs/%1").arg(QString::fromLatin1(QUrl::toPercentEncoding(name))),
        [self, generation, name](Result<QJsonDocument> r) {
            if (!self) return;
            self->detailInFlight_ = false;
            if (generation == self->detailGeneration_ && name == self->selected_) {
                if (!r) {
                    self->detailError_ =
                        QStringLiteral("GET /api/v1/jobs/%1: %2").arg(name, r.error());
                } else {
                    self->detailError_.clear();
                    self->detailJson_ = r->object();
                    if (auto j = parseJob(self->detailJson_))
                        self->model_->upsert(*j);  // the freshest summary into the list too
                    const Job* job = self->model_->job(self->model_->find(name));
                    self->gpus_ =
                        job ? jobGpus(self->state_->layout(), job->hosts) : std::vector<int>{};
                    self->links_.clear();
                    const QJsonArray links =
                        self->detailJson_.value(u"health").toObject().value(u"links").toArray();
                    for (const auto& l : links)
                        if (const int idx = self->linkIndex_.value(l.toString(), -1); idx >= 0)
                            self->links_.push_back(idx);
                    self->emitHighlight();
                }
                self->render();
            }
            if (self->detailAgain_) {
                self->detailAgain_ = false;
                self->fetchDetail();
            }
        });
}

void JobsView::emitHighlight() { Q_EMIT highlightChanged(selected_, gpus_, links_); }

QString JobsView::eventsHtml(const Job& job) const {
    Q_UNUSED(job);
    // loomd's list (issue 39): the open events on the job's GPUs and links and the job's own
    // (job_degraded, straggler), counted once by loomd; the table's count is its length.
    QString rows;
    int n = 0;
    auto row = [&](const QString& severity, const QString& kind, const QString& location,
                   const QString& message) {
        const QString style = severity == u"critical"  ? colorStyle(failedColor())
                              : severity == u"warning" ? colorStyle(degradedColor(), false)
                                                       : QString();
        rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                    .arg(htmlCell(severity.toHtmlEscaped(), style), htmlCell(kind.toHtmlEscaped()),
                         htmlCell(locationLink(location)), htmlCell(message.toHtmlEscaped()));
        ++n;
    };
    const QJsonArray evs = detailJson_.value(u"health").toObject().value(u"events").toArray();
    for (const auto& v : evs) {
        const QJsonObject e = v.toObject();
        row(e.value(u"severity").toString(), e.value(u"kind").toString(),
            e.value(u"location").toString(), e.value(u"message").toString());
    }
    if (n == 0) return tr("<h4>Open events</h4><p>none</p>");
    return titledTable(tr("Open events (%1)").arg(n),
                       {tr("severity"), tr("kind"), tr("where"), tr("message")}, rows);
}

QString JobsView::suspectsHtml() const {
    // GET /api/v1/jobs/<name> carries "suspects" once loomd runs the straggler finder (best
    // first: location, cause, score, evidence); a loomd without it sends none.
    QJsonValue v = detailJson_.value(u"suspects");
    if (v.isUndefined()) v = detailJson_.value(u"health").toObject().value(u"suspects");
    if (v.isUndefined() || v.isNull())
        return tr(
            "<h4>Straggler suspects</h4><p><i>This loomd reports no straggler suspects for the "
            "job.</i></p>");
    const QJsonArray arr = v.toArray();
    if (arr.isEmpty())
        return tr("<h4>Straggler suspects</h4><p>none: every rank keeps the job's rhythm</p>");
    QString rows;
    for (const auto& s : arr) {
        const QJsonObject o = s.toObject();
        QString where = o.value(u"location").toString();
        if (where.isEmpty()) where = o.value(u"gpu").toString();
        if (where.isEmpty()) where = o.value(u"name").toString();
        QString cause = o.value(u"cause").toString();
        if (cause.isEmpty()) cause = o.value(u"kind").toString();
        const QJsonValue ev = o.value(u"evidence");
        QString evidence;
        if (ev.isArray()) {
            QStringList parts;
            for (const auto& e : ev.toArray())
                parts << (e.isString()
                              ? e.toString()
                              : QString::fromUtf8(
                                    QJsonDocument(e.toObject()).toJson(QJsonDocument::Compact)));
            evidence = parts.join(QStringLiteral("; "));
        } else {
            evidence = ev.toString();
        }
        rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                    .arg(htmlCell(locationLink(where)),
                         htmlCell(cause.toHtmlEscaped(), colorStyle(degradedColor(), false)),
                         scoreCell(o.value(u"score")), htmlCell(evidence.toHtmlEscaped()));
    }
    return titledTable(tr("Straggler suspects (%1, best first)").arg(arr.size()),
                       {tr("suspect"), tr("cause"), tr("score"), tr("evidence")}, rows);
}

QString JobsView::stragglersHtml() const {
    // GET /api/v1/jobs/<name> "stragglers": one open straggler event per suspect location,
    // highest score first (location, cause, score, evidence, openedAt).
    const QJsonValue v = detailJson_.value(u"stragglers");
    if (!v.isArray()) return {};
    const QJsonArray arr = v.toArray();
    if (arr.isEmpty())
        return tr(
            "<h4>Open straggler events</h4><p>none: no rank or uplink holds the job "
            "back</p>");
    QString rows;
    for (const auto& s : arr) {
        const QJsonObject o = s.toObject();
        const QDateTime at =
            QDateTime::fromString(o.value(u"openedAt").toString(), Qt::ISODateWithMs);
        rows +=
            QStringLiteral("<tr>%1%2%3%4%5</tr>")
                .arg(htmlCell(locationLink(o.value(u"location").toString())),
                     htmlCell(o.value(u"cause").toString().toHtmlEscaped(),
                              colorStyle(failedColor(), false)),
                     scoreCell(o.value(u"score")),
                     htmlCell(at.isValid()
                                  ? at.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"))
                                  : QStringLiteral("–")),
                     htmlCell(o.value(u"evidence").toString().toHtmlEscaped()));
    }
    return titledTable(tr("Open straggler events (%1)").arg(arr.size()),
                       {tr("straggler"), tr("cause"), tr("score"), tr("since"), tr("evidence")},
                       rows);
}

QString JobsView::lemonsHtml() const {
    // GET /api/v1/jobs/<name> "lemons": its hosts and GPUs that were the suspect, or failed, in
    // several jobs within loomd's window (jobs/lemon.hpp).
    const QJsonValue v = detailJson_.value(u"lemons");
    if (!v.isArray()) return {};
    const QJsonArray arr = v.toArray();
    if (arr.isEmpty()) return tr("<h4>Lemons among its hosts and GPUs</h4><p>none</p>");
    QString rows;
    for (const auto& l : arr) {
        const QJsonObject o = l.toObject();
        QStringList strikes;
        for (const auto& s : o.value(u"strikes").toArray()) strikes << s.toString();
        rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                    .arg(htmlCell(locationLink(o.value(u"name").toString())),
                         htmlCell(o.value(u"kind").toString().toHtmlEscaped()),
                         htmlCell(QString::number(o.value(u"jobs").toInt()),
                                  colorStyle(degradedColor(), false)),
                         htmlCell(strikes.join(QStringLiteral(", ")).toHtmlEscaped()));
    }
    return titledTable(tr("Lemons among its hosts and GPUs (%1)").arg(arr.size()),
                       {tr("lemon"), tr("kind"), tr("jobs"), tr("struck by")}, rows);
}

void JobsView::render() {
    const Job* j = selected_.isEmpty() ? nullptr : model_->job(model_->find(selected_));
    if (!j) {
        detail_->setHtml(
            tr("<p><i>Select a job: its GPUs are highlighted on the hall map and the links its "
               "traffic "
               "crosses on the fabric map; its health, events and straggler suspects show "
               "here.</i></p>"));
        return;
    }
    const JobHealth& h = j->health;
    QString html = QStringLiteral("<h3>%1</h3>").arg(j->name.toHtmlEscaped());
    QString info;
    auto row = [&](const QString& k, const QString& v, const QString& style = {}) {
        info += QStringLiteral("<tr><td><b>%1</b></td>%2</tr>").arg(k, htmlCell(v, style));
    };
    row(tr("state"), j->state.toHtmlEscaped());
    row(tr("owner"), j->owner.toHtmlEscaped());
    row(tr("source"), j->source.toHtmlEscaped());
    row(tr("collective"),
        QStringLiteral("%1, tensor parallel %2")
            .arg(j->pattern.toHtmlEscaped())
            .arg(detailJson_.value(u"tensorParallel").toInt(0) > 0
                     ? QString::number(detailJson_.value(u"tensorParallel").toInt())
                     : QStringLiteral("–")));
    row(tr("hosts"), QStringLiteral("%1 (%2)").arg(j->hostCount).arg(j->nodelist.toHtmlEscaped()));
    row(tr("GPUs"), tr("%1 (%2 on the hall map)").arg(j->gpus).arg(gpus_.size()));
    if (h.present) {
        const int sev = j->severity();
        const QString style = sev == 2   ? colorStyle(failedColor())
                              : sev == 1 ? colorStyle(degradedColor())
                                         : QString();
        row(tr("bus bandwidth"),
            h.degraded ? tr("%1 % of the NIC rate, down from %2 % (degraded)")
                             .arg(h.busBw, 0, 'f', 1)
                             .arg(h.healthyBusBw, 0, 'f', 1)
                       : tr("%1 % of the NIC rate").arg(h.busBw, 0, 'f', 1),
            style);
        row(tr("GPU health"),
            tr("%1 ok, %2 warning, %3 failed, %4 quarantined of %5")
                .arg(h.gpusOk)
                .arg(h.gpusWarning)
                .arg(h.gpusFailed)
                .arg(h.gpusQuarantined)
                .arg(h.gpusTotal),
            h.gpusFailed > 0 ? colorStyle(failedColor()) : QString());
        row(tr("links"),
            tr("%1 crossed (%2 on the fabric map), %3 down")
                .arg(h.linksCrossed)
                .arg(links_.size())
                .arg(h.linksDown.size()),
            h.linksDown.isEmpty() ? QString() : colorStyle(failedColor()));
        if (h.updatedAt.isValid())
            row(tr("health at"),
                h.updatedAt.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")));
    } else {
        row(tr("health"), j->state == u"running" ? tr("not computed yet")
                                                 : tr("none (the job is %1)").arg(j->state));
    }
    html += QStringLiteral("<table cellspacing=0 cellpadding=2>%1</table>").arg(info);
    if (!detailError_.isEmpty())
        html += QStringLiteral("<p style='%1'>%2</p>")
                    .arg(colorStyle(failedColor(), false), detailError_.toHtmlEscaped());
    else if (detailJson_.isEmpty())
        html += tr("<p><i>loading the job's detail…</i></p>");
    html += stragglersHtml();
    html += lemonsHtml();
    html += suspectsHtml();
    html += eventsHtml(*j);
    if (!h.linksDown.isEmpty()) {
        html += tr("<h4>Links down under the job (%1)</h4><ul>").arg(h.linksDown.size());
        for (const auto& l : h.linksDown)
            html += QStringLiteral("<li>%1</li>").arg(locationLink(l));
        html += QStringLiteral("</ul>");
    }
    const QJsonObject hd = detailJson_.value(u"health").toObject();
    if (const QJsonArray b = hd.value(u"bottlenecks").toArray(); !b.isEmpty()) {
        QString rows;
        for (const auto& v : b) {
            const QJsonObject o = v.toObject();
            rows += QStringLiteral("<tr>%1%2%3%4</tr>")
                        .arg(htmlCell(locationLink(o.value(u"link").toString())),
                             htmlCell(o.value(u"direction").toString().toHtmlEscaped()),
                             htmlCell(QString::number(o.value(u"flows").toInt())),
                             htmlCell(QString::number(o.value(u"gbpsPerFlow").toDouble(), 'f', 1)));
        }
        html += tr("<h4>Bottlenecks</h4>") +
                QStringLiteral(
                    "<table cellspacing=0 cellpadding=2><tr><th align=left>link</th><th "
                    "align=left>dir</th>"
                    "<th align=left>flows</th><th align=left>Gb/s per flow</th></tr>%1</table>")
                    .arg(rows);
    }
    if (const QJsonArray g = hd.value(u"gpusNotOk").toArray(); !g.isEmpty()) {
        html += tr("<h4>GPUs not ok (%1)</h4><ul>").arg(g.size());
        for (const auto& v : g) {
            const QJsonObject o = v.toObject();
            html += QStringLiteral("<li>%1 — %2</li>")
                        .arg(locationLink(o.value(u"name").toString()),
                             o.value(u"health").toString().toHtmlEscaped());
        }
        html += QStringLiteral("</ul>");
    }
    // Keep the reader's place: the detail re-renders with every health push.
    const int scroll = detail_->verticalScrollBar() ? detail_->verticalScrollBar()->value() : 0;
    detail_->setHtml(html);
    if (detail_->verticalScrollBar()) detail_->verticalScrollBar()->setValue(scroll);
}

}  // namespace loom::console
