// Why over 600 lines: one widget's layout of the Clos tiers, painting and input share its
// private state (the hall map has the same shape). A candidate split: the zone drill-down.

#include "loom/console/fabric_map_widget.hpp"

#include "loom/console/palette.hpp"
#include "loom/console/stale.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace loom::console {

namespace {
const LinkBundle kEmptyBundle{};

// What is not the highlighted job's recedes: a quarter of its colour over the background.
QRgb dimmed(QRgb c)
{
    const QRgb b = backgroundColor();
    auto mix = [](int x, int y) { return (x + 3 * y) / 4; };
    return qRgb(mix(qRed(c), qRed(b)), mix(qGreen(c), qGreen(b)), mix(qBlue(c), qBlue(b)));
}

QColor bwColor(double bw)
{
    // 100 % green, 75 % amber, 50 % and below red.
    const double t = std::clamp((100.0 - bw) / 50.0, 0.0, 1.0);
    return t < 0.5 ? QColor::fromRgbF(0.18 + 1.5 * t * 0.8, 0.63, 0.26 - 0.2 * t)
                   : QColor::fromRgbF(0.86, 0.63 - (t - 0.5) * 1.1, 0.16);
}
}  // namespace

FabricMapWidget::FabricMapWidget(ClusterState* state, QWidget* parent)
    : QWidget(parent), state_(state), staleTimer_(new QTimer(this))
{
    staleTimer_->setInterval(1000);
    connect(staleTimer_, &QTimer::timeout, this, [this] {
        if (isVisible() && isStale())
            update();
    });
    staleTimer_->start();
    setMouseTracking(true);
    setMinimumSize(400, 300);
    connect(state, &ClusterState::layoutChanged, this, [this] {
        rebuild();
        update();
    });
    connect(state, &ClusterState::rackStateChanged, this, [this] { update(); });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned mask) {
        if (mask & (topicBit(Topic::LinkUtil) | topicBit(Topic::LinkHealth))) {
            aggregate();
            update();
        }
    });
    rebuild();
}

void FabricMapWidget::rebuild()
{
    const HallLayout& h = state_->layout();
    const size_t ns = h.switches.size();
    switchZone_.assign(ns, -1);
    for (size_t i = 0; i < ns; ++i)
        switchZone_[i] = h.switches[i].zone.isEmpty() ? -1 : h.zoneIndex(h.switches[i].zone);
    switchRack_.assign(ns, -1);
    for (size_t r = 0; r < h.racks.size(); ++r)
        if (const int sw = h.switchIndex(h.racks[r].rtsw); sw >= 0)
            switchRack_[static_cast<size_t>(sw)] = static_cast<int>(r);
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
        if (thi == tlo + 1 && thi >= 1)
            linkPair_[j] = tlo;  // 0 host-T1, 1 T1-T2, 2 T2-T3
        int z = lo >= 0 ? switchZone_[static_cast<size_t>(lo)] : -1;
        if (z < 0 && e.rack >= 0)
            z = h.zoneIndex(h.racks[static_cast<size_t>(e.rack)].zone);
        if (z < 0 && hi >= 0)
            z = switchZone_[static_cast<size_t>(hi)];
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
    if (zone_ >= h.zones.size())
        zone_ = -1;
    selected_ = -1;
    aggregate();
    sceneDirty_ = true;
}

void FabricMapWidget::aggregate()
{
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    for (auto& z : bundles_)
        z = {};
    for (auto& s : stats_)
        s = {};
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
            if (hs < 5)
                ++b.health[hs];
        }
        for (const int sw : linkSw_[j]) {
            if (sw < 0)
                continue;
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
            if (hs == 2)
                ++s.hardDown;
            if (hs <= 2)
                ++s.live;
        }
    }
}

const LinkBundle& FabricMapWidget::bundle(int zone, int tierPair) const
{
    if (zone < 0 || zone >= static_cast<int>(bundles_.size()) || tierPair < 0 || tierPair > 2)
        return kEmptyBundle;
    return bundles_[static_cast<size_t>(zone)][static_cast<size_t>(tierPair)];
}

void FabricMapWidget::setZone(int zone)
{
    zone_ = zone;
    sceneDirty_ = true;
    update();
    Q_EMIT zoneChanged(zone);
}

