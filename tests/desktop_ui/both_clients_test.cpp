// Issue 36 item 3: loom-console and the web dashboard on ONE real loomd show the same thing after
// a change — a GPU failure, an acknowledgement (made in the console), a rack transition — and
// colour failures alike (both take the colours from GET /api/v1/legends). The console is driven
// here; the web dashboard is read in a real headless Chromium by tests/web/read_dashboard.py.
// Skips (with the reason) when loomd is not built or Chromium/selenium is missing.
#include <QJsonArray>
#include <QProcess>

#include "live_loomd.hpp"
#include "loom/console/cluster_state.hpp"
#include "loom/console/events_view.hpp"
#include "loom/console/failures.hpp"
#include "loom/console/main_window.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/session.hpp"

namespace loom::console::test {
namespace {

QString hexOf(QRgb c) {
    return QStringLiteral("#%1%2%3")
        .arg(qRed(c), 2, 16, QLatin1Char('0'))
        .arg(qGreen(c), 2, 16, QLatin1Char('0'))
        .arg(qBlue(c), 2, 16, QLatin1Char('0'));
}

TEST_F(LiveLoomdQuiet, TheConsoleAndTheWebShowTheSameAfterAFailureAnAckAndARackTransition) {
    MainWindow w;
    Session* s = openConsole(w);
    ClusterState* state = s->cluster();
    ASSERT_TRUE(waitUntil([&] { return state->hasSnapshot(Topic::GpuHealth); }, 60000))
        << s->lastError().toStdString();

    // The changes: an XID on a GPU (a failure and an event), a rack one step along its lifecycle,
    // and the console acknowledging the event.
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry",
                     "DCGM_FI_DEV_XID_ERRORS{gpu=\"2\",Hostname=\"z1-r001-h0\"} 79\n",
                     "text/plain; version=0.0.4"),
              300);
    ASSERT_EQ(postTo(url_, token_, "/api/v1/racks/z1-r003/advance", "{}"), 200);
    qint64 id = 0;
    ASSERT_TRUE(waitUntil(
        [&] {
            for (const auto& e : state->events())
                if (e.location == "z1-r001-h0-gpu2" && e.open()) id = e.id;
            return id != 0;
        },
        20000))
        << "the XID event never reached the console";
    QString error = QStringLiteral("no reply");
    bool done = false;
    w.eventsView()->acknowledge(id, QStringLiteral("seen in both"), [&](QString e) {
        error = e;
        done = true;
    });
    ASSERT_TRUE(waitUntil([&] { return done; }, 15000));
    ASSERT_TRUE(error.isEmpty()) << error.toStdString();
    const int rack = state->layout().rackIndex("z1-r003");
    ASSERT_GE(rack, 0);
    ASSERT_TRUE(waitUntil(
        [&] {
            const Event* e = state->findEvent(id);
            return e && e->acknowledged() &&
                   state->layout().racks[static_cast<size_t>(rack)].state == "delivered" &&
                   state->failures()->count(FailureKind::Gpu) >= 1;
        },
        20000))
        << "the console never showed the failure, the acknowledgement and the rack's new state";

    // The web dashboard, read from a real browser on the same loomd.
    QProcess web;
    web.setProcessChannelMode(QProcess::SeparateChannels);
    web.start(
        QStringLiteral("/usr/bin/python3"),
        {QStringLiteral(LOOM_SOURCE_DIR "/tests/web/read_dashboard.py"), "--url", url_.toString(),
         "--token", token_, "--rack", "z1-r003", "--event", QString::number(id), "--colours"});
    ASSERT_TRUE(web.waitForFinished(120000)) << "read_dashboard.py did not finish";
    const QByteArray out = web.readAllStandardOutput();
    if (web.exitCode() == 77) GTEST_SKIP() << out.toStdString();
    ASSERT_EQ(web.exitCode(), 0) << out.toStdString() << web.readAllStandardError().toStdString();
    const QJsonObject shown = QJsonDocument::fromJson(out.trimmed()).object();
    ASSERT_FALSE(shown.isEmpty()) << out.toStdString();

    // The same counts by kind: both draw loomd's GET /api/v1/failures.
    const QJsonObject counts = shown.value(u"counts").toObject();
    const std::pair<const char*, FailureKind> kinds[] = {{"gpu", FailureKind::Gpu},
                                                         {"host", FailureKind::Host},
                                                         {"link", FailureKind::Link},
                                                         {"switch", FailureKind::Switch},
                                                         {"rack", FailureKind::Rack}};
    for (const auto& [name, kind] : kinds)
        EXPECT_EQ(counts.value(QLatin1String(name)).toInt(-1), state->failures()->count(kind))
            << name << ": web " << out.toStdString();
    EXPECT_GE(counts.value(u"gpu").toInt(), 1);
    // The same rack state, and the same acknowledgement (by whom).
    EXPECT_EQ(shown.value(u"racks").toObject().value(u"z1-r003").toString(),
              state->layout().racks[static_cast<size_t>(rack)].state);
    const QString row = shown.value(u"events").toObject().value(QString::number(id)).toString();
    EXPECT_TRUE(row.contains(QStringLiteral("ack %1").arg(state->findEvent(id)->acknowledgedBy)))
        << "web row: " << row.toStdString()
        << ", console: " << state->findEvent(id)->acknowledgedBy.toStdString();
    // The same failure colours: loomd's, in both.
    const QJsonObject colours = shown.value(u"colours").toObject();
    EXPECT_EQ(colours.value(u"failed").toString(), hexOf(failedColor()));
    EXPECT_EQ(colours.value(u"degraded").toString(), hexOf(degradedColor()));
    EXPECT_EQ(colours.value(u"quarantined").toString(), hexOf(quarantinedColor()));
    const auto legends = QJsonDocument::fromJson(getFrom(url_, token_, "/api/v1/legends")).object();
    EXPECT_EQ(
        legends.value(u"colours").toObject().value(u"marks").toObject().value(u"failed").toString(),
        hexOf(failedColor()));
}

}  // namespace
}  // namespace loom::console::test
