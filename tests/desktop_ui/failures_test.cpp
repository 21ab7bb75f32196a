// Failures on top of every colour mode: the overlay on the 24k hall at Fit (pixels of the
// painted image at the failed GPU's place), rack badges, the counter and its filter, racks
// that report no data, and the utilization window. Fed with the wire shapes of the 24k
// cluster (synthetic.hpp) and loomd's answers to GET /api/v1/failures (the console draws and
// counts only those: it derives no failure itself); the same against a real loomd is in
// live_test.cpp.
#include <gtest/gtest.h>

#include <QColor>
#include <QElapsedTimer>
#include <QFontMetrics>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "fixture.hpp"
#include "loom/console/events_view.hpp"
#include "loom/console/failure_counter.hpp"
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/xid.hpp"
#include "qt_helpers.hpp"

using namespace loom::console;

namespace {

using test::paint;
using test::rgb;

QJsonObject json(const char* text) { return QJsonDocument::fromJson(text).object(); }

// The colour a GPU cell would have with no failure overlay, in metric m.
QRgb healthyColour(const ClusterState& s, Metric m, int g) {
    const auto& h = s.layout();
    const auto& rack = h.racks[static_cast<size_t>(h.gpuRack[static_cast<size_t>(g)])];
    switch (m) {
        case Metric::Utilization:
            return utilizationLut()[s.gpuUtilShown()[static_cast<size_t>(g)]];
        case Metric::Temperature:
            return temperatureLut()[s.values(Topic::GpuTemp)[static_cast<size_t>(g)]];
        case Metric::Health:
            return healthLut()[0];
        case Metric::Provisioning:
            return provisioningLut()[provisioningCode(rack.state)];
    }
    return 0;
}

// loomd's answer to GET /api/v1/failures (docs/api.md) for these items; `counts` overrides
// the count of a kind (loomd cuts its list at 5,000 items, never its counts).
struct Item {
    const char* kind;
    QString name;
    const char* state;
    bool failed;
    QString rack;
    QString gpu;
};
QJsonObject loomdAnswer(const ClusterState& s, const std::vector<Item>& items,
                        QJsonObject counts = {}) {
    QJsonArray arr;
    QHash<QString, int> tally;
    for (const auto& i : items) {
        arr.append(QJsonObject{{"kind", i.kind},
                               {"name", i.name},
                               {"state", i.state},
                               {"failed", i.failed},
                               {"rack", i.rack.isEmpty() ? QJsonValue() : QJsonValue(i.rack)},
                               {"gpu", i.gpu.isEmpty() ? QJsonValue() : QJsonValue(i.gpu)}});
        ++tally[QLatin1String(i.kind)];
    }
    for (const char* k : {"gpu", "host", "link", "switch", "rack"})
        if (!counts.contains(QLatin1String(k)))
            counts.insert(QLatin1String(k), tally.value(QLatin1String(k)));
    return {{"layoutVersion", s.layout().layoutVersion},
            {"counts", counts},
            {"items", arr},
            {"truncated", false}};
}

QString rackOfGpu(const ClusterState& s, int g) {
    return s.layout().racks[static_cast<size_t>(s.layout().gpuRack[static_cast<size_t>(g)])].name;
}

// A GPU with no failure of any kind in its rack, away from the floor's edges.
int quietGpu(const ClusterState& s, int from) {
    const auto& gh = s.values(Topic::GpuHealth);
    for (int g = from; g < static_cast<int>(gh.size()); ++g) {
        const int rack = s.layout().gpuRack[static_cast<size_t>(g)];
        if (s.failures()->rackMarks()[static_cast<size_t>(rack)].count == 0 &&
            gh[static_cast<size_t>(g)] == 0)
            return g;
    }
    return -1;
}
}  // namespace

