// FabricView: the fabric map with its controls (back to overview, failure-impact overlay)
// and a panel for the selected switch: its link summary, routing table
// (GET /api/v1/fabric/routes/{switch}), config version and its diff to the previous version
// (GET /api/v1/fabric/config/{switch}?previous=true),
// its ports and peers; a click on a port shows that link's last hour as a sparkline
// (GET /api/v1/telemetry/rollups?scope=link).
#pragma once

#include "loom/console/api_client.hpp"
#include "loom/console/fabric_map_widget.hpp"

#include <QCheckBox>
#include <QElapsedTimer>
#include <QPointer>
#include <QPushButton>
#include <QTextBrowser>
#include <QWidget>

namespace loom::console {

class FabricView : public QWidget {
    Q_OBJECT
public:
    FabricView(ClusterState* state, ApiClient* api, QWidget* parent = nullptr);

    FabricMapWidget* map() const { return map_; }
    QCheckBox* overlayBox() const { return overlay_; }
    QTextBrowser* detail() const { return detail_; }
    void showSwitch(int sw);
    bool focusLocation(const QString& location, const QString& rack);
    void refreshDegradation();
    void showLinkHistory(int link);  // index into the hall's links
    int historyLink() const { return historyLink_; }

private:
    void render();

    QPointer<ClusterState> state_;
    QPointer<ApiClient> api_;
    FabricMapWidget* map_;
    QPushButton* back_;
    QCheckBox* overlay_;
    QTextBrowser* detail_;
    int sw_ = -1;
    int generation_ = 0;
    QString routesHtml_;
    QString configHtml_;
    QElapsedTimer lastRender_;
    QString overlayError_;
    int historyLink_ = -1;
    QString linkHistoryHtml_;
};

}  // namespace loom::console
