// ApiClient: loomd's HTTP API over QNetworkAccessManager. Callbacks get a Result whose error
// is the server's own words ("409 conflict: rack z1-r001 is in_service; allowed: drain, fail"),
// because operators act on what the server said, not on a paraphrase.
#pragma once

#include "loom/console/result.hpp"

#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QObject>
#include <QUrl>

#include <functional>

namespace loom::console {

class ApiClient : public QObject {
    Q_OBJECT
public:
    using Callback = std::function<void(Result<QJsonDocument>)>;

    explicit ApiClient(QObject* parent = nullptr);

    void setServer(const QUrl& base, const QString& token);
    QUrl server() const { return base_; }
    QString token() const { return token_; }

    // path is relative to the server root, e.g. "/api/v1/hall" (query allowed).
    void get(const QString& path, Callback cb);
    void post(const QString& path, const QJsonObject& body, Callback cb);

    // Used for the raw bytes of /hall (parsed off the JSON DOM path by parseHall).
    void getRaw(const QString& path, std::function<void(Result<QByteArray>)> cb);

    static QString formatError(int httpStatus, const QByteArray& body, const QString& transport);

private:
    QNetworkRequest request(const QString& path) const;
    void finish(class QNetworkReply* reply, std::function<void(Result<QByteArray>)> cb);

    QNetworkAccessManager nam_;
    QUrl base_;
    QString token_;
};

}  // namespace loom::console
