// The console's jobs (issue 15 item 5) without a server: jobs as loomd sends them (list items,
// stream messages) parsed into the model, bad input named, a job's hosts mapped onto the
// hall's GPUs, and the maps' job highlight checked by pixels.
#include <gtest/gtest.h>

#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <tuple>

#include "fixture.hpp"
#include "loom/console/fabric_map_widget.hpp"
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/jobs_model.hpp"
#include "loom/console/jobs_view.hpp"
#include "loom/console/palette.hpp"
#include "qt_helpers.hpp"

using namespace loom::console;

namespace {

using test::obj;
using test::paint;
using test::rgb;

const char* kLlama = R"({"kind": "Job", "name": "llama", "owner": "alice",
  "hosts": ["z1-r001-h0", "z1-r001-h1", "z1-r002-h0"], "nodelist": "z1-r001-h[0-1],z1-r002-h0",
  "hostCount": 3, "gpus": 24, "pattern": "allreduce", "tensorParallel": 8, "state": "running",
  "source": "apply", "health": {"busBw": 25.0, "healthyBusBw": 25.0, "degraded": false,
  "status": "ok", "gpus": {"total": 24, "ok": 24, "warning": 0, "failed": 0, "quarantined": 0},
  "linksCrossed": 30, "linksDown": [], "openEvents": 0, "updatedAt": "2026-11-25T20:01:02.345Z"}})";

}  // namespace

TEST(ConsoleJobs, ParsesAJobWithItsHealthAndNamesBadFields) {
    auto j = parseJob(obj(kLlama));
    ASSERT_TRUE(j) << j.error().toStdString();
    EXPECT_EQ(j->name, "llama");
    EXPECT_EQ(j->hosts.size(), 3);
    EXPECT_EQ(j->gpus, 24);
    ASSERT_TRUE(j->health.present);
    EXPECT_EQ(j->health.busBw, 25.0);
    EXPECT_EQ(j->health.gpusOk, 24);
    EXPECT_EQ(j->healthText(), "ok");
    EXPECT_EQ(j->severity(), 0);
    EXPECT_TRUE(j->health.updatedAt.isValid());

    // Not running: health is null, and the job says its state.
    auto done = parseJob(obj(R"({"name": "old", "state": "completed", "health": null})"));
    ASSERT_TRUE(done);
    EXPECT_FALSE(done->health.present);
    EXPECT_EQ(done->healthText(), "completed");

    // A link down under a job that has not (yet) cost it busbw: not "ok".
    auto under = parseJob(obj(R"({"name": "b", "state": "running", "health": {"busBw": 100,
        "healthyBusBw": 100, "degraded": false, "status": "links-down", "gpus": {"total": 8, "ok": 8},
        "linksDown": ["z1-r002-rtsw/p17--z1-ctsw1/p2", "z1-r002-rtsw/p18--z1-ctsw2/p2"]}})"));
    ASSERT_TRUE(under);
    EXPECT_EQ(under->healthText(), "2 links down");
    EXPECT_EQ(under->severity(), 1);
    // "ok" is loomd's word, not the console's guess: a job the impact model refused (no link
    // down, no GPU event) is "unknown", and so is a health without a status.
    auto refused = parseJob(obj(R"({"name": "c", "state": "running", "health": {"busBw": 0,
        "healthyBusBw": 0, "degraded": false, "status": "unknown", "gpus": {"total": 8, "ok": 8},
        "linksDown": [], "error": "no host of the job is in the backend fabric"}})"));
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->healthText(), "unknown");
    EXPECT_EQ(refused->severity(), 1);
    auto silent = parseJob(obj(R"({"name": "d", "state": "running", "health": {"busBw": 100}})"));
    ASSERT_TRUE(silent);
    EXPECT_EQ(silent->healthText(), "unknown");

    auto err = [](const char* json) {
        auto r = parseJob(obj(json));
        return r ? std::string("parsed") : r.error().toStdString();
    };
    EXPECT_EQ(err(R"({"owner": "x"})"), "job: name missing");
    EXPECT_EQ(err(R"({"name": "a", "gpus": "many"})"), "job a.gpus is not a number");
    EXPECT_EQ(err(R"({"name": "a", "hosts": ["h0", 3]})"), "job a.hosts[1] is not a string");
    EXPECT_EQ(err(R"({"name": "a", "health": {"busBw": "x"}})"),
              "job a: health.busBw is not a number");
    EXPECT_EQ(err(R"({"name": "a", "health": {"gpus": {"failed": true}}})"),
              "job a: health.gpus.failed is not a number");
    EXPECT_EQ(err(R"({"name": "a", "health": {"linksDown": "l"}})"),
              "job a: health.linksDown is not an array");
    EXPECT_EQ(err(R"({"name": "a", "health": {"status": 3}})"),
              "job a: health.status is not a string");
}

