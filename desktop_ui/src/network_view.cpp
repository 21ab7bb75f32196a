#include "loom/console/network_view.hpp"

#include <QHBoxLayout>
#include <QHash>
#include <QJsonObject>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTimer>
#include <QUrlQuery>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "loom/console/palette.hpp"

namespace loom::console {

int NetworkModel::stateCode(const QString& s) {
    if (s == u"active" || s == u"up") return 0;
    if (s == u"down" || s == u"failed") return 2;
    if (s == u"drained") return 3;
    return 1;  // planned and anything not yet carrying traffic
}

int NetworkModel::code(const NetLink& l) {
    if (l.health.isEmpty()) return stateCode(l.state);
    if (l.health == u"up") return 0;
    if (l.health == u"down") return 2;
    if (l.health == u"drained") return 3;
    if (l.health == u"degraded") return 4;
    return 1;  // not in service, no data
}

NetworkModel NetworkModel::build(const QJsonArray& switches, const QJsonArray& links) {
    NetworkModel m;
    QHash<QString, int> byName;
    for (const auto& v : switches) {
        const QJsonObject o = v.toObject();
        NetSwitch s;
        s.name = o.value(u"name").toString();
        s.role = o.value(u"role").toString();
        s.zone = o.value(u"zone").toString();
        s.rack = o.value(u"rack").toString();
        s.state = o.value(u"state").toString();
        s.tier = s.role == u"fcsw" ? 2 : 1;
        byName.insert(s.name, static_cast<int>(m.switches.size()));
        m.switches.push_back(std::move(s));
    }
    // Stable drawing order: tier, zone, natural name order within (names are zero-padded).
    for (const auto& v : links) {
        const QJsonObject o = v.toObject();
        NetLink l;
        l.name = o.value(u"name").toString();
        l.network = o.value(u"network").toString();
        l.state = o.value(u"state").toString();
        l.health = o.value(u"health").toString();
        l.a = byName.value(o.value(u"aPort").toString().section(u'/', 0, 0), -1);
        l.b = byName.value(o.value(u"bPort").toString().section(u'/', 0, 0), -1);
        const int code = NetworkModel::code(l);
        ++m.linkStates[static_cast<size_t>(code)];
        const int idx = static_cast<int>(m.links.size());
        for (const int s : {l.a, l.b})
            if (s >= 0) {
                ++m.switches[static_cast<size_t>(s)].links[static_cast<size_t>(code)];
                m.switches[static_cast<size_t>(s)].linkIndex.push_back(idx);
            }
        m.links.push_back(std::move(l));
    }
    return m;
}

int NetworkModel::find(const QString& name) const {
    for (size_t i = 0; i < switches.size(); ++i)
        if (switches[i].name == name) return static_cast<int>(i);
    return -1;
}

// --- the map ------------------------------------------------------------------------------

NetworkMapWidget::NetworkMapWidget(QWidget* parent) : QWidget(parent) {
    setMinimumSize(400, 300);
    setMouseTracking(true);
}

void NetworkMapWidget::setModel(const NetworkModel* model) {
    model_ = model;
    if (selected_ >= static_cast<int>(model_ ? model_->switches.size() : 0)) selected_ = -1;
    layoutScene();
    update();
}

void NetworkMapWidget::select(int sw) {
    selected_ = sw;
    update();
}

QRgb NetworkMapWidget::switchColor(const NetSwitch& s) {
    // The fabric map's meanings, by loomd's words for the links (as the web's networks view
    // counts them): every in-service link down (or the switch failed) red, some down or degraded
    // amber, drained links in the links' drained colour, nothing in service grey.
    const int inService = s.links[0] + s.links[2] + s.links[4];
    if (NetworkModel::stateCode(s.state) == 2 || (s.links[2] > 0 && s.links[2] == inService))
        return failedColor();
    if (s.links[2] > 0 || s.links[4] > 0) return degradedColor();
    if (s.links[3] > 0) return linkHealthLut()[3];
    if (s.links[0] == 0) return linkHealthLut()[4];
    return linkHealthLut()[0];
}

void NetworkMapWidget::resizeEvent(QResizeEvent*) { layoutScene(); }

void NetworkMapWidget::layoutScene() {
    rects_.assign(model_ ? model_->switches.size() : 0, QRectF());
    groups_.clear();
    if (!model_ || model_->switches.empty()) return;
    const auto& sw = model_->switches;
    const double left = 70, right = width() - 10, top = 36, bottom = height() - 40;
    const double bandGap = 70;
    const double topBandH = std::clamp((bottom - top) * 0.18, 24.0, 60.0);
    // Top band: the FCSWs in one row.
    std::vector<int> core;
    std::map<std::pair<QString, QString>, std::vector<int>> lower;  // (role, zone) -> switches
    for (size_t i = 0; i < sw.size(); ++i) {
        if (sw[i].tier == 2)
            core.push_back(static_cast<int>(i));
        else
            lower[{sw[i].role == u"ssw" ? QStringLiteral("~ssw") : sw[i].role, sw[i].zone}]
                .push_back(static_cast<int>(i));
    }
    if (!core.empty()) {
        const double w = std::min(110.0, (right - left) / core.size());
        for (size_t k = 0; k < core.size(); ++k)
            rects_[static_cast<size_t>(core[k])] =
                QRectF(left + k * w + 1, top, std::max(2.0, w - 2), topBandH);
    }
    // Lower band: one group per zone (FSWs) and per storage zone (SSWs), widths by count.
    const double y0 = top + topBandH + bandGap, h = std::max(30.0, bottom - y0);
    int total = 0;
    for (const auto& [key, v] : lower) total += static_cast<int>(v.size());
    // Widths by count, at least 60 px each, scaled together to fit the band.
    const double gap = 10, avail = right - left -
                                   gap * static_cast<double>(lower.empty() ? 0 : lower.size() - 1);
    std::vector<double> widths;
    double sum = 0;
    for (const auto& [key, v] : lower) {
        widths.push_back(std::max(60.0, avail * v.size() / std::max(1, total)));
        sum += widths.back();
    }
    const double fit = sum > avail ? avail / sum : 1.0;
    double x = left;
    size_t gi = 0;
    for (const auto& [key, v] : lower) {
        const double gw = widths[gi++] * fit;
        const int n = static_cast<int>(v.size());
        // A grid as square as the group's box allows.
        int cols = std::max(1, static_cast<int>(std::ceil(std::sqrt(n * gw / (h - 18)))));
        cols = std::min(cols, n);
        const int rows = (n + cols - 1) / cols;
        const double cw = gw / cols, ch = std::min((h - 18) / rows, cw * 1.2);
        for (int k = 0; k < n; ++k)
            rects_[static_cast<size_t>(v[static_cast<size_t>(k)])] =
                QRectF(x + (k % cols) * cw + 0.5, y0 + (k / cols) * ch + 0.5, std::max(1.0, cw - 1),
                       std::max(1.0, ch - 1));
        Group g;
        g.label = QStringLiteral("%1 %2 (%3)")
                      .arg(key.second.isEmpty() ? tr("no zone") : key.second,
                           key.first == u"~ssw" ? QStringLiteral("SSW") : key.first.toUpper())
                      .arg(n);
        g.rect = QRectF(x, y0, gw, rows * ch);
        // Uplinks: links from this group to the top band.
        for (const int s : v)
            for (const int li : sw[static_cast<size_t>(s)].linkIndex) {
                const auto& l = model_->links[static_cast<size_t>(li)];
                const int other = l.a == s ? l.b : l.a;
                if (other >= 0 && sw[static_cast<size_t>(other)].tier == 2) {
                    ++g.uplinks;
                    g.down += NetworkModel::code(l) == 2;
                }
            }
        groups_.push_back(g);
        x += gw + gap;
    }
}

int NetworkMapWidget::drawnSwitches() const {
    int n = 0;
    for (const auto& r : rects_) n += !r.isNull();
    return n;
}

QRectF NetworkMapWidget::switchRect(int sw) const {
    return sw >= 0 && sw < static_cast<int>(rects_.size()) ? rects_[static_cast<size_t>(sw)]
                                                           : QRectF();
}

int NetworkMapWidget::switchAt(QPointF pos) const {
    for (size_t i = 0; i < rects_.size(); ++i)
        if (rects_[i].adjusted(-1, -1, 1, 1).contains(pos)) return static_cast<int>(i);
    return -1;
}

void NetworkMapWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), QColor(backgroundColor()));
    p.setPen(QColor(220, 220, 230));
    if (!model_ || model_->switches.empty()) {
        p.drawText(rect(), Qt::AlignCenter,
                   model_ ? tr("No frontend or storage switches in the inventory")
                          : tr("Loading the frontend and storage networks…"));
        return;
    }
    const auto& sw = model_->switches;
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    double coreY = -1;
    for (size_t i = 0; i < sw.size(); ++i)
        if (sw[i].tier == 2 && !rects_[i].isNull()) coreY = rects_[i].center().y();
    if (coreY > 0)
        p.drawText(QRectF(4, coreY - 9, 64, 18), Qt::AlignLeft | Qt::AlignVCenter, tr("FCSW"));
    p.setFont(font());
    // Uplink bundles from each group to the core band, labelled with their counts.
    double coreBottom = 0;
    for (size_t i = 0; i < sw.size(); ++i)
        if (sw[i].tier == 2) coreBottom = std::max(coreBottom, rects_[i].bottom());
    QFont small = font();
    small.setPixelSize(11);
    for (const auto& g : groups_) {
        if (g.uplinks > 0 && coreBottom > 0) {
            const double x = g.rect.center().x();
            p.setPen(QPen(g.down > 0 ? QColor(failedColor()) : QColor(120, 160, 200),
                          std::clamp(std::log2(g.uplinks + 1.0), 2.0, 10.0), Qt::SolidLine,
                          Qt::FlatCap));
            p.drawLine(QPointF(x, g.rect.top() - 4), QPointF(x, coreBottom + 4));
            p.setFont(small);
            p.setPen(QColor(230, 230, 235));
            const QString t = g.down > 0 ? tr("%1 uplinks\n%2 down").arg(g.uplinks).arg(g.down)
                                         : tr("%1 uplinks").arg(g.uplinks);
            p.drawText(QRectF(x + 8, coreBottom + 8, std::max(40.0, g.rect.width() - 12), 40),
                       Qt::AlignLeft | Qt::AlignVCenter, t);
            p.setFont(font());
        }
        p.setPen(QColor(200, 200, 210));
        p.drawText(QRectF(g.rect.left(), g.rect.bottom() + 2, g.rect.width() + 40, 16),
                   Qt::AlignLeft, g.label);
    }
    // Tiles, then names where they fit.
    p.setPen(Qt::NoPen);
    for (size_t i = 0; i < sw.size(); ++i)
        if (!rects_[i].isNull()) p.fillRect(rects_[i], QColor(switchColor(sw[i])));
    QFont nf = font();
    nf.setPixelSize(10);
    p.setFont(nf);
    const QFontMetrics fm(nf);
    for (size_t i = 0; i < sw.size(); ++i) {
        const QRectF& r = rects_[i];
        if (r.isNull() || r.height() < fm.height() || r.width() < 24) continue;
        const QString shortName = sw[i].name.section(u'-', -1);
        const QString text = fm.horizontalAdvance(sw[i].name) + 4 <= r.width()  ? sw[i].name
                             : fm.horizontalAdvance(shortName) + 4 <= r.width() ? shortName
                                                                                : QString();
        if (text.isEmpty()) continue;
        const QColor bg(switchColor(sw[i]));
        p.setPen(bg.lightness() > 140 ? QColor(15, 15, 18) : QColor(240, 240, 245));
        p.drawText(r, Qt::AlignCenter, text);
    }
    p.setFont(font());
    if (selected_ >= 0 && !switchRect(selected_).isNull()) {
        p.setPen(QPen(QColor(0, 229, 255), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(switchRect(selected_).adjusted(-2, -2, 2, 2));
    }
    // Legend.
    struct Item {
        QRgb c;
        QString t;
    };
    const Item items[] = {{linkHealthLut()[0], tr("links up")},
                          {degradedColor(), tr("some links down or degraded")},
                          {failedColor(), tr("all links down / switch failed")},
                          {linkHealthLut()[3], tr("links drained")},
                          {linkHealthLut()[4], linkHealthWord(4)}};
    p.setFont(small);
    const QFontMetrics sfm(small);
    double x = 8;
    const double y = height() - 20;
    for (const auto& it : items) {
        p.fillRect(QRectF(x, y + 3, 12, 12), QColor(it.c));
        p.setPen(QColor(220, 220, 230));
        p.drawText(QPointF(x + 16, y + 13), it.t);
        x += 16 + sfm.horizontalAdvance(it.t) + 14;
    }
    p.drawText(QPointF(x + 6, y + 13),
               tr("links by loomd's health words (its stored states and open events: no "
                  "per-link telemetry on these networks)"));
}

void NetworkMapWidget::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return;
    const int s = switchAt(e->position());
    if (s >= 0) {
        select(s);
        Q_EMIT switchClicked(s);
    }
}

