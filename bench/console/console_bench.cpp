// console_bench: measures loom-console against the goals on the 24k cluster.
//   connect -> first complete paint   goal <= 1 s
//   hall map repaint p99              goal <= 16 ms  (1 Hz deltas applied between paints)
//   RSS                               goal <= 400 MB
// Offline (default): frames recorded in the public API's shapes (synthetic.hpp, the
// meta-24k-roce shape), kept as JSON text so parsing is measured too. --hall FILE takes a
// /api/v1/hall answer saved from a real loomd instead (e.g. meta-98k-roce's, 11.9 MB); the
// stream frames are then synthetic ones sized to it; --zones 32 makes a synthetic 98k hall.
// Live: --server URL --token T connects a Session to a real loomd.
// Prints one JSON object per line; QT_QPA_PLATFORM=offscreen is set if unset.
#include "loom/console/fabric_map_widget.hpp"
#include "loom/console/failures.hpp"
#include "loom/console/fabric_view.hpp"
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/hall_view.hpp"
#include "loom/console/jobs_view.hpp"
#include "loom/console/main_window.hpp"
#include "loom/console/session.hpp"
#include "loom/console/synthetic.hpp"

#include <QTabWidget>

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>

#include <algorithm>
#include <array>
#include <numeric>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

using namespace loom::console;

namespace {

long statusKb(const char* key)
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const auto& line : f.readAll().split('\n'))
        if (line.startsWith(key))
            return line.mid(static_cast<qsizetype>(strlen(key))).trimmed().split(' ').first().toLong();
    return -1;
}

struct Stats {
    double p50, p99, max, mean;
};
Stats stats(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v)
        sum += x;
    auto pct = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))]; };
    return {pct(0.5), pct(0.99), v.back(), sum / v.size()};
}

void emit(const char* name, const Stats& s, const char* extra = "")
{
    std::printf("{\"bench\":\"%s\",\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"mean_ms\":%.3f%s}\n", name,
                s.p50, s.p99, s.max, s.mean, extra);
    std::fflush(stdout);
}

double ms(const QElapsedTimer& t) { return t.nsecsElapsed() / 1e6; }