TEST(ConsoleFailures, AFailedGpuIsVisibleAtFitInEveryColourModeAt24k) {
    test::Fed f{SyntheticShape{}};
    HallMapWidget map(f.state.get());
    map.resize(1400, 900);
    paint(map);  // delivers the pending resize: the floor is laid out for this size
    map.fitAll();
    ASSERT_EQ(f.state->layout().gpus.size(), 24576);
    EXPECT_LT(map.scale(), HallMapWidget::kMinMarkerPx);  // a cell alone would be a few pixels

    const int g = quietGpu(*f.state, 12000);
    ASSERT_GE(g, 0);
    const QPoint at = map.gpuCenter(g).toPoint();
    // Before: the cell has its metric's colour in every mode.
    for (auto m :
         {Metric::Utilization, Metric::Temperature, Metric::Health, Metric::Provisioning}) {
        map.setMetric(m);
        EXPECT_EQ(rgb(paint(map).pixel(at)), rgb(healthyColour(*f.state, m, g)))
            << metricName(m).toStdString();
    }
    // An XID: the server marks the GPU failed in gpu.health; the console asks loomd for the
    // failures (it counts none itself) and draws loomd's answer.
    QSignalSpy asks(f.state->failures(), &FailureIndex::refreshWanted);
    ASSERT_TRUE(f.state->handleMessage(
        makeDeltaMessage(5000, Topic::GpuHealth, {{static_cast<std::uint32_t>(g), 2}})));
    EXPECT_GE(asks.count(), 1);
    EXPECT_EQ(f.state->failures()->count(FailureKind::Gpu), 0);  // not until loomd says so
    const QString gpu = f.state->layout().gpus[g];
    ASSERT_TRUE(f.state->failures()->applyLoomd(
        loomdAnswer(*f.state, {{"gpu", gpu, "failed", true, rackOfGpu(*f.state, g), gpu}})));
    EXPECT_EQ(f.state->failures()->count(FailureKind::Gpu), 1);
    for (auto m :
         {Metric::Utilization, Metric::Temperature, Metric::Health, Metric::Provisioning}) {
        map.setMetric(m);
        const QImage img = paint(map);
        const QRgb healthy = rgb(healthyColour(*f.state, m, g));
        EXPECT_NE(rgb(img.pixel(at)), healthy) << metricName(m).toStdString();
        EXPECT_EQ(rgb(img.pixel(at)), rgb(failedColor())) << metricName(m).toStdString();
        // At least kMinMarkerPx across: the marker covers the pixels around the centre too.
        for (const QPoint d : {QPoint(-2, 0), QPoint(2, 0), QPoint(0, -2), QPoint(0, 2)})
            EXPECT_EQ(rgb(img.pixel(at + d)), rgb(failedColor())) << metricName(m).toStdString();
        // Its rack is outlined and badged.
        const int rack = f.state->layout().gpuRack[static_cast<size_t>(g)];
        EXPECT_GE(f.state->failures()->rackMarks()[static_cast<size_t>(rack)].count, 1);
    }
}

