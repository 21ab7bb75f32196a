// Small helpers the console tests share: a colour as painted (opaque), a widget rendered to an
// image, a JSON object from text, and an event loop run until a condition holds.
#pragma once

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QWidget>
#include <functional>

namespace loom::console::test {

// `c` as QImage::pixel() reads it back from a Format_RGB32 image.
inline QRgb rgb(QRgb c) { return c | 0xff000000u; }

// The widget as it paints at its current size.
inline QImage paint(QWidget& w) {
    QImage img(w.size(), QImage::Format_RGB32);
    w.render(&img);
    return img;
}

inline QJsonObject obj(const char* json) {
    return QJsonDocument::fromJson(QByteArray(json)).object();
}
inline QJsonObject obj(const QString& json) {
    return QJsonDocument::fromJson(json.toUtf8()).object();
}

// Runs the event loop until `done` or `timeoutMs`; returns whether `done` said true.
// `done` is called once per turn and its first true is the answer: a condition that takes
// time or moves with the event loop (a "quiet for 300 ms" check) is not asked twice, where the
// second answer could differ from the one that ended the wait.
inline bool waitUntil(const std::function<bool()>& done, int timeoutMs) {
    QElapsedTimer t;
    t.start();
    for (;;) {
        if (done()) return true;
        if (t.elapsed() >= timeoutMs) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    }
}

}  // namespace loom::console::test
