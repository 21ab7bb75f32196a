// The live console against a REAL loomd (live_loomd.hpp): connecting and showing the snapshot,
// reconnecting after a restart, an injected XID in every colour mode, a wrong token, an
// acknowledgement seen by a second console, and a switch panel's config diff. The Jobs view's
// live tests are in live_jobs_test.cpp.
#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextDocument>

#include "live_loomd.hpp"
#include "loom/console/events_view.hpp"
#include "loom/console/fabric_map_widget.hpp"
#include "loom/console/fabric_view.hpp"
#include "loom/console/failure_counter.hpp"
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/hall_view.hpp"
#include "loom/console/main_window.hpp"
#include "loom/console/network_view.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/provisioning_board.hpp"
#include "loom/console/session.hpp"

using namespace loom::console;
using namespace loom::console::test;

TEST_F(LiveLoomd, ConnectsReceivesTheSnapshotAndShowsIt) {
    MainWindow w;
    Session* s = openConsole(w);
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
    waitUntil(
        [&] {
            for (size_t g = 0; g < util.size() && withData < 0; ++g)
                if (util[g] <= 100) withData = static_cast<int>(g);
            return withData >= 0;
        },
        15000);
    ASSERT_GE(withData, 0) << "the stream carried no utilization";
    // Racks that are not powered yet (dev-small is all planned after apply) draw as no data,
    // whatever the simulator sends for them.
    const auto& rack =
        state->layout()
            .racks[static_cast<size_t>(state->layout().gpuRack[static_cast<size_t>(withData)])];
    EXPECT_EQ(
        rgb(map->gpuColor(withData)),
        rgb(rackReportsData(rack.state) ? utilizationLut()[util[static_cast<size_t>(withData)]]
                                        : noDataColor()))
        << rack.name.toStdString() << " is " << rack.state.toStdString();

    // Deltas keep coming (the simulator runs at 1 Hz).
    const qint64 seq = state->lastSeq();
    EXPECT_TRUE(waitUntil([&] { return state->lastSeq() > seq; }, 15000))
        << "no stream message after the snapshot";
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

TEST_F(LiveLoomd, ReconnectsAfterTheServerRestarts) {
    Session s;
    s.open(url_, token_);
    ASSERT_TRUE(waitUntil([&] { return s.cluster()->hasSnapshot(Topic::GpuUtil); }, 60000))
        << s.lastError().toStdString();
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
    server_.start(loomd_, {"serve", "--simulate", "--listen",
                           url_.host() + ':' + QString::number(url_.port()), "--state-dir",
                           dir_.path() + QStringLiteral("/state")});
    ASSERT_TRUE(
        waitUntil([&] { return s.state() == Session::State::Live && s.reconnects() > 0; }, 90000))
        << s.lastError().toStdString();
    EXPECT_TRUE(waitUntil([&] { return s.cluster()->lastSeq() != seqBefore; }, 30000));
}

// Issue 17: an XID on one GPU is visible at Fit in every colour mode, its rack is badged, the
// counter counts it; a failed rack gets its badge; the event carries the XID's meaning.
TEST_F(LiveLoomd, AnInjectedXidIsVisibleInEveryColourModeAndCounted) {
    MainWindow w;
    Session* s = openConsole(w);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil(
        [&] {
            return state->hasSnapshot(Topic::GpuHealth) && state->hasSnapshot(Topic::LinkHealth);
        },
        60000))
        << s->lastError().toStdString();
    const int g = state->layout().gpuIndex("z1-r002-h1-gpu3");
    ASSERT_GE(g, 0);
    const int gpusBefore = state->failures()->count(FailureKind::Gpu);

    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry",
                     "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",Hostname=\"z1-r002-h1\"} 79\n",
                     "text/plain; version=0.0.4"),
              300);
    ASSERT_TRUE(waitUntil(
        [&] { return state->values(Topic::GpuHealth)[static_cast<size_t>(g)] == 2; }, 15000))
        << "gpu.health of z1-r002-h1-gpu3 never became failed";
    // The count is loomd's (GET /api/v1/failures, asked again when gpu.health moved).
    EXPECT_TRUE(waitUntil(
        [&] { return state->failures()->count(FailureKind::Gpu) >= gpusBefore + 1; }, 15000))
        << w.failureCounter()->text().toStdString();
    EXPECT_TRUE(w.failureCounter()->text().contains(
        QStringLiteral("%1 GPU").arg(state->failures()->count(FailureKind::Gpu))))
        << w.failureCounter()->text().toStdString();

    HallMapWidget* map = w.hallView()->map();
    map->fitAll();
    for (auto m :
         {Metric::Utilization, Metric::Temperature, Metric::Health, Metric::Provisioning}) {
        w.hallView()->metricBox()->setCurrentIndex(
            w.hallView()->metricBox()->findData(static_cast<int>(m)));
        ASSERT_EQ(map->metric(), m);
        const QImage img = map->grab().toImage();
        const QPoint at = map->gpuCenter(g).toPoint();
        EXPECT_EQ(rgb(img.pixel(at)), rgb(failedColor())) << metricName(m).toStdString();
        EXPECT_NE(rgb(img.pixel(at)), rgb(map->gpuColor(g)))
            << metricName(m).toStdString();  // the cell's own colour
    }
    EXPECT_GE(state->failures()
                  ->rackMarks()[static_cast<size_t>(state->layout().rackIndex("z1-r002"))]
                  .count,
              1);

    // The GPU panel's power/memory/ECC come from GET /api/v1/telemetry/gpus/<name>: the
    // simulator's last sample, and the XID just posted.
    Result<QJsonDocument> live = fail(QStringLiteral("no reply"));
    bool got = false;
    s->api()->get(QStringLiteral("/api/v1/telemetry/gpus/z1-r002-h1-gpu3"),
                  [&](Result<QJsonDocument> r) {
                      live = std::move(r);
                      got = true;
                  });
    ASSERT_TRUE(waitUntil([&] { return got; }, 15000));
    ASSERT_TRUE(live) << live.error().toStdString();
    EXPECT_EQ(live->object().value("name").toString(), "z1-r002-h1-gpu3");
    EXPECT_EQ(live->object().value("xid").toDouble(), 79.0);
    EXPECT_TRUE(live->object().value("power").isDouble())
        << QJsonDocument(live->object()).toJson().toStdString();
    w.hallView()->focusLocation(QStringLiteral("z1-r002-h1-gpu3"), {});
    ASSERT_TRUE(
        waitUntil([&] { return w.hallView()->detail()->toPlainText().contains(" W"); }, 15000))
        << w.hallView()->detail()->toPlainText().toStdString();
    EXPECT_TRUE(
        w.hallView()->detail()->toPlainText().contains("z1-r002-h1-nic3/p1"));  // its backend link
    // Its last hour and its link's, from GET /api/v1/telemetry/rollups?scope=gpu|link, as
    // sparklines: the utilization images have their points drawn (the simulator has reported;
    // a minute in, that is one dot, more than the faint baseline). Within 15 s: while the
    // panel has no point it asks again every 3 s (it asked every 20 s and the link's first
    // point could come late: "no data" stayed on screen for 20 s).
    auto sparkPixels = [&](const char* name) {
        const QImage img = w.hallView()
                               ->detail()
                               ->document()
                               ->resource(QTextDocument::ImageResource, QUrl(QLatin1String(name)))
                               .value<QImage>();
        int drawn = 0;
        for (int y = 0; y < img.height(); ++y)
            for (int x = 0; x < img.width(); ++x) drawn += qAlpha(img.pixel(x, y)) > 128 ? 1 : 0;
        return drawn;
    };
    ASSERT_TRUE(waitUntil(
        [&] {
            return w.hallView()->detail()->toPlainText().contains("Last hour") &&
                   sparkPixels("spark:gpu-util") > 4 && sparkPixels("spark:link-util") > 4;
        },
        15000))
        << w.hallView()->detail()->toPlainText().toStdString();
    EXPECT_TRUE(w.hallView()->detail()->toHtml().contains("spark:gpu-power"));
    EXPECT_TRUE(w.hallView()->detail()->toPlainText().contains(
        QRegularExpression(QStringLiteral("utilization: now \\d+ %"))))
        << w.hallView()->detail()->toPlainText().toStdString();
    bool missing = false;
    got = false;
    s->api()->get(QStringLiteral("/api/v1/telemetry/gpus/no-such-gpu"),
                  [&](Result<QJsonDocument> r) {
                      missing = !r && r.error().startsWith("404 ");
                      got = true;
                  });
    ASSERT_TRUE(waitUntil([&] { return got; }, 15000));
    EXPECT_TRUE(missing);

    // The event list explains the XID.
    ASSERT_TRUE(waitUntil(
        [&] {
            for (const auto& e : state->events())
                if (e.location == "z1-r002-h1-gpu3" && e.open()) return true;
            return false;
        },
        15000));
    EventModel* model = w.eventsView()->model();
    bool explained = false;
    for (int r = 0; r < model->rowCount(); ++r)
        if (model->event(r)->location == "z1-r002-h1-gpu3")
            explained |= model->index(r, EventModel::Message)
                             .data()
                             .toString()
                             .contains("fallen off the bus");
    EXPECT_TRUE(explained);

    // A failed rack: advanced out of planned (a planned rack cannot fail), then failed.
    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r003/advance", "{}"), 300);
    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r003/fail",
                     R"({"reason":"console test: PDU tripped"})"),
              300);
    const int rack = state->layout().rackIndex("z1-r003");
    ASSERT_TRUE(waitUntil(
        [&] { return state->layout().racks[static_cast<size_t>(rack)].state == "failed"; }, 15000))
        << "no provisioning message took z1-r003 to failed";
    EXPECT_TRUE(waitUntil([&] { return state->failures()->count(FailureKind::Rack) == 1; }, 15000))
        << w.failureCounter()->text().toStdString();
    EXPECT_TRUE(state->failures()->rackMarks()[static_cast<size_t>(rack)].rackFailed);
    EXPECT_TRUE(w.failureCounter()->text().contains("1 rack"))
        << w.failureCounter()->text().toStdString();

    // One count for both clients: the console's counter and loomd's GET /api/v1/failures (what
    // the web dashboard's counter shows) agree on every kind for this state (an XID, a failed
    // rack with its cables).
    QString loomdSaid;
    EXPECT_TRUE(waitUntil(
        [&] {
            const QJsonObject c =
                QJsonDocument::fromJson(getFrom(url_, token_, QStringLiteral("/api/v1/failures")))
                    .object()
                    .value(u"counts")
                    .toObject();
            loomdSaid = QString::fromUtf8(QJsonDocument(c).toJson(QJsonDocument::Compact));
            const char* kinds[] = {"gpu", "host", "link", "switch", "rack"};
            for (int k = 0; k < kFailureKindCount; ++k)
                if (c.value(QLatin1String(kinds[k])).toInt(-1) !=
                    state->failures()->count(static_cast<FailureKind>(k)))
                    return false;
            return true;
        },
        15000))
        << "loomd: " << loomdSaid.toStdString()
        << ", console: " << w.failureCounter()->text().toStdString();
    // And the same places: every item loomd lists is one the console marks, on loomd's rack
    // and GPU (the console derives none of them).
    // The legend's temperature scale and its marks are loomd's (GET /api/v1/legends).
    const QJsonObject temp =
        QJsonDocument::fromJson(getFrom(url_, token_, QStringLiteral("/api/v1/legends")))
            .object()
            .value(u"scales")
            .toObject()
            .value(u"temperature")
            .toObject();
    ASSERT_TRUE(temp.value(u"max").isDouble());
    EXPECT_EQ(metricScale(Metric::Temperature).max, temp.value(u"max").toDouble());
    ASSERT_EQ(static_cast<qsizetype>(metricScale(Metric::Temperature).thresholds.size()),
              temp.value(u"thresholds").toArray().size());
    for (qsizetype i = 0; i < temp.value(u"thresholds").toArray().size(); ++i)
        EXPECT_EQ(metricScale(Metric::Temperature).thresholds[static_cast<size_t>(i)].value,
                  temp.value(u"thresholds").toArray()[i].toObject().value(u"value").toDouble());

    QString unmatched;
    EXPECT_TRUE(waitUntil(
        [&] {
            const QJsonArray items =
                QJsonDocument::fromJson(getFrom(url_, token_, QStringLiteral("/api/v1/failures")))
                    .object()
                    .value(u"items")
                    .toArray();
            unmatched = items.isEmpty() ? QStringLiteral("(loomd lists none)") : QString();
            for (const auto& v : items) {
                const QJsonObject o = v.toObject();
                bool found = false;
                for (const auto& f : state->failures()->failures())
                    if (f.name == o.value(u"name").toString())
                        found = f.rack == state->layout().rackIndex(o.value(u"rack").toString()) &&
                                f.gpu == (o.value(u"gpu").isString()
                                              ? state->layout().gpuIndex(o.value(u"gpu").toString())
                                              : -1);
                if (!found)
                    unmatched = QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
            }
            return unmatched.isEmpty() &&
                   static_cast<int>(state->failures()->failures().size()) == items.size();
        },
        15000))
        << unmatched.toStdString();

    // The fabric's switch panel: a port opens its link's last hour (the GPU's own link here).
    FabricView* fv = w.fabricView();
    w.tabs()->setCurrentWidget(fv);
    ASSERT_TRUE(fv->focusLocation(QStringLiteral("z1-r002-rtsw"), {}));
    const int gpuLink = static_cast<int>(
        state->layout().links.indexOf(QRegularExpression(QStringLiteral(".*z1-r002-h1-nic3/.*"))));
    ASSERT_GE(gpuLink, 0);
    ASSERT_TRUE(fv->detail()->toHtml().contains(
        QStringLiteral("link:%1").arg(gpuLink)));  // its row links to it
    Q_EMIT fv->detail()->anchorClicked(QUrl(QStringLiteral("link:%1").arg(gpuLink)));
    EXPECT_EQ(fv->historyLink(), gpuLink);
    ASSERT_TRUE(waitUntil(
        [&] { return fv->detail()->toPlainText().contains(QStringLiteral("utilization: now")); },
        15000))
        << fv->detail()->toPlainText().left(600).toStdString();
    EXPECT_FALSE(
        fv->detail()
            ->document()
            ->resource(QTextDocument::ImageResource, QUrl(QStringLiteral("spark:fabric-link")))
            .value<QImage>()
            .isNull());

    // The frontend view: the failed rack's host cables are down, so its FSW is drawn red and
    // counted; the header's counts are what the inventory lists.
    NetworkView* net = w.networkView();
    w.tabs()->setCurrentWidget(net);
    ASSERT_TRUE(waitUntil(
        [&] {
            net->refresh();
            const int fsw = net->model().find("z1-r003-fsw");
            return net->loaded() && fsw >= 0 &&
                   net->model().switches[static_cast<size_t>(fsw)].links[2] > 0;
        },
        20000))
        << net->headerText().toStdString();
    const int fsw = net->model().find("z1-r003-fsw");
    EXPECT_EQ(net->model().switches.size(), 7u);  // dev-small: 4 FSW, 2 FCSW, 1 SSW
    EXPECT_EQ(net->map()->drawnSwitches(), 7);
    EXPECT_TRUE(net->headerText().contains("7 switches drawn (2 FCSW, 4 FSW, 1 SSW)"))
        << net->headerText().toStdString();
    EXPECT_GE(net->model().linkStates[2], 2);  // both hosts' frontend cables
    const QImage shot = net->map()->grab().toImage();
    const QRectF tile = net->map()->switchRect(fsw);  // its bottom row: the name is in the middle
    EXPECT_EQ(rgb(shot.pixel(QPoint(static_cast<int>(tile.center().x()),
                                    static_cast<int>(tile.bottom()) - 1))),
              rgb(failedColor()));
    net->showSwitch(fsw);
    EXPECT_TRUE(net->detail()->toPlainText().contains("z1-r003-h0-fe0"))
        << net->detail()->toPlainText().toStdString();
}

