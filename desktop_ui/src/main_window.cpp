#include "loom/console/main_window.hpp"

#include "loom/console/events_view.hpp"
#include "loom/console/failure_counter.hpp"
#include "loom/console/fabric_view.hpp"
#include "loom/console/hall_view.hpp"
#include "loom/console/jobs_view.hpp"
#include "loom/console/network_view.hpp"
#include "loom/console/provisioning_board.hpp"

#include <QDialogButtonBox>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFormLayout>
#include <QJsonArray>
#include <QMenuBar>
#include <QStatusBar>
#include <QTimer>

#include <memory>

namespace loom::console {

ConnectDialog::ConnectDialog(const ConnectionSettings& current, QWidget* parent, const QString& message)
    : QDialog(parent)
{
    setWindowTitle(tr("Connect to loomd"));
    server_ = new QLineEdit(current.server.toString(), this);
    server_->setPlaceholderText(QStringLiteral("http://127.0.0.1:8480"));
    token_ = new QLineEdit(current.token, this);
    token_->setEchoMode(QLineEdit::Password);
    auto* form = new QFormLayout(this);
    if (!message.isEmpty()) {
        auto* why = new QLabel(message, this);
        why->setWordWrap(true);
        why->setStyleSheet(QStringLiteral("color:#e04040"));
        form->addRow(why);
    }
    form->addRow(tr("Server URL"), server_);
    form->addRow(tr("Token"), token_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    resize(480, height());
}

ConnectionSettings ConnectDialog::settings() const
{
    return {QUrl::fromUserInput(server_->text().trimmed()), token_->text().trimmed()};
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("Loom console"));
    ClusterState* state = session_.cluster();
    tabs_ = new QTabWidget(this);
    hall_ = new HallView(state, session_.api(), this);
    fabric_ = new FabricView(state, session_.api(), this);
    network_ = new NetworkView(session_.api(), this);
    board_ = new ProvisioningBoard(state, session_.api(), this);
    events_ = new EventsView(state, session_.api(), this);
    jobs_ = new JobsView(state, session_.api(), this);
    tabs_->addTab(hall_, tr("Hall"));
    tabs_->addTab(fabric_, tr("Fabric"));
    tabs_->addTab(network_, tr("Frontend && storage"));
    tabs_->addTab(board_, tr("Provisioning"));
    tabs_->addTab(events_, tr("Events"));
    tabs_->addTab(jobs_, tr("Jobs"));
    setCentralWidget(tabs_);
    // The failure counter sits beside the tabs, so it is on screen whatever view is open.
    counter_ = new FailureCounter(state->failures(), this);
    tabs_->setCornerWidget(counter_, Qt::TopRightCorner);

    auto* conn = menuBar()->addMenu(tr("&Connection"));
    conn->addAction(tr("&Connect…"), this, &MainWindow::showConnectDialog);
    conn->addAction(tr("&Disconnect"), this, [this] { session_.close(); });
    conn->addSeparator();
    conn->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    auto* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < tabs_->count(); ++i)
        view->addAction(tabs_->tabText(i), QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)), this,
                        [this, i] { tabs_->setCurrentIndex(i); });

    stateLabel_ = new QLabel(this);
    serverLabel_ = new QLabel(this);
    roleLabel_ = new QLabel(this);
    ageLabel_ = new QLabel(this);
    errorLabel_ = new QLabel(this);
    errorLabel_->setStyleSheet(QStringLiteral("color:#e04040"));
    statusBar()->addWidget(stateLabel_);
    statusBar()->addWidget(serverLabel_);
    statusBar()->addWidget(roleLabel_);
    statusBar()->addWidget(ageLabel_);
    statusBar()->addWidget(errorLabel_, 1);

    connect(&session_, &Session::stateChanged, this, [this](Session::State s) {
        if (s == Session::State::Live)
            errorLabel_->clear();
        updateStatus();
    });
    connect(&session_, &Session::errorOccurred, this, [this](const QString& e) {
        errorLabel_->setText(e);
        errorLabel_->setToolTip(e);
    });
    connect(&session_, &Session::authRequired, this, [this](const QString& why) {
        board_->setRole({});
        events_->setRole({});
        updateStatus();
        askForToken(why);
    });
    connect(state, &ClusterState::helloReceived, this, [this, state] {
        board_->setRole(state->role());
        events_->setRole(state->role());
        updateStatus();
        // A reconnect (the first connect reads them with the layout): what loomd closed,
        // acknowledged or opened meanwhile replaces what this console holds.
        if (state->hasLayout())
            reloadEvents();
    });
    // A missed event message (issue 39): the list is re-read, as on a reconnect.
    connect(state, &ClusterState::eventsGap, this, [this, state] {
        if (state->hasLayout())
            reloadEvents();
    });
    connect(state, &ClusterState::layoutChanged, this, &MainWindow::loadInitialData);
    connect(events_, &EventsView::focusRequested, this, &MainWindow::focus);
    connect(jobs_, &JobsView::focusRequested, this, &MainWindow::focus);
    // The selected job on both maps: its GPUs on the hall, the links it crosses on the fabric.
    connect(jobs_, &JobsView::highlightChanged, this,
            [this](const QString& job, const std::vector<int>& gpus, const std::vector<int>& links) {
                hall_->map()->setHighlight(gpus, job.isEmpty() ? QString() : tr("job %1: %2 GPUs").arg(job).arg(gpus.size()));
                fabric_->map()->setHighlightLinks(links, job.isEmpty() ? QString()
                                                                       : tr("job %1: %2 links").arg(job).arg(links.size()));
            });
    connect(jobs_, &JobsView::showOnHallRequested, this, [this] {
        const auto& racks = hall_->map()->highlightRacks();
        if (!racks.empty())
            hall_->map()->fitAll();
        tabs_->setCurrentWidget(hall_);
    });
    connect(jobs_, &JobsView::showOnFabricRequested, this, [this] {
        // The job's zone when it has one; the overview when it spans several.
        const auto& racks = hall_->map()->highlightRacks();
        const HallLayout& h = session_.cluster()->layout();
        int zone = -2;
        for (const int r : racks) {
            const int z = h.zoneIndex(h.racks[static_cast<size_t>(r)].zone);
            zone = zone == -2 || zone == z ? z : -1;
        }
        fabric_->map()->setZone(zone < 0 ? -1 : zone);
        tabs_->setCurrentWidget(fabric_);
    });
    connect(board_, &ProvisioningBoard::rackActivated, this, [this](const QString& rack) { focus(rack, rack); });
    auto* tick = new QTimer(this);
    tick->start(500);
    connect(tick, &QTimer::timeout, this, &MainWindow::updateStatus);
    updateStatus();
}

