// loom-console entry point: resolves the connection (flags, LOOM_SERVER/LOOM_TOKEN, the last
// server and its stored token), opens the main window, or with --screenshot-dir renders every
// view to PNG and exits.
//
// The command line is parsed under a QCoreApplication before any GUI exists, so --help,
// --version and usage errors work without a display (no platform plugin is loaded for them).
#include "loom/console/main_window.hpp"
#include "loom/console/result.hpp"
#include "loom/console/session.hpp"
#include "loom/version.hpp"

#include <QApplication>
#include <QCommandLineParser>
#include <QFile>

#include <cstdio>
#include <cstring>
#include <memory>

namespace {

struct Options {
    QCommandLineOption server{QStringLiteral("server"), QStringLiteral("loomd URL (default $LOOM_SERVER, else the last one used)."),
                              QStringLiteral("URL")};
    QCommandLineOption token{QStringLiteral("token"),
                             QStringLiteral("API token (default $LOOM_TOKEN, else the one stored for the server)."),
                             QStringLiteral("TOKEN")};
    // A file keeps the token out of argv (every user sees argv in `ps`): scripts/demo uses it.
    QCommandLineOption tokenFile{QStringLiteral("token-file"),
                                 QStringLiteral("Read the API token from FILE (default $LOOM_TOKEN_FILE); "
                                                "keeps it out of the process list."),
                                 QStringLiteral("FILE")};
    QCommandLineOption shots{QStringLiteral("screenshot-dir"), QStringLiteral("Render each view to DIR/<view>.png and exit."),
                             QStringLiteral("DIR")};
    QCommandLineOption shotWait{QStringLiteral("screenshot-wait"),
                                QStringLiteral("Seconds of live data before the screenshots (default 4)."),
                                QStringLiteral("S"), QStringLiteral("4")};
};

// The first line of a token file, trimmed; an error names what is wrong with it.
loom::console::Result<QString> readTokenFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return loom::console::fail(f.errorString());
    const QString token = QString::fromUtf8(f.read(4096)).section(u'\n', 0, 0).trimmed();
    if (token.isEmpty())
        return loom::console::fail(QStringLiteral("the file holds no token"));
    return token;
}

void describe(QCoreApplication& app)
{
    app.setOrganizationName(QStringLiteral("loom"));
    app.setApplicationName(QStringLiteral("loom-console"));
    app.setApplicationVersion(QStringLiteral(LOOM_VERSION));
}

}  // namespace

int main(int argc, char** argv)
{
    Options opt;
    QCommandLineParser cli;
    cli.setApplicationDescription(
        QStringLiteral("Loom desktop console: hall map, fabric map, provisioning board, events and jobs of a live loomd.\n"
                       "Tokens are kept in the platform keychain, or in ~/.config/loom/console-tokens.json (mode 0600)."));
    cli.addHelpOption();
    cli.addVersionOption();
    cli.addOptions({opt.server, opt.token, opt.tokenFile, opt.shots, opt.shotWait});
    QString fileToken;  // from --token-file / $LOOM_TOKEN_FILE
    {
        // No GUI yet: help, version and usage errors need no display.
        auto core = std::make_unique<QCoreApplication>(argc, argv);
        describe(*core);
        if (!cli.parse(core->arguments())) {
            std::fprintf(stderr, "loom-console: %s\nTry 'loom-console --help'.\n", qPrintable(cli.errorText()));
            return 2;
        }
        if (cli.isSet(QStringLiteral("help")) || cli.isSet(QStringLiteral("help-all")))
            cli.showHelp(0);  // exits
        if (cli.isSet(QStringLiteral("version")))
            cli.showVersion();  // exits 0
        if (!cli.positionalArguments().isEmpty()) {
            std::fprintf(stderr, "loom-console: unexpected argument '%s'\nTry 'loom-console --help'.\n",
                         qPrintable(cli.positionalArguments().first()));
            return 2;
        }
        if (cli.isSet(opt.server)) {
            const QUrl u = QUrl::fromUserInput(cli.value(opt.server));
            if (!u.isValid() || u.host().isEmpty() || (u.scheme() != u"http" && u.scheme() != u"https")) {
                std::fprintf(stderr, "loom-console: --server '%s': expected http://HOST:PORT or https://HOST:PORT\n",
                             qPrintable(cli.value(opt.server)));
                return 2;
            }
        }
        if (cli.isSet(opt.token) && cli.isSet(opt.tokenFile)) {
            std::fprintf(stderr, "loom-console: --token and --token-file: give one of them\n");
            return 2;
        }
        // Read now, before any display is needed: a wrong path is a usage error (exit 2).
        if (!cli.isSet(opt.token)) {
            const QString path = cli.isSet(opt.tokenFile) ? cli.value(opt.tokenFile) : qEnvironmentVariable("LOOM_TOKEN_FILE");
            if (!path.isEmpty()) {
                auto t = readTokenFile(path);
                if (!t) {
                    std::fprintf(stderr, "loom-console: --token-file '%s': %s\n", qPrintable(path), qPrintable(t.error()));
                    return 2;
                }
                fileToken = *t;
            }
        }
        bool ok = false;
        cli.value(opt.shotWait).toDouble(&ok);
        if (!ok) {
            std::fprintf(stderr, "loom-console: --screenshot-wait '%s': expected seconds\n",
                         qPrintable(cli.value(opt.shotWait)));
            return 2;
        }
        // Without a display Qt aborts with a plugin error that says nothing about what to do
        // (and dumps core): say it, exit 2. A platform chosen by flag or environment is left to Qt.
        bool platformChosen = qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
        for (int i = 1; i < argc; ++i)
            platformChosen |= std::strcmp(argv[i], "-platform") == 0 || std::strcmp(argv[i], "--platform") == 0;
        if (!platformChosen && !qEnvironmentVariableIsSet("DISPLAY") && !qEnvironmentVariableIsSet("WAYLAND_DISPLAY")) {
            std::fprintf(stderr,
                         "loom-console: no display (DISPLAY and WAYLAND_DISPLAY are unset).\n"
                         "Run it in a desktop session, over `ssh -X`, or under Xvfb (`xvfb-run loom-console ...`);\n"
                         "`loom-console --screenshot-dir DIR` with QT_QPA_PLATFORM=offscreen renders the views to PNG.\n"
                         "From a shell, `loomctl` and the web dashboard (the URL loomd serve prints) show the same cluster.\n");
            return 2;
        }
    }

    QApplication app(argc, argv);
    describe(app);
    const QString token = cli.isSet(opt.token) ? cli.value(opt.token) : fileToken;
    auto settings = loom::console::ConnectionSettings::resolve(cli.value(opt.server), token);
    loom::console::MainWindow window;
    window.resize(1600, 1000);
    if (cli.isSet(opt.shots)) {
        window.show();
        return window.runScreenshots(settings, cli.value(opt.shots), cli.value(opt.shotWait).toDouble()) ? 0 : 1;
    }
    window.show();
    window.start(settings);
    return app.exec();
}
