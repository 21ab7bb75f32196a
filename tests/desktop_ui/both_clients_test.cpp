// Issue 36 item 3: loom-console and the web dashboard on ONE real loomd show the same thing after
// a change — a GPU failure, an acknowledgement (made in the console), a rack transition — and
// colour failures alike (both take the colours from GET /api/v1/legends); and the switches of a
// failed, a drained, a planned and an in-service rack, and a link down, are drawn and named alike
// by loomd's words (GET /api/v1/fabric/topology `state`, link.health): on the console's fabric
// map and panel, the web's fabric map, zone drawing and switch page. The console is driven
// here; the web dashboard is read in a real headless Chromium by tests/web/read_dashboard.py.
// Skips (with the reason) when loomd is not built or Chromium/selenium is missing.
#include <QJsonArray>
#include <QProcess>

#include "live_loomd.hpp"
#include "loom/console/cluster_state.hpp"
#include "loom/console/events_view.hpp"
#include "loom/console/fabric_view.hpp"
#include "loom/console/failures.hpp"
#include "loom/console/main_window.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/session.hpp"
#include "loom/console/xid.hpp"

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

    // The changes: an XID on a GPU (a failure and an event), racks along their lifecycles
    // (z1-r002 drained, z1-r003 delivered then failed, z1-r004 left planned; z1-r001 stays in
    // service), an uplink of z1-r001's RTSW down, and the console acknowledging the event.
    ASSERT_LT(postTo(url_, token_, "/api/v1/telemetry",
                     "DCGM_FI_DEV_XID_ERRORS{gpu=\"2\",Hostname=\"z1-r001-h0\"} 79\n",
                     "text/plain; version=0.0.4"),
              300);
    ASSERT_EQ(postTo(url_, token_, "/api/v1/racks/z1-r003/advance", "{}"), 200);
    ASSERT_EQ(postTo(url_, token_, "/api/v1/racks/z1-r003/fail", R"({"reason": "both clients"})"),
              200);
    ASSERT_EQ(postTo(url_, token_, "/api/v1/racks/z1-r002/drain", "{}"), 200);
    ASSERT_EQ(postTo(url_, token_, "/api/v1/racks/z1-r002/advance", "{}"), 200);  // drained
    const HallLayout& h = state->layout();
    const int rtsw1 = h.switchIndex("z1-r001-rtsw");
    int uplink = -1;
    for (size_t j = 0; j < h.linkEnds.size() && uplink < 0; ++j) {
        const auto& e = h.linkEnds[j];
        if (e.aSwitch == rtsw1 && e.bSwitch >= 0 &&
            h.switches[static_cast<size_t>(e.bSwitch)].role == "ctsw")
            uplink = static_cast<int>(j);
    }
    ASSERT_GE(uplink, 0) << "no RTSW uplink of z1-r001";
    const QString uplinkName = h.links[uplink];
    const QByteArray status =
        QStringLiteral("loom_port_oper_status{switch=\"z1-r001-rtsw\",port=\"%1\"} ")
            .arg(uplinkName.section(QStringLiteral("--"), 0, 0).section(u'/', 1))
            .toUtf8();
    ASSERT_LT(
        postTo(url_, token_, "/api/v1/telemetry", status + "1\n", "text/plain; version=0.0.4"),
        300);
    ASSERT_LT(
        postTo(url_, token_, "/api/v1/telemetry", status + "0\n", "text/plain; version=0.0.4"),
        300);
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
                   state->layout().racks[static_cast<size_t>(rack)].state == "failed" &&
                   state->failures()->count(FailureKind::Gpu) >= 1;
        },
        20000))
        << "the console never showed the failure, the acknowledgement and the rack's new state";

    // The switches as loomd has them: the console waits until it has loomd's words (its
    // fabric map and panel draw and name them), and the link down.
    const char* kSwitches[] = {"z1-r001-rtsw", "z1-r002-rtsw", "z1-r003-rtsw", "z1-r004-rtsw",
                               "z1-ctsw01"};
    const QJsonObject topology =
        QJsonDocument::fromJson(getFrom(url_, token_, "/api/v1/fabric/topology")).object();
    auto loomdWord = [&](const char* name) {
        for (const auto& v : topology.value(u"switches").toArray())
            if (v.toObject().value(u"name").toString() == QLatin1String(name))
                return v.toObject().value(u"state").toString();
        return QString();
    };
    ASSERT_EQ(loomdWord("z1-r002-rtsw"), "drained") << "loomd's live state is not settled";
    FabricView* fv = w.fabricView();
    FabricMapWidget* map = fv->map();
    ASSERT_TRUE(waitUntil(
        [&] {
            for (const char* sw : kSwitches)
                if (map->switchWord(h.switchIndex(QLatin1String(sw))) != loomdWord(sw))
                    return false;
            const auto& lh = state->values(Topic::LinkHealth);
            return static_cast<size_t>(uplink) < lh.size() && lh[static_cast<size_t>(uplink)] == 2;
        },
        20000))
        << "the console never showed loomd's switch words and the link down";
    w.tabs()->setCurrentWidget(fv);
    map->setZone(-1);
    const QImage img = map->grab().toImage();

    // The web dashboard, read from a real browser on the same loomd.
    QProcess web;
    web.setProcessChannelMode(QProcess::SeparateChannels);
    web.start(QStringLiteral("/usr/bin/python3"),
              {QStringLiteral(LOOM_SOURCE_DIR "/tests/web/read_dashboard.py"),
               "--url",
               url_.toString(),
               "--token",
               token_,
               "--rack",
               "z1-r003",
               "--event",
               QString::number(id),
               "--colours",
               "--link",
               uplinkName,
               "--switch",
               "z1-r001-rtsw",
               "--switch",
               "z1-r002-rtsw",
               "--switch",
               "z1-r003-rtsw",
               "--switch",
               "z1-r004-rtsw",
               "--switch",
               "z1-ctsw01"});
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

    // The switches: the same word as loomd's in both (map, panel, page), the same colour drawn
    // (the console's map, the web's map and zone drawing), and the colour the word means: a
    // failed rack's RTSW down red, a drained one's drained grey, a planned one's not in service
    // grey (never red), an in-service one with an uplink down amber.
    const std::pair<const char*, std::pair<const char*, QRgb>> want[] = {
        {"z1-r001-rtsw", {"up", degradedColor()}},
        {"z1-r002-rtsw", {"drained", linkHealthLut()[3]}},
        {"z1-r003-rtsw", {"down", failedColor()}},
        {"z1-r004-rtsw", {"not in service", linkHealthLut()[4]}},
    };
    const QJsonObject webSwitches = shown.value(u"switches").toObject();
    for (const char* name : kSwitches) {
        const int sw = h.switchIndex(QLatin1String(name));
        ASSERT_GE(sw, 0) << name;
        const QJsonObject web = webSwitches.value(QLatin1String(name)).toObject();
        const QString word = map->switchWord(sw);
        EXPECT_EQ(word, loomdWord(name)) << name;
        EXPECT_EQ(web.value(u"fabric").toObject().value(u"word").toString(), word) << name;
        EXPECT_EQ(web.value(u"zone").toObject().value(u"word").toString(), word) << name;
        EXPECT_EQ(web.value(u"page").toString(), word) << name;
        const QRectF tile = map->switchRect(sw);
        ASSERT_FALSE(tile.isNull()) << name;
        const QString drawn = hexOf(
            img.pixel(QPoint(static_cast<int>(tile.left()) + 1, static_cast<int>(tile.top()) + 1)));
        EXPECT_EQ(drawn, hexOf(map->switchColor(sw).rgb())) << name;
        EXPECT_EQ(web.value(u"fabric").toObject().value(u"colour").toString(), drawn)
            << name << ": the web's fabric map vs the console's";
        EXPECT_EQ(web.value(u"zone").toObject().value(u"colour").toString(), drawn)
            << name << ": the web's zone drawing vs the console's fabric map";
        fv->showSwitch(sw);
        EXPECT_TRUE(fv->detail()->toPlainText().contains(word)) << name;
    }
    for (const auto& [name, expected] : want) {
        EXPECT_EQ(map->switchWord(h.switchIndex(QLatin1String(name))), expected.first) << name;
        EXPECT_EQ(webSwitches.value(QLatin1String(name))
                      .toObject()
                      .value(u"fabric")
                      .toObject()
                      .value(u"colour")
                      .toString(),
                  hexOf(expected.second))
            << name << " is " << expected.first;
    }
    // The bundles of zone z1: the same links and the same down (loomd's live words: the uplink
    // telemetry says is down, whose stored state is still active, and the failed rack's cables).
    const int z1 = h.zoneIndex("z1");
    const QJsonArray webBundles = shown.value(u"bundles").toObject().value(u"z1").toArray();
    ASSERT_EQ(webBundles.size(), 3) << out.toStdString();
    for (int pair = 0; pair < 3; ++pair) {
        const LinkBundle& b = map->bundle(z1, pair);
        EXPECT_EQ(webBundles[pair].toObject().value(u"links").toInt(), b.count)
            << "tier pair " << pair;
        EXPECT_EQ(webBundles[pair].toObject().value(u"down").toInt(), b.health[2])
            << "tier pair " << pair;
    }
    EXPECT_GE(map->bundle(z1, 1).health[2], 1) << "the RTSW uplink down";
    // The link down: the same word, drawn failed red in the web's zone drawing.
    const QJsonObject webLink = shown.value(u"links").toObject().value(uplinkName).toObject();
    EXPECT_EQ(webLink.value(u"word").toString(),
              linkHealthWord(state->values(Topic::LinkHealth)[static_cast<size_t>(uplink)]));
    EXPECT_EQ(webLink.value(u"word").toString(), "down");
    EXPECT_EQ(webLink.value(u"colour").toString(), hexOf(failedColor()));

    // What the XID means: loomd's catalogue (the web's rack panel explains with the same answer).
    ASSERT_TRUE(waitUntil([&] { return xidCatalogFromLoomd(); }, 10000));
    const auto catalog =
        QJsonDocument::fromJson(getFrom(url_, token_, "/api/v1/catalog/xid")).object();
    QString meaning79;
    for (const auto& v : catalog.value(u"items").toArray())
        if (v.toObject().value(u"code").toInt() == 79)
            meaning79 = v.toObject().value(u"meaning").toString();
    ASSERT_FALSE(meaning79.isEmpty());
    ASSERT_TRUE(xidInfo(79).has_value());
    EXPECT_EQ(xidInfo(79)->meaning, meaning79);

    const auto legends = QJsonDocument::fromJson(getFrom(url_, token_, "/api/v1/legends")).object();
    EXPECT_EQ(
        legends.value(u"colours").toObject().value(u"marks").toObject().value(u"failed").toString(),
        hexOf(failedColor()));
}

}  // namespace
}  // namespace loom::console::test
