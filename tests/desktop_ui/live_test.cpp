// Against a REAL loomd: embedded PostgreSQL, dev-small applied, the simulator feeding the
// stream. Skips (with the reason) only when the loomd binary has not been built.
#include "loom/console/events_view.hpp"
#include "loom/console/fabric_map_widget.hpp"
#include "loom/console/fabric_view.hpp"
#include "loom/console/failure_counter.hpp"
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/hall_view.hpp"
#include "loom/console/jobs_view.hpp"
#include "loom/console/main_window.hpp"
#include "loom/console/network_view.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/provisioning_board.hpp"
#include "loom/console/session.hpp"

#include "qt_app.hpp"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTextDocument>

#include <gtest/gtest.h>

using namespace loom::console;

namespace {

QString findLoomd()
{
    for (const QString& p : {qEnvironmentVariable("LOOMD"), QStringLiteral(LOOM_BIN_DIR "/loomd"),
                             QStringLiteral(LOOM_SOURCE_DIR "/build/bin/loomd")})
        if (!p.isEmpty() && QFileInfo(p).isExecutable())
            return p;
    return {};
}

bool waitUntil(const std::function<bool()>& done, int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (!done() && t.elapsed() < timeoutMs)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    return done();
}

// Runs a loomd subcommand to completion; returns stdout, or fails the test with stderr.
QString run(const QString& loomd, const QStringList& args)
{
    QProcess p;
    p.start(loomd, args);
    if (!p.waitForFinished(180000) || p.exitCode() != 0) {
        ADD_FAILURE() << "loomd " << args.join(' ').toStdString() << " failed (" << p.exitCode()
                      << "): " << p.readAllStandardError().toStdString();
        return {};
    }
    return QString::fromUtf8(p.readAllStandardOutput());
}

// POSTs a body to loomd and waits for the answer; returns the HTTP status (0 = no answer).
int postTo(const QUrl& server, const QString& token, const QString& path, const QByteArray& body,
           const QByteArray& contentType = "application/json", QByteArray* reply = nullptr)
{
    QNetworkAccessManager nam;
    QUrl u = server;
    u.setPath(path);
    QNetworkRequest req(u);
    req.setRawHeader("Authorization", "Bearer " + token.toUtf8());
    req.setHeader(QNetworkRequest::ContentTypeHeader, contentType);
    QNetworkReply* r = nam.post(req, body);
    waitUntil([&] { return r->isFinished(); }, 30000);
    const int status = r->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply)
        *reply = r->readAll();
    r->deleteLater();
    return status;
}

QRgb rgb(QRgb c) { return c | 0xff000000u; }

// GETs a path of loomd and waits for the answer; returns the body (empty when none).
QByteArray getFrom(const QUrl& server, const QString& token, const QString& path)
{
    QNetworkAccessManager nam;
    QUrl u = server;
    u.setPath(path);
    QNetworkRequest req(u);
    req.setRawHeader("Authorization", "Bearer " + token.toUtf8());
    QNetworkReply* r = nam.get(req);
    waitUntil([&] { return r->isFinished(); }, 30000);
    const QByteArray body = r->readAll();
    r->deleteLater();
    return body;
}

// How many requests loomd answered on a route pattern ("/api/v1/jobs/{name}"), by its /metrics.
double requestsOn(const QUrl& server, const QString& token, const QByteArray& route)
{
    const QByteArray prefix = "loom_http_requests_total{route=\"" + route + "\",";
    double n = 0;
    for (const QByteArray& line : getFrom(server, token, QStringLiteral("/metrics")).split('\n'))
        if (line.startsWith(prefix))
            n += line.mid(line.lastIndexOf(' ') + 1).toDouble();
    return n;
}

class LiveLoomd : public ::testing::Test {
protected:
    void SetUp() override
    {
        test::qtApp();
        loomd_ = findLoomd();
        if (loomd_.isEmpty())
            GTEST_SKIP() << "loomd is not built (looked in " LOOM_BIN_DIR " and " LOOM_SOURCE_DIR
                            "/build/bin; set LOOMD=path): the live console test needs a real server";
        ASSERT_TRUE(dir_.isValid());
        const QString state = dir_.path() + QStringLiteral("/state");
        run(loomd_, {"apply", "-f", LOOM_SOURCE_DIR "/configs/clusters/dev-small.yaml", "--state-dir", state});
        if (HasFailure())
            return;
        const auto out = run(loomd_, {"token", "create", "--role", "admin", "--name", "console-test", "--state-dir", state})
                             .trimmed()
                             .split(u'\n');
        token_ = out.isEmpty() ? QString() : out.last().trimmed();
        ASSERT_FALSE(token_.isEmpty());
        server_.setProcessChannelMode(QProcess::MergedChannels);
        QStringList serve{"serve", "--listen", "127.0.0.1:0", "--state-dir", state};
        if (simulate_)
            serve.insert(1, QStringLiteral("--simulate"));
        server_.start(loomd_, serve);
        QString log;
        static const QRegularExpression re(QStringLiteral("http://127\\.0\\.0\\.1:\\d+"));
        ASSERT_TRUE(waitUntil([&] {
            log += QString::fromUtf8(server_.readAll());
            const auto m = re.match(log);
            if (m.hasMatch())
                url_ = QUrl(m.captured(0));
            return url_.isValid() || server_.state() == QProcess::NotRunning;
        }, 120000) && url_.isValid())
            << "loomd serve printed no URL: " << log.toStdString();
        bringRacksIntoService();
    }

