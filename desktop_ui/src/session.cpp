#include "loom/console/session.hpp"

#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkRequest>
#include <QPointer>
#include <QRandomGenerator>
#include <QSettings>

#include "loom/console/palette.hpp"
#include "loom/console/token_store.hpp"
#include "loom/console/xid.hpp"

namespace loom::console {

namespace {
constexpr int kBackoffStartMs = 500;
constexpr int kBackoffMaxMs = 30000;

// ApiClient errors start with the HTTP status ("401 unauthorized: ..."); QWebSocket names it
// in its handshake error ("... status code: 401 (Unauthorized)").
bool isUnauthorized(const QString& error) {
    return error.startsWith(QLatin1String("401 ")) || error.startsWith(QLatin1String("HTTP 401")) ||
           error.contains(QLatin1String("code: 401"));
}
}  // namespace

ConnectionSettings ConnectionSettings::resolve(const QString& flagServer,
                                               const QString& flagToken) {
    QSettings settings;
    ConnectionSettings s;
    QString server = flagServer;
    if (server.isEmpty()) server = qEnvironmentVariable("LOOM_SERVER");
    if (server.isEmpty()) server = settings.value(QStringLiteral("connection/server")).toString();
    s.server = QUrl::fromUserInput(server);
    s.token = flagToken;
    if (s.token.isEmpty()) s.token = qEnvironmentVariable("LOOM_TOKEN");
    // Versions before the token store kept it in QSettings in plain text: move it.
    if (const QString old = settings.value(QStringLiteral("connection/token")).toString();
        !old.isEmpty()) {
        if (TokenStore().save(s.server, old)) settings.remove(QStringLiteral("connection/token"));
    }
    if (s.token.isEmpty() && s.server.isValid() && !s.server.isEmpty())
        s.token = TokenStore().load(s.server);
    return s;
}

Result<void> ConnectionSettings::remember() const {
    QSettings settings;
    settings.setValue(QStringLiteral("connection/server"), server.toString());
    settings.remove(QStringLiteral("connection/token"));
    if (token.isEmpty()) return {};
    return TokenStore().save(server, token);
}

Session::Session(QObject* parent) : QObject(parent) {
    backoffTimer_.setSingleShot(true);
    connect(&backoffTimer_, &QTimer::timeout, this, [this] {
        if (!wanted_) return;
        ++reconnects_;
        if (cluster_.hasLayout())
            openStream();
        else
            fetchHall();
    });
    // Subscribing waits for hello: it lists the data topics this server streams, and loomd
    // refuses a subscription that names a topic it does not know.
    connect(&ws_, &QWebSocket::connected, this, [this] {
        setState(State::Live);
        fetchFailures();  // what changed while this console was away
        fetchSwitchStates();
        // The legends' scales and thresholds (loomd's detection config may differ per site).
        QPointer<Session> self(this);
        api_.get(QStringLiteral("/api/v1/legends"), [self](Result<QJsonDocument> r) {
            if (self && r && applyLegendScales(r->object())) Q_EMIT self->cluster_.legendsChanged();
        });
        // What an XID means and what to do: loomd's catalogue, as the web explains them.
        api_.get(QStringLiteral("/api/v1/catalog/xid"), [self](Result<QJsonDocument> r) {
            if (self && r && applyXidCatalog(r->object())) Q_EMIT self->cluster_.legendsChanged();
        });
    });
    failuresSoon_.setSingleShot(true);
    failuresSoon_.setInterval(250);
    connect(&failuresSoon_, &QTimer::timeout, this, &Session::fetchFailures);
    connect(cluster_.failures(), &FailureIndex::refreshWanted, this, [this] {
        if (wanted_ && cluster_.hasLayout() && !failuresSoon_.isActive()) failuresSoon_.start();
    });
    switchesSoon_.setSingleShot(true);
    switchesSoon_.setInterval(500);
    connect(&switchesSoon_, &QTimer::timeout, this, &Session::fetchSwitchStates);
    connect(&cluster_, &ClusterState::liveStateMoved, this, [this] {
        if (wanted_ && cluster_.hasLayout() && !switchesSoon_.isActive()) switchesSoon_.start();
    });
    failuresPoll_.setInterval(5000);
    connect(&failuresPoll_, &QTimer::timeout, this, [this] {
        if (state_ == State::Live) fetchFailures();
    });
    connect(&ws_, &QWebSocket::textMessageReceived, this, &Session::onText);
    connect(&ws_, &QWebSocket::disconnected, this, [this] {
        if (!wanted_) return;
        const QString why = ws_.closeReason().isEmpty() ? ws_.errorString() : ws_.closeReason();
        if (isUnauthorized(why)) {
            refuseAuth(QStringLiteral("stream: %1").arg(why));
            return;
        }
        scheduleReconnect(QStringLiteral("stream closed: %1").arg(why));
    });
    connect(&cluster_, &ClusterState::layoutStale, this, [this](qint64) {
        if (!wanted_ || hallInFlight_) return;
        // The packed arrays follow /hall order: a new layout means a new hall and a snapshot.
        ws_.abort();
        cluster_.clearForReconnect();
        fetchHall();
    });
    connect(&cluster_, &ClusterState::byeReceived, this, [this](const QString& reason) {
        report(QStringLiteral("server said bye: %1").arg(reason));
    });
    connect(&cluster_, &ClusterState::metricsUpdated, this, [this](unsigned) {
        backoffMs_ = kBackoffStartMs;
        if (!firstSnapshotSent_ && cluster_.hasSnapshot(Topic::GpuUtil)) {
            firstSnapshotSent_ = true;
            Q_EMIT firstSnapshot();
        }
    });
}

Session::~Session() {
    wanted_ = false;
    ws_.abort();
}

QUrl Session::streamUrl(const QUrl& server) {
    QUrl u = server;
    u.setScheme(server.scheme() == u"https" ? QStringLiteral("wss") : QStringLiteral("ws"));
    u.setPath(QStringLiteral("/api/v1/stream"));
    return u;
}

void Session::open(const QUrl& server, const QString& token) {
    close();
    // A new server or a new token: what the old one was allowed to do no longer holds.
    if (server != api_.server() || token != api_.token()) cluster_.clearForReconnect();
    api_.setServer(server, token);
    wanted_ = true;
    firstSnapshotSent_ = false;
    backoffMs_ = kBackoffStartMs;
    fetchHall();
}

void Session::close() {
    wanted_ = false;
    backoffTimer_.stop();
    failuresSoon_.stop();
    failuresPoll_.stop();
    switchesSoon_.stop();
    ws_.abort();
    setState(State::Disconnected);
}

QString Session::stateText() const {
    switch (state_) {
        case State::Disconnected:
            return tr("disconnected");
        case State::FetchingHall:
            return tr("loading hall");
        case State::Connecting:
            return tr("connecting");
        case State::Live:
            return tr("live");
        case State::Backoff:
            return tr("reconnecting in %1 s")
                .arg(backoffTimer_.remainingTime() / 1000.0, 0, 'f', 1);
        case State::Unauthorized:
            return tr("token refused");
    }
    return {};
}

void Session::setState(State s) {
    if (s == state_) return;
    state_ = s;
    Q_EMIT stateChanged(s);
}

void Session::report(const QString& message) {
    lastError_ = message;
    Q_EMIT errorOccurred(message);
}

void Session::fetchFailures() {
    if (!wanted_ || !cluster_.hasLayout()) return;
    if (failuresInFlight_) {
        failuresAgain_ = true;  // the answer on its way may predate what changed
        return;
    }
    failuresInFlight_ = true;
    failuresPoll_.start();  // the next poll counts from this request
    QPointer<Session> self(this);
    api_.get(QStringLiteral("/api/v1/failures"), [self](Result<QJsonDocument> r) {
        if (!self) return;
        self->failuresInFlight_ = false;
        // A failed request keeps what is shown: the stale banner and the status bar say why.
        if (r && self->wanted_) self->cluster_.failures()->applyLoomd(r->object());
        if (self->failuresAgain_) {
            self->failuresAgain_ = false;
            self->failuresSoon_.start();
        }
    });
}

void Session::fetchSwitchStates() {
    if (!wanted_ || !cluster_.hasLayout()) return;
    if (switchesInFlight_) {
        switchesAgain_ = true;  // the answer on its way may predate what changed
        return;
    }
    switchesInFlight_ = true;
    QPointer<Session> self(this);
    // Without the bundles: at 98k they are ~220k objects, and only the switches' words are
    // wanted here (the fabric map counts its links from the stream).
    api_.get(QStringLiteral("/api/v1/fabric/topology?bundles=false"),
             [self](Result<QJsonDocument> r) {
                 if (!self) return;
                 self->switchesInFlight_ = false;
                 // A failed request keeps the words shown: the stale banner and the status bar say
                 // why.
                 if (r && self->wanted_) self->cluster_.applySwitchStates(r->object());
                 if (self->switchesAgain_) {
                     self->switchesAgain_ = false;
                     self->switchesSoon_.start();
                 }
             });
}

void Session::fetchHall() {
    setState(State::FetchingHall);
    hallInFlight_ = true;
    api_.getRaw(QStringLiteral("/api/v1/hall"), [this](Result<QByteArray> raw) {
        hallInFlight_ = false;
        if (!wanted_) return;
        if (!raw) {
            if (isUnauthorized(raw.error()))
                refuseAuth(QStringLiteral("GET /api/v1/hall: %1").arg(raw.error()));
            else
                scheduleReconnect(QStringLiteral("GET /api/v1/hall: %1").arg(raw.error()));
            return;
        }
        auto hall = parseHall(*raw);
        if (!hall) {
            scheduleReconnect(hall.error());
            return;
        }
        cluster_.setLayout(std::move(*hall));
        openStream();
    });
}

void Session::openStream() {
    setState(State::Connecting);
    QNetworkRequest req(streamUrl(api_.server()));
    if (!api_.token().isEmpty())
        req.setRawHeader("Authorization", "Bearer " + api_.token().toUtf8());
    ws_.abort();
    ws_.open(req);
}

void Session::scheduleReconnect(const QString& why) {
    report(why);
    if (!wanted_) return;
    const int jitter = QRandomGenerator::global()->bounded(backoffMs_ / 4 + 1);
    backoffTimer_.start(backoffMs_ + jitter);
    backoffMs_ = std::min(backoffMs_ * 2, kBackoffMaxMs);
    setState(State::Backoff);
}

void Session::refuseAuth(const QString& why) {
    // Retrying with the same token cannot succeed and only fills the server's log: stop, and
    // let the window ask for another token.
    wanted_ = false;
    backoffTimer_.stop();
    ws_.abort();
    cluster_.clearForReconnect();  // the role shown must not outlive the token
    report(why);
    setState(State::Unauthorized);
    Q_EMIT authRequired(why);
}

void Session::subscribe(const QJsonObject& hello) {
    static const QStringList kData = {QStringLiteral("gpu.util"), QStringLiteral("gpu.temp"),
                                      QStringLiteral("gpu.health"), QStringLiteral("link.util"),
                                      QStringLiteral("link.health")};
    QJsonArray topics;
    const QJsonArray offered = hello.value(u"topics").toArray();
    for (const auto& t : kData)
        // gpu.temp is optional in docs/api.md (it may ride along with gpu.util).
        if (offered.isEmpty() ? t != u"gpu.temp" : offered.contains(t)) topics.append(t);
    for (const char* t : {"events", "provisioning", "inventory", "jobs"})
        topics.append(QLatin1String(t));
    QJsonObject sub{{u"op"_qs, u"subscribe"_qs}, {u"topics"_qs, topics}};
    // Resuming lets the server replay the events we missed instead of losing them.
    if (resumeFrom_ > 0) sub.insert(u"resumeFrom"_qs, resumeFrom_);
    ws_.sendTextMessage(QString::fromUtf8(QJsonDocument(sub).toJson(QJsonDocument::Compact)));
}

void Session::onText(const QString& text) {
    QJsonParseError perr;
    const auto doc = QJsonDocument::fromJson(text.toUtf8(), &perr);
    if (perr.error != QJsonParseError::NoError || !doc.isObject()) {
        report(QStringLiteral("stream: a frame that is not a JSON object (%1)")
                   .arg(perr.errorString()));
        return;
    }
    const QJsonObject msg = doc.object();
    if (msg.value(u"type").toString() == u"hello") {
        // The last seq seen before this connection, taken before hello moves it on.
        resumeFrom_ = cluster_.lastSeq();
        if (auto r = cluster_.handleMessage(msg); !r)
            report(QStringLiteral("stream: %1").arg(r.error()));
        subscribe(msg);
        return;
    }
    if (auto r = cluster_.handleMessage(msg); !r)
        report(QStringLiteral("stream: %1").arg(r.error()));
}

}  // namespace loom::console
