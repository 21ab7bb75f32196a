// HallView: the hall map with its metric chooser, utilization window and legend, and the
// detail panel that opens on a click: for a GPU its live utilization/temperature/health (the
// stream) and power/memory/ECC (GET /api/v1/telemetry/gpus/{name}), its NIC's backend link with
// peer switch and port, the last hour of the GPU and of its link as sparklines
// (GET /api/v1/telemetry/rollups?scope=gpu|link), its last XID explained, identity and rack history; for a rack its
// elevation (switches, hosts by slot with their GPUs, storage nodes, each with state; from
// GET /api/v1/{hosts,switches,storage_nodes}?rack=), its open failures and links.
#pragma once

#include "loom/console/api_client.hpp"
#include "loom/console/cluster_state.hpp"
#include "loom/console/hall_map_widget.hpp"

#include <QComboBox>
#include <QJsonArray>
#include <QJsonObject>
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
    QSize minimumSizeHint() const override;
    // The provisioning legend (14 states) wraps onto more lines instead of running off the bar.
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;

private:
    // Lines the swatches take at `width` (1 for the ramps).
    int lineCount(int width) const;
    static constexpr int kLineHeight = 22;
    Metric metric_ = Metric::Utilization;
};

class HallView : public QWidget {
    Q_OBJECT
public:
    HallView(ClusterState* state, ApiClient* api, QWidget* parent = nullptr);

    HallMapWidget* map() const { return map_; }
    QComboBox* metricBox() const { return metricBox_; }
    QComboBox* windowBox() const { return windowBox_; }  // utilization window, seconds
    QTextBrowser* detail() const { return detail_; }

    // Select and centre a GPU, host, rack or switch by name (events focus the map this way).
    bool focusLocation(const QString& location, const QString& rack);
    void showGpu(int gpu);
    void showRack(int rack);

private:
    void applyWindow();
    void render();
    void fetchGpuTelemetry();
    // The selected GPU's last XID event (GET /api/v1/events?location=): at selection, and
    // again whenever the stream changes an event there or the event list is re-read, so the
    // panel's "Last XID ... (open)" never outlives the event loomd closed (issue 39).
    void fetchLastXid();
    void fetchHistory();
    void updateSparklines();
    QString historyChartsHtml() const;
    QString linksHtml(const QString& host) const;
    QString gpuLiveHtml(int gpu) const;
    QString gpuLinkHtml(int gpu) const;
    QString rackFailuresHtml(int rack) const;
    QString elevationHtml(int rack) const;

    QPointer<ClusterState> state_;
    QPointer<ApiClient> api_;
    HallMapWidget* map_;
    LegendWidget* legend_;
    QComboBox* metricBox_;
    QComboBox* windowBox_;
    QTextBrowser* detail_;
    // Detail content, filled in as replies arrive; generation_ drops stale replies.
    int generation_ = 0;
    int gpu_ = -1;
    int rack_ = -1;
    QString identityHtml_;
    QString xidHtml_;
    QString historyHtml_;
    QString lemonsHtml_;  // the rack's hosts and GPUs with lemon strikes (GET /api/v1/lemons)
    QJsonObject gpuTelemetry_;     // GET /api/v1/telemetry/gpus/<name>
    QString gpuTelemetryError_;
    QJsonArray gpuHistory_, linkHistory_;  // GET /api/v1/telemetry/rollups?scope=gpu|link
    QString gpuHistoryError_;
    bool gpuHistoryLoaded_ = false;
    QJsonObject elevation_;        // "hosts", "switches", "storage": the rack's inventory
    int liveTicks_ = 0;
    // True when the last hour has a point for the GPU's utilization and its link's (when it
    // has one): until then the history is fetched again every few seconds, not every 20.
    bool historyHasPoints() const;
};

}  // namespace loom::console
