// HallMapWidget: the data hall floor, every GPU a cell coloured by the chosen metric.
//
// Why it is fast enough for 24,576 GPUs at 1 Hz: the floor is laid out once (on a layout
// change) into a cell grid where one image pixel is one GPU cell; static parts (floor, aisles)
// are baked into that image once; a metric update rewrites only the GPU pixels through a
// precomputed pixel index and a colour lookup table; a repaint is one nearest-neighbour
// drawImage of the visible part plus outlines and labels for the racks on screen, drawn only
// when zoomed in far enough to read them.
//
// Failures (failures.hpp) are drawn on top of whatever metric colours the cells, at a minimum
// on-screen size so they stay visible at Fit: a marker on each failed GPU, an outline on a
// quarantined host, an outline and a count badge on every rack with a failure, a pulsing halo
// on failures that appeared in the last minute. Stale data (no frame for a while, or the
// connection down) is greyed out with its age written on the map.
#pragma once

#include "loom/console/cluster_state.hpp"
#include "loom/console/palette.hpp"

#include <QHash>
#include <QImage>
#include <QPixmap>
#include <QPainter>
#include <QTimer>
#include <QPointer>
#include <QWidget>

#include <vector>

namespace loom::console {

class HallMapWidget : public QWidget {
    Q_OBJECT
public:
    explicit HallMapWidget(ClusterState* state, QWidget* parent = nullptr);

    void setMetric(Metric m);
    Metric metric() const { return metric_; }

    // View: scale is screen pixels per GPU cell.
    double scale() const { return scale_; }
    void zoomBy(double factor, QPointF anchor);
    void fitAll();
    void centerOnRack(int rack, double minScale = 8.0);

    // Hit testing in widget coordinates; -1 when nothing is there.
    int gpuAt(QPointF pos) const;
    int rackAt(QPointF pos) const;
    QPointF gpuCenter(int gpu) const;  // widget coordinates of a GPU cell's centre
    QRgb gpuColor(int gpu) const;      // current colour of a GPU cell
    QSize gridSize() const { return cells_.size(); }

    // Shown greyed out with this note (e.g. "loomd unreachable, reconnecting") until cleared;
    // data older than a few stream intervals is greyed out without one.
    void setStaleNote(const QString& note);
    bool isStale() const;
    QString staleText() const;

    void selectGpu(int gpu);
    void selectRack(int rack);
    // GPUs to pick out (a job's): every other cell is veiled and the racks holding them are
    // outlined, at any zoom, under the failure markers (which stay on top). `label` is written
    // on the map. An empty list clears it; so does a layout change (indexes move).
    void setHighlight(const std::vector<int>& gpus, const QString& label = {});
    const std::vector<int>& highlight() const { return highlight_; }
    const std::vector<int>& highlightRacks() const { return highlightRacks_; }
    int selectedGpu() const { return selectedGpu_; }
    int selectedRack() const { return selectedRack_; }

    // GPUs across a rack drawing (one host per line of 8).
    static constexpr int kRackCols = 8;
    // Scale below which rack outlines and labels are skipped (and so are off-screen racks).
    static constexpr double kOutlineScale = 5.0;
    static constexpr double kLabelScale = 12.0;
    // Scale from which every GPU cell has a border (a host's 8 GPUs can be counted).
    static constexpr double kCellBorderScale = 8.0;
    // Smallest on-screen size of a failure marker and a rack badge, in pixels.
    static constexpr double kMinMarkerPx = 7.0;
    static constexpr double kBadgePx = 13.0;

Q_SIGNALS:
    void gpuClicked(int gpu);
    void rackClicked(int rack);

protected:
    void paintEvent(QPaintEvent* e) override;
    void resizeEvent(QResizeEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    void keyPressEvent(QKeyEvent* e) override;
    bool event(QEvent* e) override;

private:
    void rebuildGeometry();
    void recolor();
    void recolorCells();
    void rebuildRackDark();
    void rebuildShown();
    void paintFailures(QPainter& p);
    const QPixmap& sprite(int kind, QRgb color, int size, int count);
    void paintStale(QPainter& p);
    QRectF rackScreenRect(int rack) const;
    QRectF cellScreenRect(int pixel, int cells = 1) const;
    QPointF toWorld(QPointF screen) const { return (screen - offset_) / scale_; }
    QPointF toScreen(QPointF world) const { return world * scale_ + offset_; }
    QString tooltipFor(QPointF pos) const;
    QString failuresHtml(int rack) const;

    QPointer<ClusterState> state_;
    Metric metric_ = Metric::Utilization;

    // Geometry in cell units, rebuilt on layout change.
    QImage cells_;                    // one pixel per cell; floor baked in
    std::vector<int> gpuPixel_;       // GPU index -> y * width + x
    std::vector<int> cellRack_;       // pixel -> rack index or -1
    std::vector<int> cellGpu_;        // pixel -> GPU index or -1
    std::vector<QRect> rackRect_;     // rack footprint in cells
    std::vector<char> rackDark_;      // rack reports no data in its lifecycle state
    struct Label {
        QString text;
        QRect rect;  // the block it names, in cells
    };
    std::vector<Label> zoneLabels_;
    std::vector<Label> rowLabels_;

    double layoutAspect_ = 1.6;  // width/height the zone blocks were flowed for
    double scale_ = 4.0;
    QPointF offset_{10, 24};
    bool fitted_ = false;
    QPointF pressPos_;
    QPointF pressOffset_;
    bool dragging_ = false;
    int selectedGpu_ = -1;
    int selectedRack_ = -1;
    QString staleNote_;
    std::vector<int> highlight_;       // GPU indexes, sorted
    std::vector<int> highlightRacks_;  // racks holding one of them
    std::vector<char> hiPixel_;        // per cell pixel: a highlighted GPU
    QImage shown_;                     // cells_ with the rest veiled, while a highlight is set
    QString highlightLabel_;
    QTimer* animTimer_;
    QHash<quint64, QPixmap> sprites_;  // badges and halo rings, drawn once  // halos pulse and the stale age counts while either is shown
};

}  // namespace loom::console
