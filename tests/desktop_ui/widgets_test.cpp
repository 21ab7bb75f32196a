#include <gtest/gtest.h>

#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMouseEvent>
#include <QSignalSpy>
#include <cmath>

#include "fixture.hpp"
#include "loom/console/fabric_map_widget.hpp"
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/hall_view.hpp"
#include "loom/console/network_view.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/sparkline.hpp"
#include "qt_helpers.hpp"

using namespace loom::console;

namespace {

using test::paint;
using test::rgb;

}  // namespace

TEST(ConsoleHallMap, EveryGpuIsHitWhereItIsDrawn) {
    test::Fed f;
    HallMapWidget map(f.state.get());
    map.resize(800, 600);
    map.fitAll();
    const auto& h = f.state->layout();
    const QImage img = paint(map);
    for (int g = 0; g < h.gpus.size(); ++g) {
        const QPointF c = map.gpuCenter(g);
        ASSERT_TRUE(QRectF(0, 0, 800, 600).contains(c)) << g;
        EXPECT_EQ(map.gpuAt(c), g);
        EXPECT_EQ(map.rackAt(c), h.gpuRack[static_cast<size_t>(g)]);
        // The pixel under the centre has the GPU's metric colour.
        const auto v = f.state->values(Topic::GpuUtil)[static_cast<size_t>(g)];
        EXPECT_EQ(rgb(img.pixel(c.toPoint())), rgb(utilizationLut()[v])) << g;
        EXPECT_EQ(rgb(map.gpuColor(g)), rgb(utilizationLut()[v]));
    }
    EXPECT_EQ(map.gpuAt(QPointF(1, 1)), -1);  // the margin is floor, not a GPU
    EXPECT_EQ(map.gpuAt(QPointF(-50, 9000)), -1);
}

TEST(ConsoleHallMap, ColoursFollowDeltasAndMetric) {
    test::Fed f;
    HallMapWidget map(f.state.get());
    map.resize(640, 480);
    map.fitAll();
    ASSERT_TRUE(f.state->handleMessage(makeDeltaMessage(900, Topic::GpuUtil, {{5, 100}, {6, 0}})));
    EXPECT_EQ(rgb(map.gpuColor(5)), rgb(utilizationLut()[100]));
    EXPECT_EQ(rgb(map.gpuColor(6)), rgb(utilizationLut()[0]));
    EXPECT_NE(rgb(map.gpuColor(5)), rgb(map.gpuColor(6)));

    ASSERT_TRUE(f.state->handleMessage(makeDeltaMessage(901, Topic::GpuHealth, {{7, 2}, {8, 3}})));
    map.setMetric(Metric::Health);
    EXPECT_EQ(rgb(map.gpuColor(7)), rgb(healthLut()[2]));
    EXPECT_EQ(rgb(map.gpuColor(8)), rgb(healthLut()[3]));

    map.setMetric(Metric::Provisioning);
    ASSERT_TRUE(f.state->handleMessage(
        QJsonDocument::fromJson(
            R"({"type":"provisioning","seq":902,"rack":"z1-r002","from":"in_service","to":"failed"})")
            .object()));
    EXPECT_EQ(rgb(map.gpuColor(16)), rgb(provisioningLut()[provisioningCode("failed")]));
    EXPECT_EQ(rgb(map.gpuColor(0)), rgb(provisioningLut()[provisioningCode("in_service")]));
}

TEST(ConsoleHallMap, ZoomKeepsTheAnchorAndClickSelects) {
    test::Fed f;
    HallMapWidget map(f.state.get());
    map.resize(800, 600);
    map.fitAll();
    const double s0 = map.scale();
    const QPointF anchor = map.gpuCenter(21);
    map.zoomBy(1.25, anchor);
    EXPECT_DOUBLE_EQ(map.scale(), 1.25 * s0);
    EXPECT_EQ(map.gpuAt(anchor), 21);
    EXPECT_NEAR(map.gpuCenter(21).x(), anchor.x(), s0 + 1);
    map.zoomBy(1e6, anchor);  // clamped
    EXPECT_LE(map.scale(), 64.0);
    map.fitAll();
    EXPECT_DOUBLE_EQ(map.scale(), s0);

    QSignalSpy clicked(&map, &HallMapWidget::gpuClicked);
    const QPointF p = map.gpuCenter(42);
    QMouseEvent press(QEvent::MouseButtonPress, p, map.mapToGlobal(p), Qt::LeftButton,
                      Qt::LeftButton, Qt::NoModifier);
    QMouseEvent release(QEvent::MouseButtonRelease, p, map.mapToGlobal(p), Qt::LeftButton,
                        Qt::NoButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&map, &press);
    QCoreApplication::sendEvent(&map, &release);
    ASSERT_EQ(clicked.count(), 1);
    EXPECT_EQ(clicked.at(0).at(0).toInt(), 42);
    EXPECT_EQ(map.selectedGpu(), 42);
    EXPECT_EQ(map.selectedRack(), 2);
}

