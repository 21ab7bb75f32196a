#include "loom/console/token_store.hpp"

#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTimer>

#ifdef LOOM_HAVE_QTKEYCHAIN
#include <qt6keychain/keychain.h>
#endif

namespace loom::console {

namespace {
constexpr auto kService = "loom-console";
constexpr int kKeychainTimeoutMs = 4000;
const QFileDevice::Permissions kOwnerOnly = QFileDevice::ReadOwner | QFileDevice::WriteOwner;

QString keyFor(const QUrl& server) { return server.adjusted(QUrl::StripTrailingSlash).toString(); }

#ifdef LOOM_HAVE_QTKEYCHAIN
// Runs a keychain job to completion (or the time limit); true when it succeeded.
bool runJob(QKeychain::Job& job, QString* error)
{
    QEventLoop loop;
    bool finished = false;
    QObject::connect(&job, &QKeychain::Job::finished, &loop, [&] {
        finished = true;
        loop.quit();
    });
    QTimer::singleShot(kKeychainTimeoutMs, &loop, &QEventLoop::quit);
    job.setAutoDelete(false);
    job.start();
    if (!finished)
        loop.exec();
    if (!finished) {
        *error = QStringLiteral("the keychain did not answer within %1 s").arg(kKeychainTimeoutMs / 1000);
        return false;
    }
    if (job.error() != QKeychain::NoError) {
        *error = job.errorString();
        return false;
    }
    return true;
}
#endif
}  // namespace

TokenStore::TokenStore(Backend backend, QString filePath)
    : backend_(backend), filePath_(filePath.isEmpty() ? defaultFilePath() : std::move(filePath))
{
}

QString TokenStore::defaultFilePath()
{
    return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
           QStringLiteral("/loom/console-tokens.json");
}

bool TokenStore::keychainBuiltIn()
{
#ifdef LOOM_HAVE_QTKEYCHAIN
    return true;
#else
    return false;
#endif
}

bool TokenStore::useKeychain() const
{
    if (!keychainBuiltIn() || backend_ == Backend::File)
        return false;
    if (backend_ == Backend::Keychain)
        return true;
    // Secret Service and KWallet are reached over the session bus: without one there is no
    // keychain to ask (headless, CI, ssh without a desktop session).
    return !qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS") &&
           qEnvironmentVariable("LOOM_CONSOLE_TOKEN_STORE") != u"file";
}

Result<void> TokenStore::save(const QUrl& server, const QString& token)
{
    const QString key = keyFor(server);
#ifdef LOOM_HAVE_QTKEYCHAIN
    if (useKeychain()) {
        QKeychain::WritePasswordJob job(QString::fromLatin1(kService));
        job.setKey(key);
        job.setTextData(token);
        QString error;
        if (runJob(job, &error)) {
            lastLocation_ = QStringLiteral("keychain");
            // A copy in the file would outlive the keychain entry: drop it.
            saveFile(key, {});
            return {};
        }
        if (backend_ == Backend::Keychain)
            return fail(QStringLiteral("keychain: %1").arg(error));
        qWarning("loom-console: keychain unavailable (%s); keeping the token in %s (mode 0600)",
                 qPrintable(error), qPrintable(filePath_));
    }
#endif
    auto r = saveFile(key, token);
    if (r)
        lastLocation_ = filePath_;
    return r;
}

QString TokenStore::load(const QUrl& server)
{
    const QString key = keyFor(server);
#ifdef LOOM_HAVE_QTKEYCHAIN
    if (useKeychain()) {
        QKeychain::ReadPasswordJob job(QString::fromLatin1(kService));
        job.setKey(key);
        QString error;
        if (runJob(job, &error) && !job.textData().isEmpty())
            return job.textData();
    }
#endif
    return loadFile(key);
}

Result<void> TokenStore::forget(const QUrl& server)
{
    const QString key = keyFor(server);
#ifdef LOOM_HAVE_QTKEYCHAIN
    if (useKeychain()) {
        QKeychain::DeletePasswordJob job(QString::fromLatin1(kService));
        job.setKey(key);
        QString error;
        runJob(job, &error);  // absent is fine
    }
#endif
    return saveFile(key, {});
}

QString TokenStore::loadFile(const QString& key) const
{
    QFile f(filePath_);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(key).toString();
}

Result<void> TokenStore::saveFile(const QString& key, const QString& token)
{
    QJsonObject all;
    {
        QFile f(filePath_);
        if (f.open(QIODevice::ReadOnly))
            all = QJsonDocument::fromJson(f.readAll()).object();
    }
    if (token.isEmpty()) {
        if (!all.contains(key))
            return {};
        all.remove(key);
    } else {
        all.insert(key, token);
    }
    const QFileInfo info(filePath_);
    if (!QDir().mkpath(info.absolutePath()))
        return fail(QStringLiteral("%1: cannot create the directory").arg(info.absolutePath()));
    // Written to a new file created 0600, then renamed over the old one: the secret is never
    // in a file anyone else can read, not even for a moment, whatever the umask.
    const QString tmp = filePath_ + QStringLiteral(".tmp");
    QFile::remove(tmp);
    QFile f(tmp);
    if (!f.open(QIODevice::WriteOnly | QIODevice::NewOnly, kOwnerOnly))
        return fail(QStringLiteral("%1: %2").arg(tmp, f.errorString()));
    if (!f.setPermissions(kOwnerOnly)) {
        f.remove();
        return fail(QStringLiteral("%1: cannot make it owner-only (0600)").arg(tmp));
    }
    const QByteArray body = QJsonDocument(all).toJson(QJsonDocument::Indented);
    if (f.write(body) != body.size() || !f.flush()) {
        const QString why = f.errorString();
        f.remove();
        return fail(QStringLiteral("%1: %2").arg(tmp, why));
    }
    f.close();
    QFile::remove(filePath_);
    if (!QFile::rename(tmp, filePath_))
        return fail(QStringLiteral("%1: cannot replace it").arg(filePath_));
    return {};
}

}  // namespace loom::console
