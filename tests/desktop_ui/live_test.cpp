// Against a REAL loomd: embedded PostgreSQL, dev-small applied, the simulator feeding the
// stream. Skips (with the reason) only when the loomd binary has not been built.
#include "loom/console/hall_map_widget.hpp"
#include "loom/console/main_window.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/provisioning_board.hpp"
#include "loom/console/session.hpp"

#include "qt_app.hpp"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

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
        server_.start(loomd_, {"serve", "--simulate", "--listen", "127.0.0.1:0", "--state-dir", state});
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

    QString loomd_;
    QTemporaryDir dir_;
    QString token_;
    QProcess server_;
    QUrl url_;
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
    const auto& util = state->values(Topic::GpuUtil);
    int withData = -1;
    for (size_t g = 0; g < util.size() && withData < 0; ++g)
        if (util[g] <= 100)
            withData = static_cast<int>(g);
    ASSERT_GE(withData, 0) << "snapshot carried no utilization";
    EXPECT_EQ(map->gpuColor(withData) | 0xff000000u, utilizationLut()[util[static_cast<size_t>(withData)]] | 0xff000000u);

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
    // Same state dir and port: the console finds it again by itself.
    server_.start(loomd_, {"serve", "--simulate", "--listen", url_.host() + ':' + QString::number(url_.port()),
                           "--state-dir", dir_.path() + QStringLiteral("/state")});
    ASSERT_TRUE(waitUntil([&] { return s.state() == Session::State::Live && s.reconnects() > 0; }, 90000))
        << s.lastError().toStdString();
    EXPECT_TRUE(waitUntil([&] { return s.cluster()->lastSeq() != seqBefore; }, 30000));
}