TEST(ConsoleFailures, AFailedRackGetsItsBadgeAndTheCounterCounts) {
    test::Fed f{SyntheticShape{}};
    HallMapWidget map(f.state.get());
    map.resize(1400, 900);
    paint(map);
    map.fitAll();
    FailureCounter counter(f.state->failures());
    ASSERT_TRUE(f.state->failures()->applyLoomd(loomdAnswer(*f.state, {})));  // at connect
    const int racksBefore = f.state->failures()->count(FailureKind::Rack);
    EXPECT_EQ(racksBefore, 0);
    EXPECT_TRUE(counter.text().contains("0 racks")) << counter.text().toStdString();

    const int g = quietGpu(*f.state, 700 * 16);
    ASSERT_GE(g, 0);
    const int rack = f.state->layout().gpuRack[static_cast<size_t>(g)];
    const QString name = f.state->layout().racks[static_cast<size_t>(rack)].name;
    ASSERT_TRUE(f.state->handleMessage(
        QJsonDocument::fromJson(
            QStringLiteral(
                R"({"type":"provisioning","seq":9000,"rack":"%1","from":"in_service","to":"failed"})")
                .arg(name)
                .toUtf8())
            .object()));
    ASSERT_TRUE(f.state->failures()->applyLoomd(
        loomdAnswer(*f.state, {{"rack", name, "failed", true, name, {}}})));
    EXPECT_EQ(f.state->failures()->count(FailureKind::Rack), 1);
    const RackMark& m = f.state->failures()->rackMarks()[static_cast<size_t>(rack)];
    EXPECT_TRUE(m.rackFailed);
    EXPECT_TRUE(m.fresh);  // it appeared after the console connected: a halo
    EXPECT_TRUE(counter.text().contains("1 rack")) << counter.text().toStdString();

    // The badge sits on the rack's top-right corner, in the failure colour, at any zoom.
    map.setMetric(Metric::Utilization);
    const QImage img = paint(map);
    const QPointF top =
        map.gpuCenter(f.state->layout().racks[static_cast<size_t>(rack)].gpuOffset + 7);
    const QPoint badge(static_cast<int>(top.x() + map.scale() / 2),
                       static_cast<int>(top.y() - map.scale() / 2));
    // The rack's outline ends 3.5 px above its top edge; the badge on its top-right corner
    // reaches 6 px: the row 4 px above the corner is red only where the badge is.
    int red = 0;
    for (int dx = -8; dx <= 8; ++dx)
        red += rgb(img.pixel(badge + QPoint(dx, -4))) == rgb(failedColor());
    EXPECT_GE(red, 5) << "no badge at the rack's corner";
    // Elsewhere above the rack's top edge, away from the corner, there is no badge.
    int elsewhere = 0;
    const QPoint left(static_cast<int>(top.x() - 6 * map.scale()), badge.y());
    for (int dx = -2; dx <= 2; ++dx)
        elsewhere += rgb(img.pixel(left + QPoint(dx, -4))) == rgb(failedColor());
    EXPECT_EQ(elsewhere, 0);

    // Repair: the rack is no longer a failure.
    ASSERT_TRUE(f.state->handleMessage(
        QJsonDocument::fromJson(
            QStringLiteral(
                R"({"type":"provisioning","seq":9001,"rack":"%1","from":"failed","to":"repair"})")
                .arg(name)
                .toUtf8())
            .object()));
    ASSERT_TRUE(f.state->failures()->applyLoomd(loomdAnswer(*f.state, {})));
    EXPECT_EQ(f.state->failures()->count(FailureKind::Rack), 0);
    EXPECT_EQ(f.state->failures()->rackMarks()[static_cast<size_t>(rack)].count, 0);
    // Back again: new again (a halo), not "seen at connect".
    ASSERT_TRUE(f.state->failures()->applyLoomd(
        loomdAnswer(*f.state, {{"rack", name, "failed", true, name, {}}})));
    EXPECT_TRUE(f.state->failures()->rackMarks()[static_cast<size_t>(rack)].fresh);
}