TEST(ConsoleHallMap, The24kHallFitsAndPaints) {
    test::Fed f{SyntheticShape{}};
    HallMapWidget map(f.state.get());
    map.resize(1600, 1000);
    map.fitAll();
    const auto& h = f.state->layout();
    ASSERT_EQ(h.gpus.size(), 24576);
    // At fit-all zoom every GPU still gets its own cell on screen.
    EXPECT_GE(map.scale(), 2.0);
    for (int g = 0; g < h.gpus.size(); g += 97) ASSERT_EQ(map.gpuAt(map.gpuCenter(g)), g) << g;
    const QImage img = paint(map);
    const QPointF c = map.gpuCenter(12345);
    EXPECT_EQ(rgb(img.pixel(c.toPoint())), rgb(map.gpuColor(12345)));
    // Zoomed in, rack outlines and names are drawn for the racks on screen only.
    map.centerOnRack(700, HallMapWidget::kLabelScale);
    EXPECT_GE(map.scale(), HallMapWidget::kLabelScale);
    EXPECT_EQ(map.rackAt(QPointF(800, 500)), 700);
    paint(map);
}

TEST(ConsoleHallView, FocusAndDetailWithoutServer) {
    test::Fed f;
    HallView view(f.state.get(), nullptr);
    view.resize(1200, 800);
    ASSERT_TRUE(view.focusLocation("z1-r003-h1-gpu2", {}));
    EXPECT_EQ(view.map()->selectedGpu(), f.state->layout().gpuIndex("z1-r003-h1-gpu2"));
    EXPECT_TRUE(view.detail()->toPlainText().contains("z1-r003-h1-gpu2"));
    EXPECT_TRUE(
        view.detail()->toPlainText().contains("z1-r003-h1-nic2/p1"));  // the GPU's backend link
    ASSERT_TRUE(view.focusLocation("z1-r004", {}));
    EXPECT_EQ(view.map()->selectedRack(), 3);
    EXPECT_FALSE(view.focusLocation("nowhere", {}));
    view.metricBox()->setCurrentIndex(1);
    EXPECT_EQ(view.map()->metric(), Metric::Temperature);
}

TEST(ConsoleFabricMap, BundlesCountLinksAndFailures) {
    test::Fed f;
    FabricMapWidget map(f.state.get());
    map.resize(1000, 700);
    // Small shape: 4 racks x 16 NIC links, 4 x 18 RTSW uplinks, 4 CTSW x 2 uplinks.
    EXPECT_EQ(map.bundle(0, 0).count, 64);
    EXPECT_EQ(map.bundle(0, 1).count, 72);
    EXPECT_EQ(map.bundle(0, 2).count, 8);
    const auto& h = f.state->layout();
    const int link = static_cast<int>(h.links.indexOf("z1-r002-rtsw/p17--z1-ctsw01/p2"));
    ASSERT_GE(link, 0);
    const int downBefore = map.bundle(0, 1).health[2];
    ASSERT_TRUE(f.state->handleMessage(
        makeDeltaMessage(950, Topic::LinkHealth, {{static_cast<std::uint32_t>(link), 2}})));
    EXPECT_EQ(map.bundle(0, 1).health[2], downBefore + 1);
    EXPECT_GE(map.switchStats(h.switchIndex("z1-r002-rtsw")).down, 1);
    paint(map);  // overview

    map.setZone(0);
    paint(map);  // lays out the drill-down
    const int rtsw = h.switchIndex("z1-r002-rtsw");
    const QRectF r = map.switchRect(rtsw);
    ASSERT_FALSE(r.isNull());
    EXPECT_EQ(map.switchAt(r.center()), rtsw);
    // The link matrix column above the RTSW holds its uplinks.
    const int j = map.linkAt(QPointF(r.center().x(), r.top() - 6));
    ASSERT_GE(j, 0);
    EXPECT_TRUE(h.links[j].startsWith("z1-r002-rtsw/")) << h.links[j].toStdString();

    QHash<QString, double> bw{{"z1-r002", 62.5}};
    map.setDegradation(bw);
    EXPECT_TRUE(map.overlay());
    paint(map);

    // Connection lost: the switch tiles are greyed and the map says why and how old.
    const QPoint at = map.switchRect(rtsw).center().toPoint();
    const QRgb live = paint(map).pixel(at);
    EXPECT_FALSE(map.isStale());
    map.setStaleNote(QStringLiteral("disconnected"));
    EXPECT_TRUE(map.isStale());
    EXPECT_TRUE(map.staleText().endsWith(QStringLiteral("old — disconnected")))
        << map.staleText().toStdString();
    EXPECT_NE(rgb(paint(map).pixel(at)), rgb(live));
    map.setStaleNote({});
    EXPECT_EQ(rgb(paint(map).pixel(at)), rgb(live));
}