    // The simulator runs the world the inventory describes: a freshly applied hall is all
    // planned and sends nothing. Advance two compute racks to in_service over the API, as an
    // operator would, so that they run jobs and report (z1-r003 and z1-r004 stay planned for
    // the tests that move them).
    void bringRacksIntoService()
    {
        QNetworkAccessManager nam;
        for (const char* rack : {"z1-r001", "z1-r002"})
            for (int step = 0; step < 7; ++step) {
                QNetworkRequest req(url_.resolved(QUrl(QStringLiteral("/api/v1/racks/%1/advance").arg(QLatin1String(rack)))));
                req.setRawHeader("Authorization", "Bearer " + token_.toUtf8());
                req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
                QNetworkReply* reply = nam.post(req, QByteArray("{}"));
                ASSERT_TRUE(waitUntil([&] { return reply->isFinished(); }, 30000));
                ASSERT_EQ(reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), 200)
                    << rack << " advance: " << reply->readAll().toStdString();
                reply->deleteLater();
            }
        if (!simulate_)
            return;
        // The simulator picks the racks up with the next live reload and tick: wait until one
        // of their GPUs reports (a deadline, not a sleep).
        const bool reporting = waitUntil([&] {
            QNetworkRequest req(url_.resolved(QUrl(QStringLiteral("/api/v1/telemetry/gpus/z1-r002-h1-gpu3"))));
            req.setRawHeader("Authorization", "Bearer " + token_.toUtf8());
            QNetworkReply* reply = nam.get(req);
            waitUntil([&] { return reply->isFinished(); }, 5000);
            const auto doc = QJsonDocument::fromJson(reply->readAll());
            reply->deleteLater();
            return doc.object().value(QStringLiteral("power")).isDouble();
        }, 30000);
        ASSERT_TRUE(reporting) << "the simulator never reported z1-r002 after it went into service";
    }
    void TearDown() override
    {
        if (server_.state() != QProcess::NotRunning) {
            server_.terminate();
            if (!server_.waitForFinished(20000))
                server_.kill();
            server_.waitForFinished(5000);
        }
    }

    bool simulate_ = true;  // false: only what the test posts moves the telemetry
    QString loomd_;
    QTemporaryDir dir_;
    QString token_;
    QProcess server_;
    QUrl url_;
};

// loomd without the simulator: a link the test reports down stays down.
class LiveLoomdQuiet : public LiveLoomd {
protected:
    LiveLoomdQuiet() { simulate_ = false; }
};

}  // namespace

TEST_F(LiveLoomd, ConnectsReceivesTheSnapshotAndShowsIt)
{
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    Session* s = w.session();
    s->open(url_, token_);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::GpuUtil); }, 60000))
        << "no gpu.util snapshot: " << s->lastError().toStdString();
    EXPECT_EQ(s->state(), Session::State::Live);
    EXPECT_EQ(state->role(), "admin");
    EXPECT_EQ(state->layout().gpus.size(), 64);
    EXPECT_EQ(state->layout().racks.size(), 5u);  // 4 compute racks + the storage rack z1-s01

    // The hall map paints the streamed values: at least one GPU has data and its colour.
    auto* map = w.findChild<HallMapWidget*>();
    ASSERT_NE(map, nullptr);
    const auto& util = state->gpuUtilShown();
    int withData = -1;
    waitUntil([&] {
        for (size_t g = 0; g < util.size() && withData < 0; ++g)
            if (util[g] <= 100)
                withData = static_cast<int>(g);
        return withData >= 0;
    }, 15000);
    ASSERT_GE(withData, 0) << "the stream carried no utilization";
    // Racks that are not powered yet (dev-small is all planned after apply) draw as no data,
    // whatever the simulator sends for them.
    const auto& rack = state->layout().racks[static_cast<size_t>(state->layout().gpuRack[static_cast<size_t>(withData)])];
    EXPECT_EQ(rgb(map->gpuColor(withData)),
              rgb(rackReportsData(rack.state) ? utilizationLut()[util[static_cast<size_t>(withData)]] : noDataColor()))
        << rack.name.toStdString() << " is " << rack.state.toStdString();

    // Deltas keep coming (the simulator runs at 1 Hz).
    const qint64 seq = state->lastSeq();
    EXPECT_TRUE(waitUntil([&] { return state->lastSeq() > seq; }, 15000)) << "no stream message after the snapshot";
    EXPECT_TRUE(w.statusText().contains("live")) << w.statusText().toStdString();

    // The detail panel's GET /api/v1/gpus/{name} reaches the server.
    Result<QJsonDocument> gpu = fail(QStringLiteral("no reply"));
    bool done = false;
    s->api()->get("/api/v1/gpus/" + state->layout().gpus[0], [&](Result<QJsonDocument> r) {
        gpu = std::move(r);
        done = true;
    });
    ASSERT_TRUE(waitUntil([&] { return done; }, 15000));
    ASSERT_TRUE(gpu) << gpu.error().toStdString();
    EXPECT_EQ(gpu->object().value("name").toString(), state->layout().gpus[0]);

    // An action the server refuses is shown exactly as the server wrote it.
    Result<QJsonDocument> refused = fail(QStringLiteral("no reply"));
    done = false;
    s->api()->post("/api/v1/racks/no-such-rack/advance", {}, [&](Result<QJsonDocument> r) {
        refused = std::move(r);
        done = true;
    });
    ASSERT_TRUE(waitUntil([&] { return done; }, 15000));
    ASSERT_FALSE(refused);
    EXPECT_TRUE(refused.error().startsWith("404 not_found: ")) << refused.error().toStdString();
}