// loomd's counts are what the counter shows, whole even when its list is cut; its items are
// drawn where loomd places them (a NIC cable on its rail GPU, as loomd says, not as the console
// would guess); an answer for another layout is not applied.
TEST(ConsoleFailures, LoomdsCountsAndPlacesReachCounterMapAndEvents) {
    test::Fed f;
    const auto& h = f.state->layout();
    FailureIndex* fi = f.state->failures();
    EXPECT_FALSE(fi->hasAnswer());
    EXPECT_EQ(fi->total(), 0);
    const QString link = QStringLiteral("z1-r001-h1-nic4/p1--z1-r001-rtsw/p13");
    ASSERT_GE(h.links.indexOf(link), 0);
    const QJsonObject answer =
        loomdAnswer(*f.state,
                    {{"gpu", "z1-r002-h0-gpu5", "failed", true, "z1-r002", "z1-r002-h0-gpu5"},
                     {"host", "z1-r003-h1", "quarantined", false, "z1-r003", "z1-r003-h1-gpu0"},
                     {"link", link, "down", true, "z1-r001", "z1-r001-h1-gpu4"},
                     {"switch", "z1-ctsw02", "down", true, {}, {}}},
                    QJsonObject{{"link", 6001}});  // more than loomd lists: the count is loomd's
    // Another layout version: not applied.
    QJsonObject other = answer;
    other.insert("layoutVersion", h.layoutVersion + 1);
    EXPECT_FALSE(fi->applyLoomd(other));
    EXPECT_EQ(fi->total(), 0);
    ASSERT_TRUE(fi->applyLoomd(answer));
    EXPECT_TRUE(fi->hasAnswer());
    EXPECT_EQ(fi->count(FailureKind::Gpu), 1);
    EXPECT_EQ(fi->count(FailureKind::Host), 1);
    EXPECT_EQ(fi->count(FailureKind::Link), 6001);
    EXPECT_EQ(fi->count(FailureKind::Switch), 1);
    EXPECT_EQ(fi->count(FailureKind::Rack), 0);
    bool nicMarked = false;
    for (const auto& fl : fi->failures())
        if (fl.kind == FailureKind::Link && fl.name == link)
            nicMarked =
                fl.gpu == h.gpuIndex("z1-r001-h1-gpu4") && fl.rack == h.rackIndex("z1-r001");
    EXPECT_TRUE(nicMarked);
    EXPECT_EQ(fi->rackMarks()[static_cast<size_t>(h.rackIndex("z1-r001"))].count, 1);
    FailureCounter counter(fi);
    EXPECT_TRUE(counter.text().contains("6001 links")) << counter.text().toStdString();

    // The counter's GPU button filters the map's overlay and the event list.
    f.state->addEvents({{1,
                         0,
                         "critical",
                         "gpu_xid",
                         "z1-r002-h0-gpu5",
                         "z1-r002",
                         "XID 79",
                         QDateTime::currentDateTimeUtc(),
                         {}},
                        {2,
                         0,
                         "critical",
                         "link_down",
                         link,
                         "z1-r001",
                         "down",
                         QDateTime::currentDateTimeUtc(),
                         {}}});
    EventsView events(f.state.get());
    EXPECT_EQ(events.proxy()->rowCount(), 2);
    counter.button(FailureKind::Gpu)->click();
    EXPECT_EQ(fi->filter(), failureBit(FailureKind::Gpu));
    EXPECT_EQ(events.proxy()->rowCount(), 1);
    EXPECT_EQ(events.proxy()->index(0, EventModel::Kind).data().toString(), "gpu_xid");
    int marked = 0;
    for (const auto& m : fi->rackMarks()) marked += m.count;
    EXPECT_EQ(marked, 1);                       // only the GPU's rack carries a mark now
    counter.button(FailureKind::Gpu)->click();  // again: everything
    EXPECT_EQ(fi->filter(), kAllFailureKinds);
    EXPECT_EQ(events.proxy()->rowCount(), 2);
}

TEST(ConsoleFailures, RacksThatAreNotPoweredDrawAsNoData) {
    test::Fed f;
    HallMapWidget map(f.state.get());
    map.resize(640, 480);
    map.fitAll();
    const auto& h = f.state->layout();
    const int g = h.gpuIndex("z1-r002-h0-gpu0");
    std::vector<std::pair<std::uint32_t, std::uint8_t>> busy;
    for (int i = 0; i < 16; ++i) busy.emplace_back(static_cast<std::uint32_t>(g + i), 90);
    ASSERT_TRUE(f.state->handleMessage(makeDeltaMessage(300, Topic::GpuUtil, busy)));
    EXPECT_EQ(rgb(map.gpuColor(g)), rgb(utilizationLut()[90]));
    ASSERT_TRUE(f.state->handleMessage(json(
        R"({"type":"provisioning","seq":301,"rack":"z1-r002","from":"in_service","to":"planned"})")));
    EXPECT_EQ(rgb(map.gpuColor(g)), rgb(noDataColor()));  // whatever the stream says
    map.setMetric(Metric::Temperature);
    EXPECT_EQ(rgb(map.gpuColor(g)), rgb(noDataColor()));
    ASSERT_TRUE(f.state->handleMessage(json(
        R"({"type":"provisioning","seq":302,"rack":"z1-r002","from":"planned","to":"burn_in"})")));
    EXPECT_NE(rgb(map.gpuColor(g)), rgb(noDataColor()));
}