// The GPU/link sparklines: rollup items are placed by their minute (a missing minute is a gap,
// not a closed-up line), values are drawn at their height, alarm minutes as red bars.
TEST(ConsoleSparkline, PlacesMinutesAndDrawsValuesAndAlarms) {
    QJsonArray items;
    auto item = [](const char* minute, double util, int down) {
        return QJsonObject{
            {"minute", QString::fromLatin1(minute)}, {"utilAvg", util}, {"downSamples", down}};
    };
    items.append(item("2026-11-25T19:00:00.000Z", 100, 0));
    items.append(item("2026-11-25T19:01:00.000Z", 100, 3));
    // 19:02 missing
    items.append(item("2026-11-25T19:03:00.000Z", 50, 0));
    items.append(QJsonObject{{"minute", "2026-11-25T19:04:00.000Z"}, {"utilAvg", QJsonValue()}});
    const auto s = seriesOf(items, "utilAvg", 5);
    ASSERT_EQ(s.size(), 5u);
    EXPECT_EQ(s[0], 100);
    EXPECT_EQ(s[1], 100);
    EXPECT_TRUE(std::isnan(s[2]));  // no item for 19:02
    EXPECT_EQ(s[3], 50);
    EXPECT_TRUE(std::isnan(s[4]));  // null: no value
    const auto a = alarmsOf(items, "downSamples", 5);
    EXPECT_EQ(a, (std::vector<bool>{false, true, false, false, false}));
    // Only the newest 3 minutes fit in 3 points.
    EXPECT_EQ(seriesOf(items, "utilAvg", 3)[1], 50);

    const QImage img = sparkline(s, 0, 100, 0xff0000ff, a, QSize(101, 22));
    auto opaque = [&](int x, int y) { return qAlpha(img.pixel(x, y)) > 100; };
    // x of point i = 1 + 99 * i / 4; 100 % is the top row (y 1), 0 % the bottom (y 20), 50 %
    // y 10.5.
    EXPECT_TRUE(opaque(1, 1));                              // 19:00 at 100 %
    EXPECT_FALSE(opaque(1, 18));                            // nothing below it
    EXPECT_EQ(rgb(img.pixel(26, 15)), rgb(failedColor()));  // 19:01 down: a red bar behind the line
    EXPECT_FALSE(opaque(62, 10));  // 19:02 missing: no line through the gap
    EXPECT_TRUE(opaque(75, 10));   // 19:03 at 50 %
    EXPECT_EQ(sparkSummary(s, QStringLiteral(" %")),
              QStringLiteral("now 50 % · max 100 % · min 50 %"));
    EXPECT_EQ(sparkSummary(std::vector<double>(3, std::nan("")), QStringLiteral(" %")),
              QStringLiteral("no data in the last hour"));
}