TEST_F(LiveLoomd, ReconnectsAfterTheServerRestarts)
{
    Session s;
    s.open(url_, token_);
    ASSERT_TRUE(waitUntil([&] { return s.cluster()->hasSnapshot(Topic::GpuUtil); }, 60000)) << s.lastError().toStdString();
    const qint64 seqBefore = s.cluster()->lastSeq();
    server_.terminate();
    ASSERT_TRUE(server_.waitForFinished(30000));
    ASSERT_TRUE(waitUntil([&] { return s.state() == Session::State::Backoff; }, 15000));
    // While loomd is away the map greys the data out and says how old it is.
    {
        HallMapWidget map(s.cluster());
        map.resize(800, 600);
        map.setStaleNote(QStringLiteral("loomd unreachable"));
        EXPECT_TRUE(map.isStale());
        EXPECT_TRUE(map.staleText().contains(" old")) << map.staleText().toStdString();
        const int g = 0;
        const QImage img = map.grab().toImage();
        EXPECT_NE(rgb(img.pixel(map.gpuCenter(g).toPoint())), rgb(map.gpuColor(g)));  // greyed
        // The fabric map too: greyed, by age alone (no note) once no frame came for 5 s.
        FabricMapWidget fabric(s.cluster());
        fabric.resize(900, 600);
        ASSERT_TRUE(waitUntil([&] { return fabric.isStale(); }, 15000));
        EXPECT_TRUE(fabric.staleText().contains(" old")) << fabric.staleText().toStdString();
    }
    // Same state dir and port: the console finds it again by itself.
    server_.start(loomd_, {"serve", "--simulate", "--listen", url_.host() + ':' + QString::number(url_.port()),
                           "--state-dir", dir_.path() + QStringLiteral("/state")});
    ASSERT_TRUE(waitUntil([&] { return s.state() == Session::State::Live && s.reconnects() > 0; }, 90000))
        << s.lastError().toStdString();
    EXPECT_TRUE(waitUntil([&] { return s.cluster()->lastSeq() != seqBefore; }, 30000));
}

