#include "loom/console/fabric_view.hpp"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QScrollBar>
#include <QSplitter>
#include <QTextDocument>
#include <QTimer>
#include <QUrlQuery>
#include <QVBoxLayout>
#include <map>

#include "loom/console/palette.hpp"
#include "loom/console/sparkline.hpp"
#include "loom/console/text_diff.hpp"

namespace loom::console {

namespace {
QString enc(const QString& s) { return QString::fromLatin1(QUrl::toPercentEncoding(s)); }
QString err(const QString& e) {
    return QStringLiteral("<p style='color:#d33'>%1</p>").arg(e.toHtmlEscaped());
}

// GET /api/v1/fabric/routes/<switch> as tables a network engineer reads: for RoCE the ECMP
// groups (next hops with interface, peer and weight) and which prefixes use each; for
// InfiniBand the LFT summarised per output port.
QString configHtml(const QJsonObject& o) {
    const QString version = o.value(u"version").toVariant().toString();
    QString html = QStringLiteral("<p><b>Config version:</b> %1")
                       .arg(version.isEmpty() ? QStringLiteral("–") : version.toHtmlEscaped());
    const QJsonValue prev = o.value(u"previous");
    if (!prev.isObject()) {
        html += QObject::tr(
            " · no earlier version of this switch's config is kept (unchanged since loomd built "
            "the fabric, "
            "or changed more than 16 routing versions ago)</p>");
        return html;
    }
    const QJsonObject p = prev.toObject();
    const auto all = diffLines(p.value(u"config").toString().split(u'\n'),
                               o.value(u"config").toString().split(u'\n'));
    const auto [removed, added] = diffCounts(all);
    html += QObject::tr(" · changed from version %1: %2 lines removed, %3 added</p>")
                .arg(p.value(u"version").toVariant().toString().toHtmlEscaped())
                .arg(removed)
                .arg(added);
    QString pre;
    int shown = 0;
    for (const auto& l : diffHunks(all, 2)) {
        if (++shown > 200) {
            pre += QObject::tr("<span style='color:#888'>… (%1 more changed lines)</span>\n")
                       .arg(removed + added);
            break;
        }
        switch (l.kind) {
            case DiffLine::Gap:
                pre += QStringLiteral("<span style='color:#888'>⋯</span>\n");
                break;
            case DiffLine::Same:
                pre += QStringLiteral("  %1\n").arg(l.text.toHtmlEscaped());
                break;
            case DiffLine::Removed:
                pre += QStringLiteral("<span style='color:%1'>- %2</span>\n")
                           .arg(QColor(failedColor()).name(), l.text.toHtmlEscaped());
                break;
            case DiffLine::Added:
                pre += QStringLiteral("<span style='color:#2ea043'>+ %1</span>\n")
                           .arg(l.text.toHtmlEscaped());
                break;
        }
    }
    return html + QStringLiteral("<pre style='font-size:small'>%1</pre>").arg(pre);
}

QString routesTable(const QJsonObject& o) {
    QString html = QStringLiteral("<p><b>Routes</b></p>");
    if (o.contains(u"groups")) {
        html += QStringLiteral("<p>ASN %1 · loopback %2</p>")
                    .arg(o.value(u"asn").toVariant().toString().toHtmlEscaped(),
                         o.value(u"loopback").toString().toHtmlEscaped());
        const QJsonArray groups = o.value(u"groups").toArray();
        const QJsonObject routes = o.value(u"routes").toObject();
        std::vector<QStringList> prefixesOf(static_cast<size_t>(groups.size()));
        QStringList local, unreachable;
        for (auto it = routes.begin(); it != routes.end(); ++it) {
            if (it.value().isNull())
                unreachable << it.key();
            else if (it.value().isString())
                local << it.key();
            else if (const int g = it.value().toInt(-1); g >= 0 && g < groups.size())
                prefixesOf[static_cast<size_t>(g)] << it.key();
        }
        auto sample = [](const QStringList& l) {
            QString t = l.mid(0, 4).join(QStringLiteral(", "));
            if (l.size() > 4) t += QStringLiteral(" … (%1)").arg(l.size());
            return t.toHtmlEscaped();
        };
        html += QStringLiteral(
            "<table cellspacing=3 border=0><tr><th align=left>prefixes</th><th align=left>next "
            "hops (interface → peer, weight)</th></tr>");
        if (!local.isEmpty())
            html += QStringLiteral("<tr><td>%1</td><td><i>local (this rack)</i></td></tr>")
                        .arg(sample(local));
        for (qsizetype g = 0; g < groups.size(); ++g) {
            QStringList hops;
            for (const auto& nh : groups[g].toArray()) {
                const QJsonObject h = nh.toObject();
                hops << QStringLiteral("%1 → %2 (%3)")
                            .arg(h.value(u"interface").toString(), h.value(u"peer").toString(),
                                 h.value(u"weight").toVariant().toString());
            }
            html += QStringLiteral(
                        "<tr><td valign=top>%1<br><small>%2 prefixes, group "
                        "%3</small></td><td>%4</td></tr>")
                        .arg(sample(prefixesOf[static_cast<size_t>(g)]))
                        .arg(prefixesOf[static_cast<size_t>(g)].size())
                        .arg(g)
                        .arg(hops.join(QStringLiteral("<br>"))
                                 .toHtmlEscaped()
                                 .replace(QStringLiteral("&lt;br&gt;"), QStringLiteral("<br>")));
        }
        if (!unreachable.isEmpty())
            html += QStringLiteral(
                        "<tr><td style='color:#e04040'>%1</td><td style='color:#e04040'>no "
                        "route</td></tr>")
                        .arg(sample(unreachable));
        html += QStringLiteral("</table>");
        return html;
    }
    if (o.contains(u"lft")) {
        html += QStringLiteral("<p>LID %1 · GUID %2</p>")
                    .arg(o.value(u"lid").toVariant().toString(),
                         o.value(u"guid").toString().toHtmlEscaped());
        std::map<int, QList<int>> byPort;
        const QJsonArray lft = o.value(u"lft").toArray();
        for (qsizetype lid = 1; lid < lft.size(); ++lid)
            byPort[lft[lid].toInt(255)].push_back(static_cast<int>(lid));
        html += QStringLiteral(
            "<table cellspacing=3><tr><th align=left>out port</th><th align=right>LIDs</th><th "
            "align=left>first LIDs</th></tr>");
        for (const auto& [port, lids] : byPort) {
            QStringList first;
            for (qsizetype i = 0; i < lids.size() && i < 6; ++i) first << QString::number(lids[i]);
            html += QStringLiteral("<tr><td>%1</td><td align=right>%2</td><td>%3</td></tr>")
                        .arg(port == 255 ? QStringLiteral("<span style='color:#e04040'>none</span>")
                             : port == 0 ? QStringLiteral("0 (this switch)")
                                         : QString::number(port))
                        .arg(lids.size())
                        .arg(first.join(QStringLiteral(", ")));
        }
        return html + QStringLiteral("</table>");
    }
    return html + QStringLiteral("<pre>%1</pre>")
                      .arg(QString::fromUtf8(QJsonDocument(o).toJson()).left(4000).toHtmlEscaped());
}
}  // namespace

FabricView::FabricView(ClusterState* state, ApiClient* api, QWidget* parent)
    : QWidget(parent), state_(state), api_(api) {
    map_ = new FabricMapWidget(state, this);
    back_ = new QPushButton(tr("◀ All zones"), this);
    back_->setEnabled(false);
    overlay_ = new QCheckBox(tr("Failure impact (normalized bus bandwidth per rack)"), this);
    detail_ = new QTextBrowser(this);
    detail_->setOpenLinks(false);
    detail_->setMinimumWidth(320);
    detail_->setHtml(
        tr("<p>Click a zone to drill down, then a switch for its routes and config version.</p>"));

    auto* bar = new QHBoxLayout;
    bar->addWidget(back_);
    bar->addWidget(overlay_);
    bar->addStretch(1);
    auto* split = new QSplitter(this);
    split->addWidget(map_);
    split->addWidget(detail_);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    auto* lay = new QVBoxLayout(this);
    lay->setContentsMargins(4, 4, 4, 4);
    lay->addLayout(bar);
    lay->addWidget(split, 1);

    connect(back_, &QPushButton::clicked, this, [this] { map_->setZone(-1); });
    connect(map_, &FabricMapWidget::zoneChanged, this,
            [this](int z) { back_->setEnabled(z >= 0); });
    connect(map_, &FabricMapWidget::switchClicked, this, &FabricView::showSwitch);
    connect(detail_, &QTextBrowser::anchorClicked, this, [this](const QUrl& u) {
        if (u.scheme() == u"link") showLinkHistory(u.path().toInt());
    });
    connect(overlay_, &QCheckBox::toggled, this, [this](bool on) {
        if (on)
            refreshDegradation();
        else
            map_->setDegradation({});
    });
    // Failure impact changes with failures: refresh the overlay while it is shown.
    auto* timer = new QTimer(this);
    timer->start(10000);
    connect(timer, &QTimer::timeout, this, [this] {
        if (overlay_->isChecked() && isVisible()) refreshDegradation();
    });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned mask) {
        // Live values: at most one re-render a second while a switch is shown.
        if (sw_ >= 0 && (mask & (topicBit(Topic::LinkHealth) | topicBit(Topic::LinkUtil))) &&
            isVisible() && (!lastRender_.isValid() || lastRender_.elapsed() >= 1000))
            render();
    });
    connect(state, &ClusterState::switchStatesChanged, this, [this] {
        if (sw_ >= 0) render();
    });
    connect(state, &ClusterState::layoutChanged, this, [this] {
        sw_ = -1;
        detail_->setHtml(tr("<p>Click a zone to drill down, then a switch for its routes.</p>"));
    });
}

