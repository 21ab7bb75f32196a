#include "loom/console/events_view.hpp"
#include "loom/console/provisioning_board.hpp"

#include "fixture.hpp"
#include "qt_helpers.hpp"

#include <QJsonDocument>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include <tuple>

using namespace loom::console;

namespace {

using test::obj;

QJsonObject eventMsg(int seq, int id, const char* sev, const char* kind, const char* loc, const char* closed = nullptr)
{
    return obj(QStringLiteral(R"({"type":"event","seq":%1,"event":{"id":%2,"severity":"%3","kind":"%4","location":"%5",
        "rack":"z1-r001","message":"m%2","openedAt":"2026-11-22T08:00:%6Z","closedAt":%7}})")
                   .arg(seq).arg(id).arg(sev, kind, loc).arg(id % 60, 2, 10, QChar(u'0'))
                   .arg(closed ? QStringLiteral("\"%1\"").arg(closed) : QStringLiteral("null")));
}
}  // namespace

TEST(ConsoleRackModel, RowsFiltersAndLiveState)
{
    test::Fed f;
    RackTableModel model(f.state.get());
    RackFilterProxy proxy;
    proxy.setSourceModel(&model);
    ASSERT_EQ(model.rowCount(), 4);
    EXPECT_EQ(model.index(0, RackTableModel::Name).data().toString(), "z1-r001");
    EXPECT_EQ(model.index(0, RackTableModel::State).data().toString(), "in_service");
    EXPECT_EQ(model.index(0, RackTableModel::Gpus).data().toInt(), 16);
    EXPECT_TRUE(model.index(0, RackTableModel::Util).data().isValid());

    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    ASSERT_TRUE(f.state->handleMessage(obj(R"({"type":"provisioning","seq":100,"rack":"z1-r003","from":"in_service","to":"burn_in"})")));
    EXPECT_EQ(changed.count(), 1);
    EXPECT_EQ(model.index(2, RackTableModel::State).data().toString(), "burn_in");

    proxy.setStateFilter("burn_in");
    ASSERT_EQ(proxy.rowCount(), 1);
    EXPECT_EQ(proxy.index(0, 0).data().toString(), "z1-r003");
    proxy.setStateFilter({});
    proxy.setTextFilter("row02");
    EXPECT_EQ(proxy.rowCount(), 2);
    proxy.setTextFilter("R004");  // case-insensitive
    EXPECT_EQ(proxy.rowCount(), 1);
}

// The shapes of docs/api.md: GET /api/v1/phases items, and "phase" stream messages (status
// only: the counts a row had are kept).
TEST(ConsolePhases, ParsesTheApiShapeAndKeepsCountsOnStatusUpdates)
{
    auto a = parsePhase(obj(R"({"name":"phase-1","status":"running","progress":{"total":64,"inService":16,"inFlight":8,"failed":2,"inServicePercent":25.0}})"));
    EXPECT_EQ(a.name, "phase-1");
    EXPECT_EQ(a.state, "running");
    EXPECT_EQ(a.total, 64);
    EXPECT_EQ(a.done, 16);
    EXPECT_EQ(a.failed, 2);
    EXPECT_DOUBLE_EQ(a.percent(), 25.0);
    auto b = parsePhase(obj(R"({"name":"p2","status":"pending","progress":{"total":4,"inService":2,"failed":0}})"));
    EXPECT_EQ(b.state, "pending");
    EXPECT_EQ(b.total, 4);
    EXPECT_EQ(b.done, 2);

    test::qtApp();
    PhaseTableModel m;
    m.setPhases({a});
    m.upsert(b);
    EXPECT_EQ(m.rowCount(), 2);
    a.done = 64;
    m.upsert(a);
    EXPECT_EQ(m.rowCount(), 2);
    EXPECT_DOUBLE_EQ(m.index(0, PhaseTableModel::Progress).data().toDouble(), 100.0);
    // A stream message: new status, no counts.
    m.upsert(parsePhase(obj(R"({"type":"phase","name":"phase-1","status":"completed","message":"done"})")));
    EXPECT_EQ(m.phase(0)->state, "completed");
    EXPECT_EQ(m.phase(0)->total, 64);
    EXPECT_DOUBLE_EQ(m.index(0, PhaseTableModel::Progress).data().toDouble(), 100.0);
    // One for a phase not listed yet: a row with no counts.
    m.upsert(parsePhase(obj(R"({"name":"p3","status":"pending"})")));
    ASSERT_EQ(m.rowCount(), 3);
    EXPECT_EQ(m.phase(2)->total, 0);
}