// Issue 39 item 3: a host quarantined by burn-in is counted (its GPUs' gpu.health 3) and its
// host_quarantined event (what loomd opens with the quarantine) is what the counter's host
// filter lists, naming the GPU, the diagnostic and the threshold.
TEST(ConsoleFailures, AQuarantinedHostsCounterFindsItsEvent) {
    test::Fed f;
    const auto& h = f.state->layout();
    std::vector<std::uint8_t> zeroG(static_cast<size_t>(h.gpus.size()), 0);
    ASSERT_TRUE(f.state->handleMessage(makeSnapshotMessage(100, Topic::GpuHealth, zeroG)));
    std::vector<std::pair<std::uint32_t, std::uint8_t>> quarantined;
    for (int k = 0; k < 8; ++k)
        quarantined.emplace_back(
            static_cast<std::uint32_t>(h.gpuIndex(QStringLiteral("z1-r003-h1-gpu%1").arg(k))), 3);
    ASSERT_TRUE(f.state->handleMessage(makeDeltaMessage(101, Topic::GpuHealth, quarantined)));
    ASSERT_TRUE(f.state->handleMessage(json(R"J({"type":"event","seq":102,"event":{"id":77,
        "severity":"warning","kind":"host_quarantined","location":"z1-r003-h1","rack":"z1-r003",
        "message":"z1-r003-h1: quarantined by burn-in: dcgmi diag -r 3 (simulated) failed on z1-r003-h1-gpu5",
        "labels":{"gpu":"z1-r003-h1-gpu5","diagnostic":"dcgmi diag -r 3 (simulated)",
                  "threshold":"every GPU passes"},
        "openedAt":"2026-11-22T08:00:00Z","closedAt":null,"source":"provisioning"}})J")));
    // A GPU event elsewhere, which the host filter must not list.
    ASSERT_TRUE(f.state->handleMessage(json(R"({"type":"event","seq":103,"event":{"id":78,
        "severity":"critical","kind":"gpu_xid","location":"z1-r002-h0-gpu5","rack":"z1-r002",
        "message":"XID 79","openedAt":"2026-11-22T08:00:01Z","closedAt":null}})")));
    FailureIndex* fi = f.state->failures();
    ASSERT_TRUE(fi->applyLoomd(loomdAnswer(
        *f.state, {{"host", "z1-r003-h1", "quarantined", false, "z1-r003", "z1-r003-h1-gpu0"},
                   {"gpu", "z1-r002-h0-gpu5", "failed", true, "z1-r002", "z1-r002-h0-gpu5"}})));
    EXPECT_EQ(fi->count(FailureKind::Host), 1);
    FailureCounter counter(fi);
    EventsView events(f.state.get());
    counter.button(FailureKind::Host)->click();
    ASSERT_EQ(events.proxy()->rowCount(), 1);
    EXPECT_EQ(events.proxy()->index(0, EventModel::Kind).data().toString(), "host_quarantined");
    EXPECT_TRUE(events.proxy()->index(0, EventModel::Message).data().toString().contains("gpu5"));
}

