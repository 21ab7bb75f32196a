// The hall map's painting (HallMapWidget, hall_map_widget.hpp): the cells at the current zoom,
// rack outlines and labels, the highlighted job, zone names, the selection, the failure layer
// (rack outlines, GPU/host/link markers, count badges and halos from cached sprites) and the
// stale overlay. Geometry, colours, hit testing and input are in hall_map_widget.cpp.
#include <QDateTime>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <numbers>

#include "loom/console/hall_map_widget.hpp"
#include "loom/console/stale.hpp"

namespace loom::console {

void HallMapWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), QColor(backgroundColor()));
    if (cells_.isNull()) {
        p.setPen(QColor(200, 200, 200));
        p.drawText(
            rect(), Qt::AlignCenter,
            state_->hasLayout() ? tr("The hall has no racks") : tr("Waiting for the hall layout…"));
        return;
    }
    // Visible cell range, clipped to the grid, whole cells so pixels stay square.
    const QPointF tl = toWorld(QPointF(0, 0));
    const QPointF br = toWorld(QPointF(width(), height()));
    const int x0 = std::clamp(static_cast<int>(std::floor(tl.x())), 0, cells_.width());
    const int y0 = std::clamp(static_cast<int>(std::floor(tl.y())), 0, cells_.height());
    const int x1 = std::clamp(static_cast<int>(std::ceil(br.x())), 0, cells_.width());
    const int y1 = std::clamp(static_cast<int>(std::ceil(br.y())), 0, cells_.height());
    if (x1 > x0 && y1 > y0) {
        const QRectF src(x0, y0, x1 - x0, y1 - y0);
        const QRectF dst(toScreen(src.topLeft()), toScreen(src.bottomRight()));
        // No SmoothPixmapTransform: nearest neighbour. With a job highlighted, the veiled copy.
        p.drawImage(dst, shown_.isNull() ? cells_ : shown_, src);
    }

    const QRectF visibleWorld(tl, br);
    const HallLayout& h = state_->layout();
    if (scale_ >= kOutlineScale) {
        // Only racks on screen: at this zoom that is a few hundred at most.
        p.setPen(QPen(QColor(12, 12, 14), std::max(1.0, scale_ / 8)));
        p.setBrush(Qt::NoBrush);
        QFont f = font();
        f.setPointSizeF(std::clamp(scale_ * 0.55, 6.0, 11.0));
        p.setFont(f);
        for (size_t i = 0; i < rackRect_.size(); ++i) {
            const QRectF r = rackRect_[i];
            if (!visibleWorld.intersects(r.adjusted(0, -2, 0, 0))) continue;
            const QRectF s(toScreen(r.topLeft()), toScreen(r.bottomRight()));
            p.setPen(QPen(QColor(12, 12, 14), std::max(1.0, scale_ / 8)));
            p.drawRect(s);
            const int lines = static_cast<int>(r.height());
            for (int l = 1; l < lines; ++l)
                p.drawLine(QPointF(s.left(), s.top() + l * scale_),
                           QPointF(s.right(), s.top() + l * scale_));
            if (scale_ >= kCellBorderScale) {
                // Zoomed in enough to count GPUs: a line between every two of a host's 8, so a
                // host is 8 cells, not one bar.
                const int cols = static_cast<int>(r.width());
                for (int c = 1; c < cols; ++c)
                    p.drawLine(QPointF(s.left() + c * scale_, s.top()),
                               QPointF(s.left() + c * scale_, s.bottom()));
            }
            if (scale_ >= kLabelScale) {
                p.setPen(QColor(190, 190, 200));
                p.drawText(QRectF(s.left(), s.top() - scale_ * 1.1, s.width(), scale_),
                           Qt::AlignLeft | Qt::AlignVCenter, h.racks[i].name);
            }
        }
    }
    if (!highlightRacks_.empty()) {
        // The highlighted job's racks: an outline a few pixels out, so it is seen at Fit.
        p.setPen(QPen(QColor(jobHighlightColor()), 2));
        p.setBrush(Qt::NoBrush);
        for (const int r : highlightRacks_) {
            const QRectF s = rackScreenRect(r);
            if (s.intersects(QRectF(rect()))) p.drawRect(s.adjusted(-2, -2, 2, 2));
        }
    }
    if (isStale()) p.fillRect(rect(), staleVeil());
    paintFailures(p);
    if (!highlightLabel_.isEmpty()) {
        QFont lf = font();
        lf.setBold(true);
        p.setFont(lf);
        const QFontMetrics fm(lf);
        const QRectF box(width() - fm.horizontalAdvance(highlightLabel_) - 24,
                         height() - fm.height() - 14, fm.horizontalAdvance(highlightLabel_) + 14,
                         fm.height() + 8);
        p.fillRect(box, QColor(20, 20, 26, 220));
        p.setPen(QColor(jobHighlightColor()));
        p.drawText(box, Qt::AlignCenter, highlightLabel_);
        p.setFont(font());
    }
    // Zone names always; they are how people find their way on the floor.
    QFont zf = font();
    zf.setBold(true);
    p.setFont(zf);
    p.setPen(QColor(220, 220, 230));
    for (const auto& z : zoneLabels_) {
        const QPointF a = toScreen(QPointF(z.rect.left(), z.rect.top()));
        if (a.x() > width() || a.y() - 4 > height() || a.x() + z.rect.width() * scale_ < 0)
            continue;
        p.drawText(QPointF(a.x(), a.y() - 6), z.text);
    }
    // Selection on top.
    if (selectedRack_ >= 0 && selectedRack_ < static_cast<int>(rackRect_.size())) {
        const QRectF r = rackRect_[static_cast<size_t>(selectedRack_)];
        p.setPen(QPen(QColor(255, 255, 255), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(toScreen(r.topLeft()), toScreen(r.bottomRight())).adjusted(-2, -2, 2, 2));
    }
    if (selectedGpu_ >= 0) {
        const QPointF c = gpuCenter(selectedGpu_);
        const double s = std::max(4.0, scale_);
        p.setPen(QPen(QColor(0, 229, 255), 2));
        p.drawRect(QRectF(c.x() - s / 2, c.y() - s / 2, s, s));
    }
    if (isStale()) paintStale(p);
}