// Issue 17: an XID on one GPU is visible at Fit in every colour mode, its rack is badged, the
// counter counts it; a failed rack gets its badge; the event carries the XID's meaning.
TEST_F(LiveLoomd, AnInjectedXidIsVisibleInEveryColourModeAndCounted)
{
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    Session* s = w.session();
    s->open(url_, token_);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::GpuHealth) && state->hasSnapshot(Topic::LinkHealth); }, 60000))
        << s->lastError().toStdString();
    const int g = state->layout().gpuIndex("z1-r002-h1-gpu3");
    ASSERT_GE(g, 0);
    const int gpusBefore = state->failures()->count(FailureKind::Gpu);

    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry",
                     "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",Hostname=\"z1-r002-h1\"} 79\n", "text/plain; version=0.0.4"),
              300);
    ASSERT_TRUE(waitUntil([&] { return state->values(Topic::GpuHealth)[static_cast<size_t>(g)] == 2; }, 15000))
        << "gpu.health of z1-r002-h1-gpu3 never became failed";
    EXPECT_GE(state->failures()->count(FailureKind::Gpu), gpusBefore + 1);
    EXPECT_TRUE(w.failureCounter()->text().contains(QStringLiteral("%1 GPU").arg(state->failures()->count(FailureKind::Gpu))))
        << w.failureCounter()->text().toStdString();

    HallMapWidget* map = w.hallView()->map();
    map->fitAll();
    for (auto m : {Metric::Utilization, Metric::Temperature, Metric::Health, Metric::Provisioning}) {
        w.hallView()->metricBox()->setCurrentIndex(w.hallView()->metricBox()->findData(static_cast<int>(m)));
        ASSERT_EQ(map->metric(), m);
        const QImage img = map->grab().toImage();
        const QPoint at = map->gpuCenter(g).toPoint();
        EXPECT_EQ(rgb(img.pixel(at)), rgb(failedColor())) << metricName(m).toStdString();
        EXPECT_NE(rgb(img.pixel(at)), rgb(map->gpuColor(g))) << metricName(m).toStdString();  // the cell's own colour
    }
    EXPECT_GE(state->failures()->rackMarks()[static_cast<size_t>(state->layout().rackIndex("z1-r002"))].count, 1);

    // The GPU panel's power/memory/ECC come from GET /api/v1/telemetry/gpus/<name>: the
    // simulator's last sample, and the XID just posted.
    Result<QJsonDocument> live = fail(QStringLiteral("no reply"));
    bool got = false;
    s->api()->get(QStringLiteral("/api/v1/telemetry/gpus/z1-r002-h1-gpu3"), [&](Result<QJsonDocument> r) {
        live = std::move(r);
        got = true;
    });
    ASSERT_TRUE(waitUntil([&] { return got; }, 15000));
    ASSERT_TRUE(live) << live.error().toStdString();
    EXPECT_EQ(live->object().value("name").toString(), "z1-r002-h1-gpu3");
    EXPECT_EQ(live->object().value("xid").toDouble(), 79.0);
    EXPECT_TRUE(live->object().value("power").isDouble()) << QJsonDocument(live->object()).toJson().toStdString();
    w.hallView()->focusLocation(QStringLiteral("z1-r002-h1-gpu3"), {});
    ASSERT_TRUE(waitUntil([&] { return w.hallView()->detail()->toPlainText().contains(" W"); }, 15000))
        << w.hallView()->detail()->toPlainText().toStdString();
    EXPECT_TRUE(w.hallView()->detail()->toPlainText().contains("z1-r002-h1-nic3/p1"));  // its backend link
    // Its last hour and its link's, from GET /api/v1/telemetry/rollups?scope=gpu|link, as
    // sparklines: the utilization images have their points drawn (the simulator has reported;
    // a minute in, that is one dot, more than the faint baseline).
    auto sparkPixels = [&](const char* name) {
        const QImage img = w.hallView()->detail()->document()->resource(QTextDocument::ImageResource, QUrl(QLatin1String(name))).value<QImage>();
        int drawn = 0;
        for (int y = 0; y < img.height(); ++y)
            for (int x = 0; x < img.width(); ++x)
                drawn += qAlpha(img.pixel(x, y)) > 128 ? 1 : 0;
        return drawn;
    };
    ASSERT_TRUE(waitUntil([&] {
        return w.hallView()->detail()->toPlainText().contains("Last hour") && sparkPixels("spark:gpu-util") > 4 &&
               sparkPixels("spark:link-util") > 4;
    }, 30000)) << w.hallView()->detail()->toPlainText().toStdString();
    EXPECT_TRUE(w.hallView()->detail()->toHtml().contains("spark:gpu-power"));
    EXPECT_TRUE(w.hallView()->detail()->toPlainText().contains(QRegularExpression(QStringLiteral("utilization: now \\d+ %"))))
        << w.hallView()->detail()->toPlainText().toStdString();
    bool missing = false;
    got = false;
    s->api()->get(QStringLiteral("/api/v1/telemetry/gpus/no-such-gpu"), [&](Result<QJsonDocument> r) {
        missing = !r && r.error().startsWith("404 ");
        got = true;
    });
    ASSERT_TRUE(waitUntil([&] { return got; }, 15000));
    EXPECT_TRUE(missing);

    // The event list explains the XID.
    ASSERT_TRUE(waitUntil([&] {
        for (const auto& e : state->events())
            if (e.location == "z1-r002-h1-gpu3" && e.open())
                return true;
        return false;
    }, 15000));
    EventModel* model = w.eventsView()->model();
    bool explained = false;
    for (int r = 0; r < model->rowCount(); ++r)
        if (model->event(r)->location == "z1-r002-h1-gpu3")
            explained |= model->index(r, EventModel::Message).data().toString().contains("fallen off the bus");
    EXPECT_TRUE(explained);

    // A failed rack: advanced out of planned (a planned rack cannot fail), then failed.
    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r003/advance", "{}"), 300);
    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r003/fail", R"({"reason":"console test: PDU tripped"})"), 300);
    const int rack = state->layout().rackIndex("z1-r003");
    ASSERT_TRUE(waitUntil([&] { return state->layout().racks[static_cast<size_t>(rack)].state == "failed"; }, 15000))
        << "no provisioning message took z1-r003 to failed";
    EXPECT_EQ(state->failures()->count(FailureKind::Rack), 1);
    EXPECT_TRUE(state->failures()->rackMarks()[static_cast<size_t>(rack)].rackFailed);
    EXPECT_TRUE(w.failureCounter()->text().contains("1 rack")) << w.failureCounter()->text().toStdString();

    // The fabric's switch panel: a port opens its link's last hour (the GPU's own link here).
    FabricView* fv = w.fabricView();
    w.tabs()->setCurrentWidget(fv);
    ASSERT_TRUE(fv->focusLocation(QStringLiteral("z1-r002-rtsw"), {}));
    const int gpuLink = static_cast<int>(state->layout().links.indexOf(QRegularExpression(QStringLiteral(".*z1-r002-h1-nic3/.*"))));
    ASSERT_GE(gpuLink, 0);
    ASSERT_TRUE(fv->detail()->toHtml().contains(QStringLiteral("link:%1").arg(gpuLink)));  // its row links to it
    Q_EMIT fv->detail()->anchorClicked(QUrl(QStringLiteral("link:%1").arg(gpuLink)));
    EXPECT_EQ(fv->historyLink(), gpuLink);
    ASSERT_TRUE(waitUntil([&] { return fv->detail()->toPlainText().contains(QStringLiteral("utilization: now")); }, 15000))
        << fv->detail()->toPlainText().left(600).toStdString();
    EXPECT_FALSE(fv->detail()->document()->resource(QTextDocument::ImageResource, QUrl(QStringLiteral("spark:fabric-link"))).value<QImage>().isNull());

    // The frontend view: the failed rack's host cables are down, so its FSW is drawn red and
    // counted; the header's counts are what the inventory lists.
    NetworkView* net = w.networkView();
    w.tabs()->setCurrentWidget(net);
    ASSERT_TRUE(waitUntil([&] {
        net->refresh();
        const int fsw = net->model().find("z1-r003-fsw");
        return net->loaded() && fsw >= 0 && net->model().switches[static_cast<size_t>(fsw)].links[2] > 0;
    }, 20000)) << net->headerText().toStdString();
    const int fsw = net->model().find("z1-r003-fsw");
    EXPECT_EQ(net->model().switches.size(), 7u);  // dev-small: 4 FSW, 2 FCSW, 1 SSW
    EXPECT_EQ(net->map()->drawnSwitches(), 7);
    EXPECT_TRUE(net->headerText().contains("7 switches drawn (2 FCSW, 4 FSW, 1 SSW)")) << net->headerText().toStdString();
    EXPECT_GE(net->model().linkStates[2], 2);  // both hosts' frontend cables
    const QImage shot = net->map()->grab().toImage();
    const QRectF tile = net->map()->switchRect(fsw);  // its bottom row: the name is in the middle
    EXPECT_EQ(rgb(shot.pixel(QPoint(static_cast<int>(tile.center().x()), static_cast<int>(tile.bottom()) - 1))), rgb(failedColor()));
    net->showSwitch(fsw);
    EXPECT_TRUE(net->detail()->toPlainText().contains("z1-r003-h0-fe0")) << net->detail()->toPlainText().toStdString();
}

// Issue 17: a 401 stops the retry loop, forgets the role and asks for a token; a good token
// from the prompt connects again.
TEST_F(LiveLoomd, AWrongTokenStopsRetryingAndAsksForAToken)
{
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    Session* s = w.session();
    s->open(url_, QStringLiteral("loom_this-token-does-not-exist"));
    ASSERT_TRUE(waitUntil([&] { return s->state() == Session::State::Unauthorized; }, 30000))
        << "state " << s->stateText().toStdString() << ": " << s->lastError().toStdString();
    EXPECT_FALSE(s->retryPending());  // no reconnect is scheduled: nothing will retry
    EXPECT_EQ(s->reconnects(), 0);
    EXPECT_TRUE(s->lastError().contains("401")) << s->lastError().toStdString();
    EXPECT_TRUE(s->cluster()->role().isEmpty());
    ASSERT_NE(w.tokenPrompt(), nullptr) << "no token prompt";
    EXPECT_TRUE(w.tokenPrompt()->isVisible());

    // The right token through the prompt: live again, with the role of that token.
    w.tokenPrompt()->tokenEdit()->setText(token_);
    w.tokenPrompt()->accept();
    ASSERT_TRUE(waitUntil([&] { return s->state() == Session::State::Live && !s->cluster()->role().isEmpty(); }, 60000))
        << s->lastError().toStdString();
    EXPECT_EQ(s->cluster()->role(), "admin");
    EXPECT_TRUE(w.statusText().contains("role: admin")) << w.statusText().toStdString();
}

