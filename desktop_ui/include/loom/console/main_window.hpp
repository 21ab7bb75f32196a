// MainWindow: the six views (hall, fabric, frontend & storage, provisioning, events, jobs) over one Session, the
// connect dialog, and a status bar with connection state, server, role and data age.
// runScreenshots() drives the same window to write one PNG per view (scripts/screenshot).
#pragma once

#include "loom/console/session.hpp"

#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QPointer>
#include <QTabWidget>

namespace loom::console {

class HallView;
class FabricView;
class NetworkView;
class ProvisioningBoard;
class EventsView;
class JobsView;
class FailureCounter;

class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    explicit ConnectDialog(const ConnectionSettings& current, QWidget* parent = nullptr,
                           const QString& message = {});
    ConnectionSettings settings() const;
    QLineEdit* tokenEdit() const { return token_; }

private:
    QLineEdit* server_;
    QLineEdit* token_;
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    // Connects (or asks for a server when none is configured).
    void start(const ConnectionSettings& settings);
    // Connects, waits for live data plus `waitSeconds`, writes DIR/<view>.png, returns success.
    bool runScreenshots(const ConnectionSettings& settings, const QString& dir, double waitSeconds);

    Session* session() { return &session_; }
    HallView* hallView() const { return hall_; }
    FabricView* fabricView() const { return fabric_; }
    NetworkView* networkView() const { return network_; }
    ProvisioningBoard* board() const { return board_; }
    EventsView* eventsView() const { return events_; }
    JobsView* jobsView() const { return jobs_; }
    FailureCounter* failureCounter() const { return counter_; }
    QTabWidget* tabs() const { return tabs_; }
    QString statusText() const;
    // The token prompt opened by a 401 (null when none is open).
    ConnectDialog* tokenPrompt() const { return tokenPrompt_; }

private:
    void showConnectDialog();
    void askForToken(const QString& why);
    void updateStatus();
    void loadInitialData();
    // Re-reads the events from loomd (the open ones and the newest 1,000) and replaces what the
    // console holds: at the first layout and after every reconnect (issue 39).
    void reloadEvents();
    void focus(const QString& location, const QString& rack);

    Session session_;
    QTabWidget* tabs_;
    HallView* hall_;
    FabricView* fabric_;
    NetworkView* network_;
    ProvisioningBoard* board_;
    EventsView* events_;
    JobsView* jobs_;
    FailureCounter* counter_;
    QLabel* stateLabel_;
    QLabel* serverLabel_;
    QLabel* roleLabel_;
    QLabel* ageLabel_;
    QLabel* errorLabel_;
    QPointer<ConnectDialog> tokenPrompt_;
};

}  // namespace loom::console