// Issue 17: a 401 stops the retry loop, forgets the role and asks for a token; a good token
// from the prompt connects again.
TEST_F(LiveLoomd, AWrongTokenStopsRetryingAndAsksForAToken) {
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
    ASSERT_TRUE(waitUntil(
        [&] { return s->state() == Session::State::Live && !s->cluster()->role().isEmpty(); },
        60000))
        << s->lastError().toStdString();
    EXPECT_EQ(s->cluster()->role(), "admin");
    EXPECT_TRUE(w.statusText().contains("role: admin")) << w.statusText().toStdString();
}

// Issue 17: acknowledging from one console shows (who and when) in a second console, through
// the server (POST /api/v1/events/{id}/ack, the "event" stream update).
TEST_F(LiveLoomd, AnAcknowledgementInOneConsoleShowsInAnother) {
    MainWindow a, b;
    a.session()->open(url_, token_);
    b.session()->open(url_, token_);
    ClusterState* sa = a.session()->cluster();
    ClusterState* sb = b.session()->cluster();
    ASSERT_TRUE(waitUntil(
        [&] { return sa->hasSnapshot(Topic::GpuHealth) && sb->hasSnapshot(Topic::GpuHealth); },
        60000));
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry",
                     "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",Hostname=\"z1-r001-h0\"} 48\n",
                     "text/plain; version=0.0.4"),
              300);
    qint64 id = 0;
    ASSERT_TRUE(waitUntil(
        [&] {
            for (const auto& e : sa->events())
                if (e.location == "z1-r001-h0-gpu5" && e.open()) id = e.id;
            return id != 0 && sb->findEvent(id) != nullptr;
        },
        20000))
        << "the XID event did not reach both consoles";
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
        GTEST_SKIP() << "this loomd has no POST /api/v1/events/{id}/ack yet: "
                     << error.toStdString();
    ASSERT_TRUE(error.isEmpty()) << error.toStdString();
    ASSERT_TRUE(
        waitUntil([&] { return sb->findEvent(id) && sb->findEvent(id)->acknowledged(); }, 15000))
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
            shown = model->index(r, EventModel::Acknowledged)
                        .data()
                        .toString()
                        .contains("console-test");
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