void FabricView::refreshDegradation() {
    if (!api_) return;
    QPointer<FabricView> self(this);
    api_->get(QStringLiteral("/api/v1/fabric/degradation"), [self](Result<QJsonDocument> r) {
        if (!self || !self->overlay_->isChecked()) return;
        if (!r) {
            self->overlayError_ = r.error();
            self->detail_->setHtml(QStringLiteral("<p><b>Failure impact</b></p>") + err(r.error()));
            return;
        }
        QHash<QString, double> bw;
        for (const auto& v : r->object().value(u"racks").toArray()) {
            const auto o = v.toObject();
            bw.insert(o.value(u"name").toString(), o.value(u"busBwNormalized").toDouble(100));
        }
        // An empty answer still turns the overlay on: every rack at full bandwidth.
        if (bw.isEmpty())
            for (const auto& rack : self->state_->layout().racks) bw.insert(rack.name, 100.0);
        self->map_->setDegradation(bw);
    });
}

bool FabricView::focusLocation(const QString& location, const QString& rack) {
    const HallLayout& h = state_->layout();
    int sw = h.switchIndex(location.section(u'/', 0, 0));
    if (sw < 0) {
        const int r = h.rackIndex(rack);
        if (r >= 0) sw = h.switchIndex(h.racks[static_cast<size_t>(r)].rtsw);
    }
    if (sw < 0) return false;
    const QString zone = h.switches[static_cast<size_t>(sw)].zone;
    if (!zone.isEmpty()) map_->setZone(h.zoneIndex(zone));
    map_->selectSwitch(sw);
    showSwitch(sw);
    return true;
}