// Issue 17: acknowledging from one console shows (who and when) in a second console, through
// the server (POST /api/v1/events/{id}/ack, the "event" stream update).
TEST_F(LiveLoomd, AnAcknowledgementInOneConsoleShowsInAnother)
{
    MainWindow a, b;
    a.session()->open(url_, token_);
    b.session()->open(url_, token_);
    ClusterState* sa = a.session()->cluster();
    ClusterState* sb = b.session()->cluster();
    ASSERT_TRUE(waitUntil([&] { return sa->hasSnapshot(Topic::GpuHealth) && sb->hasSnapshot(Topic::GpuHealth); }, 60000));
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry",
                     "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",Hostname=\"z1-r001-h0\"} 48\n", "text/plain; version=0.0.4"),
              300);
    qint64 id = 0;
    ASSERT_TRUE(waitUntil([&] {
        for (const auto& e : sa->events())
            if (e.location == "z1-r001-h0-gpu5" && e.open())
                id = e.id;
        return id != 0 && sb->findEvent(id) != nullptr;
    }, 20000)) << "the XID event did not reach both consoles";
    EXPECT_EQ(sa->findEvent(id)->xid, 48);
    EXPECT_FALSE(sb->findEvent(id)->acknowledged());

    QString error = QStringLiteral("no reply");
    bool done = false;
    a.eventsView()->acknowledge(id, QStringLiteral("on it: reseating"), [&](QString e) {
        error = e;
        done = true;
    });
    ASSERT_TRUE(waitUntil([&] { return done; }, 15000));
    if (error.startsWith(QLatin1String("404 ")) || error.startsWith(QLatin1String("405 ")) ||
        error.startsWith(QLatin1String("HTTP 404")) || error.startsWith(QLatin1String("HTTP 405")))
        GTEST_SKIP() << "this loomd has no POST /api/v1/events/{id}/ack yet: " << error.toStdString();
    ASSERT_TRUE(error.isEmpty()) << error.toStdString();
    ASSERT_TRUE(waitUntil([&] { return sb->findEvent(id) && sb->findEvent(id)->acknowledged(); }, 15000))
        << "the acknowledgement never reached the second console";
    const Event* seen = sb->findEvent(id);
    EXPECT_EQ(seen->acknowledgedBy, "console-test");  // the token's name
    EXPECT_EQ(seen->ackComment, "on it: reseating");
    EXPECT_TRUE(seen->acknowledgedAt.isValid());
    // The second console's table says who.
    EventModel* model = b.eventsView()->model();
    bool shown = false;
    for (int r = 0; r < model->rowCount(); ++r)
        if (model->event(r)->id == id)
            shown = model->index(r, EventModel::Acknowledged).data().toString().contains("console-test");
    EXPECT_TRUE(shown);

    // Close by hand: the second console sees it closed, by whom.
    done = false;
    a.eventsView()->closeByHand(id, QStringLiteral("GPU replaced"), [&](QString e) {
        error = e;
        done = true;
    });
    ASSERT_TRUE(waitUntil([&] { return done; }, 15000));
    ASSERT_TRUE(error.isEmpty()) << error.toStdString();
    ASSERT_TRUE(waitUntil([&] { return sb->findEvent(id) && !sb->findEvent(id)->open(); }, 15000));
    EXPECT_EQ(sb->findEvent(id)->closedBy, "console-test");
    EXPECT_EQ(sb->findEvent(id)->closeReason, "GPU replaced");
}

// Issue 15 item 5: a job created by the API appears in the Jobs view with its busbw; a link
// under it goes down -> the view shows the lower busbw, the link and the job_degraded event;
// selecting it highlights its GPUs on the hall map (pixels at a job GPU and at another GPU
// differ from before) and the links it crosses on the fabric map; the repair brings it back.
TEST_F(LiveLoomdQuiet, TheJobsViewShowsAJobItsDegradationAndHighlightsIt)
{
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    Session* s = w.session();
    s->open(url_, token_);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::GpuHealth) && state->hasSnapshot(Topic::LinkHealth); }, 60000))
        << s->lastError().toStdString();
    JobsView* jv = w.jobsView();
    ASSERT_TRUE(waitUntil([&] { return jv->loaded(); }, 15000)) << jv->headerText().toStdString();

    const QByteArray job = R"(apiVersion: loom/v1