// --- the view -----------------------------------------------------------------------------

NetworkView::NetworkView(ApiClient* api, QWidget* parent) : QWidget(parent), api_(api) {
    map_ = new NetworkMapWidget(this);
    header_ = new QLabel(tr("Frontend and storage networks: not loaded yet"), this);
    header_->setWordWrap(true);
    auto* reload = new QPushButton(tr("Refresh"), this);
    detail_ = new QTextBrowser(this);
    detail_->setMinimumWidth(300);
    detail_->setHtml(tr("<p>Click a switch for its links.</p>"));
    auto* bar = new QHBoxLayout;
    bar->addWidget(header_, 1);
    bar->addWidget(reload);
    auto* split = new QSplitter(this);
    split->addWidget(map_);
    split->addWidget(detail_);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    auto* lay = new QVBoxLayout(this);
    lay->setContentsMargins(4, 4, 4, 4);
    lay->addLayout(bar);
    lay->addWidget(split, 1);
    connect(reload, &QPushButton::clicked, this, &NetworkView::refresh);
    connect(map_, &NetworkMapWidget::switchClicked, this, &NetworkView::showSwitch);
    // States change with provisioning; these networks have no stream topic of their own.
    timer_ = new QTimer(this);
    timer_->start(15000);
    connect(timer_, &QTimer::timeout, this, [this] {
        if (isVisible()) refresh();
    });
}

