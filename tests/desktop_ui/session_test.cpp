// Session against an in-process stand-in speaking loomd's wire protocol (HTTP /hall and the
// WebSocket stream on one port): subscribe after hello with the offered topics, snapshot,
// reconnect with backoff after the server drops the stream, resumeFrom = last seq.
// The real-server version of this is live_test.cpp.
#include "loom/console/main_window.hpp"
#include "loom/console/session.hpp"
#include "loom/console/synthetic.hpp"

#include "qt_app.hpp"
#include "qt_helpers.hpp"

#include <QDir>
#include <QElapsedTimer>
#include <QImage>
#include <QTemporaryDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTcpServer>
#include <QTcpSocket>
#include <QWebSocket>
#include <QWebSocketServer>

#include <gtest/gtest.h>

using namespace loom::console;

namespace {

using test::waitUntil;


struct StandIn {
    QTcpServer tcp;
    QWebSocketServer ws{QStringLiteral("stand-in"), QWebSocketServer::NonSecureMode};
    QByteArray hall = syntheticHallJson(SyntheticShape::small());
    std::vector<QJsonObject> subscribes;
    QList<QWebSocket*> clients;
    qint64 seq = 100;

    StandIn()
    {
        tcp.listen(QHostAddress::LocalHost, 0);
        QObject::connect(&tcp, &QTcpServer::newConnection, &tcp, [this] {
            while (QTcpSocket* s = tcp.nextPendingConnection())
                QObject::connect(s, &QTcpSocket::readyRead, s, [this, s] { route(s); });
        });
        QObject::connect(&ws, &QWebSocketServer::newConnection, &ws, [this] {
            while (QWebSocket* c = ws.nextPendingConnection()) {
                clients << c;
                c->sendTextMessage(json({{"type", "hello"}, {"seq", ++seq}, {"role", "operator"},
                                         {"layoutVersion", 1}, {"intervalMs", 1000},
                                         {"topics", QJsonArray{"gpu.util", "gpu.health", "link.util", "link.health"}}}));
                QObject::connect(c, &QWebSocket::textMessageReceived, c, [this, c](const QString& text) {
                    subscribes.push_back(QJsonDocument::fromJson(text.toUtf8()).object());
                    SyntheticFeed feed(64, 144, 1);  // small shape: 64 + 72 + 8 links
                    for (auto m : feed.snapshots()) {
                        m.insert("seq", ++seq);
                        if (m.value("topic").toString() != "gpu.temp")
                            c->sendTextMessage(json(m));
                    }
                });
            }
        });
    }
    static QString json(const QJsonObject& o) { return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)); }
    QUrl url() const { return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(tcp.serverPort())); }

    void route(QTcpSocket* s)
    {
        const QByteArray head = s->peek(4096);
        if (!head.contains("\r\n\r\n"))
            return;  // wait for the whole request head
        QObject::disconnect(s, &QTcpSocket::readyRead, nullptr, nullptr);
        if (head.startsWith("GET /api/v1/stream")) {
            ws.handleConnection(s);  // the WebSocket server reads the handshake itself
            return;
        }
        s->readAll();
        const QByteArray body = head.startsWith("GET /api/v1/hall") ? hall : QByteArray(R"({"items": []})");
        s->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                 QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        s->disconnectFromHost();
    }
};

}  // namespace

TEST(ConsoleSession, SubscribesAfterHelloAndResumesAfterADrop)
{
    test::qtApp();
    StandIn server;
    ASSERT_TRUE(server.tcp.isListening());
    Session s;
    int firsts = 0;
    QObject::connect(&s, &Session::firstSnapshot, &s, [&] { ++firsts; });
    s.open(server.url(), QStringLiteral("token"));
    ASSERT_TRUE(waitUntil([&] { return firsts == 1; }, 20000)) << s.lastError().toStdString();
    EXPECT_EQ(s.state(), Session::State::Live);
    EXPECT_EQ(s.cluster()->role(), "operator");
    EXPECT_EQ(s.cluster()->layout().gpus.size(), 64);
    ASSERT_EQ(server.subscribes.size(), 1u);
    const auto topics = server.subscribes[0].value("topics").toArray();
    EXPECT_TRUE(topics.contains("gpu.util"));
    EXPECT_TRUE(topics.contains("events"));
    EXPECT_FALSE(topics.contains("gpu.temp"));  // not offered by this server's hello
    EXPECT_FALSE(server.subscribes[0].contains("resumeFrom"));  // first connection

    const qint64 seen = s.cluster()->lastSeq();
    for (auto* c : server.clients)
        c->close(QWebSocketProtocol::CloseCodeGoingAway, QStringLiteral("restarting"));
    ASSERT_TRUE(waitUntil([&] { return server.subscribes.size() == 2; }, 20000)) << s.lastError().toStdString();
    EXPECT_GE(s.reconnects(), 1);
    EXPECT_EQ(server.subscribes[1].value("resumeFrom").toInteger(), seen);
    EXPECT_TRUE(s.lastError().contains("restarting")) << s.lastError().toStdString();
    EXPECT_TRUE(waitUntil([&] { return s.state() == Session::State::Live; }, 5000));
}

TEST(ConsoleScreenshots, EveryViewIsWrittenAsPng)
{
    test::qtApp();
    StandIn server;
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    ASSERT_TRUE(w.runScreenshots({server.url(), QStringLiteral("token")}, dir.path(), 0.2));
    for (const char* view : {"hall", "hall-detail", "fabric", "fabric-zone", "provisioning", "events"}) {
        const QImage img(QDir(dir.path()).filePath(QLatin1String(view) + QStringLiteral(".png")));
        EXPECT_FALSE(img.isNull()) << view;
        EXPECT_GE(img.width(), 800) << view;
    }
}
