// FabricMapWidget: the backend Clos as tiers (ATSW/CTSW/RTSW or core/spine/leaf).
//
// At 24k scale (1,716 switches, 55,680 links) individual links are unreadable, so the overview
// draws every switch as a small square coloured by its health (ok, some links down, all links
// down, not in service; legend at the bottom; names where they fit) and the links as one bundle per
// zone and tier pair, labelled with count, mean utilization and failed/drained counts. Clicking a
// zone drills down to that zone's switches with every link between them drawn; clicking a switch
// selects it. The failure-impact overlay colours each rack switch by its rack's normalized bus
// bandwidth. Stale data (no frame for a while, or the connection lost) greys the map and shows its
// age on it, as on the hall map.
#pragma once

#include <QHash>
#include <QImage>
#include <QPainter>
#include <QPointer>
#include <QSet>
#include <QTimer>
#include <QWidget>
#include <array>
#include <vector>

#include "loom/console/cluster_state.hpp"

namespace loom::console {

struct LinkBundle {
    int count = 0;
    double utilSum = 0;
    int utilN = 0;
    std::array<int, 5> health{};  // up, degraded, down, drained, not in service
    double meanUtil() const { return utilN ? utilSum / utilN : -1; }
};

struct SwitchStats {
    double utilSum = 0;
    int utilN = 0;
    int links = 0;
    int down = 0;      // down or degraded
    int drained = 0;   // drained or not in service
    int hardDown = 0;  // down
    int live = 0;      // in service (up, degraded or down) with data
    double meanUtil() const { return utilN ? utilSum / utilN : -1; }
};

class FabricMapWidget : public QWidget {
    Q_OBJECT
public:
    explicit FabricMapWidget(ClusterState* state, QWidget* parent = nullptr);

    // -1: overview of all zones; otherwise the zone index drilled into.
    int zone() const { return zone_; }
    void setZone(int zone);
    void selectSwitch(int sw);
    int selectedSwitch() const { return selected_; }

    // Normalized bus bandwidth per rack (GET /api/v1/fabric/degradation); empty hides it.
    void setDegradation(const QHash<QString, double>& busBwByRack);
    bool overlay() const { return !bw_.empty(); }

    // Aggregates (exposed for tests and the detail panel).
    const LinkBundle& bundle(int zone, int tierPair) const;  // tierPair 0 host-T1, 1 T1-T2, 2 T2-T3
    const SwitchStats& switchStats(int sw) const { return stats_[static_cast<size_t>(sw)]; }
    int zoneAt(QPointF pos) const;
    int switchAt(QPointF pos) const;
    int linkAt(QPointF pos) const { return matrixLinkAt(pos); }  // zone view matrices
    QRectF switchRect(int sw) const;
    // A switch tile's health colour (palette.hpp switchTileColor, the web's rule): loomd's word
    // for it (ClusterState::switchState), loomd's failure list, then its links' words.
    QRgb switchHealthColor(int sw) const;
    // What a switch tile is drawn in: the overlay's busbw, else its health colour.
    QColor switchColor(int sw) const;
    // The word its tooltip and the switch panel say: loomd's (up, down, drained, not in service).
    QString switchWord(int sw) const;

    // Links to pick out (a job's: its NIC cables and every ECMP branch it crosses): the
    // switches they touch are outlined and the others dimmed, bundles say how many are the
    // job's, and in a zone the matrix cells of other links are dimmed. Empty clears; so does a
    // layout change. `label` is written on the map.
    void setHighlightLinks(const std::vector<int>& links, const QString& label = {});
    int highlightedLinks() const { return hiCount_; }
    bool linkHighlighted(int link) const {
        return link >= 0 && link < static_cast<int>(linkHi_.size()) &&
               linkHi_[static_cast<size_t>(link)];
    }
    bool switchHighlighted(int sw) const {
        return sw >= 0 && sw < static_cast<int>(swHi_.size()) && swHi_[static_cast<size_t>(sw)] > 0;
    }
    int highlightedInBundle(int zone, int tierPair) const;

    // Why the data is not live ("disconnected"; empty when live); also stale by age.
    void setStaleNote(const QString& note);
    bool isStale() const;
    QString staleText() const;

Q_SIGNALS:
    void zoneChanged(int zone);
    void switchClicked(int sw);

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override;

private:
    void rebuild();
    void aggregate();
    void layoutScene();
    void paintLegend(QPainter& p);
    int zoneOfLink(int link) const;
    void indexFailedSwitches();

    QPointer<ClusterState> state_;
    QString staleNote_;
    QTimer* staleTimer_;  // repaints the age once a second while stale
    int zone_ = -1;
    int selected_ = -1;
    std::vector<int> switchZone_;             // switch -> zone index (-1 above zones)
    std::vector<int> switchRack_;             // rack switch -> its rack (-1 for others)
    QSet<int> failedSwitches_;                // switches loomd's failure list has failed
    std::vector<std::array<int, 2>> linkSw_;  // lower/upper switch of each link
    std::vector<int> linkPair_;               // tier pair of each link, -1 unknown
    std::vector<int> linkZone_;
    std::vector<std::array<LinkBundle, 3>> bundles_;
    std::vector<SwitchStats> stats_;
    std::vector<float> bw_;                      // per switch (tier 1), -1 none
    std::vector<char> linkHi_;                   // per link: the highlighted job crosses it
    std::vector<int> swHi_;                      // per switch: highlighted links at it
    std::vector<std::array<int, 3>> hiBundles_;  // per zone and tier pair: highlighted links
    int hiCount_ = 0;
    QString hiLabel_;
    std::vector<QRectF> rects_;  // per switch in the current scene, empty if hidden
    std::vector<QRectF> zoneRects_;
    bool sceneDirty_ = true;
    QSize sceneSize_;
    // Zone drill-down: link matrices instead of thousands of crossing lines. m1_ is
    // T2 rows x T1 columns (RTSW uplinks), m2_ is uplink rows x T2 columns (CTSW uplinks);
    // each cell holds a link index (-1 none) and is drawn as one pixel of an image, scaled.
    std::vector<int> m1_, m2_;
    int m1Cols_ = 0, m1Rows_ = 0, m2Cols_ = 0, m2Rows_ = 0;
    QRectF m1Rect_, m2Rect_;
    QImage m1Img_, m2Img_;
    int matrixLinkAt(QPointF pos) const;
};

}  // namespace loom::console