void NetworkView::showEvent(QShowEvent*) {
    if (!loaded_) refresh();
}

void NetworkView::fetchAll(const QString& path, QJsonArray acc,
                           std::function<void(Result<QJsonArray>)> done) {
    if (!api_) return;
    QPointer<NetworkView> self(this);
    api_->get(path, [self, path, acc = std::move(acc),
                     done = std::move(done)](Result<QJsonDocument> r) mutable {
        if (!self) return;
        if (!r) {
            done(fail(r.error()));
            return;
        }
        const QJsonObject o = r->object();
        for (const auto& v : o.value(u"items").toArray()) acc.append(v);
        const QString next = o.value(u"nextCursor").toString();
        if (next.isEmpty() || acc.size() > 200000) {
            done(std::move(acc));
            return;
        }
        QString base = path.section(QStringLiteral("&cursor="), 0, 0);
        self->fetchAll(
            base + QStringLiteral("&cursor=") + QString::fromLatin1(QUrl::toPercentEncoding(next)),
            std::move(acc), std::move(done));
    });
}

void NetworkView::refresh() {
    if (!api_ || loading_) return;
    loading_ = true;
    const int gen = ++generation_;
    QPointer<NetworkView> self(this);
    // Five lists, joined when the last one arrives.
    struct Pending {
        int left = 5;
        QJsonArray switches, links;
        QString error;
    };
    auto pending = std::make_shared<Pending>();
    auto finish = [self, gen, pending] {
        if (!self || gen != self->generation_ || --pending->left > 0) return;
        self->loading_ = false;
        if (!pending->error.isEmpty()) {
            self->header_->setText(tr("Frontend and storage networks: %1").arg(pending->error));
            return;
        }
        self->model_ = NetworkModel::build(pending->switches, pending->links);
        self->loaded_ = true;
        self->map_->setModel(&self->model_);
        self->header_->setText(self->headerText());
        if (self->map_->selected() >= 0) self->showSwitch(self->map_->selected());
        Q_EMIT self->refreshed();
    };
    for (const char* role : {"fcsw", "fsw", "ssw"})
        fetchAll(QStringLiteral("/api/v1/switches?role=%1&limit=5000").arg(QLatin1String(role)), {},
                 [pending, finish](Result<QJsonArray> r) {
                     if (r)
                         for (const auto& v : *r) pending->switches.append(v);
                     else
                         pending->error = r.error();
                     finish();
                 });
    for (const char* net : {"frontend", "storage"})
        fetchAll(QStringLiteral("/api/v1/links?network=%1&limit=5000").arg(QLatin1String(net)), {},
                 [pending, finish](Result<QJsonArray> r) {
                     if (r)
                         for (const auto& v : *r) pending->links.append(v);
                     else
                         pending->error = r.error();
                     finish();
                 });
}