QRectF HallMapWidget::rackScreenRect(int rack) const {
    const QRectF r = rackRect_[static_cast<size_t>(rack)];
    return {toScreen(r.topLeft()), toScreen(r.bottomRight())};
}

QRectF HallMapWidget::cellScreenRect(int pixel, int cells) const {
    const int stride = static_cast<int>(cells_.bytesPerLine() / 4);
    const QPointF tl = toScreen(QPointF(pixel % stride, pixel / stride));
    return {tl, QSizeF(cells * scale_, scale_)};
}

const QPixmap& HallMapWidget::sprite(int kind, QRgb color, int size, int count) {
    // Badges and halos are the same few pictures drawn hundreds of times: antialiased circles
    // and text cost tens of microseconds each, a cached pixmap a couple.
    const quint64 key =
        (static_cast<quint64>(kind) << 56) | (static_cast<quint64>(color & 0xffffff) << 24) |
        (static_cast<quint64>(size & 0xff) << 8) | static_cast<quint64>(count & 0xff);
    auto it = sprites_.find(key);
    if (it != sprites_.end()) return *it;
    const qreal dpr = devicePixelRatioF();
    QPixmap pm(QSize(size, size) * dpr);
    pm.setDevicePixelRatio(dpr);
    pm.fill(Qt::transparent);
    QPainter sp(&pm);
    sp.setRenderHint(QPainter::Antialiasing, true);
    const QColor c(color);
    if (kind == 0) {  // badge: a filled circle with the count
        sp.setPen(QPen(QColor(20, 20, 24), 1));
        sp.setBrush(c);
        sp.drawEllipse(QRectF(0.5, 0.5, size - 1, size - 1));
        QFont bf = font();
        bf.setPixelSize(9);
        bf.setBold(true);
        sp.setFont(bf);
        sp.setPen(qGray(color) < 150 ? QColor(255, 255, 255) : QColor(20, 20, 24));
        sp.drawText(QRectF(0, 0, size, size), Qt::AlignCenter,
                    count > 9 ? QStringLiteral("+") : QString::number(count));
    } else {  // halo ring; `count` is its opacity (0-255)
        sp.setPen(QPen(QColor(c.red(), c.green(), c.blue(), count), 3));
        sp.setBrush(Qt::NoBrush);
        sp.drawEllipse(QRectF(2, 2, size - 4, size - 4));
    }
    sp.end();
    if (sprites_.size() > 512) sprites_.clear();
    return *sprites_.insert(key, pm);
}

