// The hall map's model side: the floor geometry (zones, rows, racks, a cell per GPU), the
// colours of the cells, zoom and pan, hit testing, selection and highlight, input and
// tooltips. Painting (cells, outlines, failure markers, the stale overlay) is in
// hall_map_paint.cpp; palette, failures and XID text are separate too.

#include "loom/console/hall_map_widget.hpp"

#include "loom/console/stale.hpp"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <map>

namespace loom::console {

namespace {
constexpr int kRackGap = 1;      // cells between racks in a row
constexpr int kAisle = 2;        // cells between rows
constexpr int kZoneGap = 8;      // cells between zone blocks
constexpr int kZoneLabel = 4;    // cells above a zone block for its name
constexpr double kMaxScale = 64.0;
}  // namespace

HallMapWidget::HallMapWidget(ClusterState* state, QWidget* parent)
    : QWidget(parent), state_(state), animTimer_(new QTimer(this))
{
    animTimer_->setInterval(100);
    connect(animTimer_, &QTimer::timeout, this, [this] {
        bool fresh = false;
        for (const auto& m : state_->failures()->rackMarks())
            fresh |= m.fresh;
        if (!fresh && !isStale()) {
            animTimer_->stop();
            return;
        }
        update();
    });
    connect(state->failures(), &FailureIndex::changed, this, [this] {
        if (!animTimer_->isActive())
            animTimer_->start();
        update();
    });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned) {
        if (!animTimer_->isActive() && isStale())
            animTimer_->start();
    });
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(320, 240);
    connect(state, &ClusterState::layoutChanged, this, [this] {
        rebuildGeometry();
        update();
    });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned mask) {
        const unsigned wanted = metric_ == Metric::Utilization   ? topicBit(Topic::GpuUtil)
                                : metric_ == Metric::Temperature ? topicBit(Topic::GpuTemp)
                                : metric_ == Metric::Health      ? topicBit(Topic::GpuHealth)
                                                                 : 0u;
        if (mask & wanted) {
            recolor();
            update();
        }
    });
    connect(state, &ClusterState::rackStateChanged, this, [this](int rack, const QString&, const QString& to) {
        if (rack >= 0 && rack < static_cast<int>(rackDark_.size()))
            rackDark_[static_cast<size_t>(rack)] = !rackReportsData(to);
        recolor();
        update();
    });
    rebuildGeometry();
}

void HallMapWidget::setMetric(Metric m)
{
    metric_ = m;
    recolor();
    update();
}

