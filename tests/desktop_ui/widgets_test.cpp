#include "loom/console/fabric_map_widget.hpp"
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/hall_view.hpp"
#include "loom/console/palette.hpp"

#include "fixture.hpp"

#include <QImage>
#include <QJsonDocument>
#include <QMouseEvent>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace loom::console;

namespace {
QRgb rgb(QRgb c) { return c | 0xff000000u; }

QImage paint(QWidget& w)
{
    QImage img(w.size(), QImage::Format_RGB32);
    w.render(&img);
    return img;
}
}  // namespace

TEST(ConsoleHallMap, EveryGpuIsHitWhereItIsDrawn)
{
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

TEST(ConsoleHallMap, ColoursFollowDeltasAndMetric)
{
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
    ASSERT_TRUE(f.state->handleMessage(QJsonDocument::fromJson(
        R"({"type":"provisioning","seq":902,"rack":"z1-r002","from":"in_service","to":"failed"})").object()));
    EXPECT_EQ(rgb(map.gpuColor(16)), rgb(provisioningLut()[provisioningCode("failed")]));
    EXPECT_EQ(rgb(map.gpuColor(0)), rgb(provisioningLut()[provisioningCode("in_service")]));
}

TEST(ConsoleHallMap, ZoomKeepsTheAnchorAndClickSelects)
{
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
    QMouseEvent press(QEvent::MouseButtonPress, p, map.mapToGlobal(p), Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
    QMouseEvent release(QEvent::MouseButtonRelease, p, map.mapToGlobal(p), Qt::LeftButton, Qt::NoButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&map, &press);
    QCoreApplication::sendEvent(&map, &release);
    ASSERT_EQ(clicked.count(), 1);
    EXPECT_EQ(clicked.at(0).at(0).toInt(), 42);
    EXPECT_EQ(map.selectedGpu(), 42);
    EXPECT_EQ(map.selectedRack(), 2);
}

TEST(ConsoleHallMap, The24kHallFitsAndPaints)
{
    test::Fed f{SyntheticShape{}};
    HallMapWidget map(f.state.get());
    map.resize(1600, 1000);
    map.fitAll();
    const auto& h = f.state->layout();
    ASSERT_EQ(h.gpus.size(), 24576);
    // At fit-all zoom every GPU still gets its own cell on screen.
    EXPECT_GE(map.scale(), 2.0);
    for (int g = 0; g < h.gpus.size(); g += 97)
        ASSERT_EQ(map.gpuAt(map.gpuCenter(g)), g) << g;
    const QImage img = paint(map);
    const QPointF c = map.gpuCenter(12345);
    EXPECT_EQ(rgb(img.pixel(c.toPoint())), rgb(map.gpuColor(12345)));
    // Zoomed in, rack outlines and names are drawn for the racks on screen only.
    map.centerOnRack(700, HallMapWidget::kLabelScale);
    EXPECT_GE(map.scale(), HallMapWidget::kLabelScale);
    EXPECT_EQ(map.rackAt(QPointF(800, 500)), 700);
    paint(map);
}

TEST(ConsoleHallView, FocusAndDetailWithoutServer)
{
    test::Fed f;
    HallView view(f.state.get(), nullptr);
    view.resize(1200, 800);
    ASSERT_TRUE(view.focusLocation("z1-r003-h1-gpu2", {}));
    EXPECT_EQ(view.map()->selectedGpu(), f.state->layout().gpuIndex("z1-r003-h1-gpu2"));
    EXPECT_TRUE(view.detail()->toPlainText().contains("z1-r003-h1-gpu2"));
    EXPECT_TRUE(view.detail()->toPlainText().contains("z1-r003-h1-nic2/p1"));  // the GPU's backend link
    ASSERT_TRUE(view.focusLocation("z1-r004", {}));
    EXPECT_EQ(view.map()->selectedRack(), 3);
    EXPECT_FALSE(view.focusLocation("nowhere", {}));
    view.metricBox()->setCurrentIndex(1);
    EXPECT_EQ(view.map()->metric(), Metric::Temperature);
}

TEST(ConsoleFabricMap, BundlesCountLinksAndFailures)
{
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
    ASSERT_TRUE(f.state->handleMessage(makeDeltaMessage(950, Topic::LinkHealth, {{static_cast<std::uint32_t>(link), 2}})));
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
}
