#include "loom/console/api_client.hpp"

#include <QJsonParseError>
#include <QNetworkReply>
#include <QNetworkRequest>

namespace loom::console {

ApiClient::ApiClient(QObject* parent) : QObject(parent)
{
    nam_.setTransferTimeout(30000);
}

void ApiClient::setServer(const QUrl& base, const QString& token)
{
    base_ = base;
    token_ = token;
}

QNetworkRequest ApiClient::request(const QString& path) const
{
    QUrl url = base_;
    const auto q = path.indexOf(u'?');
    url.setPath(q < 0 ? path : path.left(q));
    url.setQuery(q < 0 ? QString() : path.mid(q + 1));
    QNetworkRequest req(url);
    req.setRawHeader("Accept", "application/json");
    if (!token_.isEmpty())
        req.setRawHeader("Authorization", "Bearer " + token_.toUtf8());
    return req;
}

QString ApiClient::formatError(int httpStatus, const QByteArray& body, const QString& transport)
{
    QJsonParseError perr;
    const auto doc = QJsonDocument::fromJson(body, &perr);
    if (perr.error == QJsonParseError::NoError && doc.isObject() &&
        doc.object().value(u"error").isObject()) {
        const auto e = doc.object().value(u"error").toObject();
        QString s = QStringLiteral("%1 %2: %3")
                        .arg(httpStatus)
                        .arg(e.value(u"code").toString(), e.value(u"message").toString());
        if (e.contains(u"path"))
            s += QStringLiteral(" (at %1").arg(e.value(u"path").toString()) +
                 (e.contains(u"line") ? QStringLiteral(", line %1)").arg(e.value(u"line").toInt())
                                      : QStringLiteral(")"));
        return s;
    }
    if (httpStatus > 0)
        return QStringLiteral("HTTP %1: %2").arg(httpStatus).arg(
            body.isEmpty() ? transport : QString::fromUtf8(body.left(500)));
    return transport;
}

void ApiClient::finish(QNetworkReply* reply, std::function<void(Result<QByteArray>)> cb)
{
    // The reply is parented to the manager; `this` as context drops the callback if the
    // client is destroyed first, and the reply deletes itself either way.
    connect(reply, &QNetworkReply::finished, this, [reply, cb = std::move(cb)] {
        reply->deleteLater();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QByteArray body = reply->readAll();
        if (reply->error() != QNetworkReply::NoError || status >= 400) {
            cb(fail(formatError(status, body,
                                reply->url().toString(QUrl::RemoveQuery) + QStringLiteral(": ") +
                                    reply->errorString())));
            return;
        }
        cb(body);
    });
}

void ApiClient::getRaw(const QString& path, std::function<void(Result<QByteArray>)> cb)
{
    if (!base_.isValid() || base_.host().isEmpty()) {
        // Still asynchronous, like a real reply, so callers see one behaviour.
        QMetaObject::invokeMethod(this, [cb = std::move(cb), path] {
            cb(fail(QStringLiteral("%1: not connected to a server (Connection > Connect…)").arg(path)));
        }, Qt::QueuedConnection);
        return;
    }
    finish(nam_.get(request(path)), std::move(cb));
}

namespace {
Result<QJsonDocument> toJson(const Result<QByteArray>& raw)
{
    if (!raw)
        return fail(raw.error());
    if (raw->isEmpty())
        return QJsonDocument(QJsonObject{});
    QJsonParseError perr;
    auto doc = QJsonDocument::fromJson(*raw, &perr);
    if (perr.error != QJsonParseError::NoError)
        return fail(QStringLiteral("response is not JSON (offset %1: %2)")
                        .arg(perr.offset)
                        .arg(perr.errorString()));
    return doc;
}
}  // namespace

void ApiClient::get(const QString& path, Callback cb)
{
    getRaw(path, [cb = std::move(cb)](Result<QByteArray> raw) { cb(toJson(raw)); });
}

void ApiClient::post(const QString& path, const QJsonObject& body, Callback cb)
{
    if (!base_.isValid() || base_.host().isEmpty()) {
        QMetaObject::invokeMethod(this, [cb = std::move(cb), path] {
            cb(fail(QStringLiteral("%1: not connected to a server (Connection > Connect…)").arg(path)));
        }, Qt::QueuedConnection);
        return;
    }
    auto req = request(path);
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    finish(nam_.post(req, QJsonDocument(body).toJson(QJsonDocument::Compact)),
           [cb = std::move(cb)](Result<QByteArray> raw) { cb(toJson(raw)); });
}

}  // namespace loom::console
