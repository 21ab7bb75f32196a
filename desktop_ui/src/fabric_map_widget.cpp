// The fabric map's model side: per-switch and per-bundle aggregates of the link values, the
// layout of the Clos tiers (and of a zone's drill-down matrix), degradation and job
// highlights, hit testing, input and tooltips. Painting is in fabric_map_paint.cpp.

#include "loom/console/fabric_map_widget.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "loom/console/palette.hpp"
#include "loom/console/stale.hpp"

namespace loom::console {

namespace {
const LinkBundle kEmptyBundle{};

QColor bwColor(double bw) {
    // 100 % green, 75 % amber, 50 % and below red.
    const double t = std::clamp((100.0 - bw) / 50.0, 0.0, 1.0);
    return t < 0.5 ? QColor::fromRgbF(0.18 + 1.5 * t * 0.8, 0.63, 0.26 - 0.2 * t)
                   : QColor::fromRgbF(0.86, 0.63 - (t - 0.5) * 1.1, 0.16);
}
}  // namespace

FabricMapWidget::FabricMapWidget(ClusterState* state, QWidget* parent)
    : QWidget(parent), state_(state), staleTimer_(new QTimer(this)) {
    staleTimer_->setInterval(1000);
    connect(staleTimer_, &QTimer::timeout, this, [this] {
        if (isVisible() && isStale()) update();
    });
    staleTimer_->start();
    setMouseTracking(true);
    setMinimumSize(400, 300);
    connect(state, &ClusterState::layoutChanged, this, [this] {
        rebuild();
        update();
    });
    connect(state, &ClusterState::rackStateChanged, this, [this] { update(); });
    connect(state, &ClusterState::switchStatesChanged, this, [this] { update(); });
    connect(state->failures(), &FailureIndex::changed, this, [this] {
        indexFailedSwitches();
        update();
    });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned mask) {
        if (mask & (topicBit(Topic::LinkUtil) | topicBit(Topic::LinkHealth))) {
            aggregate();
            update();
        }
    });
    rebuild();
}

void FabricMapWidget::rebuild() {
    const HallLayout& h = state_->layout();
    const size_t ns = h.switches.size();
    switchZone_.assign(ns, -1);
    for (size_t i = 0; i < ns; ++i)
        switchZone_[i] = h.switches[i].zone.isEmpty() ? -1 : h.zoneIndex(h.switches[i].zone);
    switchRack_.assign(ns, -1);
    for (size_t r = 0; r < h.racks.size(); ++r)
        if (const int sw = h.switchIndex(h.racks[r].rtsw); sw >= 0)
            switchRack_[static_cast<size_t>(sw)] = static_cast<int>(r);
    indexFailedSwitches();
    const size_t nl = static_cast<size_t>(h.links.size());
    linkSw_.assign(nl, {-1, -1});
    linkPair_.assign(nl, -1);
    linkZone_.assign(nl, -1);
    for (size_t j = 0; j < nl && j < h.linkEnds.size(); ++j) {
        const auto& e = h.linkEnds[j];
        int a = e.aSwitch, b = e.bSwitch;
        const int ta = a >= 0 ? h.switches[static_cast<size_t>(a)].tier : 0;
        const int tb = b >= 0 ? h.switches[static_cast<size_t>(b)].tier : 0;
        // Order ends low tier first; a NIC end is tier 0.
        int lo = a, hi = b, tlo = ta, thi = tb;
        if (ta > tb) {
            std::swap(lo, hi);
            std::swap(tlo, thi);
        }
        linkSw_[j] = {lo, hi};
        if (thi == tlo + 1 && thi >= 1) linkPair_[j] = tlo;  // 0 host-T1, 1 T1-T2, 2 T2-T3
        int z = lo >= 0 ? switchZone_[static_cast<size_t>(lo)] : -1;
        if (z < 0 && e.rack >= 0) z = h.zoneIndex(h.racks[static_cast<size_t>(e.rack)].zone);
        if (z < 0 && hi >= 0) z = switchZone_[static_cast<size_t>(hi)];
        linkZone_[j] = z;
    }
    bundles_.assign(static_cast<size_t>(h.zones.size()), {});
    stats_.assign(ns, {});
    bw_.clear();
    linkHi_.clear();
    swHi_.clear();
    hiBundles_.clear();
    hiCount_ = 0;
    hiLabel_.clear();
    rects_.assign(ns, QRectF());
    if (zone_ >= h.zones.size()) zone_ = -1;
    selected_ = -1;
    aggregate();
    sceneDirty_ = true;
}