void HallMapWidget::rebuildGeometry()
{
    const HallLayout& h = state_->layout();
    gpuPixel_.assign(static_cast<size_t>(h.gpus.size()), -1);
    rackRect_.assign(h.racks.size(), QRect());
    zoneLabels_.clear();
    rowLabels_.clear();
    if (h.racks.empty()) {
        cells_ = QImage();
        cellRack_.clear();
        cellGpu_.clear();
        return;
    }

    int maxGpus = kRackCols;
    for (const auto& r : h.racks)
        maxGpus = std::max(maxGpus, r.gpuCount);
    const int rackH = (maxGpus + kRackCols - 1) / kRackCols;
    const int rackPitch = kRackCols + kRackGap;
    const int rowPitch = rackH + kAisle;

    // Zone -> rows (by floor index) -> racks (by position).
    struct ZoneBlock {
        QString name;
        std::map<int, int> rowOrder;  // row index on the floor -> hall row
        int maxPos = 0;
        int w = 0, h = 0, x = 0, y = 0;
    };
    std::vector<ZoneBlock> zones;
    QHash<QString, int> zoneIdx;
    auto zoneOf = [&](const QString& name) {
        auto it = zoneIdx.find(name);
        if (it != zoneIdx.end())
            return *it;
        zones.push_back({name, {}, 0, 0, 0, 0, 0});
        zoneIdx.insert(name, static_cast<int>(zones.size() - 1));
        return static_cast<int>(zones.size() - 1);
    };
    for (const auto& z : h.zones)
        zoneOf(z);
    QHash<QString, int> rowIdx;
    for (size_t i = 0; i < h.rows.size(); ++i) {
        rowIdx.insert(h.rows[i].name, static_cast<int>(i));
        auto& zb = zones[static_cast<size_t>(zoneOf(h.rows[i].zone))];
        int key = h.rows[i].index;
        while (zb.rowOrder.count(key))  // duplicate indexes: keep them all, in hall order
            key += 100000;
        zb.rowOrder[key] = static_cast<int>(i);
    }
    for (const auto& r : h.racks)
        zones[static_cast<size_t>(zoneOf(r.zone))].maxPos =
            std::max(zones[static_cast<size_t>(zoneOf(r.zone))].maxPos, r.position);
    for (auto& zb : zones) {
        zb.w = (zb.maxPos + 1) * rackPitch - kRackGap;
        zb.h = std::max<int>(1, static_cast<int>(zb.rowOrder.size())) * rowPitch - kAisle;
    }
    // Zones flow left to right in lines; pick the count per line that gives the floor the
    // aspect of the widget, so the whole hall fills the window at the largest cell size.
    const int n = static_cast<int>(zones.size());
    layoutAspect_ = width() > 50 && height() > 50 ? static_cast<double>(width()) / height() : 1.6;
    int bestPerLine = 1;
    double bestErr = 1e18;
    for (int per = 1; per <= n; ++per) {
        int lineW = 0, totalH = 0, lineH = 0, w = 0;
        for (int i = 0; i < n; ++i) {
            if (i % per == 0) {
                totalH += lineH + (i ? kZoneGap : 0);
                lineW = 0;
                lineH = 0;
            }
            lineW += zones[static_cast<size_t>(i)].w + (i % per ? kZoneGap : 0);
            lineH = std::max(lineH, zones[static_cast<size_t>(i)].h + kZoneLabel);
            w = std::max(w, lineW);
        }
        totalH += lineH;
        const double err = std::abs(std::log((static_cast<double>(w) / totalH) / layoutAspect_));
        if (err < bestErr) {
            bestErr = err;
            bestPerLine = per;
        }
    }
    int x = 0, y = 0, lineH = 0, W = 0, H = 0;
    for (int i = 0; i < n; ++i) {
        auto& zb = zones[static_cast<size_t>(i)];
        if (i % bestPerLine == 0 && i > 0) {
            y += lineH + kZoneGap;
            x = 0;
            lineH = 0;
        }
        zb.x = x;
        zb.y = y + kZoneLabel;
        x += zb.w + kZoneGap;
        lineH = std::max(lineH, zb.h + kZoneLabel);
        W = std::max(W, zb.x + zb.w);
        H = std::max(H, zb.y + zb.h);
    }

    cells_ = QImage(W, H, QImage::Format_RGB32);
    cells_.fill(backgroundColor());
    cellRack_.assign(static_cast<size_t>(W) * H, -1);
    cellGpu_.assign(static_cast<size_t>(W) * H, -1);
    auto* px = reinterpret_cast<QRgb*>(cells_.bits());
    const int stride = static_cast<int>(cells_.bytesPerLine() / 4);
    for (const auto& zb : zones) {
        zoneLabels_.push_back({zb.name, QRect(zb.x, zb.y, zb.w, zb.h)});
        for (int yy = zb.y; yy < zb.y + zb.h; ++yy)
            std::fill_n(px + yy * stride + zb.x, zb.w, floorColor());
        int line = 0;
        for (const auto& [key, row] : zb.rowOrder) {
            rowLabels_.push_back({h.rows[static_cast<size_t>(row)].name,
                                  QRect(zb.x, zb.y + line * rowPitch, zb.w, rackH)});
            ++line;
        }
    }
    // Row line within its zone block, by floor order.
    QHash<int, int> rowLine;
    for (const auto& zb : zones) {
        int line = 0;
        for (const auto& [key, row] : zb.rowOrder)
            rowLine.insert(row, line++);
    }
    for (size_t ri = 0; ri < h.racks.size(); ++ri) {
        const auto& r = h.racks[ri];
        const auto& zb = zones[static_cast<size_t>(zoneOf(r.zone))];
        const int line = rowLine.value(rowIdx.value(r.row, -1), 0);
        const QRect rect(zb.x + r.position * rackPitch, zb.y + line * rowPitch, kRackCols, rackH);
        rackRect_[ri] = rect;
        for (int yy = rect.top(); yy <= rect.bottom(); ++yy)
            for (int xx = rect.left(); xx <= rect.right(); ++xx) {
                cellRack_[static_cast<size_t>(yy) * W + xx] = static_cast<int>(ri);
                px[yy * stride + xx] = noDataColor();
            }
        for (int k = 0; k < r.gpuCount; ++k) {
            const int cx = rect.left() + k % kRackCols;
            const int cy = rect.top() + k / kRackCols;
            gpuPixel_[static_cast<size_t>(r.gpuOffset + k)] = cy * stride + cx;
            cellGpu_[static_cast<size_t>(cy) * W + cx] = r.gpuOffset + k;
        }
    }
    fitted_ = false;
    if (width() > 0 && height() > 0)
        fitAll();
    rebuildRackDark();
    recolor();
    // GPU indexes of the old layout mean nothing now; whoever set the highlight sets it again.
    highlight_.clear();
    highlightRacks_.clear();
    hiPixel_.clear();
    shown_ = QImage();
    highlightLabel_.clear();
}