// CPU time of this thread: on a shared, overloaded machine wall time mostly measures waiting
// for a core, so both are reported.
double threadCpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double loadAverage()
{
    double l[1] = {0};
    return getloadavg(l, 1) == 1 ? l[0] : -1;
}

}  // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QCommandLineParser cli;
    cli.addHelpOption();
    const QCommandLineOption server(QStringLiteral("server"), QStringLiteral("live loomd URL"), QStringLiteral("URL"));
    const QCommandLineOption token(QStringLiteral("token"), QStringLiteral("token"), QStringLiteral("T"));
    const QCommandLineOption iters(QStringLiteral("iterations"), QStringLiteral("repaints (default 300)"),
                                   QStringLiteral("N"), QStringLiteral("300"));
    const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("widget WxH (default 1600x1000)"),
                                  QStringLiteral("WxH"), QStringLiteral("1600x1000"));
    const QCommandLineOption failures(QStringLiteral("failures"),
                                      QStringLiteral("open failures injected before the first paint (default 500)"),
                                      QStringLiteral("N"), QStringLiteral("500"));
    const QCommandLineOption hallFile(QStringLiteral("hall"), QStringLiteral("a saved GET /api/v1/hall answer (offline mode)"),
                           QStringLiteral("FILE"));
    const QCommandLineOption zones(QStringLiteral("zones"),
                                   QStringLiteral("synthetic hall of N zones of the 24k design (default 8; 32 = 98,304 GPUs)"),
                                   QStringLiteral("N"), QStringLiteral("8"));
    cli.addOptions({server, token, iters, size, failures, hallFile, zones});
    cli.process(app);
    const int n = cli.value(iters).toInt();
    const auto wh = cli.value(size).split(u'x');
    const QSize sz(wh.value(0).toInt(), wh.value(1).toInt());

    if (cli.isSet(server)) {
        // Live: the whole console window, connect -> first paint of the hall map with data.
        MainWindow w;
        w.resize(sz);
        w.show();
        QElapsedTimer t;
        t.start();
        const double cpu0 = threadCpuMs();
        // Phases: the hall fetched and parsed (state Connecting), the stream up (Live).
        double hallMs = -1, streamMs = -1;
        QObject::connect(w.session(), &Session::stateChanged, &w, [&](Session::State st) {
            if (st == Session::State::Connecting && hallMs < 0)
                hallMs = ms(t);
            if (st == Session::State::Live && streamMs < 0)
                streamMs = ms(t);
        });
        w.session()->open(QUrl::fromUserInput(cli.value(server)), cli.value(token));
        auto* map = w.findChild<HallMapWidget*>();
        while (!w.session()->cluster()->hasSnapshot(Topic::GpuUtil) && t.elapsed() < 60000)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        if (!w.session()->cluster()->hasSnapshot(Topic::GpuUtil)) {
            std::fprintf(stderr, "no snapshot within 60 s: %s\n", qPrintable(w.session()->lastError()));
            return 1;
        }
        QImage img(map->size(), QImage::Format_RGB32);
        map->render(&img);
        std::printf("{\"bench\":\"live_connect_to_first_paint\",\"ms\":%.1f,\"cpu_ms\":%.1f,\"hall_ms\":%.1f,"
                    "\"stream_open_ms\":%.1f,\"load_avg\":%.2f,\"gpus\":%lld,\"links\":%lld,\"goal_ms\":1000}\n",
                    ms(t), threadCpuMs() - cpu0, hallMs, streamMs, loadAverage(),
                    static_cast<long long>(w.session()->cluster()->layout().gpus.size()),
                    static_cast<long long>(w.session()->cluster()->layout().links.size()));
        std::vector<double> paints, paintsCpu;
        QElapsedTimer wall;
        wall.start();
        int updates = 0;
        QObject::connect(w.session()->cluster(), &ClusterState::metricsUpdated, map, [&](unsigned) { ++updates; });
        while (static_cast<int>(paints.size()) < n && wall.elapsed() < 120000) {
            const int before = updates;
            while (updates == before && wall.elapsed() < 120000)
                QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
            QElapsedTimer p;
            p.start();
            const double c0 = threadCpuMs();
            map->render(&img);
            paintsCpu.push_back(threadCpuMs() - c0);
            paints.push_back(ms(p));
        }
        if (paints.empty()) {
            std::fprintf(stderr, "no metric update within 120 s: %s\n", qPrintable(w.session()->lastError()));
            return 1;
        }
        emit("live_hall_repaint", stats(paints), ",\"goal_p99_ms\":16");
        emit("live_hall_repaint_cpu", stats(paintsCpu), ",\"goal_p99_ms\":16");
        std::printf("{\"bench\":\"rss\",\"rss_mb\":%.1f,\"peak_rss_mb\":%.1f,\"load_avg\":%.2f}\n",
                    statusKb("VmRSS:") / 1024.0, statusKb("VmHWM:") / 1024.0, loadAverage());
        if (qEnvironmentVariableIsSet("LOOM_BENCH_SHOT")) {
            map->fitAll();
            map->render(&img);
            img.save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-live-hall.png"));
            w.grab().save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-live-window.png"));
        }
        return 0;
    }

    // Offline: recorded frames as the server sends them (JSON text).
    QByteArray hallJson;
    if (cli.isSet(hallFile)) {
        QFile f(cli.value(hallFile));
        if (!f.open(QIODevice::ReadOnly)) {
            std::fprintf(stderr, "cannot read %s\n", qPrintable(cli.value(hallFile)));
            return 2;
        }
        hallJson = f.readAll();
    } else {
        SyntheticShape shape;
        shape.zones = cli.value(zones).toInt();
        if (shape.zones != 8)
            shape.cluster = QStringLiteral("synthetic-%1k").arg(shape.gpus() / 1024);
        hallJson = syntheticHallJson(shape);
    }
    int gpuCount = 0;
    SyntheticFeed feed(0, 0, 7);
    std::vector<QByteArray> first;
    first.push_back(QJsonDocument(feed.hello()).toJson(QJsonDocument::Compact));
    std::vector<QByteArray> ticks;
    {
        // Link counts come from the hall; build the feed with them.
        auto hall = parseHall(hallJson);
        if (!hall) {
            std::fprintf(stderr, "%s\n", qPrintable(hall.error()));
            return 1;
        }
        gpuCount = static_cast<int>(hall->gpus.size());
        feed = SyntheticFeed(gpuCount, static_cast<int>(hall->links.size()), 7);
        first.clear();
        first.push_back(QJsonDocument(feed.hello()).toJson(QJsonDocument::Compact));
        for (const auto& m : feed.snapshots())
            first.push_back(QJsonDocument(m).toJson(QJsonDocument::Compact));
        // One tick recorded up front for the size line; the rest are encoded between timed
        // sections so recorded frames do not inflate the console's RSS.
        for (const auto& m : feed.tick())
            ticks.push_back(QJsonDocument(m).toJson(QJsonDocument::Compact));
    }
    std::printf("{\"bench\":\"recorded_frames\",\"hall_bytes\":%lld,\"snapshot_bytes\":%lld,\"tick_bytes\":%lld}\n",
                static_cast<long long>(hallJson.size()),
                static_cast<long long>(std::accumulate(first.begin(), first.end(), qsizetype(0), [](qsizetype a, const QByteArray& b) { return a + b.size(); })),
                static_cast<long long>(std::accumulate(ticks.begin(), ticks.begin() + kTopicCount, qsizetype(0), [](qsizetype a, const QByteArray& b) { return a + b.size(); })));

    // Connect -> first complete paint: parse the hall, build the whole window, apply the
    // snapshots, paint the hall map with every GPU coloured.
    QElapsedTimer t;
    t.start();
    const double cpu0 = threadCpuMs();
    MainWindow w;
    w.resize(sz);
    ClusterState* state = w.session()->cluster();
    auto hall = parseHall(hallJson);
    state->setLayout(std::move(*hall));
    const double hallMs = ms(t);
    for (const auto& f : first)
        if (auto r = state->handleMessage(QJsonDocument::fromJson(f).object()); !r) {
            std::fprintf(stderr, "%s\n", qPrintable(r.error()));
            return 1;
        }
    // Open failures, as a failure drill leaves them, spread over the floor: failed and warning
    // GPUs, links down, quarantined hosts and failed racks (the overlay draws all of them).
    {
        const int want = cli.value(failures).toInt();
        const auto& h = state->layout();
        std::vector<std::pair<std::uint32_t, std::uint8_t>> gpuH, linkH;
        const int racks = want / 25, hosts = want / 50, links = want / 4;
        const int gpus = std::max(0, want - racks - hosts - links);
        for (int i = 0; i < gpus; ++i)
            gpuH.emplace_back(static_cast<std::uint32_t>((i * 7919L + 13) % h.gpus.size()), i % 3 == 0 ? 1 : 2);
        for (int i = 0; i < hosts; ++i) {
            const int g0 = static_cast<int>((i * 104729L + 8) % (h.gpus.size() / 8)) * 8;
            for (int k = 0; k < 8; ++k)
                gpuH.emplace_back(static_cast<std::uint32_t>(g0 + k), 3);
        }
        for (int i = 0; i < links; ++i)
            linkH.emplace_back(static_cast<std::uint32_t>((i * 6151L + 5) % h.links.size()), 2);
        (void)state->handleMessage(makeDeltaMessage(1000000, Topic::GpuHealth, gpuH));
        (void)state->handleMessage(makeDeltaMessage(1000001, Topic::LinkHealth, linkH));
        // What loomd's GET /api/v1/failures answers for this state (the console draws only
        // loomd's answer): written here from what was injected, with the places loomd names.
        QJsonArray items;
        std::array<int, kFailureKindCount> counts{};
        auto item = [&](FailureKind k, const QString& name, const QString& st, bool failed, int rack, int gpu) {
            ++counts[static_cast<size_t>(k)];
            static const char* kinds[] = {"gpu", "host", "link", "switch", "rack"};
            items.append(QJsonObject{{u"kind"_qs, QLatin1String(kinds[static_cast<int>(k)])}, {u"name"_qs, name},
                                     {u"state"_qs, st}, {u"failed"_qs, failed},
                                     {u"rack"_qs, rack >= 0 ? QJsonValue(h.racks[static_cast<size_t>(rack)].name) : QJsonValue()},
                                     {u"gpu"_qs, gpu >= 0 ? QJsonValue(h.gpus[gpu]) : QJsonValue()}});
        };
        for (const auto& [g, v] : gpuH) {
            const int gi = static_cast<int>(g);
            if (v != 3)
                item(FailureKind::Gpu, h.gpus[gi], v == 2 ? u"failed"_qs : u"warning"_qs, v == 2, h.gpuRack[g], gi);
            else if (g % 8 == 0)
                item(FailureKind::Host, h.gpus[gi].left(h.gpus[gi].lastIndexOf(u'-')), u"quarantined"_qs, false, h.gpuRack[g], gi);
        }
        for (const auto& [l, v] : linkH)
            item(FailureKind::Link, h.links[l], u"down"_qs, true, h.linkEnds[l].rack, h.linkEnds[l].gpu);
        for (int i = 0; i < racks; ++i) {
            const int ri = (i * 97 + 11) % static_cast<int>(h.racks.size());
            const auto& r = h.racks[static_cast<size_t>(ri)];
            (void)state->handleMessage(QJsonObject{{u"type"_qs, u"provisioning"_qs}, {u"seq"_qs, 1000002 + i},
                                                   {u"rack"_qs, r.name}, {u"from"_qs, r.state}, {u"to"_qs, u"failed"_qs}});
            item(FailureKind::Rack, r.name, u"failed"_qs, true, ri, -1);
        }
        QJsonObject byKind;
        static const char* kindKeys[] = {"gpu", "host", "link", "switch", "rack"};
        for (int k = 0; k < kFailureKindCount; ++k)
            byKind.insert(QLatin1String(kindKeys[k]), counts[static_cast<size_t>(k)]);
        state->failures()->applyLoomd(QJsonObject{{u"counts"_qs, byKind}, {u"items"_qs, items}});
    }
    w.show();
    QCoreApplication::processEvents();
    auto* map = w.findChild<HallMapWidget*>();
    QImage img(map->size(), QImage::Format_RGB32);
    map->render(&img);
    const double firstPaint = ms(t);
    const double firstPaintCpu = threadCpuMs() - cpu0;
    std::printf("{\"bench\":\"connect_to_first_paint\",\"ms\":%.1f,\"cpu_ms\":%.1f,\"load_avg\":%.1f,\"hall_parse_ms\":%.1f,\"gpus\":%d,\"goal_ms\":1000,"
                "\"widget\":\"%dx%d\",\"scale_px_per_cell\":%.2f,\"open_failures\":%d}\n",
                firstPaint, firstPaintCpu, loadAverage(), hallMs, gpuCount, map->width(), map->height(), map->scale(),
                state->failures()->total());

    // Repaints with 1 Hz-style deltas between them (delta apply timed separately).
    std::vector<double> paints, paintsCpu, applies;
    for (int i = 0; i < n; ++i) {
        QElapsedTimer a;
        a.start();
        std::vector<QByteArray> frames;
        if (i == 0)
            frames = ticks;
        else
            for (const auto& m : feed.tick())
                frames.push_back(QJsonDocument(m).toJson(QJsonDocument::Compact));
        a.restart();
        for (const auto& f : frames)
            (void)state->handleMessage(QJsonDocument::fromJson(f).object());
        applies.push_back(ms(a));
        QElapsedTimer p;
        p.start();
        const double c0 = threadCpuMs();
        map->render(&img);
        paintsCpu.push_back(threadCpuMs() - c0);
        paints.push_back(ms(p));
    }
    std::printf("{\"bench\":\"open_failures_during_repaints\",\"total\":%d,\"gpu\":%d,\"host\":%d,\"link\":%d,"
                "\"switch\":%d,\"rack\":%d,\"load_avg\":%.1f}\n",
                state->failures()->total(), state->failures()->count(FailureKind::Gpu),
                state->failures()->count(FailureKind::Host), state->failures()->count(FailureKind::Link),
                state->failures()->count(FailureKind::Switch), state->failures()->count(FailureKind::Rack), loadAverage());
    emit("hall_repaint_full_view", stats(paints), ",\"goal_p99_ms\":16");
    emit("hall_repaint_full_view_cpu", stats(paintsCpu), ",\"goal_p99_ms\":16");
    emit("apply_1hz_deltas_all_topics", stats(applies));

    // Zoomed in: outlines and labels for the visible racks.
    map->zoomBy(16.0 / map->scale(), QPointF(map->width() / 2.0, map->height() / 2.0));
    std::vector<double> zoomed, zoomedCpu;
    for (int i = 0; i < std::min(n, 100); ++i) {
        QElapsedTimer p;
        p.start();
        const double c0 = threadCpuMs();
        map->render(&img);
        zoomedCpu.push_back(threadCpuMs() - c0);
        zoomed.push_back(ms(p));
    }
    emit("hall_repaint_zoomed_16px", stats(zoomed), ",\"goal_p99_ms\":16");
    emit("hall_repaint_zoomed_16px_cpu", stats(zoomedCpu), ",\"goal_p99_ms\":16");

    auto* fabric = w.findChild<FabricMapWidget*>();
    fabric->resize(sz);
    QImage fimg(fabric->size(), QImage::Format_RGB32);
    std::vector<double> fo, fz;
    for (int i = 0; i < 30; ++i) {
        QElapsedTimer p;
        p.start();
        fabric->render(&fimg);
        fo.push_back(ms(p));
    }
    fabric->setZone(0);
    for (int i = 0; i < 30; ++i) {
        QElapsedTimer p;
        p.start();
        fabric->render(&fimg);
        fz.push_back(ms(p));
    }
    emit("fabric_repaint_overview", stats(fo));
    emit("fabric_repaint_zone", stats(fz));

    // The Jobs view: a 4,096-GPU job (the first 512 hosts, 256 racks) listed and selected, as
    // the view does it without a server (its detail request fails at once): the hall map veils
    // every other GPU; the fabric map highlights the job's NIC cables and its racks' uplinks.
    {
        const HallLayout& h = state->layout();
        Job job;
        job.name = QStringLiteral("bench-4096");
        job.state = QStringLiteral("running");
        for (const auto& r : h.racks)
            for (const auto& host : r.hosts)
                if (job.hosts.size() < 512)
                    job.hosts << host;
        job.hostCount = static_cast<int>(job.hosts.size());
        job.gpus = job.hostCount * 8;
        std::vector<int> links;
        QSet<int> rtsws;
        QSet<QString> hosts(job.hosts.begin(), job.hosts.end());
        for (const auto& r : h.racks)
            if (hosts.contains(r.hosts.value(0)))
                rtsws.insert(h.switchIndex(r.rtsw));
        for (size_t j = 0; j < h.linkEnds.size(); ++j)
            if (hosts.contains(h.linkEnds[j].host) || rtsws.contains(h.linkEnds[j].aSwitch) ||
                rtsws.contains(h.linkEnds[j].bSwitch))
                links.push_back(static_cast<int>(j));
        map->fitAll();
        QElapsedTimer sel;
        sel.start();
        w.jobsView()->model()->reset({job});
        w.jobsView()->selectJob(job.name);
        const double selectMs = ms(sel);
        sel.restart();
        fabric->setHighlightLinks(links, QStringLiteral("job bench-4096"));
        const double fabricSelectMs = ms(sel);
        std::vector<double> jp, jpCpu, jz, jfo, jfz;
        for (int i = 0; i < n; ++i) {
            for (const auto& m : feed.tick())
                (void)state->handleMessage(m);
            QElapsedTimer p;
            p.start();
            const double c0 = threadCpuMs();
            map->render(&img);
            jpCpu.push_back(threadCpuMs() - c0);
            jp.push_back(ms(p));
        }
        map->zoomBy(16.0 / map->scale(), QPointF(map->width() / 2.0, map->height() / 2.0));
        for (int i = 0; i < std::min(n, 100); ++i) {
            QElapsedTimer p;
            p.start();
            map->render(&img);
            jz.push_back(ms(p));
        }
        fabric->setZone(-1);
        for (int i = 0; i < 30; ++i) {
            QElapsedTimer p;
            p.start();
            fabric->render(&fimg);
            jfo.push_back(ms(p));
        }
        fabric->setZone(0);
        for (int i = 0; i < 30; ++i) {
            QElapsedTimer p;
            p.start();
            fabric->render(&fimg);
            jfz.push_back(ms(p));
        }
        std::printf("{\"bench\":\"job_selected\",\"gpus_highlighted\":%zu,\"racks\":%zu,\"links_highlighted\":%d,"
                    "\"select_ms\":%.1f,\"fabric_select_ms\":%.1f,\"load_avg\":%.1f}\n",
                    map->highlight().size(), map->highlightRacks().size(), fabric->highlightedLinks(), selectMs,
                    fabricSelectMs, loadAverage());
        emit("hall_repaint_full_view_job_selected", stats(jp), ",\"goal_p99_ms\":16");
        emit("hall_repaint_full_view_job_selected_cpu", stats(jpCpu), ",\"goal_p99_ms\":16");
        emit("hall_repaint_zoomed_16px_job_selected", stats(jz), ",\"goal_p99_ms\":16");
        emit("fabric_repaint_overview_job_selected", stats(jfo));
        emit("fabric_repaint_zone_job_selected", stats(jfz));
        map->fitAll();
    }
    std::printf("{\"bench\":\"rss\",\"rss_mb\":%.1f,\"peak_rss_mb\":%.1f,\"goal_mb\":400}\n",
                statusKb("VmRSS:") / 1024.0, statusKb("VmHWM:") / 1024.0);
    if (qEnvironmentVariableIsSet("LOOM_BENCH_SHOT")) {
        map->fitAll();
        map->render(&img);
        img.save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-hall.png"));
        fabric->render(&fimg);
        fimg.save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-fabric-zone.png"));
        fabric->setZone(-1);
        fabric->render(&fimg);
        fimg.save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-fabric.png"));
        w.hallView()->focusLocation(state->layout().gpus.value(5000), {});
        w.tabs()->setCurrentIndex(0);
        QCoreApplication::processEvents();
        w.grab().save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-hall-detail.png"));
        w.hallView()->map()->fitAll();
        w.fabricView()->map()->setZone(0);
        w.fabricView()->showSwitch(state->layout().switchIndex(QStringLiteral("z1-ctsw03")));
        w.fabricView()->map()->selectSwitch(state->layout().switchIndex(QStringLiteral("z1-ctsw03")));
        w.tabs()->setCurrentIndex(1);
        QCoreApplication::processEvents();
        w.grab().save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-fabric-zone-window.png"));
        w.fabricView()->map()->setZone(-1);
        for (int i = 0; i < w.tabs()->count(); ++i) {
            w.tabs()->setCurrentIndex(i);
            QCoreApplication::processEvents();
            w.grab().save(qEnvironmentVariable("LOOM_BENCH_SHOT") + QStringLiteral("/bench-tab%1.png").arg(i));
        }
    }
    return 0;
}