TEST(ConsoleJobs, TheModelFollowsTheJobsTopic) {
    JobModel m;
    m.reset({*parseJob(obj(kLlama)), *parseJob(obj(R"({"name": "bert", "state": "pending"})"))});
    ASSERT_EQ(m.rowCount(), 2);
    EXPECT_EQ(m.job(0)->name, "bert");  // name order
    const int llama = m.find("llama");
    ASSERT_EQ(llama, 1);
    EXPECT_EQ(m.index(llama, JobModel::BusBw).data().toString(), "25.0 %");

    // A link under it goes down: the jobHealth summary moves the row.
    ASSERT_TRUE(m.apply(obj(R"({"type": "jobHealth", "name": "llama", "health": {"busBw": 12.5,
        "healthyBusBw": 25.0, "degraded": true, "status": "degraded", "gpus": {"total": 24, "ok": 24}, "linksCrossed": 30,
        "linksDown": ["z1-r002-rtsw/p17--z1-ctsw1/p2"], "openEvents": 1}})")));
    EXPECT_EQ(m.index(llama, JobModel::BusBw).data().toString(), "12.5 % (was 25.0 %)");
    EXPECT_EQ(m.index(llama, JobModel::Health).data().toString(), "degraded");
    EXPECT_EQ(m.index(llama, JobModel::LinksDown).data().toInt(), 1);
    EXPECT_EQ(m.index(llama, JobModel::Events).data().toInt(), 1);
    EXPECT_EQ(m.job(llama)->severity(), 1);
    EXPECT_EQ(
        QColor(m.index(llama, JobModel::BusBw).data(Qt::ForegroundRole).value<QBrush>().color())
            .rgb(),
        QColor(degradedColor()).rgb());

    // A write without health keeps the last summary; a new job is inserted in order; a delete
    // removes.
    ASSERT_TRUE(m.apply(
        obj(R"({"type": "job", "job": {"name": "llama", "owner": "bob", "state": "running"}})")));
    EXPECT_EQ(m.job(m.find("llama"))->owner, "bob");
    EXPECT_EQ(m.job(m.find("llama"))->health.busBw, 12.5);
    ASSERT_TRUE(m.apply(obj(R"({"type": "job", "job": {"name": "gpt", "state": "running"}})")));
    EXPECT_EQ(m.rowCount(), 3);
    EXPECT_EQ(m.job(1)->name, "gpt");
    ASSERT_TRUE(m.apply(obj(R"({"type": "job", "name": "bert", "deleted": true})")));
    EXPECT_EQ(m.rowCount(), 2);
    EXPECT_EQ(m.find("bert"), -1);

    // Bad messages are reported with the place, and change nothing.
    auto bad = m.apply(obj(R"({"type": "jobHealth", "name": "llama", "health": {"busBw": []}})"));
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().toStdString(),
              "jobHealth message: job llama: health.busBw is not a number");
    EXPECT_EQ(m.job(m.find("llama"))->health.busBw, 12.5);
    EXPECT_FALSE(m.apply(obj(R"({"type": "job", "job": {"state": "running"}})")));
}

// The Jobs view refetches the selected job's detail on jobChanged and upserts the answer back:
// an unchanged job is no news (else the view asks again at once, without end).
TEST(ConsoleJobs, TheModelSignalsOnlyAChange) {
    JobModel m;
    int changes = 0, cellChanges = 0;
    QObject::connect(&m, &JobModel::jobChanged, [&] { ++changes; });
    QObject::connect(&m, &JobModel::dataChanged, [&] { ++cellChanges; });
    const Job llama = *parseJob(obj(kLlama));
    m.upsert(llama);
    EXPECT_EQ(changes, 1);
    m.upsert(llama);
    EXPECT_TRUE(m.setHealth("llama", llama.health));
    EXPECT_EQ(changes, 1);
    EXPECT_EQ(cellChanges, 0);
    Job moved = llama;
    moved.health.busBw = 20.0;
    m.upsert(moved);
    EXPECT_EQ(changes, 2);
    EXPECT_EQ(cellChanges, 1);
    EXPECT_EQ(m.job(m.find("llama"))->health.busBw, 20.0);
}

TEST(ConsoleJobs, AJobsHostsAreItsGpusOnTheHall) {
    test::Fed f;
    const HallLayout& h = f.state->layout();
    const auto gpus = jobGpus(h, {"z1-r002-h1", "z1-r001-h0", "no-such-host", "z1-r001-h0"});
    ASSERT_EQ(gpus.size(), 16u);
    for (const int g : gpus) {
        const QString& name = h.gpus[g];
        EXPECT_TRUE(name.startsWith("z1-r002-h1-gpu") || name.startsWith("z1-r001-h0-gpu"))
            << name.toStdString();
    }
    EXPECT_TRUE(jobGpus(h, {}).empty());
}