void HallMapWidget::rebuildRackDark()
{
    const HallLayout& h = state_->layout();
    rackDark_.assign(h.racks.size(), 0);
    for (size_t r = 0; r < h.racks.size(); ++r)
        rackDark_[r] = !rackReportsData(h.racks[r].state);
}

void HallMapWidget::setStaleNote(const QString& note)
{
    if (note == staleNote_)
        return;
    staleNote_ = note;
    if (isStale() && !animTimer_->isActive())
        animTimer_->start();
    update();
}

bool HallMapWidget::isStale() const
{
    return dataIsStale(state_->dataAgeMs(), state_->intervalMs(), staleNote_);
}

QString HallMapWidget::staleText() const
{
    return loom::console::staleText(state_->dataAgeMs(), staleNote_);
}

void HallMapWidget::recolor()
{
    recolorCells();
    if (!hiPixel_.empty())
        rebuildShown();
}

void HallMapWidget::recolorCells()
{
    if (cells_.isNull())
        return;
    auto* px = reinterpret_cast<QRgb*>(cells_.bits());  // bits() detaches once, then in place
    const HallLayout& h = state_->layout();
    const size_t n = gpuPixel_.size();
    if (metric_ == Metric::Provisioning) {
        const Lut& lut = provisioningLut();
        for (size_t g = 0; g < n; ++g) {
            const int rack = h.gpuRack[g];
            const int p = gpuPixel_[g];
            if (p >= 0 && rack >= 0)
                px[p] = lut[provisioningCode(h.racks[static_cast<size_t>(rack)].state)];
        }
        return;
    }
    const Topic topic = metric_ == Metric::Utilization   ? Topic::GpuUtil
                        : metric_ == Metric::Temperature ? Topic::GpuTemp
                                                         : Topic::GpuHealth;
    const Lut& lut = metric_ == Metric::Utilization   ? utilizationLut()
                     : metric_ == Metric::Temperature ? temperatureLut()
                                                      : healthLut();
    const auto& v = topic == Topic::GpuUtil ? state_->gpuUtilShown() : state_->values(topic);
    const size_t m = std::min(n, v.size());
    const QRgb none = noDataColor();
    const bool darkKnown = rackDark_.size() == h.racks.size();
    for (size_t g = 0; g < m; ++g)
        if (const int p = gpuPixel_[g]; p >= 0) {
            const int rack = h.gpuRack[g];
            px[p] = darkKnown && rack >= 0 && rackDark_[static_cast<size_t>(rack)] ? none : lut[v[g]];
        }
}

void HallMapWidget::fitAll()
{
    if (cells_.isNull())
        return;
    const double margin = 12;
    const double top = 26;  // room for the first line of zone names
    scale_ = std::max(0.25, std::min((width() - 2 * margin) / cells_.width(),
                                     (height() - margin - top) / cells_.height()));
    offset_ = QPointF((width() - cells_.width() * scale_) / 2, top);
    fitted_ = true;
    update();
}

void HallMapWidget::zoomBy(double factor, QPointF anchor)
{
    const QPointF world = toWorld(anchor);
    scale_ = std::clamp(scale_ * factor, 0.25, kMaxScale);
    offset_ = anchor - world * scale_;
    fitted_ = false;
    update();
}

void HallMapWidget::centerOnRack(int rack, double minScale)
{
    if (rack < 0 || rack >= static_cast<int>(rackRect_.size()))
        return;
    scale_ = std::max(scale_, minScale);
    fitted_ = false;
    const QRectF r = rackRect_[static_cast<size_t>(rack)];
    offset_ = QPointF(width() / 2.0, height() / 2.0) - r.center() * scale_;
    update();
}

int HallMapWidget::gpuAt(QPointF pos) const
{
    const QPointF w = toWorld(pos);
    const int x = static_cast<int>(std::floor(w.x()));
    const int y = static_cast<int>(std::floor(w.y()));
    if (cells_.isNull() || x < 0 || y < 0 || x >= cells_.width() || y >= cells_.height())
        return -1;
    return cellGpu_[static_cast<size_t>(y) * cells_.width() + x];
}