QString NetworkView::headerText() const {
    int fcsw = 0, fsw = 0, ssw = 0;
    for (const auto& s : model_.switches)
        (s.role == u"fcsw" ? fcsw : s.role == u"ssw" ? ssw : fsw) += 1;
    const auto& st = model_.linkStates;
    return tr("Frontend and storage: %1 switches drawn (%2 FCSW, %3 FSW, %4 SSW) · %5 links: %6 "
              "up, %7 not in service, %8 down, %9 drained, %10 degraded")
        .arg(map_->drawnSwitches())
        .arg(fcsw)
        .arg(fsw)
        .arg(ssw)
        .arg(model_.links.size())
        .arg(st[0])
        .arg(st[1])
        .arg(st[2])
        .arg(st[3])
        .arg(st[4]);
}

void NetworkView::showSwitch(int sw) {
    if (sw < 0 || sw >= static_cast<int>(model_.switches.size())) return;
    map_->select(sw);
    const NetSwitch& s = model_.switches[static_cast<size_t>(sw)];
    QString rows;
    // Problems first: down, drained, planned, then active.
    std::vector<int> order = s.linkIndex;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        static const int rank[] = {4, 3, 0, 2, 1};
        return rank[NetworkModel::code(model_.links[static_cast<size_t>(a)])] <
               rank[NetworkModel::code(model_.links[static_cast<size_t>(b)])];
    });
    int n = 0;
    for (const int li : order) {
        if (++n > 300) break;
        const NetLink& l = model_.links[static_cast<size_t>(li)];
        const QString a = l.name.section(QStringLiteral("--"), 0, 0),
                      b = l.name.section(QStringLiteral("--"), 1);
        const bool mineA = a.section(u'/', 0, 0) == s.name;
        const int code = NetworkModel::code(l);
        const QString style =
            code == 2
                ? QStringLiteral("color:%1;font-weight:bold").arg(QColor(failedColor()).name())
            : code == 4 ? QStringLiteral("color:%1").arg(QColor(degradedColor()).name())
                        : QString();
        rows += QStringLiteral(
                    "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td style='%5'>%6</td></tr>")
                    .arg((mineA ? a : b).section(u'/', -1).toHtmlEscaped(),
                         (mineA ? b : a).toHtmlEscaped(), l.network.toHtmlEscaped(),
                         l.state.toHtmlEscaped(), style,
                         (l.health.isEmpty() ? QStringLiteral("–") : l.health).toHtmlEscaped());
    }
    if (static_cast<int>(order.size()) > 300)
        rows += tr("<tr><td colspan=5>… %1 more</td></tr>").arg(order.size() - 300);
    const int scroll = detail_->verticalScrollBar()->value();
    detail_->setHtml(tr("<h3>%1</h3><p>%2 · zone %3 · rack %4 · state <b>%5</b></p>"
                        "<p>%6 links: %7 up, %12 degraded, %9 down, %10 drained, %8 not in "
                        "service</p>"
                        "<table cellspacing=3><tr><th align=left>port</th><th "
                        "align=left>peer</th><th align=left>network</th>"
                        "<th align=left>state</th><th align=left>health</th></tr>%11</table>")
                         .arg(s.name.toHtmlEscaped(), s.role.toUpper().toHtmlEscaped(),
                              s.zone.isEmpty() ? QStringLiteral("–") : s.zone.toHtmlEscaped(),
                              s.rack.isEmpty() ? QStringLiteral("–") : s.rack.toHtmlEscaped(),
                              s.state.toHtmlEscaped())
                         .arg(s.linkIndex.size())
                         .arg(s.links[0])
                         .arg(s.links[1])
                         .arg(s.links[2])
                         .arg(s.links[3])
                         .arg(rows)
                         .arg(s.links[4]));
    detail_->verticalScrollBar()->setValue(scroll);
}

}  // namespace loom::console