// Selecting a job veils every other GPU and outlines the job's racks; the job's own GPUs keep
// their metric colour. Clearing brings every GPU back.
TEST(ConsoleJobs, TheHallMapHighlightsAJobsGpus) {
    test::Fed f;
    HallMapWidget map(f.state.get());
    map.resize(800, 600);
    map.fitAll();
    const HallLayout& h = f.state->layout();
    const auto gpus = jobGpus(h, {"z1-r001-h0", "z1-r001-h1"});
    const int mine = gpus.front();
    const int other = h.gpuIndex("z1-r003-h0-gpu2");
    ASSERT_GE(other, 0);
    const QImage before = paint(map);
    EXPECT_EQ(rgb(before.pixel(map.gpuCenter(other).toPoint())), rgb(map.gpuColor(other)));

    map.setHighlight(gpus, "job llama: 16 GPUs");
    EXPECT_EQ(map.highlight().size(), 16u);
    ASSERT_EQ(map.highlightRacks().size(), 1u);
    EXPECT_EQ(map.highlightRacks()[0], h.rackIndex("z1-r001"));
    const QImage img = paint(map);
    EXPECT_EQ(rgb(img.pixel(map.gpuCenter(mine).toPoint())), rgb(map.gpuColor(mine)));
    const QRgb veiled = img.pixel(map.gpuCenter(other).toPoint());
    EXPECT_NE(rgb(veiled), rgb(map.gpuColor(other)));
    EXPECT_LT(qGray(veiled), qGray(map.gpuColor(other)) + 1);  // darker, not another colour
    // The outline is drawn just outside the rack.
    bool outlined = false;
    for (int x = 0; x < img.width() && !outlined; ++x)
        for (int y = 0; y < img.height() && !outlined; ++y)
            outlined = rgb(img.pixel(x, y)) == rgb(jobHighlightColor());
    EXPECT_TRUE(outlined);

    map.setHighlight({});
    const QImage after = paint(map);
    EXPECT_EQ(rgb(after.pixel(map.gpuCenter(other).toPoint())), rgb(map.gpuColor(other)));
    EXPECT_TRUE(map.highlightRacks().empty());
}

TEST(ConsoleJobs, TheFabricMapHighlightsTheLinksAJobCrosses) {
    test::Fed f;
    FabricMapWidget map(f.state.get());
    map.resize(900, 600);
    const HallLayout& h = f.state->layout();
    std::vector<int> links;
    for (int j = 0; j < h.links.size(); ++j)
        if (h.links[j].startsWith("z1-r001-h0-nic") || h.links[j].startsWith("z1-r001-rtsw/p17--"))
            links.push_back(j);
    ASSERT_EQ(links.size(), 9u);
    const int rtsw = h.switchIndex("z1-r001-rtsw");
    const int otherRtsw = h.switchIndex("z1-r003-rtsw");
    const QImage before = paint(map);
    const QPoint otherAt = map.switchRect(otherRtsw).center().toPoint();

    map.setHighlightLinks(links, "job llama: 9 links");
    EXPECT_EQ(map.highlightedLinks(), 9);
    EXPECT_TRUE(map.switchHighlighted(rtsw));
    EXPECT_TRUE(map.switchHighlighted(h.switchIndex("z1-ctsw01")));
    EXPECT_FALSE(map.switchHighlighted(otherRtsw));
    EXPECT_EQ(map.highlightedInBundle(0, 1), 1);  // the one uplink
    const QImage img = paint(map);
    // Another rack's switch recedes; the job's keeps its colour.
    EXPECT_NE(rgb(img.pixel(otherAt)), rgb(before.pixel(otherAt)));
    const QPoint mineAt = map.switchRect(rtsw).center().toPoint();
    EXPECT_EQ(rgb(img.pixel(mineAt)), rgb(before.pixel(mineAt)));

    // In the zone, the matrix cells of other links are dimmed.
    map.setZone(0);
    paint(map);
    map.setHighlightLinks({});
    EXPECT_EQ(map.highlightedLinks(), 0);
    const QImage cleared = paint(map);
    map.setZone(-1);
    EXPECT_EQ(rgb(paint(map).pixel(otherAt)), rgb(before.pixel(otherAt)));
    (void)cleared;
}