int HallMapWidget::rackAt(QPointF pos) const
{
    const QPointF w = toWorld(pos);
    const int x = static_cast<int>(std::floor(w.x()));
    const int y = static_cast<int>(std::floor(w.y()));
    if (cells_.isNull() || x < 0 || y < 0 || x >= cells_.width() || y >= cells_.height())
        return -1;
    return cellRack_[static_cast<size_t>(y) * cells_.width() + x];
}

QPointF HallMapWidget::gpuCenter(int gpu) const
{
    if (gpu < 0 || gpu >= static_cast<int>(gpuPixel_.size()) || gpuPixel_[static_cast<size_t>(gpu)] < 0)
        return {-1, -1};
    const int stride = static_cast<int>(cells_.bytesPerLine() / 4);
    const int p = gpuPixel_[static_cast<size_t>(gpu)];
    return toScreen(QPointF(p % stride + 0.5, p / stride + 0.5));
}

QRgb HallMapWidget::gpuColor(int gpu) const
{
    if (gpu < 0 || gpu >= static_cast<int>(gpuPixel_.size()) || gpuPixel_[static_cast<size_t>(gpu)] < 0)
        return 0;
    return reinterpret_cast<const QRgb*>(cells_.constBits())[gpuPixel_[static_cast<size_t>(gpu)]];
}

void HallMapWidget::selectGpu(int gpu)
{
    selectedGpu_ = gpu;
    selectedRack_ = gpu >= 0 && gpu < static_cast<int>(state_->layout().gpuRack.size())
                        ? state_->layout().gpuRack[static_cast<size_t>(gpu)]
                        : -1;
    update();
}

void HallMapWidget::selectRack(int rack)
{
    selectedGpu_ = -1;
    selectedRack_ = rack;
    update();
}

void HallMapWidget::setHighlight(const std::vector<int>& gpus, const QString& label)
{
    highlight_.clear();
    highlightRacks_.clear();
    hiPixel_.clear();
    shown_ = QImage();
    highlightLabel_ = label;
    const HallLayout& h = state_->layout();
    if (!gpus.empty() && !cells_.isNull()) {
        hiPixel_.assign(static_cast<size_t>(cells_.width()) * cells_.height(), 0);
        std::vector<char> rackSeen(h.racks.size(), 0);
        for (const int g : gpus) {
            if (g < 0 || g >= static_cast<int>(gpuPixel_.size()) || gpuPixel_[static_cast<size_t>(g)] < 0)
                continue;
            highlight_.push_back(g);
            hiPixel_[static_cast<size_t>(gpuPixel_[static_cast<size_t>(g)])] = 1;
            const int r = h.gpuRack[static_cast<size_t>(g)];
            if (r >= 0 && !rackSeen[static_cast<size_t>(r)]) {
                rackSeen[static_cast<size_t>(r)] = 1;
                highlightRacks_.push_back(r);
            }
        }
        std::sort(highlight_.begin(), highlight_.end());
        if (highlight_.empty())
            hiPixel_.clear();
    }
    rebuildShown();
    update();
}

void HallMapWidget::rebuildShown()
{
    // Why a pre-veiled copy of the cells and not a translucent veil drawn over them: a repaint
    // stays one opaque nearest-neighbour drawImage (blending a scaled veil doubled the repaint
    // at 24k); the copy is made once per metric update, not per repaint.
    if (hiPixel_.empty() || cells_.isNull()) {
        shown_ = QImage();
        return;
    }
    if (shown_.size() != cells_.size())
        shown_ = QImage(cells_.size(), QImage::Format_RGB32);
    const auto* src = reinterpret_cast<const QRgb*>(cells_.constBits());
    auto* dst = reinterpret_cast<QRgb*>(shown_.bits());
    const size_t n = std::min(hiPixel_.size(), static_cast<size_t>(cells_.width()) * cells_.height());
    // A third of the colour over a near-black: the rest of the floor recedes, hues still read.
    auto veil = [](int c, int v) { return (c * 85 + v * 170) / 255; };
    for (size_t i = 0; i < n; ++i) {
        const QRgb c = src[i];
        dst[i] = hiPixel_[i] ? c : qRgb(veil(qRed(c), 8), veil(qGreen(c), 8), veil(qBlue(c), 12));
    }
}

void HallMapWidget::resizeEvent(QResizeEvent*)
{
    if (!fitted_)  // the user zoomed or panned: leave the view alone
        return;
    // Keep the whole floor in view, re-flowing the zones when the window's shape changed a lot.
    const double aspect = height() > 0 ? static_cast<double>(width()) / height() : layoutAspect_;
    if (std::abs(std::log(aspect / layoutAspect_)) > 0.05 && !cells_.isNull())
        rebuildGeometry();
    fitAll();
}

