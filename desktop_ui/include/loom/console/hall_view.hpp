// HallView: the hall map with its metric chooser and legend, and the detail panel that opens
// on a click (GPU identity from GET /api/v1/gpus/{name}, last XID and rack history from
// GET /api/v1/events, the host's backend links with their live state).
#pragma once

#include "loom/console/api_client.hpp"
#include "loom/console/cluster_state.hpp"
#include "loom/console/hall_map_widget.hpp"

#include <QComboBox>
#include <QPointer>
#include <QTextBrowser>
#include <QWidget>

namespace loom::console {

class LegendWidget : public QWidget {
    Q_OBJECT
public:
    explicit LegendWidget(QWidget* parent = nullptr);
    void setMetric(Metric m);
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;

private:
    Metric metric_ = Metric::Utilization;
};

class HallView : public QWidget {
    Q_OBJECT
public:
    HallView(ClusterState* state, ApiClient* api, QWidget* parent = nullptr);

    HallMapWidget* map() const { return map_; }
    QComboBox* metricBox() const { return metricBox_; }
    QTextBrowser* detail() const { return detail_; }

    // Select and centre a GPU, host, rack or switch by name (events focus the map this way).
    bool focusLocation(const QString& location, const QString& rack);
    void showGpu(int gpu);
    void showRack(int rack);

private:
    void render();
    QString linksHtml(const QString& host) const;

    QPointer<ClusterState> state_;
    QPointer<ApiClient> api_;
    HallMapWidget* map_;
    LegendWidget* legend_;
    QComboBox* metricBox_;
    QTextBrowser* detail_;
    // Detail content, filled in as replies arrive; generation_ drops stale replies.
    int generation_ = 0;
    int gpu_ = -1;
    int rack_ = -1;
    QString identityHtml_;
    QString xidHtml_;
    QString historyHtml_;
};

}  // namespace loom::console
