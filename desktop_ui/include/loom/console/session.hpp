// Session: one connection to a loomd. Fetches /api/v1/hall, opens the WebSocket stream,
// subscribes (with resumeFrom = last seq after a reconnect), reconnects with exponential
// backoff (0.5 s doubling to 30 s, with jitter) and refetches the hall when the layout changes.
//
// Connection settings come from, in order: command-line flags, LOOM_SERVER/LOOM_TOKEN, and the
// last server remembered in QSettings with its token from the TokenStore.
//
// The open failures are loomd's (GET /api/v1/failures): asked for when the stream says they
// may have changed (FailureIndex::refreshWanted, 250 ms debounce, one request in flight), on
// every (re)connect, and every 5 s while live (an event closed by time sends no health frame).
//
// loomd's word for each switch (GET /api/v1/fabric/topology?bundles=false, its `state`) is asked
// for on every (re)connect and new hall, and when the live state moved (an `inventory` message
// with a new stateVersion, a `degradation` message; 500 ms debounce, one request in flight):
// a switch follows its rack, so it changes with rack transitions only.
//
// A 401 (token unknown, revoked or expired) is not a network problem: the session stops
// retrying, forgets the role, goes to State::Unauthorized and emits authRequired so the
// window can ask for a token.
#pragma once

#include <QObject>
#include <QTimer>
#include <QUrl>
#include <QWebSocket>

#include "loom/console/api_client.hpp"
#include "loom/console/cluster_state.hpp"

namespace loom::console {

struct ConnectionSettings {
    QUrl server;
    QString token;

    static ConnectionSettings resolve(const QString& flagServer, const QString& flagToken);
    // The server in QSettings, the token in the TokenStore (keychain or a 0600 file).
    Result<void> remember() const;
};

class Session : public QObject {
    Q_OBJECT
public:
    enum class State { Disconnected, FetchingHall, Connecting, Live, Backoff, Unauthorized };
    Q_ENUM(State)

    explicit Session(QObject* parent = nullptr);
    ~Session() override;

    void open(const QUrl& server, const QString& token);
    void close();

    State state() const { return state_; }
    QString stateText() const;
    QUrl server() const { return api_.server(); }
    ApiClient* api() { return &api_; }
    ClusterState* cluster() { return &cluster_; }
    int reconnects() const { return reconnects_; }
    QString lastError() const { return lastError_; }
    bool retryPending() const { return backoffTimer_.isActive(); }

    static QUrl streamUrl(const QUrl& server);

Q_SIGNALS:
    void stateChanged(loom::console::Session::State state);
    void errorOccurred(const QString& message);
    void firstSnapshot();  // all subscribed GPU topics have a snapshot after open()
    void authRequired(const QString& message);  // 401: no retry until open() with a new token

private:
    void setState(State s);
    void fetchHall();
    void openStream();
    void scheduleReconnect(const QString& why);
    void refuseAuth(const QString& why);
    void onText(const QString& text);
    void subscribe(const QJsonObject& hello);
    void report(const QString& message);
    void fetchFailures();
    void fetchSwitchStates();

    ApiClient api_;
    ClusterState cluster_;
    QWebSocket ws_;
    QTimer backoffTimer_;
    QTimer failuresSoon_;  // debounce of refreshWanted
    QTimer failuresPoll_;  // every 5 s while live
    bool failuresInFlight_ = false;
    bool failuresAgain_ = false;
    QTimer switchesSoon_;  // debounce of liveStateMoved
    bool switchesInFlight_ = false;
    bool switchesAgain_ = false;
    State state_ = State::Disconnected;
    int backoffMs_ = 500;
    int reconnects_ = 0;
    bool wanted_ = false;
    bool firstSnapshotSent_ = false;
    bool hallInFlight_ = false;
    qint64 resumeFrom_ = 0;
    QString lastError_;
};

}  // namespace loom::console
