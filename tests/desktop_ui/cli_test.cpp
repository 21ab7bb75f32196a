// loom-console's command line without a display, and where tokens are kept.
#include "loom/console/session.hpp"
#include "loom/console/token_store.hpp"

#include "qt_app.hpp"

#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryFile>
#include <QProcessEnvironment>
#include <QSettings>
#include <QTemporaryDir>

#include <sys/stat.h>

#include <gtest/gtest.h>

using namespace loom::console;

namespace {

struct ConsoleRun {
    int exitCode = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    QString out, err;
};

// loom-console with no DISPLAY, no WAYLAND_DISPLAY and QT_QPA_PLATFORM unset.
ConsoleRun runConsole(const QStringList& args)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XAUTHORITY"})
        env.remove(QString::fromLatin1(v));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(LOOM_BIN_DIR "/loom-console"), args);
    ConsoleRun r;
    if (!p.waitForFinished(30000)) {
        p.kill();
        p.waitForFinished(5000);
        r.err = QStringLiteral("did not finish within 30 s");
        return r;
    }
    r.exitCode = p.exitCode();
    r.status = p.exitStatus();
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err += QString::fromUtf8(p.readAllStandardError());
    return r;
}

unsigned modeOf(const QString& path)
{
    struct stat st{};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return 0;
    return st.st_mode & 0777;
}

}  // namespace

TEST(ConsoleCli, HelpAndVersionWorkWithoutADisplay)
{
    ASSERT_TRUE(QFileInfo(QStringLiteral(LOOM_BIN_DIR "/loom-console")).isExecutable());
    const ConsoleRun help = runConsole({QStringLiteral("--help")});
    EXPECT_EQ(help.status, QProcess::NormalExit) << help.err.toStdString();  // not SIGABRT
    EXPECT_EQ(help.exitCode, 0) << help.err.toStdString();
    EXPECT_TRUE(help.out.contains("--server")) << help.out.toStdString();
    EXPECT_TRUE(help.out.contains("--token"));

    const ConsoleRun version = runConsole({QStringLiteral("--version")});
    EXPECT_EQ(version.status, QProcess::NormalExit);
    EXPECT_EQ(version.exitCode, 0) << version.err.toStdString();
    EXPECT_TRUE(version.out.contains("loom-console")) << version.out.toStdString();
}

TEST(ConsoleCli, UsageErrorsExit2NamingTheProblem)
{
    const ConsoleRun unknown = runConsole({QStringLiteral("--no-such-flag")});
    EXPECT_EQ(unknown.status, QProcess::NormalExit);
    EXPECT_EQ(unknown.exitCode, 2);
    EXPECT_TRUE(unknown.err.contains("no-such-flag")) << unknown.err.toStdString();

    const ConsoleRun badUrl = runConsole({QStringLiteral("--server"), QStringLiteral("ftp://x")});
    EXPECT_EQ(badUrl.exitCode, 2);
    EXPECT_TRUE(badUrl.err.contains("--server")) << badUrl.err.toStdString();

    // The token from a file (scripts/demo: never on the command line, which `ps` shows).
    const ConsoleRun both = runConsole({QStringLiteral("--token"), QStringLiteral("t"), QStringLiteral("--token-file"),
                                        QStringLiteral("/nonexistent")});
    EXPECT_EQ(both.exitCode, 2);
    EXPECT_TRUE(both.err.contains("give one of them")) << both.err.toStdString();
    const ConsoleRun missing = runConsole({QStringLiteral("--token-file"), QStringLiteral("/nonexistent/loom.token")});
    EXPECT_EQ(missing.exitCode, 2);
    EXPECT_TRUE(missing.err.contains("--token-file '/nonexistent/loom.token'")) << missing.err.toStdString();
    QTemporaryFile empty;
    ASSERT_TRUE(empty.open());
    const ConsoleRun blank = runConsole({QStringLiteral("--token-file"), empty.fileName()});
    EXPECT_EQ(blank.exitCode, 2);
    EXPECT_TRUE(blank.err.contains("holds no token")) << blank.err.toStdString();

    const ConsoleRun extra = runConsole({QStringLiteral("stray")});
    EXPECT_EQ(extra.exitCode, 2);
    EXPECT_TRUE(extra.err.contains("stray")) << extra.err.toStdString();

    // No display: a message that says what to do, exit 2 (not Qt's abort on the xcb plugin).
    const ConsoleRun headless = runConsole({QStringLiteral("--server"), QStringLiteral("http://127.0.0.1:9")});
    EXPECT_EQ(headless.status, QProcess::NormalExit) << headless.err.toStdString();
    EXPECT_EQ(headless.exitCode, 2);
    EXPECT_TRUE(headless.err.contains("no display")) << headless.err.toStdString();
    EXPECT_TRUE(headless.err.contains("xvfb-run")) << headless.err.toStdString();
}

