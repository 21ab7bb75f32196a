// The live console tests' fixture (live_test.cpp, live_jobs_test.cpp): a REAL loomd on an
// embedded PostgreSQL with dev-small applied, an admin token, two racks brought into service
// over the API, and the simulator feeding the stream (LiveLoomd) or only what a test posts
// (LiveLoomdQuiet); and the HTTP helpers the tests post and read with. Skips (with the reason)
// only when the loomd binary has not been built.
#pragma once

#include <gtest/gtest.h>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <functional>

#include "loom/console/main_window.hpp"
#include "loom/console/session.hpp"
#include "qt_app.hpp"
#include "qt_helpers.hpp"

namespace loom::console::test {

inline QString findLoomd() {
    for (const QString& p : {qEnvironmentVariable("LOOMD"), QStringLiteral(LOOM_BIN_DIR "/loomd"),
                             QStringLiteral(LOOM_SOURCE_DIR "/build/bin/loomd")})
        if (!p.isEmpty() && QFileInfo(p).isExecutable()) return p;
    return {};
}

// Runs a loomd subcommand to completion; returns stdout, or fails the test with stderr.
inline QString run(const QString& loomd, const QStringList& args) {
    QProcess p;
    p.start(loomd, args);
    if (!p.waitForFinished(180000) || p.exitCode() != 0) {
        ADD_FAILURE() << "loomd " << args.join(' ').toStdString() << " failed (" << p.exitCode()
                      << "): " << p.readAllStandardError().toStdString();
        return {};
    }
    return QString::fromUtf8(p.readAllStandardOutput());
}

// POSTs a body to loomd and waits for the answer; returns the HTTP status (0 = no answer).
inline int postTo(const QUrl& server, const QString& token, const QString& path,
                  const QByteArray& body, const QByteArray& contentType = "application/json",
                  QByteArray* reply = nullptr) {
    QNetworkAccessManager nam;
    QUrl u = server;
    u.setPath(path);
    QNetworkRequest req(u);
    req.setRawHeader("Authorization", "Bearer " + token.toUtf8());
    req.setHeader(QNetworkRequest::ContentTypeHeader, contentType);
    QNetworkReply* r = nam.post(req, body);
    waitUntil([&] { return r->isFinished(); }, 30000);
    const int status = r->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply) *reply = r->readAll();
    r->deleteLater();
    return status;
}

// GETs a path of loomd and waits for the answer; returns the body (empty when none).
inline QByteArray getFrom(const QUrl& server, const QString& token, const QString& path) {
    QNetworkAccessManager nam;
    QUrl u = server;
    u.setPath(path);
    QNetworkRequest req(u);
    req.setRawHeader("Authorization", "Bearer " + token.toUtf8());
    QNetworkReply* r = nam.get(req);
    waitUntil([&] { return r->isFinished(); }, 30000);
    const QByteArray body = r->readAll();
    r->deleteLater();
    return body;
}

// How many requests loomd answered on a route pattern ("/api/v1/jobs/{name}"), by its /metrics.
inline double requestsOn(const QUrl& server, const QString& token, const QByteArray& route) {
    const QByteArray prefix = "loom_http_requests_total{route=\"" + route + "\",";
    double n = 0;
    for (const QByteArray& line : getFrom(server, token, QStringLiteral("/metrics")).split('\n'))
        if (line.startsWith(prefix)) n += line.mid(line.lastIndexOf(' ') + 1).toDouble();
    return n;
}