void HallMapWidget::paintFailures(QPainter& p) {
    const FailureIndex* fi = state_->failures();
    const auto& marks = fi->rackMarks();
    if (marks.size() != rackRect_.size()) return;
    const QRectF view = QRectF(rect()).adjusted(-20, -20, 20, 20);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    // The filter greys out everything but the chosen kinds.
    if (fi->filter() != kAllFailureKinds) p.fillRect(rect(), QColor(0, 0, 0, 150));
    p.setRenderHint(QPainter::Antialiasing, false);
    auto frame = [&p](const QRectF& r, const QColor& c, double w) {
        // Four fills: much cheaper than a wide pen's stroker.
        p.fillRect(QRectF(r.left() - w, r.top() - w, r.width() + 2 * w, w), c);
        p.fillRect(QRectF(r.left() - w, r.bottom(), r.width() + 2 * w, w), c);
        p.fillRect(QRectF(r.left() - w, r.top(), w, r.height()), c);
        p.fillRect(QRectF(r.right(), r.top(), w, r.height()), c);
    };

    // Racks: an outline that stays visible at Fit, whatever the cell size.
    for (size_t r = 0; r < marks.size(); ++r) {
        const RackMark& m = marks[r];
        if (m.count == 0) continue;
        const QRectF s = rackScreenRect(static_cast<int>(r)).adjusted(-0.5, -0.5, 0.5, 0.5);
        if (!view.intersects(s)) continue;
        const QColor c(m.failed ? failedColor() : degradedColor());
        frame(s, c, m.rackFailed ? 3.0 : 2.0);
        if (m.rackFailed)  // a failed rack is hatched, not just outlined
            p.fillRect(s, QBrush(c, Qt::BDiagPattern));
    }

    // GPUs, hosts and NIC links: a marker at least kMinMarkerPx across on the cell itself.
    const double ms = std::max(kMinMarkerPx, scale_);
    const QColor white(255, 255, 255);
    for (const Failure& f : fi->failures()) {
        if (!fi->shown(f.kind) || f.gpu < 0 || f.gpu >= static_cast<int>(gpuPixel_.size()))
            continue;
        const int px = gpuPixel_[static_cast<size_t>(f.gpu)];
        if (px < 0) continue;
        const QPointF c = gpuCenter(f.gpu);
        if (!view.contains(c)) continue;
        const QRectF m(c.x() - ms / 2, c.y() - ms / 2, ms, ms);
        switch (f.kind) {
            case FailureKind::Gpu:
                p.fillRect(m.adjusted(-1, -1, 1, 1),
                           white);  // a white rim parts it from red neighbours
                p.fillRect(m, QColor(f.failed ? failedColor() : degradedColor()));
                break;
            case FailureKind::Host: {
                QRectF line = cellScreenRect(px, kRackCols);
                if (line.height() < ms)
                    line.adjust(0, -(ms - line.height()) / 2, 0, (ms - line.height()) / 2);
                frame(line, QColor(quarantinedColor()), 2.0);
                break;
            }
            case FailureKind::Link:
                // The NIC's rail GPU gets a hollow marker: the GPU is fine, its link is not.
                frame(m.adjusted(2, 2, -2, -2), QColor(f.failed ? failedColor() : degradedColor()),
                      2.0);
                break;
            default:
                break;
        }
    }

    // Badges with the count, and halos on what is new, on top of everything else.
    const double pulse =
        0.5 + 0.5 * std::sin(static_cast<double>(now % 1200) / 1200.0 * 2 * std::numbers::pi);
    const int badge = static_cast<int>(kBadgePx);
    for (size_t r = 0; r < marks.size(); ++r) {
        const RackMark& m = marks[r];
        if (m.count == 0) continue;
        const QRectF s = rackScreenRect(static_cast<int>(r));
        const QPointF bc(s.right(), s.top());
        if (!view.contains(bc)) continue;
        const QRgb c = m.failed ? failedColor() : degradedColor();
        if (m.fresh) {
            // Pulses between 1.4 and 2.4 badge sizes, in 4 steps (a handful of cached sprites).
            const int step = static_cast<int>(pulse * 3.999);
            const int d =
                std::max(static_cast<int>(s.width()) + 8, badge * 14 / 10 + step * badge / 3);
            p.drawPixmap(QPoint(static_cast<int>(std::lround(s.center().x() - d / 2.0)),
                                static_cast<int>(std::lround(s.center().y() - d / 2.0))),
                         sprite(1, c, d, 110 + step * 40));
        }
        p.drawPixmap(QPoint(static_cast<int>(std::lround(bc.x() - badge / 2.0)),
                            static_cast<int>(std::lround(bc.y() - badge / 2.0))),
                     sprite(0, c, badge, std::min(m.count, 10)));
    }
}

void HallMapWidget::paintStale(QPainter& p) { paintStaleBadge(p, rect(), staleText(), font()); }

}  // namespace loom::console
