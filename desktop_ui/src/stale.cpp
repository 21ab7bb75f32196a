#include "loom/console/stale.hpp"

#include <QCoreApplication>
#include <QFontMetrics>
#include <algorithm>

namespace loom::console {

bool dataIsStale(qint64 ageMs, int intervalMs, const QString& note) {
    return !note.isEmpty() || ageMs > std::max<qint64>(5000, 3LL * intervalMs);
}

QString staleText(qint64 ageMs, const QString& note) {
    auto tr = [](const char* s) { return QCoreApplication::translate("loom::console::Stale", s); };
    QString t = ageMs < 0 ? tr("no data")
                          : tr("data %1 old")
                                .arg(ageMs < 120000 ? tr("%1 s").arg(ageMs / 1000)
                                                    : tr("%1 min").arg(ageMs / 60000));
    if (!note.isEmpty()) t += QStringLiteral(" — ") + note;
    return t;
}

QColor staleVeil() { return QColor(60, 60, 66, 170); }

void paintStaleBadge(QPainter& p, const QRect& area, const QString& text, QFont f) {
    f.setPixelSize(22);
    f.setBold(true);
    p.save();
    p.setFont(f);
    const QFontMetrics fm(f);
    const QSizeF box(fm.horizontalAdvance(text) + 32, fm.height() + 16);
    const QRectF at(
        QPointF(area.center().x() - box.width() / 2, area.center().y() - box.height() / 2), box);
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(20, 20, 24, 220));
    p.drawRoundedRect(at, 6, 6);
    p.setPen(QColor(255, 196, 0));
    p.drawText(at, Qt::AlignCenter, text);
    p.restore();
}

}  // namespace loom::console
