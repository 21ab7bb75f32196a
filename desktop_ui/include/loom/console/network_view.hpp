// NetworkView: the frontend and storage networks as their own view (the Fabric tab is the
// backend Clos). They carry no training traffic and no per-link telemetry in the hub, so the
// view shows what the inventory API knows, refreshed while it is on screen: switches by tier
// (FCSW above; FSW per zone and SSW per storage row below) coloured by their own state and
// loomd's health words for their links, counted as the web's networks view counts them (GET
// /api/v1/switches?role=fsw|fcsw|ssw, GET /api/v1/links?network=frontend|storage, every page),
// names where they fit, uplink bundles with counts, a header whose counts are those drawn, and
// on a click the switch's links with peer, state and health.
#pragma once

#include <QJsonArray>
#include <QPointer>
#include <QTextBrowser>
#include <QWidget>
#include <array>
#include <vector>

#include "loom/console/api_client.hpp"

class QLabel;
class QTimer;

namespace loom::console {

struct NetSwitch {
    QString name, role, zone, rack, state;
    int tier = 1;  // 2: FCSW; 1: FSW, SSW
    // By NetworkModel::code: up, not in service, down, drained, degraded.
    std::array<int, 5> links{};
    std::vector<int> linkIndex;  // into NetworkModel::links
};

struct NetLink {
    QString name, network, state;
    QString health;      // loomd's word (GET /api/v1/links `health`, docs/api.md "Link health")
    int a = -1, b = -1;  // switch indices of the ends (-1: a host NIC or a storage node)
};

// Switches and links of the frontend and storage networks, joined by the link ends' devices.
struct NetworkModel {
    std::vector<NetSwitch> switches;
    std::vector<NetLink> links;
    std::array<int, 5> linkStates{};  // over all links, by code
    // A link's class by loomd's health word, as the web's networks view classes it: up 0, not in
    // service or no data 1, down 2, drained 3, degraded 4. A loomd that sends no `health` (older)
    // is read by the stored state (active up, down/failed down, drained, else not in service).
    static int code(const NetLink& link);
    // A stored state: active 0, planned 1, down 2, drained 3.
    static int stateCode(const QString& linkState);
    static NetworkModel build(const QJsonArray& switches, const QJsonArray& links);
    int find(const QString& name) const;
};

class NetworkMapWidget : public QWidget {
    Q_OBJECT
public:
    explicit NetworkMapWidget(QWidget* parent = nullptr);
    void setModel(const NetworkModel* model);
    void select(int sw);
    int selected() const { return selected_; }
    int switchAt(QPointF pos) const;
    QRectF switchRect(int sw) const;
    static QRgb switchColor(const NetSwitch& s);
    int drawnSwitches() const;

Q_SIGNALS:
    void switchClicked(int sw);

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseReleaseEvent(class QMouseEvent* e) override;
    void resizeEvent(class QResizeEvent*) override;

private:
    void layoutScene();
    const NetworkModel* model_ = nullptr;
    std::vector<QRectF> rects_;
    struct Group {
        QString label;
        QRectF rect;
        int uplinks = 0, down = 0;
    };
    std::vector<Group> groups_;
    int selected_ = -1;
};

class NetworkView : public QWidget {
    Q_OBJECT
public:
    explicit NetworkView(ApiClient* api, QWidget* parent = nullptr);

    void refresh();
    const NetworkModel& model() const { return model_; }
    NetworkMapWidget* map() const { return map_; }
    QTextBrowser* detail() const { return detail_; }
    QString headerText() const;
    bool loaded() const { return loaded_; }
    void showSwitch(int sw);

Q_SIGNALS:
    void refreshed();

protected:
    void showEvent(QShowEvent*) override;

private:
    void fetchAll(const QString& path, QJsonArray acc,
                  std::function<void(Result<QJsonArray>)> done);

    QPointer<ApiClient> api_;
    NetworkMapWidget* map_;
    QLabel* header_;
    QTextBrowser* detail_;
    QTimer* timer_;
    NetworkModel model_;
    bool loaded_ = false;
    bool loading_ = false;
    int generation_ = 0;
};

}  // namespace loom::console