TEST(ConsoleEvents, NewestFirstFilteredAndUpdatedInPlace)
{
    test::Fed f;
    EventModel model(f.state.get());
    EventFilterProxy proxy;
    proxy.setSourceModel(&model);
    ASSERT_TRUE(f.state->handleMessage(eventMsg(200, 1, "warning", "link_flap", "z1-r001-rtsw/p17--z1-ctsw01/p1")));
    ASSERT_TRUE(f.state->handleMessage(eventMsg(201, 2, "critical", "gpu_xid", "z1-r002-h1-gpu3")));
    ASSERT_TRUE(f.state->handleMessage(eventMsg(202, 3, "info", "rack_state", "z1-r003")));
    ASSERT_EQ(model.rowCount(), 3);
    EXPECT_EQ(model.index(0, EventModel::Kind).data().toString(), "rack_state");  // newest first

    proxy.setMinSeverity(1);
    EXPECT_EQ(proxy.rowCount(), 2);
    proxy.setMinSeverity(2);
    ASSERT_EQ(proxy.rowCount(), 1);
    EXPECT_EQ(proxy.index(0, EventModel::Location).data().toString(), "z1-r002-h1-gpu3");
    proxy.setMinSeverity(0);
    proxy.setKind("link_flap");
    EXPECT_EQ(proxy.rowCount(), 1);
    proxy.setKind({});
    proxy.setLocation("R002");
    EXPECT_EQ(proxy.rowCount(), 1);
    proxy.setLocation({});

    ASSERT_TRUE(f.state->handleMessage(eventMsg(203, 2, "critical", "gpu_xid", "z1-r002-h1-gpu3", "2026-11-22T08:09:00Z")));
    EXPECT_EQ(model.rowCount(), 3);
    EXPECT_EQ(model.index(1, EventModel::Status).data().toString(), "closed");
}

// Issue 39: after a reconnect the console re-reads the events and replaces what it held. Three
// events it holds as open (one acknowledged) were closed by loomd while it was away; the re-read
// says so, an event the stream delivered while the GETs were in flight stays, and the list,
// the failure count and the acknowledged column all follow loomd.
TEST(ConsoleEvents, AReloadReplacesWhatTheConsoleHeld)
{
    test::Fed f;
    EventModel model(f.state.get());
    ASSERT_TRUE(f.state->handleMessage(eventMsg(300, 11, "critical", "gpu_xid", "z1-r002-h1-gpu3")));
    ASSERT_TRUE(f.state->handleMessage(eventMsg(301, 12, "critical", "link_down", "z1-r001-rtsw/p17--z1-ctsw01/p1")));
    ASSERT_TRUE(f.state->handleMessage(eventMsg(302, 13, "warning", "gpu_temp", "z1-r002-h0-gpu1")));
    ASSERT_EQ(f.state->openFailures(), 3);

    f.state->beginEventsReload();
    // While the GETs are in flight the stream opens a new one.
    ASSERT_TRUE(f.state->handleMessage(eventMsg(400, 14, "critical", "gpu_xid", "z1-r002-h0-gpu2")));
    // loomd's answer: the three were closed (11 acknowledged first) while the console was away.
    std::vector<Event> fromLoomd;
    for (auto [id, kind, loc] : {std::tuple{11, "gpu_xid", "z1-r002-h1-gpu3"},
                                 std::tuple{12, "link_down", "z1-r001-rtsw/p17--z1-ctsw01/p1"},
                                 std::tuple{13, "gpu_temp", "z1-r002-h0-gpu1"}}) {
        auto e = parseEvent(eventMsg(0, id, "critical", kind, loc, "2026-11-22T08:30:00Z")
                                .value(u"event")
                                .toObject());
        ASSERT_TRUE(e);
        if (id == 11) {
            e->acknowledgedBy = QStringLiteral("operator-token");
            e->acknowledgedAt = QDateTime::currentDateTimeUtc();
        }
        fromLoomd.push_back(*e);
    }
    QSignalSpy reset(f.state.get(), &ClusterState::eventsReset);
    f.state->replaceEvents(fromLoomd);
    EXPECT_EQ(reset.count(), 1);
    EXPECT_FALSE(f.state->eventsReloading());
    ASSERT_EQ(model.rowCount(), 4);
    EXPECT_EQ(f.state->openFailures(), 1);  // only the one the stream opened meanwhile
    int open = 0, acked = 0;
    for (int r = 0; r < model.rowCount(); ++r) {
        open += model.index(r, EventModel::Status).data().toString() != u"closed";
        acked += !model.index(r, EventModel::Acknowledged).data().toString().isEmpty();
    }
    EXPECT_EQ(open, 1);
    EXPECT_EQ(acked, 1);
    // After the reload the stream applies as before (no buffering left behind).
    ASSERT_TRUE(f.state->handleMessage(eventMsg(401, 14, "critical", "gpu_xid", "z1-r002-h0-gpu2", "2026-11-22T08:31:00Z")));
    EXPECT_EQ(f.state->openFailures(), 0);
}