void FabricMapWidget::aggregate() {
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    for (auto& z : bundles_) z = {};
    for (auto& s : stats_) s = {};
    const size_t nl = linkSw_.size();
    for (size_t j = 0; j < nl; ++j) {
        const std::uint8_t u = j < util.size() ? util[j] : kNoData;
        const std::uint8_t hs = j < health.size() ? health[j] : kNoData;
        const int z = linkZone_[j];
        const int pair = linkPair_[j];
        // Utilization counts only for links carrying traffic (up or degraded): a drained or
        // not-in-service link's counters say nothing about the fabric's load.
        const bool inService = hs == 0 || hs == 1;
        if (z >= 0 && pair >= 0) {
            auto& b = bundles_[static_cast<size_t>(z)][static_cast<size_t>(pair)];
            ++b.count;
            if (u <= 100 && inService) {
                b.utilSum += u;
                ++b.utilN;
            }
            if (hs < 5) ++b.health[hs];
        }
        for (const int sw : linkSw_[j]) {
            if (sw < 0) continue;
            auto& s = stats_[static_cast<size_t>(sw)];
            ++s.links;
            if (u <= 100 && inService) {
                s.utilSum += u;
                ++s.utilN;
            }
            if (hs == 1 || hs == 2)
                ++s.down;
            else if (hs == 3 || hs == 4)
                ++s.drained;
            if (hs == 2) ++s.hardDown;
            if (hs <= 2) ++s.live;
        }
    }
}

const LinkBundle& FabricMapWidget::bundle(int zone, int tierPair) const {
    if (zone < 0 || zone >= static_cast<int>(bundles_.size()) || tierPair < 0 || tierPair > 2)
        return kEmptyBundle;
    return bundles_[static_cast<size_t>(zone)][static_cast<size_t>(tierPair)];
}

void FabricMapWidget::setZone(int zone) {
    zone_ = zone;
    sceneDirty_ = true;
    update();
    Q_EMIT zoneChanged(zone);
}

void FabricMapWidget::selectSwitch(int sw) {
    selected_ = sw;
    update();
}

void FabricMapWidget::setDegradation(const QHash<QString, double>& busBwByRack) {
    const HallLayout& h = state_->layout();
    bw_.clear();
    if (!busBwByRack.isEmpty()) {
        bw_.assign(h.switches.size(), -1.f);
        for (auto it = busBwByRack.begin(); it != busBwByRack.end(); ++it) {
            const int r = h.rackIndex(it.key());
            if (r < 0) continue;
            const int sw = h.switchIndex(h.racks[static_cast<size_t>(r)].rtsw);
            if (sw >= 0) bw_[static_cast<size_t>(sw)] = static_cast<float>(it.value());
        }
    }
    update();
}

void FabricMapWidget::setHighlightLinks(const std::vector<int>& links, const QString& label) {
    linkHi_.clear();
    swHi_.clear();
    hiBundles_.clear();
    hiCount_ = 0;
    hiLabel_ = label;
    if (!links.empty()) {
        linkHi_.assign(linkSw_.size(), 0);
        swHi_.assign(stats_.size(), 0);
        hiBundles_.assign(bundles_.size(), {0, 0, 0});
        for (const int j : links) {
            if (j < 0 || j >= static_cast<int>(linkSw_.size()) || linkHi_[static_cast<size_t>(j)])
                continue;
            linkHi_[static_cast<size_t>(j)] = 1;
            ++hiCount_;
            for (const int sw : linkSw_[static_cast<size_t>(j)])
                if (sw >= 0) ++swHi_[static_cast<size_t>(sw)];
            const int z = linkZone_[static_cast<size_t>(j)],
                      pair = linkPair_[static_cast<size_t>(j)];
            if (z >= 0 && pair >= 0)
                ++hiBundles_[static_cast<size_t>(z)][static_cast<size_t>(pair)];
        }
        if (hiCount_ == 0) {
            linkHi_.clear();
            swHi_.clear();
            hiBundles_.clear();
        }
    }
    update();
}

int FabricMapWidget::highlightedInBundle(int zone, int tierPair) const {
    if (zone < 0 || zone >= static_cast<int>(hiBundles_.size()) || tierPair < 0 || tierPair > 2)
        return 0;
    return hiBundles_[static_cast<size_t>(zone)][static_cast<size_t>(tierPair)];
}

QColor FabricMapWidget::switchColor(int sw) const {
    if (!bw_.empty() && bw_[static_cast<size_t>(sw)] >= 0)
        return bwColor(bw_[static_cast<size_t>(sw)]);
    return QColor(switchHealthColor(sw));
}

