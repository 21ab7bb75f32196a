// Stale data on the maps: when the stream stops (loomd down, reconnecting, a stalled link),
// the hall and fabric maps grey out and say how old their data is on the map itself, not only
// in the status bar. Shared by both map widgets.
#pragma once

#include <QColor>
#include <QFont>
#include <QPainter>
#include <QRect>
#include <QString>

namespace loom::console {

// Stale: a note (disconnected, loomd unreachable) or no frame for max(5 s, 3 intervals).
bool dataIsStale(qint64 ageMs, int intervalMs, const QString& note);
// "data 43 s old — loomd unreachable, reconnecting in 4 s" ("no data" before the first frame).
QString staleText(qint64 ageMs, const QString& note);
// The grey veil over the map's values (failure markers are drawn above it).
QColor staleVeil();
// The age in a box in the middle of `area`, amber on dark.
void paintStaleBadge(QPainter& p, const QRect& area, const QString& text, QFont font);

}  // namespace loom::console