kind: Job
metadata: {name: llama}
spec:
  owner: alice
  hosts: z1-r[001-002]-h[0-1]
  state: running
)";
    QByteArray answer;
    ASSERT_EQ(postTo(url_, token_, "/api/v1/jobs", job, "application/yaml", &answer), 201) << answer.toStdString();
    // It appears (the stream's jobs topic), with its busbw: dev-small's racks have as many
    // uplinks as NICs, so the ring runs at the full NIC rate.
    JobModel* m = jv->model();
    auto llama = [&]() -> const Job* { return m->job(m->find("llama")); };
    ASSERT_TRUE(waitUntil([&] { return llama() && llama()->health.present && llama()->health.busBw == 100.0; }, 20000))
        << jv->headerText().toStdString() << ": "
        << (llama() ? m->index(m->find("llama"), JobModel::BusBw).data().toString().toStdString() + " " + llama()->healthText().toStdString()
                    : std::string("not listed"));
    const int row = m->find("llama");
    EXPECT_EQ(m->index(row, JobModel::BusBw).data().toString(), "100.0 %");
    EXPECT_EQ(m->index(row, JobModel::Health).data().toString(), "ok");
    EXPECT_EQ(m->index(row, JobModel::Gpus).data().toInt(), 32);

    // Selecting it: the detail arrives with the links it crosses; the maps highlight.
    w.tabs()->setCurrentWidget(jv);
    ASSERT_TRUE(jv->selectJob("llama"));
    ASSERT_TRUE(waitUntil([&] { return jv->detailLoaded() && !jv->selectedLinks().empty(); }, 15000))
        << jv->detail()->toPlainText().toStdString();
    const int crossed = llama()->health.linksCrossed;
    EXPECT_GE(crossed, 32);  // its 32 NIC cables and the uplinks between the racks
    EXPECT_EQ(static_cast<int>(jv->selectedLinks().size()), crossed);
    EXPECT_EQ(jv->selectedGpus().size(), 32u);
    EXPECT_TRUE(jv->detail()->toPlainText().contains("100.0 % of the NIC rate")) << jv->detail()->toPlainText().toStdString();
    EXPECT_TRUE(jv->detail()->toPlainText().contains("Straggler suspects"));
    // Nothing changes: the detail is not fetched again (its own answer, upserted into the list,
    // once asked for the next one, hundreds a second).
    const double detailGets = requestsOn(url_, token_, "/api/v1/jobs/{name}");
    waitUntil([] { return false; }, 2000);
    EXPECT_LE(requestsOn(url_, token_, "/api/v1/jobs/{name}") - detailGets, 1);

    HallMapWidget* map = w.hallView()->map();
    w.tabs()->setCurrentWidget(w.hallView());
    map->fitAll();
    const int mine = state->layout().gpuIndex("z1-r002-h1-gpu3");
    const int other = state->layout().gpuIndex("z1-r004-h0-gpu3");
    ASSERT_GE(mine, 0);
    ASSERT_GE(other, 0);
    EXPECT_EQ(map->highlight().size(), 32u);
    QImage img = map->grab().toImage();
    const QPoint atMine = map->gpuCenter(mine).toPoint(), atOther = map->gpuCenter(other).toPoint();
    EXPECT_EQ(rgb(img.pixel(atMine)), rgb(map->gpuColor(mine)));     // the job's GPU as it is
    EXPECT_NE(rgb(img.pixel(atOther)), rgb(map->gpuColor(other)));   // another GPU veiled
    EXPECT_NE(rgb(img.pixel(atMine)), rgb(img.pixel(atOther)));

    FabricMapWidget* fabric = w.fabricView()->map();
    EXPECT_EQ(fabric->highlightedLinks(), crossed);
    EXPECT_TRUE(fabric->switchHighlighted(state->layout().switchIndex("z1-r002-rtsw")));
    EXPECT_FALSE(fabric->switchHighlighted(state->layout().switchIndex("z1-r004-rtsw")));

    // A NIC cable of the job goes down (the RTSW's port was up, then reports down).
    const int cable = static_cast<int>(state->layout().links.indexOf(QRegularExpression(QStringLiteral("z1-r002-h1-nic3/.*"))));
    ASSERT_GE(cable, 0);
    const QString link = state->layout().links[cable];
    EXPECT_TRUE(fabric->linkHighlighted(cable));
    const QString port = link.section(QStringLiteral("--"), 1).section(u'/', 1);  // "z1-r002-rtsw/p12" -> "p12"
    const QByteArray status = QStringLiteral("loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"%1\"} ").arg(port).toUtf8();
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry", status + "1\n", "text/plain; version=0.0.4"), 300);
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry", status + "0\n", "text/plain; version=0.0.4"), 300);
    ASSERT_TRUE(waitUntil([&] { return llama() && llama()->health.degraded && llama()->health.busBw < 100.0; }, 20000))
        << m->index(m->find("llama"), JobModel::BusBw).data().toString().toStdString();
    const double bw = llama()->health.busBw;
    EXPECT_EQ(m->index(m->find("llama"), JobModel::BusBw).data().toString(), QStringLiteral("%1 % (was 100.0 %)").arg(bw, 0, 'f', 1));
    EXPECT_TRUE(m->index(m->find("llama"), JobModel::Health).data().toString().startsWith("degraded"));
    EXPECT_EQ(llama()->health.linksDown, QStringList{link});
    const QRegularExpression degraded(QStringLiteral("job llama degraded to [0-9.]+% busbw by link %1 down")
                                          .arg(QRegularExpression::escape(link)));
    ASSERT_TRUE(waitUntil([&] {
        const QString text = jv->detail()->toPlainText();
        return text.contains(degraded) && text.contains("link_down") && text.contains("Links down under the job (1)");
    }, 20000)) << jv->detail()->toPlainText().toStdString();
    EXPECT_TRUE(jv->detail()->toPlainText().contains(QStringLiteral("%1 % of the NIC rate, down from 100.0 %").arg(bw, 0, 'f', 1)))
        << jv->detail()->toPlainText().toStdString();

    // The repair: back to 100 %, the degraded event leaves the job's detail.
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry", status + "1\n", "text/plain; version=0.0.4"), 300);
    ASSERT_TRUE(waitUntil([&] {
        return llama() && llama()->health.busBw == 100.0 && !jv->detail()->toPlainText().contains(degraded);
    }, 20000)) << jv->detail()->toPlainText().toStdString();
    EXPECT_EQ(m->index(m->find("llama"), JobModel::Health).data().toString(), "ok");

    // Clearing the selection clears both maps.
    jv->table()->clearSelection();
    EXPECT_TRUE(map->highlight().empty());
    EXPECT_EQ(fabric->highlightedLinks(), 0);
    img = map->grab().toImage();
    EXPECT_EQ(rgb(img.pixel(atOther)), rgb(map->gpuColor(other)));
}