// The view's selection drives the highlight: the GPUs of the job's hosts at once.
TEST(ConsoleJobs, SelectingAJobInTheViewHighlightsItsGpus) {
    test::Fed f;
    JobsView view(f.state.get(), nullptr);
    std::vector<int> got;
    QString job;
    QObject::connect(&view, &JobsView::highlightChanged,
                     [&](const QString& j, const std::vector<int>& g, const std::vector<int>&) {
                         job = j;
                         got = g;
                     });
    view.model()->reset({*parseJob(obj(kLlama))});
    ASSERT_TRUE(view.selectJob("llama"));
    EXPECT_EQ(job, "llama");
    EXPECT_EQ(got.size(), 24u);
    EXPECT_TRUE(view.detail()->toPlainText().contains("25.0 % of the NIC rate"))
        << view.detail()->toPlainText().toStdString();
    EXPECT_TRUE(view.detail()->toPlainText().contains("24 ok, 0 warning, 0 failed"));
    // Filtered out by "running only" once it completes; selection clears the highlight.
    view.table()->clearSelection();
    EXPECT_TRUE(job.isEmpty());
    EXPECT_TRUE(got.empty());
    view.model()->upsert(*parseJob(obj(R"({"name": "llama", "state": "completed"})")));
    EXPECT_FALSE(view.selectJob("llama"));
    view.runningOnlyBox()->setChecked(false);
    EXPECT_TRUE(view.selectJob("llama"));
}

// A switch tile is drawn by loomd's word for the switch (GET /api/v1/fabric/topology `state`,
// issue 36 item 3), never by the console's own reading of its rack's state: a failed rack's RTSW
// reads down, a drained one drained, a planned or burning-in one not in service — as in the web.
TEST(ConsoleFabricMap, ASwitchIsDrawnByLoomdsWordForIt) {
    // loomd's link words, as the console reads them on connect (GET /api/v1/legends): a drained
    // or not-in-service switch takes the swatch of the link-health byte loomd names alike.
    QJsonObject linkWords{{"255", "no data"}};
    const char* const names[] = {"up", "degraded", "down", "drained", "not in service"};
    for (int v = 0; v < 5; ++v) linkWords[QString::number(v)] = names[v];
    applyLegendScales(QJsonObject{{"words", QJsonObject{{"link.health", linkWords}}}});
    test::Fed f;
    FabricMapWidget map(f.state.get());
    map.resize(900, 600);
    const HallLayout& h = f.state->layout();
    const int rack = h.rackIndex("z1-r002");
    const int sw = h.switchIndex("z1-r002-rtsw");
    ASSERT_GE(rack, 0);
    ASSERT_GE(sw, 0);
    auto say = [&](const char* word) {
        f.state->applySwitchStates(QJsonObject{
            {"switches", QJsonArray{QJsonObject{{"name", "z1-r002-rtsw"}, {"state", word}}}}});
    };
    paint(map);  // lays the scene out
    const QRectF tile = map.switchRect(sw);
    ASSERT_FALSE(tile.isNull());
    const QPoint at(static_cast<int>(tile.left()) + 1, static_cast<int>(tile.bottom()) - 1);
    // The rack's own state says nothing: loomd's word does (here against what the rack says).
    const std::tuple<const char*, const char*, QRgb> cases[] = {
        {"in_service", "down", failedColor()},
        {"in_service", "drained", linkHealthLut()[3]},
        {"burn_in", "not in service", linkHealthLut()[4]},
        {"repair", "not in service", linkHealthLut()[4]},
        {"failed", "drained", linkHealthLut()[3]},
    };
    for (const auto& [rackState, word, want] : cases) {
        f.state->setRackState(rack, rackState);
        say(word);
        EXPECT_EQ(map.switchWord(sw), QString::fromLatin1(word));
        EXPECT_EQ(rgb(map.switchColor(sw).rgb()), rgb(want)) << rackState << " / " << word;
        EXPECT_EQ(rgb(paint(map).pixel(at)), rgb(want)) << rackState << " / " << word;
    }
    // An up switch is its links' words: amber with one of them down or degraded, green without.
    say("up");
    EXPECT_EQ(rgb(map.switchColor(sw).rgb()),
              rgb(switchTileColor("up", false, map.switchStats(sw).down)));
    EXPECT_EQ(rgb(switchTileColor("up", false, 1)), rgb(degradedColor()));
    EXPECT_EQ(rgb(switchTileColor("up", false, 0)), rgb(linkHealthLut()[0]));
    EXPECT_EQ(rgb(switchTileColor("up", true, 0)), rgb(failedColor()));  // loomd's failure list
    // Drained and not in service are states, never red.
    EXPECT_NE(rgb(switchTileColor("drained", true, 5)), rgb(failedColor()));
    EXPECT_NE(rgb(switchTileColor("not in service", true, 5)), rgb(failedColor()));
}