QRgb FabricMapWidget::switchHealthColor(int sw) const {
    // Health, not load: loomd's word for the switch, its failure list, then its links' words.
    const auto& s = stats_[static_cast<size_t>(sw)];
    return switchTileColor(state_->switchState(sw), failedSwitches_.contains(sw), s.down);
}

QString FabricMapWidget::switchWord(int sw) const {
    const QString& w = state_->switchState(sw);
    return w.isEmpty() ? tr("state not known yet") : w;
}

void FabricMapWidget::indexFailedSwitches() {
    failedSwitches_.clear();
    const HallLayout& h = state_->layout();
    for (const auto& f : state_->failures()->failures())
        if (f.kind == FailureKind::Switch && f.failed)
            if (const int sw = h.switchIndex(f.name); sw >= 0) failedSwitches_.insert(sw);
}

void FabricMapWidget::layoutScene() {
    const HallLayout& h = state_->layout();
    std::fill(rects_.begin(), rects_.end(), QRectF());
    zoneRects_.assign(static_cast<size_t>(h.zones.size()), QRectF());
    const double W = width(), H = height();
    const double top = 40, bandH = (H - top - 20) / 3;
    // Band y: tier 3 at the top, tier 1 at the bottom.
    auto bandY = [&](int tier) { return top + (3 - tier) * bandH; };
    auto grid = [&](const std::vector<int>& sws, QRectF area) {
        // Squares in a grid that fills `area` as well as possible.
        const int n = static_cast<int>(sws.size());
        if (n == 0) return;
        int cols =
            std::max(1, static_cast<int>(std::ceil(std::sqrt(n * area.width() / area.height()))));
        int rows = (n + cols - 1) / cols;
        double cell = std::min(area.width() / cols, area.height() / rows);
        cols = std::max(1, static_cast<int>(area.width() / cell));
        rows = (n + cols - 1) / cols;
        const double gap = cell > 6 ? 1.5 : (cell > 3 ? 0.5 : 0);
        const double x0 = area.left() + (area.width() - cols * cell) / 2;
        for (int i = 0; i < n; ++i)
            rects_[static_cast<size_t>(sws[static_cast<size_t>(i)])] = QRectF(
                x0 + (i % cols) * cell, area.top() + (i / cols) * cell, cell - gap, cell - gap);
    };
    if (zone_ < 0) {
        const int nz = std::max<int>(1, static_cast<int>(h.zones.size()));
        const double colW = (W - 60) / nz;
        std::vector<int> top3;
        std::vector<std::vector<int>> t2(static_cast<size_t>(nz)), t1(static_cast<size_t>(nz));
        for (size_t i = 0; i < h.switches.size(); ++i) {
            const int t = h.switches[i].tier;
            const int z = switchZone_[i];
            if (t == 3 || (t >= 1 && z < 0))
                top3.push_back(static_cast<int>(i));
            else if (t == 2)
                t2[static_cast<size_t>(z)].push_back(static_cast<int>(i));
            else if (t == 1)
                t1[static_cast<size_t>(z)].push_back(static_cast<int>(i));
        }
        grid(top3, QRectF(60, bandY(3) + 10, W - 80, bandH * 0.45));
        for (int z = 0; z < static_cast<int>(h.zones.size()); ++z) {
            const double x = 50 + z * colW;
            zoneRects_[static_cast<size_t>(z)] = QRectF(x + 3, bandY(2), colW - 6, 2 * bandH);
            grid(t2[static_cast<size_t>(z)], QRectF(x + 8, bandY(2) + 10, colW - 16, bandH * 0.4));
            grid(t1[static_cast<size_t>(z)], QRectF(x + 8, bandY(1) + 10, colW - 16, bandH * 0.8));
        }
    } else {
        std::vector<int> t3, t2, t1;
        std::vector<char> linked(h.switches.size(), 0);
        for (size_t j = 0; j < linkSw_.size(); ++j)
            if (linkPair_[j] == 2 && linkZone_[j] == zone_ && linkSw_[j][1] >= 0)
                linked[static_cast<size_t>(linkSw_[j][1])] = 1;
        for (size_t i = 0; i < h.switches.size(); ++i) {
            const int t = h.switches[i].tier;
            if (switchZone_[i] == zone_ && t == 2)
                t2.push_back(static_cast<int>(i));
            else if (switchZone_[i] == zone_ && t == 1)
                t1.push_back(static_cast<int>(i));
            else if (linked[i])
                t3.push_back(static_cast<int>(i));
        }
        QHash<int, int> col1, col2;
        for (size_t i = 0; i < t1.size(); ++i) col1.insert(t1[i], static_cast<int>(i));
        for (size_t i = 0; i < t2.size(); ++i) col2.insert(t2[i], static_cast<int>(i));
        // Uplinks per T2 switch decide the height of the upper matrix.
        std::vector<std::vector<int>> up(t2.size());
        std::vector<int> m1Cells(t1.size() * t2.size(), -1);
        for (size_t j = 0; j < linkSw_.size(); ++j) {
            if (linkZone_[j] != zone_) continue;
            if (linkPair_[j] == 1) {
                const int c = col1.value(linkSw_[j][0], -1), r = col2.value(linkSw_[j][1], -1);
                if (c >= 0 && r >= 0)
                    m1Cells[static_cast<size_t>(r) * t1.size() + static_cast<size_t>(c)] =
                        static_cast<int>(j);
            } else if (linkPair_[j] == 2) {
                const int c = col2.value(linkSw_[j][0], -1);
                if (c >= 0) up[static_cast<size_t>(c)].push_back(static_cast<int>(j));
            }
        }
        m1Cols_ = static_cast<int>(t1.size());
        m1Rows_ = static_cast<int>(t2.size());
        m1_ = std::move(m1Cells);
        m2Cols_ = static_cast<int>(t2.size());
        m2Rows_ = 0;
        for (const auto& u : up) m2Rows_ = std::max<int>(m2Rows_, static_cast<int>(u.size()));
        m2_.assign(static_cast<size_t>(m2Cols_) * m2Rows_, -1);
        for (int c = 0; c < m2Cols_; ++c)
            for (size_t r = 0; r < up[static_cast<size_t>(c)].size(); ++r)
                m2_[r * static_cast<size_t>(m2Cols_) + static_cast<size_t>(c)] =
                    up[static_cast<size_t>(c)][r];

        const double left = 60, right = W - 20, avail = right - left;
        // Top: tier 3; then the T2 uplink matrix above each T2 switch; then the T1-T2 matrix
        // with one column per T1 switch, the T1 switches under it.
        grid(t3, QRectF(left, top, avail, std::min(bandH * 0.35, 36.0)));
        const double y2 = top + std::min(bandH * 0.35, 36.0) + 24;
        const double m2H = std::min(bandH * 0.9, m2Rows_ * 8.0);
        const double c2 = m2Cols_ ? avail / m2Cols_ : 0;
        m2Rect_ = QRectF(left, y2, c2 * m2Cols_, m2H);
        for (int i = 0; i < m2Cols_; ++i)
            rects_[static_cast<size_t>(t2[static_cast<size_t>(i)])] =
                QRectF(left + i * c2 + 1, y2 + m2H + 4, c2 - 2, 18);
        const double y1 = y2 + m2H + 44;
        // Below the matrix: the RTSW row (18 px), its rack labels, the legend and the overlay note.
        const double m1H = std::max(40.0, H - y1 - 86);
        const double c1 = m1Cols_ ? avail / m1Cols_ : 0;
        m1Rect_ = QRectF(left, y1, c1 * m1Cols_, m1H);
        for (int i = 0; i < m1Cols_; ++i)
            rects_[static_cast<size_t>(t1[static_cast<size_t>(i)])] =
                QRectF(left + i * c1, y1 + m1H + 4, std::max(1.0, c1 - (c1 > 4 ? 1 : 0)), 18);
        m1Img_ = QImage(std::max(1, m1Cols_), std::max(1, m1Rows_), QImage::Format_RGB32);
        m2Img_ = QImage(std::max(1, m2Cols_), std::max(1, m2Rows_), QImage::Format_RGB32);
    }
    sceneSize_ = size();
    sceneDirty_ = false;
}