TEST(ConsoleFailures, UtilizationIsTheMeanOverTheChosenWindow) {
    test::Fed f;
    HallMapWidget map(f.state.get());
    map.resize(640, 480);
    f.state->setUtilWindow(4);
    const std::uint32_t g = 3;
    for (const std::uint8_t v : {100, 0, 100, 0}) {
        ASSERT_TRUE(f.state->handleMessage(makeDeltaMessage(400 + v, Topic::GpuUtil, {{g, v}})));
    }
    // The last four samples are 100, 0, 100, 0: the map shows 50, not the latest 0.
    EXPECT_EQ(f.state->values(Topic::GpuUtil)[g], 0);
    EXPECT_EQ(f.state->gpuUtilShown()[g], 50);
    EXPECT_EQ(rgb(map.gpuColor(static_cast<int>(g))), rgb(utilizationLut()[50]));
    // No data in the window stays no data; one sample with data is its own mean.
    ASSERT_TRUE(f.state->handleMessage(makeDeltaMessage(500, Topic::GpuUtil, {{g, kNoData}})));
    EXPECT_EQ(f.state->gpuUtilShown()[g], 33);  // 0, 100, 0 and one no-data sample
    f.state->setUtilWindow(1);
    EXPECT_EQ(f.state->gpuUtilShown()[g], kNoData);
    EXPECT_EQ(rgb(map.gpuColor(static_cast<int>(g))), rgb(noDataColor()));
}

// Issue 36 item 3: what an XID means is loomd's word (GET /api/v1/catalog/xid, the catalogue the
// web explains XIDs with), not the table the console was built with: an answer replaces it.
TEST(ConsoleEvents, XidsAreExplainedWithLoomdsCatalogue) {
    // The table as it is now, to put back (other tests read it).
    QJsonArray before;
    for (int code = 0; code < 1024; ++code)
        if (const auto x = xidInfo(code))
            before.append(QJsonObject{{"code", code},
                                      {"meaning", x->meaning},
                                      {"action", x->action},
                                      {"hardware", x->hardware}});
    ASSERT_FALSE(before.isEmpty());
    EXPECT_FALSE(applyXidCatalog(QJsonObject{{"no items", 1}}));  // not an answer: kept
    ASSERT_TRUE(applyXidCatalog(
        QJsonObject{{"items", QJsonArray{QJsonObject{{"code", 79},
                                                     {"meaning", "loomd's meaning"},
                                                     {"action", "loomd's action"},
                                                     {"hardware", true}},
                                         QJsonObject{{"code", 1234},
                                                     {"meaning", "a code newer than this console"},
                                                     {"action", "ask loomd"},
                                                     {"hardware", false}}}}}));
    EXPECT_TRUE(xidCatalogFromLoomd());
    ASSERT_TRUE(xidInfo(79).has_value());
    EXPECT_EQ(xidInfo(79)->meaning, "loomd's meaning");
    EXPECT_EQ(xidSummary(1234), "XID 1234: a code newer than this console — ask loomd");
    EXPECT_FALSE(xidInfo(13).has_value());  // not in loomd's answer: not explained
    EXPECT_TRUE(xidSummary(13).contains("not in loomd's catalogue"));
    EXPECT_TRUE(applyXidCatalog(QJsonObject{{"items", before}}));
    EXPECT_FALSE(applyXidCatalog(QJsonObject{{"items", before}}));  // the same answer again
    EXPECT_TRUE(xidInfo(13).has_value());
}