void MainWindow::start(const ConnectionSettings& settings)
{
    if (settings.server.isEmpty() || !settings.server.isValid()) {
        QTimer::singleShot(0, this, &MainWindow::showConnectDialog);
        return;
    }
    if (auto r = settings.remember(); !r)
        errorLabel_->setText(r.error());
    session_.open(settings.server, settings.token);
}

void MainWindow::showConnectDialog()
{
    ConnectDialog dlg(ConnectionSettings::resolve({}, {}), this);
    if (dlg.exec() != QDialog::Accepted)
        return;
    const auto s = dlg.settings();
    if (s.server.isEmpty())
        return;
    if (auto r = s.remember(); !r)
        errorLabel_->setText(r.error());
    session_.open(s.server, s.token);
}

void MainWindow::askForToken(const QString& why)
{
    if (tokenPrompt_)
        return;
    ConnectionSettings current{session_.server(), {}};
    auto* dlg = new ConnectDialog(current, this,
                                  tr("loomd refused the token (%1). Enter a valid token to reconnect.").arg(why));
    dlg->setAttribute(Qt::WA_DeleteOnClose);
    dlg->tokenEdit()->setFocus();
    tokenPrompt_ = dlg;
    connect(dlg, &QDialog::accepted, this, [this, dlg] {
        const auto s = dlg->settings();
        if (s.server.isEmpty())
            return;
        if (auto r = s.remember(); !r)
            errorLabel_->setText(r.error());
        session_.open(s.server, s.token);
    });
    dlg->open();  // not modal-blocking: the map keeps showing the last data, greyed
}

QString MainWindow::statusText() const
{
    return stateLabel_->text() + u' ' + serverLabel_->text() + u' ' + roleLabel_->text() + u' ' + ageLabel_->text();
}