TEST(ConsoleTokenStore, TheFileIsOwnerOnlyAlways)
{
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("loom/console-tokens.json"));
    TokenStore store(TokenStore::Backend::File, path);
    const QUrl a(QStringLiteral("http://127.0.0.1:8480")), b(QStringLiteral("https://loomd.example:8443/"));
    ASSERT_TRUE(store.save(a, QStringLiteral("loom_secret_a")));
    EXPECT_EQ(modeOf(path), 0600u);
    EXPECT_EQ(store.load(a), "loom_secret_a");
    EXPECT_TRUE(store.load(b).isEmpty());

    // Someone loosened it (or an old version wrote it 0644): the next save makes it 0600 again.
    ASSERT_EQ(::chmod(QFile::encodeName(path).constData(), 0644), 0);
    ASSERT_TRUE(store.save(b, QStringLiteral("loom_secret_b")));
    EXPECT_EQ(modeOf(path), 0600u);
    EXPECT_EQ(store.load(a), "loom_secret_a");
    EXPECT_EQ(store.load(b), "loom_secret_b");
    // No temporary copy is left behind.
    EXPECT_FALSE(QFile::exists(path + QStringLiteral(".tmp")));

    ASSERT_TRUE(store.forget(a));
    EXPECT_TRUE(store.load(a).isEmpty());
    EXPECT_EQ(store.load(b), "loom_secret_b");
    EXPECT_EQ(modeOf(path), 0600u);
}

TEST(ConsoleTokenStore, RememberNeverPutsTheTokenInQSettings)
{
    // qtApp() puts QSettings and XDG_CONFIG_HOME in a scratch directory and bypasses the
    // keychain (LOOM_CONSOLE_TOKEN_STORE=file): what is checked here is the fallback file.
    test::qtApp();
    qunsetenv("LOOM_SERVER");
    qunsetenv("LOOM_TOKEN");
    {
        QSettings old;
        old.setValue(QStringLiteral("connection/server"), QStringLiteral("http://127.0.0.1:9"));
        old.setValue(QStringLiteral("connection/token"), QStringLiteral("loom_plaintext_from_an_old_version"));
    }
    // Resolving moves the old plain-text token into the store and removes it from QSettings.
    const auto s = ConnectionSettings::resolve({}, {});
    EXPECT_EQ(s.token, "loom_plaintext_from_an_old_version");
    EXPECT_FALSE(QSettings().contains(QStringLiteral("connection/token")));
    ConnectionSettings next{QUrl(QStringLiteral("http://127.0.0.1:9")), QStringLiteral("loom_new")};
    ASSERT_TRUE(next.remember());
    EXPECT_FALSE(QSettings().contains(QStringLiteral("connection/token")));
    QSettings settings;
    settings.sync();
    QFile ini(settings.fileName());
    ASSERT_TRUE(ini.open(QIODevice::ReadOnly)) << settings.fileName().toStdString();
    EXPECT_FALSE(ini.readAll().contains("loom_")) << "a token in " << settings.fileName().toStdString();
    EXPECT_EQ(modeOf(TokenStore::defaultFilePath()), 0600u) << TokenStore::defaultFilePath().toStdString();
    EXPECT_EQ(ConnectionSettings::resolve({}, {}).token, "loom_new");
}