// Issue 17 item 2: a switch's panel shows its config version and the diff to the previous
// version: a drained rack's cables change the CTSW's config ("(up)" -> "(drained)").
TEST_F(LiveLoomdQuiet, ASwitchPanelShowsItsConfigDiffToThePreviousVersion) {
    MainWindow w;
    Session* s = openConsole(w);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::LinkHealth); }, 60000))
        << s->lastError().toStdString();
    FabricView* fv = w.fabricView();
    w.tabs()->setCurrentWidget(fv);
    int ctsw = -1;
    for (size_t i = 0; i < state->layout().switches.size() && ctsw < 0; ++i)
        if (state->layout().switches[i].role == "ctsw") ctsw = static_cast<int>(i);
    ASSERT_GE(ctsw, 0);
    const QString name = state->layout().switches[static_cast<size_t>(ctsw)].name;

    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r002/drain", "{}"), 300);
    ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r002/advance", "{}"),
              300);  // draining -> drained
    const int rack = state->layout().rackIndex("z1-r002");
    ASSERT_TRUE(waitUntil(
        [&] { return state->layout().racks[static_cast<size_t>(rack)].state == "drained"; },
        15000));
    // The panel, opened again until loomd has rerouted: the version, what changed, the diff.
    // The console may see the rack drained (its transition event) before loomd's live state
    // has reloaded and rerouted; until then the panel shows the previous change (the rack
    // going into service), so wait for the drained line itself.
    const QRegularExpression changed(
        QStringLiteral("changed from version \\d+: (\\d+) lines removed, (\\d+) added"));
    const QRegularExpression drainedLine(QStringLiteral("\\+ .*z1-r002-rtsw.*\\(drained\\)"));
    ASSERT_TRUE(waitUntil(
        [&] {
            fv->showSwitch(ctsw);
            waitUntil([&] { return !fv->detail()->toPlainText().contains("loading config"); },
                      5000);
            const QString t = fv->detail()->toPlainText();
            return t.contains(changed) && t.contains(drainedLine);
        },
        20000))
        << name.toStdString() << ": " << fv->detail()->toPlainText().toStdString();
    const QString text = fv->detail()->toPlainText();
    const auto m = changed.match(text);
    EXPECT_GE(m.captured(1).toInt(), 1) << text.toStdString();
    EXPECT_GE(m.captured(2).toInt(), 1) << text.toStdString();
    EXPECT_TRUE(text.contains(
        QRegularExpression(QStringLiteral("- .*z1-r002-rtsw.*\\((up|not_in_service)\\)"))))
        << text.toStdString();
    EXPECT_FALSE(text.contains(QRegularExpression(QStringLiteral("\\+ .*z1-r001-rtsw"))))
        << "rack 1 did not change";

    // The drained rack's switch is drawn as loomd says it (drained), and a rack burning in as
    // not in service (issue 36 item 3: loomd's word, GET /api/v1/fabric/topology), not as
    // healthy switches.
    for (int i = 0; i < 5; ++i)  // planned -> delivered -> racked -> cabled -> powered -> burn_in
        ASSERT_LT(postTo(url_, token_, "/api/v1/racks/z1-r003/advance", "{}"), 300);
    const int r3 = state->layout().rackIndex("z1-r003");
    ASSERT_TRUE(waitUntil(
        [&] { return state->layout().racks[static_cast<size_t>(r3)].state == "burn_in"; }, 15000))
        << state->layout().racks[static_cast<size_t>(r3)].state.toStdString();
    const HallLayout& hl = state->layout();
    ASSERT_TRUE(waitUntil(
        [&] { return state->switchState(hl.switchIndex("z1-r002-rtsw")) == "drained"; }, 15000))
        << state->switchState(hl.switchIndex("z1-r002-rtsw")).toStdString();
    EXPECT_EQ(state->switchState(hl.switchIndex("z1-r003-rtsw")), "not in service");
    EXPECT_EQ(state->switchState(hl.switchIndex("z1-r001-rtsw")), "up");
    FabricMapWidget* map = fv->map();
    map->setZone(-1);
    const QImage img = map->grab().toImage();
    auto corner = [&](const char* sw) {
        const QRectF t = map->switchRect(state->layout().switchIndex(QLatin1String(sw)));
        return QPoint(static_cast<int>(t.left()) + 1, static_cast<int>(t.bottom()) - 1);
    };
    EXPECT_EQ(rgb(img.pixel(corner("z1-r002-rtsw"))), rgb(linkHealthLut()[3]));
    EXPECT_EQ(rgb(img.pixel(corner("z1-r003-rtsw"))), rgb(linkHealthLut()[4]));
    EXPECT_NE(rgb(img.pixel(corner("z1-r001-rtsw"))), rgb(linkHealthLut()[3]));  // in service
    // The rack's elevation says so too: its RTSW's stored state and loomd's fabric word.
    w.hallView()->showRack(rack);
    ASSERT_TRUE(waitUntil(
        [&] { return w.hallView()->detail()->toPlainText().contains("drained (fabric: drained)"); },
        15000))
        << w.hallView()->detail()->toPlainText().toStdString();
}