void MainWindow::updateStatus()
{
    const auto* state = const_cast<Session&>(session_).cluster();
    stateLabel_->setText(QStringLiteral("● %1").arg(session_.stateText()));
    stateLabel_->setStyleSheet(session_.state() == Session::State::Live           ? QStringLiteral("color:#2ea043")
                               : session_.state() == Session::State::Unauthorized ? QStringLiteral("color:#e04040")
                                                                                  : QStringLiteral("color:#e0a020"));
    serverLabel_->setText(session_.server().isEmpty() ? tr("no server") : session_.server().toString());
    roleLabel_->setText(state->role().isEmpty() ? QString() : tr("role: %1").arg(state->role()));
    const qint64 age = state->dataAgeMs();
    ageLabel_->setText(age < 0 ? tr("no data yet") : tr("data %1 s old").arg(age / 1000.0, 0, 'f', 1));
    ageLabel_->setStyleSheet(age > 3 * state->intervalMs() ? QStringLiteral("color:#e0a020") : QString());
    // Once there is data, anything but a live stream greys it out on the map itself.
    QString note;
    if (state->hasLayout() && session_.state() != Session::State::Live)
        note = session_.state() == Session::State::Disconnected ? tr("disconnected")
                                                                 : tr("loomd unreachable, %1").arg(session_.stateText());
    hall_->map()->setStaleNote(age < 0 ? QString() : note);
    fabric_->map()->setStaleNote(age < 0 ? QString() : note);
}

void MainWindow::loadInitialData()
{
    const auto& h = session_.cluster()->layout();
    setWindowTitle(tr("Loom console — %1 (%2 racks, %3 GPUs)").arg(h.cluster).arg(h.racks.size()).arg(h.gpus.size()));
    // Events from before we connected; the stream only carries new ones.
    reloadEvents();
    board_->refreshPhases();
}

void MainWindow::reloadEvents()
{
    // Two reads: every open event (the failures, however old) and the newest 1,000 (history).
    // The list is replaced once both answered; stream events meanwhile are applied on top.
    struct Reads {
        std::vector<Event> events;
        int pending = 2;
        QString error;
    };
    auto reads = std::make_shared<Reads>();
    session_.cluster()->beginEventsReload();
    QPointer<MainWindow> self(this);
    for (const QString& path : {QStringLiteral("/api/v1/events?state=open&limit=5000"),
                                QStringLiteral("/api/v1/events?limit=1000")}) {
        session_.api()->get(path, [self, reads, path](Result<QJsonDocument> r) {
            if (!self)
                return;
            if (!r) {
                reads->error = QStringLiteral("GET %1: %2").arg(path, r.error());
            } else {
                const QJsonArray arr =
                    r->isArray() ? r->array() : r->object().value(u"items").toArray();
                for (const auto& v : arr)
                    if (auto e = parseEvent(v.toObject()))
                        reads->events.push_back(*e);
            }
            if (--reads->pending > 0)
                return;
            if (!reads->error.isEmpty()) {
                // Keep what is held (and keep applying the stream) rather than show a half list.
                self->errorLabel_->setText(reads->error);
                self->session_.cluster()->replaceEvents(
                    {self->session_.cluster()->events().begin(),
                     self->session_.cluster()->events().end()});
                return;
            }
            self->session_.cluster()->replaceEvents(std::move(reads->events));
        });
    }
}

void MainWindow::focus(const QString& location, const QString& rack)
{
    const HallLayout& h = session_.cluster()->layout();
    // Switches and links live on the fabric map; GPUs, hosts and racks on the hall map.
    const QString device = location.section(QStringLiteral("--"), 0, 0).section(u'/', 0, 0);
    if (h.switchIndex(device) >= 0) {
        fabric_->focusLocation(device, rack);
        tabs_->setCurrentWidget(fabric_);
        hall_->focusLocation(rack, rack);
        return;
    }
    if (hall_->focusLocation(location, rack) || hall_->focusLocation(device, rack))
        tabs_->setCurrentWidget(hall_);
    fabric_->focusLocation(location, rack);
}