QRectF FabricMapWidget::switchRect(int sw) const {
    return sw >= 0 && sw < static_cast<int>(rects_.size()) ? rects_[static_cast<size_t>(sw)]
                                                           : QRectF();
}

int FabricMapWidget::zoneAt(QPointF pos) const {
    if (zone_ >= 0) return zone_;
    for (size_t z = 0; z < zoneRects_.size(); ++z)
        if (zoneRects_[z].contains(pos)) return static_cast<int>(z);
    return -1;
}

int FabricMapWidget::matrixLinkAt(QPointF pos) const {
    if (zone_ < 0) return -1;
    auto at = [&](const QRectF& r, const std::vector<int>& cells, int cols, int rows) {
        if (cols <= 0 || rows <= 0 || !r.contains(pos)) return -1;
        const int c = std::min(cols - 1, static_cast<int>((pos.x() - r.left()) / r.width() * cols));
        const int row =
            std::min(rows - 1, static_cast<int>((pos.y() - r.top()) / r.height() * rows));
        return cells[static_cast<size_t>(row) * cols + c];
    };
    const int a = at(m1Rect_, m1_, m1Cols_, m1Rows_);
    return a >= 0 ? a : at(m2Rect_, m2_, m2Cols_, m2Rows_);
}

int FabricMapWidget::switchAt(QPointF pos) const {
    for (size_t i = 0; i < rects_.size(); ++i)
        if (!rects_[i].isNull() && rects_[i].adjusted(-1, -1, 1, 1).contains(pos))
            return static_cast<int>(i);
    return -1;
}