void FabricMapWidget::selectSwitch(int sw)
{
    selected_ = sw;
    update();
}

void FabricMapWidget::setDegradation(const QHash<QString, double>& busBwByRack)
{
    const HallLayout& h = state_->layout();
    bw_.clear();
    if (!busBwByRack.isEmpty()) {
        bw_.assign(h.switches.size(), -1.f);
        for (auto it = busBwByRack.begin(); it != busBwByRack.end(); ++it) {
            const int r = h.rackIndex(it.key());
            if (r < 0)
                continue;
            const int sw = h.switchIndex(h.racks[static_cast<size_t>(r)].rtsw);
            if (sw >= 0)
                bw_[static_cast<size_t>(sw)] = static_cast<float>(it.value());
        }
    }
    update();
}

void FabricMapWidget::setHighlightLinks(const std::vector<int>& links, const QString& label)
{
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
                if (sw >= 0)
                    ++swHi_[static_cast<size_t>(sw)];
            const int z = linkZone_[static_cast<size_t>(j)], pair = linkPair_[static_cast<size_t>(j)];
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

int FabricMapWidget::highlightedInBundle(int zone, int tierPair) const
{
    if (zone < 0 || zone >= static_cast<int>(hiBundles_.size()) || tierPair < 0 || tierPair > 2)
        return 0;
    return hiBundles_[static_cast<size_t>(zone)][static_cast<size_t>(tierPair)];
}

QColor FabricMapWidget::switchColor(int sw) const
{
    const auto& s = stats_[static_cast<size_t>(sw)];
    if (!bw_.empty() && bw_[static_cast<size_t>(sw)] >= 0)
        return bwColor(bw_[static_cast<size_t>(sw)]);
    // A rack switch follows its rack: burning in or drained is not "healthy in service".
    if (const int r = sw < static_cast<int>(switchRack_.size()) ? switchRack_[static_cast<size_t>(sw)] : -1; r >= 0) {
        const QString phase = rackSwitchPhase(state_->layout().racks[static_cast<size_t>(r)].state);
        if (!phase.isEmpty())
            return QColor(rackSwitchPhaseColor(phase));
    }
    return QColor(switchHealthColor(s));
}

QRgb FabricMapWidget::switchHealthColor(const SwitchStats& s)
{
    // Health, not load: a switch tile says whether the switch is carrying its links.
    if (s.live >= 2 && s.hardDown == s.live)
        return failedColor();              // every in-service link down: the switch is down
    if (s.down > 0)
        return degradedColor();            // some links down or erroring
    if (s.links > 0 && s.drained == s.links)
        return linkHealthLut()[4];         // not in service (or drained)
    if (s.live == 0)
        return noDataColor();
    return linkHealthLut()[0];             // healthy
}

void FabricMapWidget::layoutScene()
{
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
        if (n == 0)
            return;
        int cols = std::max(1, static_cast<int>(std::ceil(std::sqrt(n * area.width() / area.height()))));
        int rows = (n + cols - 1) / cols;
        double cell = std::min(area.width() / cols, area.height() / rows);
        cols = std::max(1, static_cast<int>(area.width() / cell));
        rows = (n + cols - 1) / cols;
        const double gap = cell > 6 ? 1.5 : (cell > 3 ? 0.5 : 0);
        const double x0 = area.left() + (area.width() - cols * cell) / 2;
        for (int i = 0; i < n; ++i)
            rects_[static_cast<size_t>(sws[static_cast<size_t>(i)])] =
                QRectF(x0 + (i % cols) * cell, area.top() + (i / cols) * cell, cell - gap, cell - gap);
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
        for (size_t i = 0; i < t1.size(); ++i)
            col1.insert(t1[i], static_cast<int>(i));
        for (size_t i = 0; i < t2.size(); ++i)
            col2.insert(t2[i], static_cast<int>(i));
        // Uplinks per T2 switch decide the height of the upper matrix.
        std::vector<std::vector<int>> up(t2.size());
        std::vector<int> m1Cells(t1.size() * t2.size(), -1);
        for (size_t j = 0; j < linkSw_.size(); ++j) {
            if (linkZone_[j] != zone_)
                continue;
            if (linkPair_[j] == 1) {
                const int c = col1.value(linkSw_[j][0], -1), r = col2.value(linkSw_[j][1], -1);
                if (c >= 0 && r >= 0)
                    m1Cells[static_cast<size_t>(r) * t1.size() + static_cast<size_t>(c)] = static_cast<int>(j);
            } else if (linkPair_[j] == 2) {
                const int c = col2.value(linkSw_[j][0], -1);
                if (c >= 0)
                    up[static_cast<size_t>(c)].push_back(static_cast<int>(j));
            }
        }
        m1Cols_ = static_cast<int>(t1.size());
        m1Rows_ = static_cast<int>(t2.size());
        m1_ = std::move(m1Cells);
        m2Cols_ = static_cast<int>(t2.size());
        m2Rows_ = 0;
        for (const auto& u : up)
            m2Rows_ = std::max<int>(m2Rows_, static_cast<int>(u.size()));
        m2_.assign(static_cast<size_t>(m2Cols_) * m2Rows_, -1);
        for (int c = 0; c < m2Cols_; ++c)
            for (size_t r = 0; r < up[static_cast<size_t>(c)].size(); ++r)
                m2_[r * static_cast<size_t>(m2Cols_) + static_cast<size_t>(c)] = up[static_cast<size_t>(c)][r];

        const double left = 60, right = W - 20, avail = right - left;
        // Top: tier 3; then the T2 uplink matrix above each T2 switch; then the T1-T2 matrix
        // with one column per T1 switch, the T1 switches under it.
        grid(t3, QRectF(left, top, avail, std::min(bandH * 0.35, 36.0)));
        const double y2 = top + std::min(bandH * 0.35, 36.0) + 24;
        const double m2H = std::min(bandH * 0.9, m2Rows_ * 8.0);
        const double c2 = m2Cols_ ? avail / m2Cols_ : 0;
        m2Rect_ = QRectF(left, y2, c2 * m2Cols_, m2H);
        for (int i = 0; i < m2Cols_; ++i)
            rects_[static_cast<size_t>(t2[static_cast<size_t>(i)])] = QRectF(left + i * c2 + 1, y2 + m2H + 4, c2 - 2, 18);
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

QRectF FabricMapWidget::switchRect(int sw) const
{
    return sw >= 0 && sw < static_cast<int>(rects_.size()) ? rects_[static_cast<size_t>(sw)] : QRectF();
}

int FabricMapWidget::zoneAt(QPointF pos) const
{
    if (zone_ >= 0)
        return zone_;
    for (size_t z = 0; z < zoneRects_.size(); ++z)
        if (zoneRects_[z].contains(pos))
            return static_cast<int>(z);
    return -1;
}

int FabricMapWidget::matrixLinkAt(QPointF pos) const
{
    if (zone_ < 0)
        return -1;
    auto at = [&](const QRectF& r, const std::vector<int>& cells, int cols, int rows) {
        if (cols <= 0 || rows <= 0 || !r.contains(pos))
            return -1;
        const int c = std::min(cols - 1, static_cast<int>((pos.x() - r.left()) / r.width() * cols));
        const int row = std::min(rows - 1, static_cast<int>((pos.y() - r.top()) / r.height() * rows));
        return cells[static_cast<size_t>(row) * cols + c];
    };
    const int a = at(m1Rect_, m1_, m1Cols_, m1Rows_);
    return a >= 0 ? a : at(m2Rect_, m2_, m2Cols_, m2Rows_);
}

int FabricMapWidget::switchAt(QPointF pos) const
{
    for (size_t i = 0; i < rects_.size(); ++i)
        if (!rects_[i].isNull() && rects_[i].adjusted(-1, -1, 1, 1).contains(pos))
            return static_cast<int>(i);
    return -1;
}

void FabricMapWidget::paintEvent(QPaintEvent*)
{
    if (sceneDirty_ || sceneSize_ != size())
        layoutScene();
    const HallLayout& h = state_->layout();
    QPainter p(this);
    p.fillRect(rect(), QColor(backgroundColor()));
    p.setPen(QColor(220, 220, 230));
    if (h.switches.empty()) {
        p.drawText(rect(), Qt::AlignCenter, state_->hasLayout() ? tr("No backend switches in the hall") : tr("Waiting for the hall layout…"));
        return;
    }
    const bool ib = h.fabric == u"infiniband";
    const QString tierName[4] = {QString(), ib ? tr("leaf") : tr("RTSW"), ib ? tr("spine") : tr("CTSW"),
                                 ib ? tr("core") : tr("ATSW")};
    const double top = 40, bandH = (height() - top - 20) / 3;
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    if (zone_ < 0) {
        for (int t = 3; t >= 1; --t)
            p.drawText(QPointF(6, top + (3 - t) * bandH + 2), tierName[t]);
    } else {
        // Label each tier where its switches are drawn in the drill-down.
        double y[4] = {0, 0, 0, 0};
        for (size_t i = 0; i < rects_.size(); ++i)
            if (!rects_[i].isNull() && h.switches[i].tier >= 1 && h.switches[i].tier <= 3)
                y[h.switches[i].tier] = rects_[i].center().y();
        for (int t = 1; t <= 3; ++t)
            if (y[t] > 0)
                p.drawText(QRectF(4, y[t] - 9, 50, 18), Qt::AlignLeft | Qt::AlignVCenter, tierName[t]);
    }
    p.setFont(font());
    // Counts of what this view draws, so the header and the picture agree.
    int drawn = 0;
    for (const auto& r : rects_)
        drawn += !r.isNull();
    int drawnLinks = 0;
    if (zone_ < 0) {
        for (const auto& z : bundles_)
            drawnLinks += z[1].count + z[2].count;
    } else {
        for (const int j : m1_)
            drawnLinks += j >= 0;
        for (const int j : m2_)
            drawnLinks += j >= 0;
    }
    p.drawText(QRectF(0, 4, width() - 8, 20), Qt::AlignRight,
               zone_ < 0 ? tr("%1 · %2 backend switches · %3 switch-to-switch links — click a zone to drill down")
                               .arg(h.cluster).arg(drawn).arg(drawnLinks)
                         : tr("zone %1 · %2 switches · %3 links — click a switch for its routes, right-click to go back")
                               .arg(h.zones.value(zone_)).arg(drawn).arg(drawnLinks));
    paintLegend(p);

    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    auto linkColor = [&](size_t j) {
        const auto hs = j < health.size() ? health[j] : kNoData;
        if (hs >= 1 && hs <= 4)
            return QColor(linkHealthLut()[hs]);
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
            p.drawText(QRectF(zr.left(), zr.bottom() - 18, zr.width(), 16), Qt::AlignCenter, h.zones[z]);
            for (int pair = 1; pair <= 2; ++pair) {
                const auto& b = bundles_[static_cast<size_t>(z)][static_cast<size_t>(pair)];
                if (b.count == 0)
                    continue;
                const double u = b.meanUtil();
                const int bad = b.health[1] + b.health[2];
                const int off = b.health[3] + b.health[4];
                QColor c = u < 0 ? QColor(noDataColor()) : QColor(utilizationLut()[static_cast<size_t>(std::lround(u))]);
                const double yLo = pair == 1 ? top + 2 * bandH + 8 : top + bandH + 8;
                const double yHi = pair == 1 ? top + bandH + bandH * 0.45 + 12 : top + bandH * 0.45 + 14;
                const double x = zr.center().x();
                p.setPen(QPen(c, std::clamp(std::log2(b.count + 1.0), 2.0, 12.0), Qt::SolidLine, Qt::FlatCap));
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
                if (bad)
                    lines << tr("%1 down").arg(bad);
                if (off)
                    lines << tr("%1 off").arg(off);
                if (const int mine = highlightedInBundle(z, pair); mine > 0)
                    lines << tr("%1 of the job").arg(mine);
                const QRectF box(x + 12, (yLo + yHi) / 2 - 30, zr.right() - x - 14, 60);
                QFont lf = font();
                int px = 12;
                for (; px > 7; --px) {
                    lf.setPixelSize(px);
                    const QFontMetrics fm(lf);
                    int w = 0;
                    for (const auto& l : lines)
                        w = std::max(w, fm.horizontalAdvance(l));
                    if (w <= box.width() && fm.height() * lines.size() <= box.height())
                        break;
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
                    line[c] = j < 0             ? backgroundColor()
                              : hiCount_ == 0 || linkHi_[static_cast<size_t>(j)] ? linkColor(static_cast<size_t>(j)).rgb()
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
            p.drawText(QPointF(m1Rect_.left(), m1Rect_.top() - 4), tr("%1 × %2 links (rows: %3, columns: %4)")
                                                          .arg(m1Rows_).arg(m1Cols_).arg(tierName[2], tierName[1]));
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
                        p.drawRect(QRectF(m1Rect_.left(), m1Rect_.top() + r * rh, m1Rect_.width(), rh));
                }
                p.drawRect(QRectF(sr.left(), m2Rect_.top(), sr.width(), m2Rect_.height()));
            }
        }
    }
    // Switches on top.
    p.setPen(Qt::NoPen);
    for (size_t i = 0; i < rects_.size(); ++i)
        if (!rects_[i].isNull())
            p.fillRect(rects_[i], hiCount_ > 0 && swHi_[i] == 0 ? QColor(dimmed(switchColor(static_cast<int>(i)).rgb()))
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
        if (r.isNull() || r.width() < 28 || r.height() < nfm.height())  // no name fits: skip the measuring
            continue;
        const QString& name = h.switches[i].name;
        const QString shortName = name.section(u'-', -1);  // "z1-ctsw03" -> "ctsw03"
        const QString text = nfm.horizontalAdvance(name) + 4 <= r.width() ? name
                             : nfm.horizontalAdvance(shortName) + 4 <= r.width() ? shortName : QString();
        if (text.isEmpty() || r.height() < nfm.height())
            continue;
        const QColor bg = switchColor(static_cast<int>(i));
        p.setPen(bg.lightness() > 140 ? QColor(15, 15, 18) : QColor(240, 240, 245));
        p.drawText(r, Qt::AlignCenter, text);
    }
    // RTSW columns are too narrow for names: every 8th rack's name under its column.
    if (zone_ >= 0 && m1Cols_ > 0 && m1Rect_.width() / m1Cols_ < 40) {
        p.setPen(QColor(200, 200, 210));
        int step = 1;
        while (m1Rect_.width() / m1Cols_ * step < nfm.horizontalAdvance(QStringLiteral("z1-r000")) + 6)
            step *= 2;
        for (size_t i = 0; i < rects_.size(); ++i) {
            if (rects_[i].isNull() || h.switches[i].tier != 1)
                continue;
            const int col = static_cast<int>((rects_[i].left() - m1Rect_.left()) / (m1Rect_.width() / m1Cols_) + 0.5);
            if (col % step != 0)
                continue;
            const QString rackName = h.switches[i].name.section(QStringLiteral("-rtsw"), 0, 0);
            p.drawText(QPointF(rects_[i].left(), rects_[i].bottom() + nfm.ascent() + 2), rackName);
        }
    }
    p.setFont(font());
    // Stale: every colour above is as old as the last frame; say so on the map itself.
    const bool stale = isStale();
    if (stale)
        p.fillRect(rect(), staleVeil());
    if (selected_ >= 0 && !switchRect(selected_).isNull()) {
        p.setPen(QPen(QColor(0, 229, 255), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(switchRect(selected_).adjusted(-2, -2, 2, 2));
    }
    if (!bw_.empty()) {
        p.setPen(QColor(230, 230, 235));
        p.drawText(QRectF(8, height() - 18, width() - 16, 16), Qt::AlignLeft,
                   tr("Failure impact overlay: rack switches coloured by normalized bus bandwidth (green 100%, red ≤ 50%)"));
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
    if (stale)
        paintStaleBadge(p, rect(), staleText(), font());
}

void FabricMapWidget::setStaleNote(const QString& note)
{
    if (note == staleNote_)
        return;
    staleNote_ = note;
    update();
}

bool FabricMapWidget::isStale() const { return dataIsStale(state_->dataAgeMs(), state_->intervalMs(), staleNote_); }

QString FabricMapWidget::staleText() const { return loom::console::staleText(state_->dataAgeMs(), staleNote_); }

void FabricMapWidget::paintLegend(QPainter& p)
{
    // Bottom-left: what the switch tiles' colours mean, and what the lines show.
    struct Item {
        QRgb color;
        QString text;
    };
    const Item items[] = {{linkHealthLut()[0], tr("switch ok")},
                          {degradedColor(), tr("some links down/erroring")},
                          {failedColor(), tr("switch down (all links)")},
                          {linkHealthLut()[4], tr("not in service")},
                          {rackSwitchPhaseColor(QStringLiteral("burn-in")), tr("rack in burn-in")},
                          {rackSwitchPhaseColor(QStringLiteral("drained")), tr("rack drained")},
                          {noDataColor(), tr("no data")}};
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
    p.drawText(QPointF(x + 6, y + 13), zone_ < 0 ? tr("lines: links, coloured by mean utilization of links in service")
                                                 : tr("matrix cells: links, by utilization; red down, grey off"));
    p.setFont(font());
}

void FabricMapWidget::mouseReleaseEvent(QMouseEvent* e)
{
    if (e->button() == Qt::RightButton && zone_ >= 0) {
        setZone(-1);
        return;
    }
    if (e->button() != Qt::LeftButton)
        return;
    const int sw = switchAt(e->position());
    if (zone_ < 0) {
        const HallLayout& h = state_->layout();
        if (sw >= 0 && (h.switches[static_cast<size_t>(sw)].tier == 3 || switchZone_[static_cast<size_t>(sw)] < 0)) {
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
    } else if (const int j = matrixLinkAt(e->position()); j >= 0 && linkSw_[static_cast<size_t>(j)][0] >= 0) {
        selectSwitch(linkSw_[static_cast<size_t>(j)][0]);
        Q_EMIT switchClicked(linkSw_[static_cast<size_t>(j)][0]);
    }
}

bool FabricMapWidget::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        const int sw = switchAt(he->pos());
        if (sw < 0) {
            const int j = matrixLinkAt(he->pos());
            if (j < 0) {
                QToolTip::hideText();
                return true;
            }
            static const char* names[] = {"up", "degraded", "down", "drained", "not in service"};
            const auto& u = state_->values(Topic::LinkUtil);
            const auto& hv = state_->values(Topic::LinkHealth);
            const auto uj = static_cast<size_t>(j) < u.size() ? u[static_cast<size_t>(j)] : kNoData;
            const auto hj = static_cast<size_t>(j) < hv.size() ? hv[static_cast<size_t>(j)] : kNoData;
            QToolTip::showText(he->globalPos(),
                               QStringLiteral("<b>%1</b><br>utilization %2<br>%3")
                                   .arg(state_->layout().links[j].toHtmlEscaped(),
                                        uj <= 100 ? QString::number(uj) + u'%' : QStringLiteral("–"),
                                        hj < 5 ? QLatin1String(names[hj]) : QStringLiteral("unknown")),
                               this);
            return true;
        }
        const auto& s = stats_[static_cast<size_t>(sw)];
        const auto& hs = state_->layout().switches[static_cast<size_t>(sw)];
        QString tip = QStringLiteral("<b>%1</b> (%2)<br>%3 links · mean util %4<br>%5 down/degraded · %6 drained/off")
                          .arg(hs.name, hs.role).arg(s.links)
                          .arg(s.meanUtil() < 0 ? QStringLiteral("–") : QString::number(s.meanUtil(), 'f', 0) + u'%')
                          .arg(s.down).arg(s.drained);
        if (!bw_.empty() && bw_[static_cast<size_t>(sw)] >= 0)
            tip += QStringLiteral("<br>rack bus bandwidth %1%").arg(bw_[static_cast<size_t>(sw)], 0, 'f', 1);
        if (const int r = switchRack_[static_cast<size_t>(sw)]; r >= 0) {
            const auto& rack = state_->layout().racks[static_cast<size_t>(r)];
            tip += QStringLiteral("<br>rack %1: %2").arg(rack.name.toHtmlEscaped(), rack.state.toHtmlEscaped());
        }
        QToolTip::showText(he->globalPos(), tip, this);
        return true;
    }
    return QWidget::event(e);
}

}  // namespace loom::console