bool MainWindow::runScreenshots(const ConnectionSettings& settings, const QString& dir, double waitSeconds)
{
    if (!QDir().mkpath(dir)) {
        qCritical("cannot create %s", qPrintable(dir));
        return false;
    }
    session_.open(settings.server, settings.token);
    auto waitFor = [](std::function<bool()> done, int timeoutMs) {
        QElapsedTimer t;
        t.start();
        while (!done() && t.elapsed() < timeoutMs)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        return done();
    };
    auto sleep = [&](int ms) { waitFor([] { return false; }, ms); };
    ClusterState* state = session_.cluster();
    if (!waitFor([&] { return state->hasSnapshot(Topic::GpuUtil); }, 60000)) {
        qCritical("no snapshot from %s within 60 s: %s", qPrintable(settings.server.toString()),
                  qPrintable(session_.lastError()));
        return false;
    }
    sleep(static_cast<int>(waitSeconds * 1000));
    auto shot = [&](QWidget* w, const QString& name) {
        tabs_->setCurrentWidget(w);
        sleep(400);
        const QString path = QDir(dir).filePath(name + QStringLiteral(".png"));
        const bool ok = grab().save(path);
        qInfo("%s %s", ok ? "wrote" : "FAILED", qPrintable(path));
        return ok;
    };
    bool ok = true;
    ok &= shot(hall_, QStringLiteral("hall"));
    // A zoomed-in hall on a GPU with an open failure if there is one, with its details; then
    // its rack's elevation.
    {
        int gpu = 0;
        for (const auto& f : state->failures()->failures())
            if (f.kind == FailureKind::Gpu && f.failed)
                gpu = f.gpu;
        if (gpu == 0)
            for (const auto& e : state->events())
                if (e.open() && state->layout().gpuIndex(e.location) >= 0)
                    gpu = state->layout().gpuIndex(e.location);
        hall_->focusLocation(state->layout().gpus.value(gpu), {});
        sleep(1500);  // the GPU's telemetry and events arrive
        ok &= shot(hall_, QStringLiteral("hall-detail"));
        const int rack = state->layout().gpuRack.empty() ? -1 : state->layout().gpuRack[static_cast<size_t>(gpu)];
        hall_->showRack(rack);
        sleep(1500);  // the rack's hosts, switches and history arrive
        ok &= shot(hall_, QStringLiteral("hall-rack"));
        hall_->map()->fitAll();
    }
    // Health colouring shows open failures at a glance (XIDs, ECC, heat, links down).
    {
        const int before = hall_->metricBox()->currentIndex();
        const int health = hall_->metricBox()->findData(static_cast<int>(Metric::Health));
        if (health >= 0) {
            hall_->metricBox()->setCurrentIndex(health);
            ok &= shot(hall_, QStringLiteral("hall-health"));
            hall_->metricBox()->setCurrentIndex(before);
        }
    }
    ok &= shot(fabric_, QStringLiteral("fabric"));
    {
        fabric_->map()->setZone(0);
        int sw = -1;
        const auto& sws = state->layout().switches;
        for (size_t i = 0; i < sws.size() && sw < 0; ++i)
            if (sws[i].tier == 2 && sws[i].zone == state->layout().zones.value(0))
                sw = static_cast<int>(i);
        if (sw >= 0) {
            fabric_->map()->selectSwitch(sw);
            fabric_->showSwitch(sw);
        }
        fabric_->overlayBox()->setChecked(true);
        sleep(5000);  // routes and config of a CTSW at 24k take a few seconds on a busy machine
        ok &= shot(fabric_, QStringLiteral("fabric-zone"));
    }
    {
        network_->refresh();
        waitFor([&] { return network_->loaded(); }, 20000);
        // The first FCSW, or a switch with a link down when there is one.
        const auto& sw = network_->model().switches;
        int pick = -1;
        for (size_t i = 0; i < sw.size(); ++i)
            if ((pick < 0 && sw[i].tier == 2) || sw[i].links[2] > 0)
                pick = static_cast<int>(i);
        if (pick >= 0)
            network_->showSwitch(pick);
        ok &= shot(network_, QStringLiteral("network"));
    }
    ok &= shot(board_, QStringLiteral("provisioning"));
    ok &= shot(events_, QStringLiteral("events"));
    {
        // The most hurt running job (lowest busbw, then most GPUs), selected: its detail, then
        // its GPUs on the hall map.
        waitFor([&] { return jobs_->loaded(); }, 20000);
        const Job* pick = nullptr;
        for (const auto& j : jobs_->model()->jobs()) {
            if (j.state != u"running")
                continue;
            const double bw = j.health.present ? j.health.busBw : 101;
            const double pickBw = pick && pick->health.present ? pick->health.busBw : 101;
            if (!pick || bw < pickBw || (bw == pickBw && j.gpus > pick->gpus))
                pick = &j;
        }
        const QString name = pick ? pick->name : QString();
        if (!name.isEmpty() && jobs_->selectJob(name))
            waitFor([&] { return jobs_->detailLoaded(); }, 15000);
        ok &= shot(jobs_, QStringLiteral("jobs"));
        if (!name.isEmpty()) {
            hall_->map()->fitAll();
            ok &= shot(hall_, QStringLiteral("hall-job"));
        }
        jobs_->table()->clearSelection();
    }
    session_.close();
    return ok;
}

}  // namespace loom::console