class LiveLoomd : public ::testing::Test {
protected:
    void SetUp() override {
        test::qtApp();
        loomd_ = findLoomd();
        if (loomd_.isEmpty())
            GTEST_SKIP()
                << "loomd is not built (looked in " LOOM_BIN_DIR " and " LOOM_SOURCE_DIR
                   "/build/bin; set LOOMD=path): the live console test needs a real server";
        ASSERT_TRUE(dir_.isValid());
        const QString state = dir_.path() + QStringLiteral("/state");
        run(loomd_, {"apply", "-f", LOOM_SOURCE_DIR "/configs/clusters/dev-small.yaml",
                     "--state-dir", state});
        if (HasFailure()) return;
        const auto out = run(loomd_, {"token", "create", "--role", "admin", "--name",
                                      "console-test", "--state-dir", state})
                             .trimmed()
                             .split(u'\n');
        token_ = out.isEmpty() ? QString() : out.last().trimmed();
        ASSERT_FALSE(token_.isEmpty());
        server_.setProcessChannelMode(QProcess::MergedChannels);
        QStringList serve{"serve", "--listen", "127.0.0.1:0", "--state-dir", state};
        if (simulate_) serve.insert(1, QStringLiteral("--simulate"));
        server_.start(loomd_, serve);
        QString log;
        static const QRegularExpression re(QStringLiteral("http://127\\.0\\.0\\.1:\\d+"));
        ASSERT_TRUE(waitUntil(
                        [&] {
                            log += QString::fromUtf8(server_.readAll());
                            const auto m = re.match(log);
                            if (m.hasMatch()) url_ = QUrl(m.captured(0));
                            return url_.isValid() || server_.state() == QProcess::NotRunning;
                        },
                        120000) &&
                    url_.isValid())
            << "loomd serve printed no URL: " << log.toStdString();
        bringRacksIntoService();
    }

    // The simulator runs the world the inventory describes: a freshly applied hall is all
    // planned and sends nothing. Advance two compute racks to in_service over the API, as an
    // operator would, so that they run jobs and report (z1-r003 and z1-r004 stay planned for
    // the tests that move them).
    void bringRacksIntoService() {
        QNetworkAccessManager nam;
        for (const char* rack : {"z1-r001", "z1-r002"})
            for (int step = 0; step < 7; ++step) {
                QNetworkRequest req(url_.resolved(
                    QUrl(QStringLiteral("/api/v1/racks/%1/advance").arg(QLatin1String(rack)))));
                req.setRawHeader("Authorization", "Bearer " + token_.toUtf8());
                req.setHeader(QNetworkRequest::ContentTypeHeader,
                              QStringLiteral("application/json"));
                QNetworkReply* reply = nam.post(req, QByteArray("{}"));
                ASSERT_TRUE(waitUntil([&] { return reply->isFinished(); }, 30000));
                ASSERT_EQ(reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), 200)
                    << rack << " advance: " << reply->readAll().toStdString();
                reply->deleteLater();
            }
        if (!simulate_) return;
        // The simulator picks the racks up with the next live reload and tick: wait until one
        // of their GPUs reports (a deadline, not a sleep).
        const bool reporting = waitUntil(
            [&] {
                QNetworkRequest req(
                    url_.resolved(QUrl(QStringLiteral("/api/v1/telemetry/gpus/z1-r002-h1-gpu3"))));
                req.setRawHeader("Authorization", "Bearer " + token_.toUtf8());
                QNetworkReply* reply = nam.get(req);
                waitUntil([&] { return reply->isFinished(); }, 5000);
                const auto doc = QJsonDocument::fromJson(reply->readAll());
                reply->deleteLater();
                return doc.object().value(QStringLiteral("power")).isDouble();
            },
            30000);
        ASSERT_TRUE(reporting) << "the simulator never reported z1-r002 after it went into service";
    }
    // The console as a technician opens it: the main window at a desktop size, signed in to this
    // loomd. The test then waits for the snapshots it needs.
    Session* openConsole(MainWindow& w) {
        w.resize(1400, 900);
        w.show();
        Session* s = w.session();
        s->open(url_, token_);
        return s;
    }
    void TearDown() override {
        if (server_.state() != QProcess::NotRunning) {
            server_.terminate();
            if (!server_.waitForFinished(20000)) server_.kill();
            server_.waitForFinished(5000);
        }
    }

    bool simulate_ = true;  // false: only what the test posts moves the telemetry
    QString loomd_;
    QTemporaryDir dir_;
    QString token_;
    QProcess server_;
    QUrl url_;
};

// loomd without the simulator: a link the test reports down stays down.
class LiveLoomdQuiet : public LiveLoomd {
protected:
    LiveLoomdQuiet() { simulate_ = false; }
};

}  // namespace loom::console::test