// Issue 17, events: XID codes explained, filters kept between runs, locations never cut.
TEST(ConsoleEvents, XidsAreExplainedFiltersPersistLocationsFit) {
    test::Fed f;
    for (const int code : {13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95}) {
        ASSERT_TRUE(xidInfo(code).has_value()) << code;
        EXPECT_FALSE(xidInfo(code)->meaning.isEmpty());
        EXPECT_FALSE(xidInfo(code)->action.isEmpty());
    }
    EXPECT_FALSE(xidInfo(1234).has_value());
    EXPECT_TRUE(xidSummary(1234).contains("catalogue"));
    EXPECT_EQ(xidOfText("z1-r001-h0-gpu3: XID 79"), 79);
    EXPECT_EQ(xidOfText("temperature 95 C"), -1);

    const QString longLink = QStringLiteral("z1-r001-h1-nic4/p1--z1-r001-rtsw/p13");
    auto ev = parseEvent(
        QJsonDocument::fromJson(
            R"({"id": 7, "severity": "critical", "kind": "gpu_xid", "location": "z1-r001-h0-gpu3",
            "rack": "z1-r001", "message": "z1-r001-h0-gpu3: XID 48", "labels": {"xid": "48"},
            "openedAt": "2026-11-22T08:10:00.123Z", "closedAt": null, "state": "open",
            "acknowledgedBy": "alice", "acknowledgedAt": "2026-11-22T08:12:00.000Z",
            "closedBy": null, "source": "telemetry"})")
            .object());
    ASSERT_TRUE(ev) << ev.error().toStdString();
    EXPECT_EQ(ev->xid, 48);
    EXPECT_TRUE(ev->acknowledged());
    EXPECT_EQ(ev->stateText(), "acknowledged");
    f.state->addEvents({*ev,
                        {8,
                         0,
                         "critical",
                         "link_down",
                         longLink,
                         "z1-r001",
                         "down",
                         QDateTime::currentDateTimeUtc(),
                         {}}});
    {
        EventsView view(f.state.get());
        view.resize(900, 600);
        view.show();
        EventModel* m = view.model();
        bool explained = false, who = false;
        for (int r = 0; r < m->rowCount(); ++r)
            if (m->event(r)->id == 7) {
                explained =
                    m->index(r, EventModel::Message).data().toString().contains("Double-bit ECC");
                who = m->index(r, EventModel::Acknowledged).data().toString().startsWith("alice ");
            }
        EXPECT_TRUE(explained);
        EXPECT_TRUE(who);
        // The location column is as wide as the longest location (after the 200 ms refit).
        QElapsedTimer t;
        t.start();
        const int need = QFontMetrics(view.table()->font()).horizontalAdvance(longLink);
        while (view.table()->columnWidth(EventModel::Location) < need && t.elapsed() < 5000)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        EXPECT_GE(view.table()->columnWidth(EventModel::Location), need);
        // Filters set in this view...
        view.severityBox()->setCurrentIndex(view.severityBox()->findData(2));
        view.kindBox()->addItem(QStringLiteral("link_down"), QStringLiteral("link_down"));
        view.kindBox()->setCurrentIndex(view.kindBox()->findData(QStringLiteral("link_down")));
        view.locationEdit()->setText(QStringLiteral("z1-r001"));
        EXPECT_EQ(view.proxy()->rowCount(), 1);
    }
    // ...are there in the next one (the next run of the console).
    EventsView again(f.state.get());
    EXPECT_EQ(again.severityBox()->currentData().toInt(), 2);
    EXPECT_EQ(again.kindBox()->currentData().toString(), "link_down");
    EXPECT_EQ(again.locationEdit()->text(), "z1-r001");
    EXPECT_EQ(again.proxy()->rowCount(), 1);
    // Clean up for other tests in this process.
    again.severityBox()->setCurrentIndex(0);
    again.kindBox()->setCurrentIndex(0);
    again.locationEdit()->clear();
}