void FabricView::showSwitch(int sw) {
    const HallLayout& h = state_->layout();
    if (sw < 0 || sw >= static_cast<int>(h.switches.size())) return;
    sw_ = sw;
    historyLink_ = -1;
    linkHistoryHtml_.clear();
    const int gen = ++generation_;
    routesHtml_ = tr("<p><i>loading routes…</i></p>");
    configHtml_ = tr("<p><i>loading config version…</i></p>");
    render();
    if (!api_) return;
    const QString name = h.switches[static_cast<size_t>(sw)].name;
    QPointer<FabricView> self(this);
    api_->get(QStringLiteral("/api/v1/fabric/routes/") + enc(name),
              [self, gen](Result<QJsonDocument> r) {
                  if (!self || gen != self->generation_) return;
                  if (!r) {
                      self->routesHtml_ = QStringLiteral("<p><b>Routes</b></p>") + err(r.error());
                  } else {
                      self->routesHtml_ = routesTable(r->object());
                  }
                  self->render();
              });
    // The config with its previous version (loomd keeps the link states of its last routing
    // versions and rebuilds the switch's config before its last change): what the last reroute
    // changed on this switch, as a diff.
    api_->get(
        QStringLiteral("/api/v1/fabric/config/") + enc(name) + QStringLiteral("?previous=true"),
        [self, gen](Result<QJsonDocument> r) {
            if (!self || gen != self->generation_) return;
            if (!r) {
                self->configHtml_ = QStringLiteral("<p><b>Config</b></p>") + err(r.error());
            } else {
                self->configHtml_ = configHtml(r->object());
            }
            self->render();
        });
}