void FabricMapWidget::setStaleNote(const QString& note) {
    if (note == staleNote_) return;
    staleNote_ = note;
    update();
}

bool FabricMapWidget::isStale() const {
    return dataIsStale(state_->dataAgeMs(), state_->intervalMs(), staleNote_);
}

QString FabricMapWidget::staleText() const {
    return loom::console::staleText(state_->dataAgeMs(), staleNote_);
}

void FabricMapWidget::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() == Qt::RightButton && zone_ >= 0) {
        setZone(-1);
        return;
    }
    if (e->button() != Qt::LeftButton) return;
    const int sw = switchAt(e->position());
    if (zone_ < 0) {
        const HallLayout& h = state_->layout();
        if (sw >= 0 && (h.switches[static_cast<size_t>(sw)].tier == 3 ||
                        switchZone_[static_cast<size_t>(sw)] < 0)) {
            selectSwitch(sw);
            Q_EMIT switchClicked(sw);
            return;
        }
        const int z = zoneAt(e->position());
        if (z >= 0) {
            setZone(z);
            if (sw >= 0) {
                selectSwitch(sw);
                Q_EMIT switchClicked(sw);
            }
        }
        return;
    }
    if (sw >= 0) {
        selectSwitch(sw);
        Q_EMIT switchClicked(sw);
    } else if (const int j = matrixLinkAt(e->position());
               j >= 0 && linkSw_[static_cast<size_t>(j)][0] >= 0) {
        selectSwitch(linkSw_[static_cast<size_t>(j)][0]);
        Q_EMIT switchClicked(linkSw_[static_cast<size_t>(j)][0]);
    }
}

bool FabricMapWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        const int sw = switchAt(he->pos());
        if (sw < 0) {
            const int j = matrixLinkAt(he->pos());
            if (j < 0) {
                QToolTip::hideText();
                return true;
            }
            const auto& u = state_->values(Topic::LinkUtil);
            const auto& hv = state_->values(Topic::LinkHealth);
            const auto uj = static_cast<size_t>(j) < u.size() ? u[static_cast<size_t>(j)] : kNoData;
            const auto hj =
                static_cast<size_t>(j) < hv.size() ? hv[static_cast<size_t>(j)] : kNoData;
            QToolTip::showText(
                he->globalPos(),
                QStringLiteral("<b>%1</b><br>utilization %2<br>%3")
                    .arg(state_->layout().links[j].toHtmlEscaped(),
                         uj <= 100 ? QString::number(uj) + u'%' : QStringLiteral("–"),
                         linkHealthWord(hj)),
                this);
            return true;
        }
        const auto& s = stats_[static_cast<size_t>(sw)];
        const auto& hs = state_->layout().switches[static_cast<size_t>(sw)];
        QString tip = QStringLiteral(
                          "<b>%1</b> (%2): %7<br>%3 links · mean util %4<br>%5 down/degraded · %6 "
                          "drained/off")
                          .arg(hs.name, hs.role)
                          .arg(s.links)
                          .arg(s.meanUtil() < 0 ? QStringLiteral("–")
                                                : QString::number(s.meanUtil(), 'f', 0) + u'%')
                          .arg(s.down)
                          .arg(s.drained)
                          .arg(switchWord(sw).toHtmlEscaped());
        if (failedSwitches_.contains(sw)) tip += tr("<br>failed (loomd's failure list)");
        if (!bw_.empty() && bw_[static_cast<size_t>(sw)] >= 0)
            tip += QStringLiteral("<br>rack bus bandwidth %1%")
                       .arg(bw_[static_cast<size_t>(sw)], 0, 'f', 1);
        if (const int r = switchRack_[static_cast<size_t>(sw)]; r >= 0) {
            const auto& rack = state_->layout().racks[static_cast<size_t>(r)];
            tip += QStringLiteral("<br>rack %1: %2")
                       .arg(rack.name.toHtmlEscaped(), rack.state.toHtmlEscaped());
        }
        QToolTip::showText(he->globalPos(), tip, this);
        return true;
    }
    return QWidget::event(e);
}

}  // namespace loom::console