// Issue 36: the legends' scales are loomd's (GET /api/v1/legends): a site whose gpu_temp
// thresholds are higher gets a longer ramp and its marks, in the map's colours and the legend.
TEST(ConsoleLegends, TheTemperatureScaleAndItsMarksAreLoomds) {
    auto answer = [](double max, double warn, double crit) {
        QJsonArray ticks;
        for (double v = 20; v <= max; v += 15) ticks.append(v);
        return QJsonObject{
            {"scales",
             QJsonObject{{"utilization", QJsonObject{{"unit", "%"},
                                                     {"min", 0},
                                                     {"max", 100},
                                                     {"ticks", QJsonArray{0, 25, 50, 75, 100}},
                                                     {"thresholds", QJsonArray{}}}},
                         {"temperature",
                          QJsonObject{{"unit", "°C"},
                                      {"min", 20},
                                      {"max", max},
                                      {"ticks", ticks},
                                      {"thresholds",
                                       QJsonArray{QJsonObject{{"name", "gpu_temp warning"},
                                                              {"value", warn},
                                                              {"severity", "warning"}},
                                                  QJsonObject{{"name", "gpu_temp critical"},
                                                              {"value", crit},
                                                              {"severity", "critical"}}}}}}}}};
    };
    // The defaults are what loomd serves for its default config: applying them changes nothing.
    EXPECT_FALSE(applyLegendScales(answer(95, 85, 92)));
    EXPECT_EQ(metricScale(Metric::Temperature).max, 95);
    const QRgb at95 = temperatureLut()[95];
    EXPECT_EQ(temperatureLut()[100], at95);  // past the end of the ramp: its last colour

    EXPECT_TRUE(applyLegendScales(answer(110, 90, 98)));
    EXPECT_EQ(metricScale(Metric::Temperature).max, 110);
    ASSERT_EQ(metricScale(Metric::Temperature).thresholds.size(), 2u);
    EXPECT_EQ(metricScale(Metric::Temperature).thresholds[1].value, 98);
    EXPECT_NE(temperatureLut()[95], at95);  // 95 °C is no longer the hottest colour
    EXPECT_EQ(temperatureLut()[110], at95);
    const auto legend = legendFor(Metric::Temperature);
    EXPECT_EQ(legend.front().label, QStringLiteral("20°C"));
    EXPECT_EQ(legend[legend.size() - 2].label, QStringLiteral("110°C"));
    // A scale that is not a ramp over the wire's bytes is refused, the last good one kept.
    EXPECT_FALSE(applyLegendScales(answer(10, 5, 8)));  // max below min
    EXPECT_EQ(metricScale(Metric::Temperature).max, 110);

    EXPECT_TRUE(applyLegendScales(answer(95, 85, 92)));  // back to the defaults for other tests
    EXPECT_EQ(temperatureLut()[95], at95);
}

// Issue 35: a link's word in the console is loomd's (GET /api/v1/legends: the words REST, the
// stream and loomctl use), never a copy of its own: a loomd that says "idle" for a link not in
// service is read as "idle" in every view of the console, and no console source spells the
// words out.
TEST(ConsoleLegends, TheLinkWordsAreLoomds) {
    auto answer = [](const QString& notInService) {
        const QStringList names{"up", "degraded", "down", "drained", notInService};
        QJsonObject words{{"255", "no data"}};
        QJsonArray swatches;
        for (int v = 0; v < names.size(); ++v) {
            words[QString::number(v)] = names[v];
            swatches.append(
                QJsonObject{{"value", v},
                            {"name", names[v]},
                            {"colour", QColor(linkHealthLut()[static_cast<size_t>(v)]).name()}});
        }
        return QJsonObject{{"words", QJsonObject{{"link.health", words}}},
                           {"colours", QJsonObject{{"linkHealth", swatches}}}};
    };
    EXPECT_TRUE(applyLegendScales(answer(QStringLiteral("idle"))));
    EXPECT_EQ(linkHealthWord(4), QStringLiteral("idle"));
    EXPECT_EQ(linkHealthWord(2), QStringLiteral("down"));
    EXPECT_EQ(linkHealthWord(255), QStringLiteral("no data"));
    EXPECT_EQ(linkHealthWord(77), QStringLiteral("77"));  // a byte loomd has no word for
    EXPECT_TRUE(applyLegendScales(answer(QStringLiteral("not in service"))));  // loomd's own
    EXPECT_EQ(linkHealthWord(4), QStringLiteral("not in service"));

    // No second copy: the word list is in no console source (the web's palette.js neither,
    // tests/backend/link_health_views_test.cpp).
    const std::regex copy(R"("up",\s*"degraded")");
    for (const auto& f : std::filesystem::directory_iterator(LOOM_SOURCE_DIR "/desktop_ui/src")) {
        std::ifstream in(f.path());
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        EXPECT_FALSE(std::regex_search(text, copy)) << f.path() << " spells the link words out";
        EXPECT_EQ(text.find("\"not in service\""), std::string::npos) << f.path();
    }
}
