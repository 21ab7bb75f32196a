#include "loom/console/sparkline.hpp"

#include <QDateTime>
#include <QJsonObject>
#include <QObject>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/console/palette.hpp"

namespace loom::console {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Index of each item in a series of `points` minutes ending at the newest item; -1 outside.
std::vector<int> placeItems(const QJsonArray& items, int points) {
    std::vector<qint64> minutes;
    minutes.reserve(static_cast<size_t>(items.size()));
    qint64 newest = std::numeric_limits<qint64>::min();
    for (const auto& v : items) {
        const auto t =
            QDateTime::fromString(v.toObject().value(u"minute").toString(), Qt::ISODateWithMs);
        const qint64 ms = t.isValid() ? t.toMSecsSinceEpoch() : std::numeric_limits<qint64>::min();
        minutes.push_back(ms);
        newest = std::max(newest, ms);
    }
    std::vector<int> at;
    at.reserve(minutes.size());
    for (const qint64 ms : minutes) {
        if (ms == std::numeric_limits<qint64>::min()) {
            at.push_back(-1);
            continue;
        }
        const qint64 back = (newest - ms + 30000) / 60000;
        at.push_back(back < points ? points - 1 - static_cast<int>(back) : -1);
    }
    return at;
}
}  // namespace

std::vector<double> seriesOf(const QJsonArray& items, const char* field, int points) {
    std::vector<double> out(static_cast<size_t>(points), kNaN);
    const auto at = placeItems(items, points);
    for (qsizetype i = 0; i < items.size(); ++i) {
        const QJsonValue v = items[i].toObject().value(QLatin1String(field));
        if (at[static_cast<size_t>(i)] >= 0 && v.isDouble())
            out[static_cast<size_t>(at[static_cast<size_t>(i)])] = v.toDouble();
    }
    return out;
}

std::vector<bool> alarmsOf(const QJsonArray& items, const char* field, int points) {
    std::vector<bool> out(static_cast<size_t>(points), false);
    const auto at = placeItems(items, points);
    for (qsizetype i = 0; i < items.size(); ++i)
        if (at[static_cast<size_t>(i)] >= 0 &&
            items[i].toObject().value(QLatin1String(field)).toDouble() > 0)
            out[static_cast<size_t>(at[static_cast<size_t>(i)])] = true;
    return out;
}

QImage sparkline(const std::vector<double>& values, double lo, double hi, QRgb colour,
                 const std::vector<bool>& alarms, QSize size) {
    QImage img(size, QImage::Format_ARGB32_Premultiplied);
    img.fill(Qt::transparent);
    const int n = static_cast<int>(std::max(values.size(), alarms.size()));
    if (n == 0 || !(hi > lo)) return img;
    QPainter p(&img);
    const double w = size.width() - 2, h = size.height() - 3;
    auto xOf = [&](int i) { return 1 + (n == 1 ? w : w * i / (n - 1)); };
    auto yOf = [&](double v) { return 1 + h * (1 - std::clamp((v - lo) / (hi - lo), 0.0, 1.0)); };
    const double barW = std::max(2.0, w / std::max(1, n - 1));
    for (int i = 0; i < static_cast<int>(alarms.size()); ++i)
        if (alarms[static_cast<size_t>(i)])
            p.fillRect(QRectF(xOf(i) - barW / 2, 0, barW, size.height()), QColor(failedColor()));
    p.setPen(QColor(128, 128, 128, 110));
    p.drawLine(QPointF(1, 1 + h), QPointF(1 + w, 1 + h));
    p.setRenderHint(QPainter::Antialiasing, true);
    QPen pen{QColor(colour)};
    pen.setWidthF(1.6);
    p.setPen(pen);
    QPainterPath path;
    bool open = false;
    int last = -1;
    for (int i = 0; i < static_cast<int>(values.size()); ++i) {
        const double v = values[static_cast<size_t>(i)];
        if (std::isnan(v)) {
            open = false;
            continue;
        }
        const QPointF pt(xOf(i), yOf(v));
        if (open)
            path.lineTo(pt);
        else
            path.moveTo(pt);
        open = true;
        last = i;
    }
    p.drawPath(path);
    // A lone point (or the newest value) as a dot, so a one-minute series is visible.
    if (last >= 0) {
        p.setBrush(QColor(colour));
        p.drawEllipse(QPointF(xOf(last), yOf(values[static_cast<size_t>(last)])), 1.8, 1.8);
    }
    return img;
}

QString sparkSummary(const std::vector<double>& values, const QString& unit, int decimals) {
    double mx = kNaN, mn = kNaN, now = kNaN;
    for (const double v : values) {
        if (std::isnan(v)) continue;
        mx = std::isnan(mx) ? v : std::max(mx, v);
        mn = std::isnan(mn) ? v : std::min(mn, v);
        now = v;
    }
    if (std::isnan(now)) return QObject::tr("no data in the last hour");
    auto f = [&](double v) { return QString::number(v, 'f', decimals) + unit; };
    return QObject::tr("now %1 · max %2 · min %3").arg(f(now), f(mx), f(mn));
}

}  // namespace loom::console