// dcgm-exporter text for the 32 GPUs of z1-r001..z1-r002 (hosts h0, h1): a healthy spread;
// `slow` (when set) at 1,140 MHz SM clock with a normal temperature.
QByteArray dcgmScrape(const QString& slow, int round)
{
    QByteArray out;
    int i = 0;
    for (int rack = 1; rack <= 2; ++rack)
        for (int h = 0; h < 2; ++h)
            for (int g = 0; g < 8; ++g, ++i) {
                const QString host = QStringLiteral("z1-r00%1-h%2").arg(rack).arg(h);
                const QByteArray labels = QStringLiteral("{gpu=\"%1\",Hostname=\"%2\"} ").arg(g).arg(host).toUtf8();
                const int wobble = (i * 7 + round) % 5;
                const bool isSlow = QStringLiteral("%1-gpu%2").arg(host).arg(g) == slow;
                out += "DCGM_FI_DEV_SM_CLOCK" + labels + QByteArray::number(isSlow ? 1140 : 1980 - 15 * (wobble % 3)) + "\n";
                out += "DCGM_FI_DEV_GPU_TEMP" + labels + QByteArray::number(70 + wobble) + "\n";
                out += "DCGM_FI_DEV_POWER_USAGE" + labels + QByteArray::number(680 + 3 * wobble) + "\n";
                out += "DCGM_FI_DEV_GPU_UTIL" + labels + "95\n";
            }
    return out;
}

// The straggler finder's suspects reach the selected job's detail with its own stream message
// (jobSuspects), within a second, not with the job's next health change: a GPU whose SM clock
// drops at a normal temperature (its health stays ok) is named before its straggler event opens.
TEST_F(LiveLoomdQuiet, TheJobsViewFollowsTheStragglerFinder)
{
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    Session* s = w.session();
    s->open(url_, token_);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::GpuHealth); }, 60000)) << s->lastError().toStdString();
    JobsView* jv = w.jobsView();
    ASSERT_TRUE(waitUntil([&] { return jv->loaded(); }, 15000)) << jv->headerText().toStdString();
    const QByteArray job = "apiVersion: loom/v1\nkind: Job\nmetadata: {name: llama}\n"
                           "spec:\n  owner: alice\n  hosts: z1-r[001-002]-h[0-1]\n  state: running\n";
    QByteArray answer;
    ASSERT_EQ(postTo(url_, token_, "/api/v1/jobs", job, "application/yaml", &answer), 201) << answer.toStdString();
    ASSERT_TRUE(waitUntil([&] { return jv->selectJob("llama"); }, 15000));
    ASSERT_TRUE(waitUntil([&] { return jv->detailLoaded(); }, 15000));

    // The exporters, every 200 ms while the test waits.
    const QString gpu = QStringLiteral("z1-r002-h1-gpu5");
    QString slow;
    int round = 0;
    QElapsedTimer sent;
    auto exporting = [&](const std::function<bool()>& done) {
        return [&, done] {
            if (!sent.isValid() || sent.elapsed() >= 200) {
                sent.restart();
                postTo(url_, token_, "/api/v1/telemetry", dcgmScrape(slow, round++), "text/plain; version=0.0.4");
            }
            return done();
        };
    };
    waitUntil(exporting([] { return false; }), 3000);  // healthy ticks first
    EXPECT_TRUE(jv->detail()->toPlainText().contains("every rank keeps the job's rhythm")) << jv->detail()->toPlainText().toStdString();

    QElapsedTimer named;  // since the stream named the GPU a suspect of llama
    QObject::connect(state, &ClusterState::jobMessage, jv, [&](const QJsonObject& m) {
        if (!named.isValid() && m.value(u"type").toString() == u"jobSuspects" && m.value(u"name").toString() == u"llama" &&
            m.value(u"suspects").toArray().first().toObject().value(u"location").toString() == gpu)
            named.start();
    });
    slow = gpu;
    ASSERT_TRUE(waitUntil(exporting([&] { return named.isValid(); }), 20000)) << "no jobSuspects naming " << gpu.toStdString();
    const bool shown = waitUntil(exporting([&] {
        const QString text = jv->detail()->toPlainText();
        return text.contains("Straggler suspects (") && text.contains(gpu);
    }), 10000);
    ASSERT_TRUE(shown) << jv->detail()->toPlainText().toStdString();
    EXPECT_LE(named.elapsed(), 1000) << jv->detail()->toPlainText().toStdString();
    EXPECT_TRUE(jv->detail()->toPlainText().contains("low_sm_clock")) << jv->detail()->toPlainText().toStdString();
}