void FabricView::showLinkHistory(int link) {
    const HallLayout& h = state_->layout();
    if (link < 0 || link >= h.links.size() || !api_) return;
    historyLink_ = link;
    const QString name = h.links[link];
    linkHistoryHtml_ = tr("<p><i>loading the last hour of %1…</i></p>").arg(name.toHtmlEscaped());
    render();
    const int gen = generation_;
    QUrlQuery q;
    q.addQueryItem(QStringLiteral("scope"), QStringLiteral("link"));
    q.addQueryItem(QStringLiteral("name"), name);
    QPointer<FabricView> self(this);
    api_->get(
        QStringLiteral("/api/v1/telemetry/rollups?") + q.toString(QUrl::FullyEncoded),
        [self, gen, link, name](Result<QJsonDocument> r) {
            if (!self || gen != self->generation_ || link != self->historyLink_) return;
            if (!r) {
                self->linkHistoryHtml_ =
                    QStringLiteral("<p><b>%1</b></p>").arg(name.toHtmlEscaped()) + err(r.error());
            } else {
                const QJsonArray items = r->object().value(u"items").toArray();
                const auto util = seriesOf(items, "utilAvg");
                self->detail_->document()->addResource(
                    QTextDocument::ImageResource, QUrl(QStringLiteral("spark:fabric-link")),
                    QVariant(sparkline(util, 0, 100, 0xff29b6f6, alarmsOf(items, "downSamples"))));
                int down = 0;
                double errors = 0;
                for (const auto& v : items) {
                    down += v.toObject().value(u"downSamples").toInt() > 0;
                    errors += v.toObject().value(u"errors").toDouble();
                }
                self->linkHistoryHtml_ =
                    tr("<p><b>%1</b>, last hour (a point a minute, newest right; red: minutes "
                       "down)<br>"
                       "utilization: %2 · down in %3 min · %4 errors<br><img "
                       "src='spark:fabric-link' width=%5 height=%6></p>")
                        .arg(name.toHtmlEscaped(),
                             sparkSummary(util, QStringLiteral(" %")).toHtmlEscaped())
                        .arg(down)
                        .arg(errors, 0, 'f', 0)
                        .arg(kSparkSize.width())
                        .arg(kSparkSize.height());
            }
            self->render();
        });
}

void FabricView::render() {
    const HallLayout& h = state_->layout();
    if (sw_ < 0 || sw_ >= static_cast<int>(h.switches.size())) return;
    const auto& s = h.switches[static_cast<size_t>(sw_)];
    const auto& st = map_->switchStats(sw_);
    // loomd's word for the switch first (its rack's state read as its cables), as the web says it.
    QString html =
        QStringLiteral(
            "<h3>%1</h3><p>in the fabric: <b>%8</b></p><p>role %2 · zone %3<br>%4 backend "
            "links · mean utilization %5<br>%6 down/degraded · %7 drained/not in service</p>")
            .arg(s.name.toHtmlEscaped(), s.role.toHtmlEscaped(),
                 s.zone.isEmpty() ? QStringLiteral("–") : s.zone.toHtmlEscaped())
            .arg(st.links)
            .arg(st.meanUtil() < 0 ? QStringLiteral("–")
                                   : QString::number(st.meanUtil(), 'f', 1) + u'%')
            .arg(st.down)
            .arg(st.drained)
            .arg(map_->switchWord(sw_).toHtmlEscaped());
    // Ports and peers, with each link's live state and utilization.
    const auto& util = state_->values(Topic::LinkUtil);
    const auto& health = state_->values(Topic::LinkHealth);
    QString ports;
    int n = 0;
    for (size_t j = 0; j < h.linkEnds.size(); ++j) {
        const auto& e = h.linkEnds[j];
        if (e.aSwitch != sw_ && e.bSwitch != sw_) continue;
        const QString link = h.links[static_cast<qsizetype>(j)];
        const QString a = link.section(QStringLiteral("--"), 0, 0),
                      b = link.section(QStringLiteral("--"), 1);
        const bool mineA = e.aSwitch == sw_;
        const QString port = (mineA ? a : b).section(u'/', -1);
        const QString peer = mineA ? b : a;
        const auto hs = j < health.size() ? health[j] : kNoData;
        const auto u = j < util.size() ? util[j] : kNoData;
        if (n++ < 400)
            ports +=
                QStringLiteral(
                    "<tr><td><a href='link:%6'>%1</a></td><td>%2</td><td style='%3'>%4</td><td "
                    "align=right>%5</td></tr>")
                    .arg(port.toHtmlEscaped(), peer.toHtmlEscaped(),
                         hs == 2   ? QStringLiteral("color:#ff1744;font-weight:bold")
                         : hs == 1 ? QStringLiteral("color:#ffc400")
                                   : QString(),
                         linkHealthWord(hs),
                         u <= 100 && hs <= 1 ? QStringLiteral("%1%").arg(u) : QStringLiteral("–"))
                    .arg(static_cast<int>(j));
    }
    if (n > 400) ports += tr("<tr><td colspan=4>… %1 more</td></tr>").arg(n - 400);
    const QString portsHtml = n == 0 ? QString()
                                     : tr("<p><b>Ports and peers</b> (%1 backend links; a port "
                                          "opens its last hour)</p><table cellspacing=2>"
                                          "<tr><th align=left>port</th><th align=left>peer</th><th "
                                          "align=left>state</th><th>util</th></tr>%2</table>")
                                           .arg(n)
                                           .arg(ports);
    const int scroll = detail_->verticalScrollBar()->value();
    detail_->setHtml(html + linkHistoryHtml_ + configHtml_ + routesHtml_ + portsHtml);
    detail_->verticalScrollBar()->setValue(scroll);
    lastRender_.start();
}

}  // namespace loom::console