void HallMapWidget::wheelEvent(QWheelEvent* e)
{
    const double steps = e->angleDelta().y() / 120.0;
    zoomBy(std::pow(1.25, steps), e->position());
    e->accept();
}

void HallMapWidget::mousePressEvent(QMouseEvent* e)
{
    if (e->button() == Qt::LeftButton) {
        pressPos_ = e->position();
        pressOffset_ = offset_;
        dragging_ = false;
    }
}

void HallMapWidget::mouseMoveEvent(QMouseEvent* e)
{
    if (e->buttons() & Qt::LeftButton) {
        const QPointF d = e->position() - pressPos_;
        if (dragging_ || d.manhattanLength() > 4) {
            dragging_ = true;
            offset_ = pressOffset_ + d;
            fitted_ = false;
            update();
        }
    }
}

void HallMapWidget::mouseReleaseEvent(QMouseEvent* e)
{
    if (e->button() != Qt::LeftButton || dragging_) {
        dragging_ = false;
        return;
    }
    // Zoomed out (a GPU is a couple of pixels) or with Shift, a click takes the whole rack:
    // its elevation is what a technician wants first.
    const bool wholeRack = scale_ < kOutlineScale || (e->modifiers() & Qt::ShiftModifier);
    if (const int g = gpuAt(e->position()); g >= 0 && !wholeRack) {
        selectGpu(g);
        Q_EMIT gpuClicked(g);
    } else if (const int r = rackAt(e->position()); r >= 0) {
        selectRack(r);
        Q_EMIT rackClicked(r);
    }
}

void HallMapWidget::mouseDoubleClickEvent(QMouseEvent* e)
{
    zoomBy(2.0, e->position());
}

void HallMapWidget::keyPressEvent(QKeyEvent* e)
{
    const QPointF c(width() / 2.0, height() / 2.0);
    switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomBy(1.25, c); break;
    case Qt::Key_Minus: zoomBy(0.8, c); break;
    case Qt::Key_0: fitAll(); break;
    default: QWidget::keyPressEvent(e);
    }
}

QString HallMapWidget::failuresHtml(int rack) const
{
    QString out;
    int n = 0;
    for (const Failure& f : state_->failures()->failures())
        if (f.rack == rack && n++ < 8)
            out += QStringLiteral("<br><span style='color:%1'>%2 %3: %4</span>")
                       .arg(QColor(f.failed ? failedColor() : degradedColor()).name(),
                            failureKindName(f.kind), f.name.toHtmlEscaped(), f.what.toHtmlEscaped());
    if (n > 8)
        out += tr("<br>… %1 more").arg(n - 8);
    return out;
}

QString HallMapWidget::tooltipFor(QPointF pos) const
{
    const HallLayout& h = state_->layout();
    auto val = [this](Topic t, int g, const QString& unit) {
        const auto& v = state_->values(t);
        if (g < 0 || g >= static_cast<int>(v.size()) || v[static_cast<size_t>(g)] == kNoData)
            return QStringLiteral("–");
        return QString::number(v[static_cast<size_t>(g)]) + unit;
    };
    static const char* health[] = {"ok", "warning", "failed", "quarantined"};
    if (const int g = gpuAt(pos); g >= 0) {
        const int rack = h.gpuRack[static_cast<size_t>(g)];
        const auto hv = state_->values(Topic::GpuHealth);
        const int hs = g < static_cast<int>(hv.size()) ? hv[static_cast<size_t>(g)] : 255;
        return QStringLiteral("<b>%1</b><br>rack %2 (%3)<br>utilization %4<br>temperature %5<br>health %6%7")
            .arg(h.gpus[g], h.racks[static_cast<size_t>(rack)].name,
                 h.racks[static_cast<size_t>(rack)].state, val(Topic::GpuUtil, g, QStringLiteral("%")),
                 val(Topic::GpuTemp, g, QStringLiteral(" °C")),
                 hs < 4 ? QLatin1String(health[hs]) : QStringLiteral("unknown"), failuresHtml(rack));
    }
    if (const int r = rackAt(pos); r >= 0)
        return QStringLiteral("<b>%1</b><br>%2").arg(h.racks[static_cast<size_t>(r)].name,
                                                    h.racks[static_cast<size_t>(r)].state) +
               failuresHtml(r);
    return {};
}

bool HallMapWidget::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        const QString tip = tooltipFor(he->pos());
        if (tip.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(he->globalPos(), tip, this);
        return true;
    }
    return QWidget::event(e);
}

}  // namespace loom::console
