// The fabric map's painting (FabricMapWidget, fabric_map_widget.hpp): the Clos tiers with their
// link bundles, or a zone's drill-down matrix, switch tiles coloured by health, the highlighted
// job (everything else dimmed), the legend and the stale overlay. The aggregates, layout, hit
// testing and input are in fabric_map_widget.cpp.
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "loom/console/fabric_map_widget.hpp"
#include "loom/console/palette.hpp"
#include "loom/console/stale.hpp"

namespace loom::console {

namespace {
// What is not the highlighted job's recedes: a quarter of its colour over the background.
QRgb dimmed(QRgb c) {
    const QRgb b = backgroundColor();
    auto mix = [](int x, int y) { return (x + 3 * y) / 4; };
    return qRgb(mix(qRed(c), qRed(b)), mix(qGreen(c), qGreen(b)), mix(qBlue(c), qBlue(b)));
}
}  // namespace

void FabricMapWidget::paintEvent(QPaintEvent*) {
    if (sceneDirty_ || sceneSize_ != size()) layoutScene();
    const HallLayout& h = state_->layout();
    QPainter p(this);
    p.fillRect(rect(), QColor(backgroundColor()));
    p.setPen(QColor(220, 220, 230));
    if (h.switches.empty()) {
        p.drawText(rect(), Qt::AlignCenter,
                   state_->hasLayout() ? tr("No backend switches in the hall")
                                       : tr("Waiting for the hall layout…"));
        return;
    }
    const bool ib = h.fabric == u"infiniband";
    const QString tierName[4] = {QString(), ib ? tr("leaf") : tr("RTSW"),
                                 ib ? tr("spine") : tr("CTSW"), ib ? tr("core") : tr("ATSW")};
    const double top = 40, bandH = (height() - top - 20) / 3;
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    if (zone_ < 0) {
        for (int t = 3; t >= 1; --t) p.drawText(QPointF(6, top + (3 - t) * bandH + 2), tierName[t]);
    } else {
        // Label each tier where its switches are drawn in the drill-down.
        double y[4] = {0, 0, 0, 0};
        for (size_t i = 0; i < rects_.size(); ++i)
            if (!rects_[i].isNull() && h.switches[i].tier >= 1 && h.switches[i].tier <= 3)
                y[h.switches[i].tier] = rects_[i].center().y();
        for (int t = 1; t <= 3; ++t)
            if (y[t] > 0)
                p.drawText(QRectF(4, y[t] - 9, 50, 18), Qt::AlignLeft | Qt::AlignVCenter,
                           tierName[t]);
    }
    p.setFont(font());
    // Counts of what this view draws, so the header and the picture agree.
    int drawn = 0;
    for (const auto& r : rects_) drawn += !r.isNull();
    int drawnLinks = 0;
    if (zone_ < 0) {
        for (const auto& z : bundles_) drawnLinks += z[1].count + z[2].count;
    } else {
        for (const int j : m1_) drawnLinks += j >= 0;
        for (const int j : m2_) drawnLinks += j >= 0;
    }
    p.drawText(QRectF(0, 4, width() - 8, 20), Qt::AlignRight,
               zone_ < 0 ? tr("%1 · %2 backend switches · %3 switch-to-switch links — click a zone "
                              "to drill down")
                               .arg(h.cluster)
                               .arg(drawn)
                               .arg(drawnLinks)
                         : tr("zone %1 · %2 switches · %3 links — click a switch for its routes, "
                              "right-click to go back")
                               .arg(h.zones.value(zone_))
                               .arg(drawn)
                               .arg(drawnLinks));
    paintLegend(p);

    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    auto linkColor = [&](size_t j) {
        const auto hs = j < health.size() ? health[j] : kNoData;
        if (hs >= 1 && hs <= 4) return QColor(linkHealthLut()[hs]);
        const auto u = j < util.size() ? util[j] : kNoData;
        return QColor(u <= 100 ? utilizationLut()[u] : noDataColor());
    };

    if (zone_ < 0) {
        // Bundles: one thick line per zone and tier pair.
        for (int z = 0; z < static_cast<int>(zoneRects_.size()); ++z) {
            const QRectF zr = zoneRects_[static_cast<size_t>(z)];
            p.setPen(QPen(QColor(60, 62, 72), 1));
            p.setBrush(QColor(30, 32, 38));
            p.drawRoundedRect(zr, 4, 4);
            p.setPen(QColor(220, 220, 230));
            p.drawText(QRectF(zr.left(), zr.bottom() - 18, zr.width(), 16), Qt::AlignCenter,
                       h.zones[z]);
            for (int pair = 1; pair <= 2; ++pair) {
                const auto& b = bundles_[static_cast<size_t>(z)][static_cast<size_t>(pair)];
                if (b.count == 0) continue;
                const double u = b.meanUtil();
                const int bad = b.health[1] + b.health[2];
                const int off = b.health[3] + b.health[4];
                QColor c = u < 0 ? QColor(noDataColor())
                                 : QColor(utilizationLut()[static_cast<size_t>(std::lround(u))]);
                const double yLo = pair == 1 ? top + 2 * bandH + 8 : top + bandH + 8;
                const double yHi =
                    pair == 1 ? top + bandH + bandH * 0.45 + 12 : top + bandH * 0.45 + 14;
                const double x = zr.center().x();
                p.setPen(QPen(c, std::clamp(std::log2(b.count + 1.0), 2.0, 12.0), Qt::SolidLine,
                              Qt::FlatCap));
                p.drawLine(QPointF(x, yLo), QPointF(x, yHi));
                if (bad > 0) {
                    p.setPen(QPen(QColor(linkHealthLut()[2]), 3, Qt::DotLine, Qt::FlatCap));
                    p.drawLine(QPointF(x + 8, yLo), QPointF(x + 8, yHi));
                }
                p.setPen(QColor(230, 230, 235));
                // One fact per line, right of the bundle, in a font small enough to fit the
                // zone's column (at 24k a column is ~150 px wide).
                QStringList lines{tr("%1 links").arg(b.count),
                                  u < 0 ? tr("util –") : tr("util %1%").arg(u, 0, 'f', 0)};
                if (bad) lines << tr("%1 down").arg(bad);
                if (off) lines << tr("%1 off").arg(off);
                if (const int mine = highlightedInBundle(z, pair); mine > 0)
                    lines << tr("%1 of the job").arg(mine);
                const QRectF box(x + 12, (yLo + yHi) / 2 - 30, zr.right() - x - 14, 60);
                QFont lf = font();
                int px = 12;
                for (; px > 7; --px) {
                    lf.setPixelSize(px);
                    const QFontMetrics fm(lf);
                    int w = 0;
                    for (const auto& l : lines) w = std::max(w, fm.horizontalAdvance(l));
                    if (w <= box.width() && fm.height() * lines.size() <= box.height()) break;
                }
                p.setFont(lf);
                p.drawText(box, Qt::AlignLeft | Qt::AlignVCenter, lines.join(u'\n'));
                p.setFont(font());
            }
        }
    } else {
        auto fill = [&](QImage& img, const std::vector<int>& cells, int cols, int rows) {
            for (int r = 0; r < rows; ++r) {
                auto* line = reinterpret_cast<QRgb*>(img.scanLine(r));
                for (int c = 0; c < cols; ++c) {
                    const int j = cells[static_cast<size_t>(r) * cols + c];
                    line[c] = j < 0 ? backgroundColor()
                              : hiCount_ == 0 || linkHi_[static_cast<size_t>(j)]
                                  ? linkColor(static_cast<size_t>(j)).rgb()
                                  : dimmed(linkColor(static_cast<size_t>(j)).rgb());
                }
            }
        };
        p.setPen(QColor(200, 200, 210));
        if (m2Rows_ > 0 && m2Cols_ > 0) {
            fill(m2Img_, m2_, m2Cols_, m2Rows_);
            p.drawImage(m2Rect_, m2Img_);
            p.drawText(QPointF(6, m2Rect_.center().y()), tr("uplinks"));
        }
        if (m1Rows_ > 0 && m1Cols_ > 0) {
            fill(m1Img_, m1_, m1Cols_, m1Rows_);
            p.drawImage(m1Rect_, m1Img_);
            p.drawText(QPointF(m1Rect_.left(), m1Rect_.top() - 4),
                       tr("%1 × %2 links (rows: %3, columns: %4)")
                           .arg(m1Rows_)
                           .arg(m1Cols_)
                           .arg(tierName[2], tierName[1]));
        }
        // The selected switch's row or column.
        if (selected_ >= 0) {
            const QRectF sr = switchRect(selected_);
            p.setPen(QPen(QColor(0, 229, 255), 1));
            p.setBrush(Qt::NoBrush);
            if (!sr.isNull() && h.switches[static_cast<size_t>(selected_)].tier == 1)
                p.drawRect(QRectF(sr.left(), m1Rect_.top(), sr.width(), m1Rect_.height()));
            else if (!sr.isNull() && h.switches[static_cast<size_t>(selected_)].tier == 2) {
                const double rh = m1Rect_.height() / std::max(1, m1Rows_);
                for (int r = 0; r < m1Rows_; ++r) {
                    const int j = m1_[static_cast<size_t>(r) * m1Cols_];
                    if (j >= 0 && linkSw_[static_cast<size_t>(j)][1] == selected_)
                        p.drawRect(
                            QRectF(m1Rect_.left(), m1Rect_.top() + r * rh, m1Rect_.width(), rh));
                }
                p.drawRect(QRectF(sr.left(), m2Rect_.top(), sr.width(), m2Rect_.height()));
            }
        }
    }
    // Switches on top.
    p.setPen(Qt::NoPen);
    for (size_t i = 0; i < rects_.size(); ++i)
        if (!rects_[i].isNull())
            p.fillRect(rects_[i], hiCount_ > 0 && swHi_[i] == 0
                                      ? QColor(dimmed(switchColor(static_cast<int>(i)).rgb()))
                                      : switchColor(static_cast<int>(i)));
    if (hiCount_ > 0) {
        // The job's switches: outlined, so a 1-pixel tile at 24k is still found.
        p.setPen(QPen(QColor(jobHighlightColor()), 1.5));
        p.setBrush(Qt::NoBrush);
        for (size_t i = 0; i < rects_.size(); ++i)
            if (!rects_[i].isNull() && swHi_[i] > 0)
                p.drawRect(rects_[i].adjusted(-1.5, -1.5, 1.5, 1.5));
    }
    // Names where they fit (the drill-down's CTSW/spine tiles; any tile wide enough).
    QFont nf = font();
    nf.setPixelSize(10);
    p.setFont(nf);
    const QFontMetrics nfm(nf);
    for (size_t i = 0; i < rects_.size(); ++i) {
        const QRectF& r = rects_[i];
        if (r.isNull() || r.width() < 28 ||
            r.height() < nfm.height())  // no name fits: skip the measuring
            continue;
        const QString& name = h.switches[i].name;
        const QString shortName = name.section(u'-', -1);  // "z1-ctsw03" -> "ctsw03"
        const QString text = nfm.horizontalAdvance(name) + 4 <= r.width()        ? name
                             : nfm.horizontalAdvance(shortName) + 4 <= r.width() ? shortName
                                                                                 : QString();
        if (text.isEmpty() || r.height() < nfm.height()) continue;
        const QColor bg = switchColor(static_cast<int>(i));
        p.setPen(bg.lightness() > 140 ? QColor(15, 15, 18) : QColor(240, 240, 245));
        p.drawText(r, Qt::AlignCenter, text);
    }
    // RTSW columns are too narrow for names: every 8th rack's name under its column.
    if (zone_ >= 0 && m1Cols_ > 0 && m1Rect_.width() / m1Cols_ < 40) {
        p.setPen(QColor(200, 200, 210));
        int step = 1;
        while (m1Rect_.width() / m1Cols_ * step <
               nfm.horizontalAdvance(QStringLiteral("z1-r000")) + 6)
            step *= 2;
        for (size_t i = 0; i < rects_.size(); ++i) {
            if (rects_[i].isNull() || h.switches[i].tier != 1) continue;
            const int col = static_cast<int>(
                (rects_[i].left() - m1Rect_.left()) / (m1Rect_.width() / m1Cols_) + 0.5);
            if (col % step != 0) continue;
            const QString rackName = h.switches[i].name.section(QStringLiteral("-rtsw"), 0, 0);
            p.drawText(QPointF(rects_[i].left(), rects_[i].bottom() + nfm.ascent() + 2), rackName);
        }
    }
    p.setFont(font());
    // Stale: every colour above is as old as the last frame; say so on the map itself.
    const bool stale = isStale();
    if (stale) p.fillRect(rect(), staleVeil());
    if (selected_ >= 0 && !switchRect(selected_).isNull()) {
        p.setPen(QPen(QColor(0, 229, 255), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(switchRect(selected_).adjusted(-2, -2, 2, 2));
    }
    if (!bw_.empty()) {
        p.setPen(QColor(230, 230, 235));
        p.drawText(QRectF(8, height() - 18, width() - 16, 16), Qt::AlignLeft,
                   tr("Failure impact overlay: rack switches coloured by normalized bus bandwidth "
                      "(green 100%, red ≤ 50%)"));
    }
    if (!hiLabel_.isEmpty()) {
        QFont lf = font();
        lf.setBold(true);
        p.setFont(lf);
        const QFontMetrics fm(lf);
        const double w = fm.horizontalAdvance(hiLabel_) + 14;
        const QRectF box(width() - w - 10, 26, w, fm.height() + 8);
        p.fillRect(box, QColor(20, 20, 26, 220));
        p.setPen(QColor(jobHighlightColor()));
        p.drawText(box, Qt::AlignCenter, hiLabel_);
        p.setFont(font());
    }
    if (stale) paintStaleBadge(p, rect(), staleText(), font());
}

void FabricMapWidget::paintLegend(QPainter& p) {
    // Bottom-left: what the switch tiles' colours mean, and what the lines show.
    struct Item {
        QRgb color;
        QString text;
    };
    // loomd's words for a switch (its rack's state read as its cables), then what its links say
    // (palette.hpp switchTileColor; the web's fabric legend says the same).
    const Item items[] = {{linkHealthLut()[0], linkHealthWord(0)},
                          {degradedColor(), tr("up, some links down/degraded")},
                          {failedColor(), tr("%1 / failed").arg(linkHealthWord(2))},
                          {linkHealthLut()[3], linkHealthWord(3)},
                          {linkHealthLut()[4], linkHealthWord(4)}};
    QFont f = font();
    f.setPixelSize(11);
    p.setFont(f);
    const QFontMetrics fm(f);
    double x = 8;
    const double y = height() - (bw_.empty() ? 18 : 36);
    for (const auto& it : items) {
        p.fillRect(QRectF(x, y + 3, 12, 12), QColor(it.color));
        p.setPen(QColor(220, 220, 230));
        p.drawText(QPointF(x + 16, y + 13), it.text);
        x += 16 + fm.horizontalAdvance(it.text) + 14;
    }
    p.drawText(QPointF(x + 6, y + 13),
               zone_ < 0 ? tr("lines: links, coloured by mean utilization of links in service")
                         : tr("matrix cells: links, by utilization; red down, grey off"));
    p.setFont(font());
}

}  // namespace loom::console