// Issue 39 item 2: the events topic is numbered (eventSeq, from hello on). A number skipped is
// a missed event message: the console says so once (MainWindow re-reads the open events);
// the next number, a replayed one below it, or another topic's message are not gaps.
TEST(ConsoleEvents, ASkippedEventSeqAsksForAReRead)
{
    test::Fed f;
    QSignalSpy gap(f.state.get(), &ClusterState::eventsGap);
    ASSERT_TRUE(f.state->handleMessage(obj(R"({"type":"hello","seq":500,"role":"viewer","eventSeq":41})")));
    auto numbered = [](int seq, int id, int eventSeq) {
        auto m = eventMsg(seq, id, "critical", "gpu_xid", "z1-r002-h1-gpu3");
        m.insert(QStringLiteral("eventSeq"), eventSeq);
        return m;
    };
    ASSERT_TRUE(f.state->handleMessage(numbered(501, 20, 42)));
    ASSERT_TRUE(f.state->handleMessage(obj(R"({"type":"phase","seq":502,"phase":{}})")));
    ASSERT_TRUE(f.state->handleMessage(numbered(503, 20, 43)));
    EXPECT_EQ(gap.count(), 0);
    ASSERT_TRUE(f.state->handleMessage(numbered(505, 21, 45)));  // 44 never came
    ASSERT_EQ(gap.count(), 1);
    EXPECT_EQ(gap.at(0).at(0).toString(), "eventSeq 43 -> 45");
    ASSERT_TRUE(f.state->handleMessage(numbered(400, 19, 40)));  // a replay: one it has
    ASSERT_TRUE(f.state->handleMessage(numbered(506, 21, 46)));
    EXPECT_EQ(gap.count(), 1);
    // loomd's own resync skips a number.
    ASSERT_TRUE(f.state->handleMessage(obj(R"({"type":"eventsResync","seq":507,"eventSeq":48})")));
    EXPECT_EQ(gap.count(), 2);
}

TEST(ConsoleEvents, ClickFocusesAndChartSamples)
{
    test::Fed f;
    EventsView view(f.state.get());
    QSignalSpy focus(&view, &EventsView::focusRequested);
    ASSERT_TRUE(f.state->handleMessage(eventMsg(300, 9, "critical", "gpu_xid", "z1-r002-h1-gpu3")));
    ASSERT_EQ(view.proxy()->rowCount(), 1);
    // A click only selects (the Events tab stays, to acknowledge); a double click goes to the map.
    Q_EMIT view.table()->clicked(view.proxy()->index(0, 0));
    EXPECT_EQ(focus.count(), 0);
    Q_EMIT view.table()->doubleClicked(view.proxy()->index(0, 0));
    ASSERT_EQ(focus.count(), 1);
    EXPECT_EQ(focus.at(0).at(0).toString(), "z1-r002-h1-gpu3");
    EXPECT_GE(view.kindBox()->findData("gpu_xid"), 0);
    const auto now = QDateTime::currentDateTime();
    for (int i = 0; i < 5; ++i)
        view.sample(now.addSecs(i));
    EXPECT_EQ(view.chartPoints(), 5);
}

TEST(ConsoleBoard, ActionsFollowTheRole)
{
    test::Fed f;
    ProvisioningBoard board(f.state.get(), nullptr);
    board.selectRack("z1-r002");
    EXPECT_EQ(board.selectedRacks(), QStringList{"z1-r002"});
    board.setRole("viewer");
    EXPECT_FALSE(board.button("advance")->isEnabled());
    EXPECT_TRUE(board.button("advance")->toolTip().contains("operator"));
    board.setRole("operator");
    EXPECT_TRUE(board.button("advance")->isEnabled());
    EXPECT_TRUE(board.button("drain")->isEnabled());
    EXPECT_FALSE(board.button("start")->isEnabled());  // phases need admin
    board.phaseModel()->setPhases({parsePhase(QJsonObject{{"name", "phase-1"}, {"status", "running"}})});
    board.setRole("admin");
    EXPECT_FALSE(board.button("start")->isEnabled());  // and a selected phase
}
