#include "loom/console/fabric_view.hpp"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

namespace loom::console {

namespace {
QString enc(const QString& s) { return QString::fromLatin1(QUrl::toPercentEncoding(s)); }
QString err(const QString& e) { return QStringLiteral("<p style='color:#d33'>%1</p>").arg(e.toHtmlEscaped()); }
}  // namespace

FabricView::FabricView(ClusterState* state, ApiClient* api, QWidget* parent)
    : QWidget(parent), state_(state), api_(api)
{
    map_ = new FabricMapWidget(state, this);
    back_ = new QPushButton(tr("◀ All zones"), this);
    back_->setEnabled(false);
    overlay_ = new QCheckBox(tr("Failure impact (normalized bus bandwidth per rack)"), this);
    detail_ = new QTextBrowser(this);
    detail_->setMinimumWidth(320);
    detail_->setHtml(tr("<p>Click a zone to drill down, then a switch for its routes and config version.</p>"));

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
    connect(map_, &FabricMapWidget::zoneChanged, this, [this](int z) { back_->setEnabled(z >= 0); });
    connect(map_, &FabricMapWidget::switchClicked, this, &FabricView::showSwitch);
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
        if (overlay_->isChecked() && isVisible())
            refreshDegradation();
    });
    connect(state, &ClusterState::metricsUpdated, this, [this](unsigned mask) {
        if (sw_ >= 0 && (mask & topicBit(Topic::LinkHealth)))
            render();
    });
    connect(state, &ClusterState::layoutChanged, this, [this] {
        sw_ = -1;
        detail_->setHtml(tr("<p>Click a zone to drill down, then a switch for its routes.</p>"));
    });
}

void FabricView::refreshDegradation()
{
    if (!api_)
        return;
    QPointer<FabricView> self(this);
    api_->get(QStringLiteral("/api/v1/fabric/degradation"), [self](Result<QJsonDocument> r) {
        if (!self || !self->overlay_->isChecked())
            return;
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
            for (const auto& rack : self->state_->layout().racks)
                bw.insert(rack.name, 100.0);
        self->map_->setDegradation(bw);
    });
}

bool FabricView::focusLocation(const QString& location, const QString& rack)
{
    const HallLayout& h = state_->layout();
    int sw = h.switchIndex(location.section(u'/', 0, 0));
    if (sw < 0) {
        const int r = h.rackIndex(rack);
        if (r >= 0)
            sw = h.switchIndex(h.racks[static_cast<size_t>(r)].rtsw);
    }
    if (sw < 0)
        return false;
    const QString zone = h.switches[static_cast<size_t>(sw)].zone;
    if (!zone.isEmpty())
        map_->setZone(h.zoneIndex(zone));
    map_->selectSwitch(sw);
    showSwitch(sw);
    return true;
}

void FabricView::showSwitch(int sw)
{
    const HallLayout& h = state_->layout();
    if (sw < 0 || sw >= static_cast<int>(h.switches.size()))
        return;
    sw_ = sw;
    const int gen = ++generation_;
    routesHtml_ = tr("<p><i>loading routes…</i></p>");
    configHtml_ = tr("<p><i>loading config version…</i></p>");
    render();
    if (!api_)
        return;
    const QString name = h.switches[static_cast<size_t>(sw)].name;
    QPointer<FabricView> self(this);
    api_->get(QStringLiteral("/api/v1/fabric/routes/") + enc(name), [self, gen](Result<QJsonDocument> r) {
        if (!self || gen != self->generation_)
            return;
        if (!r) {
            self->routesHtml_ = QStringLiteral("<p><b>Routes</b></p>") + err(r.error());
        } else {
            // Show the table as the server wrote it (bounded): ECMP groups or an LFT.
            QString text = QString::fromUtf8(r->toJson(QJsonDocument::Indented));
            const auto lines = text.split(u'\n');
            if (lines.size() > 300)
                text = lines.mid(0, 300).join(u'\n') + tr("\n… %1 more lines").arg(lines.size() - 300);
            self->routesHtml_ = QStringLiteral("<p><b>Routes</b></p><pre style='font-size:small'>%1</pre>").arg(text.toHtmlEscaped());
        }
        self->render();
    });
    api_->get(QStringLiteral("/api/v1/fabric/config/") + enc(name), [self, gen](Result<QJsonDocument> r) {
        if (!self || gen != self->generation_)
            return;
        if (!r) {
            self->configHtml_ = QStringLiteral("<p><b>Config</b></p>") + err(r.error());
        } else {
            const auto o = r->object();
            QString version;
            for (const char* k : {"configVersion", "version", "resourceVersion"})
                if (o.contains(QLatin1String(k))) {
                    version = o.value(QLatin1String(k)).toVariant().toString();
                    break;
                }
            self->configHtml_ = QStringLiteral("<p><b>Config version:</b> %1</p>").arg(version.isEmpty() ? QStringLiteral("–") : version.toHtmlEscaped());
        }
        self->render();
    });
}

void FabricView::render()
{
    const HallLayout& h = state_->layout();
    if (sw_ < 0 || sw_ >= static_cast<int>(h.switches.size()))
        return;
    const auto& s = h.switches[static_cast<size_t>(sw_)];
    const auto& st = map_->switchStats(sw_);
    QString html = QStringLiteral("<h3>%1</h3><p>role %2 · zone %3<br>%4 backend links · mean utilization %5<br>%6 down/degraded · %7 drained/not in service</p>")
                       .arg(s.name.toHtmlEscaped(), s.role.toHtmlEscaped(), s.zone.isEmpty() ? QStringLiteral("–") : s.zone.toHtmlEscaped())
                       .arg(st.links)
                       .arg(st.meanUtil() < 0 ? QStringLiteral("–") : QString::number(st.meanUtil(), 'f', 1) + u'%')
                       .arg(st.down)
                       .arg(st.drained);
    detail_->setHtml(html + configHtml_ + routesHtml_);
}

}  // namespace loom::console
