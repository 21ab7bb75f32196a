// TokenStore: where loom-console keeps API tokens between runs, one per server URL.
//
// The platform keychain through QtKeychain (Secret Service / KWallet on Linux) when the build
// has it and a session bus is there to reach it; otherwise a file only its owner can read
// ($XDG_CONFIG_HOME/loom/console-tokens.json, mode 0600, made 0600 before the secret is
// written and re-made 0600 if someone loosened it). Never QSettings, never a world-readable
// file. A keychain that does not answer within a few seconds counts as absent.
#pragma once

#include "loom/console/result.hpp"

#include <QString>
#include <QUrl>

namespace loom::console {

class TokenStore {
public:
    enum class Backend { Auto, Keychain, File };

    explicit TokenStore(Backend backend = Backend::Auto, QString filePath = {});

    Result<void> save(const QUrl& server, const QString& token);
    QString load(const QUrl& server);
    Result<void> forget(const QUrl& server);

    QString filePath() const { return filePath_; }
    // Where the last save went: "keychain" or the file path.
    QString lastLocation() const { return lastLocation_; }
    static QString defaultFilePath();
    static bool keychainBuiltIn();

private:
    bool useKeychain() const;
    Result<void> saveFile(const QString& key, const QString& token);
    QString loadFile(const QString& key) const;

    Backend backend_;
    QString filePath_;
    QString lastLocation_;
};

}  // namespace loom::console