// After a reconnect (a loomd restart: no replay) the Jobs view lists the jobs again, as on
// every hello; the selected job's detail follows that list, not what it showed before. The
// stream is closed while the link comes back, so only the list can tell.
TEST_F(LiveLoomdQuiet, TheSelectedJobsDetailFollowsAFreshList)
{
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    Session* s = w.session();
    s->open(url_, token_);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::LinkHealth); }, 60000)) << s->lastError().toStdString();
    JobsView* jv = w.jobsView();
    ASSERT_TRUE(waitUntil([&] { return jv->loaded(); }, 15000)) << jv->headerText().toStdString();
    const QByteArray job = "apiVersion: loom/v1\nkind: Job\nmetadata: {name: llama}\n"
                           "spec:\n  owner: alice\n  hosts: z1-r[001-002]-h[0-1]\n  state: running\n";
    QByteArray answer;
    ASSERT_EQ(postTo(url_, token_, "/api/v1/jobs", job, "application/yaml", &answer), 201) << answer.toStdString();
    ASSERT_TRUE(waitUntil([&] { return jv->selectJob("llama"); }, 15000));
    JobModel* m = jv->model();
    auto llama = [&]() -> const Job* { return m->job(m->find("llama")); };
    const QByteArray status = "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p12\"} ";
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry", status + "1\n", "text/plain; version=0.0.4"), 300);
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry", status + "0\n", "text/plain; version=0.0.4"), 300);
    ASSERT_TRUE(waitUntil([&] { return jv->detail()->toPlainText().contains("Links down under the job (1)"); }, 20000))
        << jv->detail()->toPlainText().toStdString();

    s->close();
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry", status + "1\n", "text/plain; version=0.0.4"), 300);
    ASSERT_TRUE(waitUntil([&] {
        const QJsonObject h =
            QJsonDocument::fromJson(getFrom(url_, token_, "/api/v1/jobs/llama")).object().value(u"health").toObject();
        return h.contains(u"linksDown") && h.value(u"linksDown").toArray().isEmpty();
    }, 20000)) << "loomd never saw the link back up";
    EXPECT_TRUE(jv->detail()->toPlainText().contains("Links down under the job (1)")) << "the stream is closed";
    jv->refresh();  // what the next hello does
    ASSERT_TRUE(waitUntil([&] { return llama() && llama()->health.linksDown.isEmpty(); }, 15000));
    EXPECT_TRUE(waitUntil([&] { return !jv->detail()->toPlainText().contains("Links down under the job"); }, 1000))
        << jv->detail()->toPlainText().toStdString();
}

// Issue 17 item 2: a switch's panel shows its config version and the diff to the previous
// version: a drained rack's cables change the CTSW's config ("(up)" -> "(drained)").
TEST_F(LiveLoomdQuiet, ASwitchPanelShowsItsConfigDiffToThePreviousVersion)
{
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    Session* s = w.session();
    s->open(url_, token_);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::LinkHealth); }, 60000)) << s->lastError().toStdString();
    FabricView* fv = w.fabricView();
    w.tabs()->setCurrentWidget(fv);
    int ctsw = -1;
    for (size_t i = 0; i < state->layout().switches.size() && ctsw < 0; ++i)
        if (state->layout().switches[i].role == "ctsw")
            ctsw = static_cast<int>(i);
    ASSERT_GE(ctsw, 0);
    const QString name = state->layout().switches[static_cast<size_t>(ctsw)].name;

    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r002/drain", "{}"), 300);
    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r002/advance", "{}"), 300);  // draining -> drained
    const int rack = state->layout().rackIndex("z1-r002");
    ASSERT_TRUE(waitUntil([&] { return state->layout().racks[static_cast<size_t>(rack)].state == "drained"; }, 15000));
    // The panel, opened again until loomd has rerouted: the version, what changed, the diff.
    const QRegularExpression changed(QStringLiteral("changed from version \\d+: (\\d+) lines removed, (\\d+) added"));
    ASSERT_TRUE(waitUntil([&] {
        fv->showSwitch(ctsw);
        waitUntil([&] { return !fv->detail()->toPlainText().contains("loading config"); }, 5000);
        return fv->detail()->toPlainText().contains(changed);
    }, 20000)) << name.toStdString() << ": " << fv->detail()->toPlainText().toStdString();
    const QString text = fv->detail()->toPlainText();
    const auto m = changed.match(text);
    EXPECT_GE(m.captured(1).toInt(), 1) << text.toStdString();
    EXPECT_GE(m.captured(2).toInt(), 1) << text.toStdString();
    EXPECT_TRUE(text.contains(QRegularExpression(QStringLiteral("\\+ .*z1-r002-rtsw.*\\(drained\\)")))) << text.toStdString();
    EXPECT_TRUE(text.contains(QRegularExpression(QStringLiteral("- .*z1-r002-rtsw.*\\((up|not_in_service)\\)")))) << text.toStdString();
    EXPECT_FALSE(text.contains(QRegularExpression(QStringLiteral("\\+ .*z1-r001-rtsw")))) << "rack 1 did not change";

    // The drained rack's switch is drawn as drained on the fabric map, and a rack burning in
    // as burning in (issue 17: switch states follow provisioning), not as healthy switches.
    for (int i = 0; i < 5; ++i)  // planned -> delivered -> racked -> cabled -> powered -> burn_in
        ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r003/advance", "{}"), 300);
    const int r3 = state->layout().rackIndex("z1-r003");
    ASSERT_TRUE(waitUntil([&] { return state->layout().racks[static_cast<size_t>(r3)].state == "burn_in"; }, 15000))
        << state->layout().racks[static_cast<size_t>(r3)].state.toStdString();
    FabricMapWidget* map = fv->map();
    map->setZone(-1);
    const QImage img = map->grab().toImage();
    auto corner = [&](const char* sw) {
        const QRectF t = map->switchRect(state->layout().switchIndex(QLatin1String(sw)));
        return QPoint(static_cast<int>(t.left()) + 1, static_cast<int>(t.bottom()) - 1);
    };
    EXPECT_EQ(rgb(img.pixel(corner("z1-r002-rtsw"))), rgb(rackSwitchPhaseColor("drained")));
    EXPECT_EQ(rgb(img.pixel(corner("z1-r003-rtsw"))), rgb(rackSwitchPhaseColor("burn-in")));
    EXPECT_NE(rgb(img.pixel(corner("z1-r001-rtsw"))), rgb(rackSwitchPhaseColor("drained")));  // in service
    // The rack's elevation says so too: its RTSW in the rack's state.
    w.hallView()->showRack(rack);
    ASSERT_TRUE(waitUntil([&] { return w.hallView()->detail()->toPlainText().contains("drained (with its rack"); }, 15000))
        << w.hallView()->detail()->toPlainText().toStdString();
}