// The frontend/storage view's model and map: links joined to switches by their ends, counted
// by state, tiles coloured by the worst of them, every switch drawn and hit where drawn.
TEST(ConsoleNetworkMap, CountsColoursAndHits) {
    test::qtApp();
    auto sw = [](const char* name, const char* role, const char* zone, const char* state) {
        return QJsonObject{{"name", name}, {"role", role}, {"zone", zone}, {"state", state}};
    };
    // An older loomd's link: the stored state alone.
    auto link = [](const char* a, const char* b, const char* net, const char* state) {
        return QJsonObject{
            {"name", QStringLiteral("%1--%2").arg(QLatin1String(a), QLatin1String(b))},
            {"aPort", a},
            {"bPort", b},
            {"network", net},
            {"state", state}};
    };
    const QJsonArray switches{
        sw("fcsw01", "fcsw", "", "in_service"), sw("fcsw02", "fcsw", "", "in_service"),
        sw("z1-r001-fsw", "fsw", "z1", "in_service"), sw("z1-r002-fsw", "fsw", "z1", "planned"),
        sw("z1-s01-ssw", "ssw", "z1", "in_service")};
    const QJsonArray links{link("z1-r001-h0-fe0/p1", "z1-r001-fsw/p1", "frontend", "active"),
                           link("z1-r001-h1-fe0/p1", "z1-r001-fsw/p2", "frontend", "down"),
                           link("z1-r001-fsw/p49", "fcsw01/p1", "frontend", "active"),
                           link("z1-r001-fsw/p50", "fcsw02/p1", "frontend", "active"),
                           link("z1-r002-fsw/p49", "fcsw01/p2", "frontend", "planned"),
                           link("z1-s01-n0-nic0/p1", "z1-s01-ssw/p1", "storage", "drained"),
                           link("z1-s01-ssw/p33", "fcsw02/p3", "storage", "active")};
    NetworkModel m = NetworkModel::build(switches, links);
    ASSERT_EQ(m.switches.size(), 5u);
    EXPECT_EQ(m.linkStates, (std::array<int, 5>{4, 1, 1, 1, 0}));
    const auto& fsw1 = m.switches[static_cast<size_t>(m.find("z1-r001-fsw"))];
    EXPECT_EQ(fsw1.links, (std::array<int, 5>{3, 0, 1, 0, 0}));
    EXPECT_EQ(NetworkMapWidget::switchColor(fsw1), degradedColor());  // one of four down
    EXPECT_EQ(NetworkMapWidget::switchColor(m.switches[static_cast<size_t>(m.find("z1-r002-fsw"))]),
              linkHealthLut()[4]);
    EXPECT_EQ(NetworkMapWidget::switchColor(m.switches[static_cast<size_t>(m.find("z1-s01-ssw"))]),
              linkHealthLut()[3]);
    NetSwitch allDown = fsw1;
    allDown.links = {0, 1, 2, 0, 0};  // every in-service link down
    EXPECT_EQ(NetworkMapWidget::switchColor(allDown), failedColor());
    EXPECT_EQ(NetworkMapWidget::switchColor(m.switches[static_cast<size_t>(m.find("fcsw01"))]),
              linkHealthLut()[0]);

    // loomd's word for a link, not its stored state, as the web's networks view reads it
    // (issue 36 item 3): an active cable loomd says is down (a critical event open) is down; one
    // it says is degraded makes its switch amber.
    auto said = [&](QJsonObject l, const char* health) {
        l.insert("health", health);
        return l;
    };
    const NetworkModel w = NetworkModel::build(
        switches,
        QJsonArray{
            said(link("z1-r001-h0-fe0/p1", "z1-r001-fsw/p1", "frontend", "active"), "down"),
            said(link("z1-r001-h1-fe0/p1", "z1-r001-fsw/p2", "frontend", "active"), "down"),
            said(link("z1-r002-fsw/p49", "fcsw01/p2", "frontend", "active"), "degraded"),
            said(link("z1-s01-ssw/p33", "fcsw02/p3", "storage", "planned"), "not in service")});
    EXPECT_EQ(w.linkStates, (std::array<int, 5>{0, 1, 2, 0, 1}));
    EXPECT_EQ(NetworkMapWidget::switchColor(w.switches[static_cast<size_t>(w.find("z1-r001-fsw"))]),
              failedColor());
    EXPECT_EQ(NetworkMapWidget::switchColor(w.switches[static_cast<size_t>(w.find("fcsw01"))]),
              degradedColor());
    EXPECT_EQ(NetworkMapWidget::switchColor(w.switches[static_cast<size_t>(w.find("fcsw02"))]),
              linkHealthLut()[4]);

    NetworkMapWidget map;
    map.resize(900, 500);
    map.setModel(&m);
    EXPECT_EQ(map.drawnSwitches(), 5);
    const QImage img = paint(map);
    for (int i = 0; i < 5; ++i) {
        const QRectF r = map.switchRect(i);
        ASSERT_FALSE(r.isNull()) << i;
        EXPECT_EQ(map.switchAt(r.center()), i);
        EXPECT_EQ(rgb(img.pixel(r.center().toPoint() + QPoint(0, r.height() / 2 - 1))),
                  rgb(NetworkMapWidget::switchColor(m.switches[static_cast<size_t>(i)])))
            << m.switches[static_cast<size_t>(i)].name.toStdString();
    }
    // The core band is above the access band, and every group fits in the widget.
    EXPECT_LT(map.switchRect(m.find("fcsw01")).bottom(),
              map.switchRect(m.find("z1-r001-fsw")).top());
    for (int i = 0; i < 5; ++i) EXPECT_LE(map.switchRect(i).right(), map.width()) << i;
}
