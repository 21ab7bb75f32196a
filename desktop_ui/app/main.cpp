// loom-console entry point: resolves the connection (flags, LOOM_SERVER/LOOM_TOKEN,
// QSettings), opens the main window, or with --screenshot-dir renders every view to PNG and exits.
#include "loom/console/main_window.hpp"
#include "loom/console/session.hpp"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("loom"));
    QApplication::setApplicationName(QStringLiteral("loom-console"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

    QCommandLineParser cli;
    cli.setApplicationDescription(QStringLiteral("Loom desktop console"));
    cli.addHelpOption();
    cli.addVersionOption();
    const QCommandLineOption server(QStringLiteral("server"),
                                    QStringLiteral("loomd URL (default $LOOM_SERVER)."),
                                    QStringLiteral("URL"));
    const QCommandLineOption token(QStringLiteral("token"),
                                   QStringLiteral("API token (default $LOOM_TOKEN)."),
                                   QStringLiteral("TOKEN"));
    const QCommandLineOption shots(QStringLiteral("screenshot-dir"),
                                   QStringLiteral("Render each view to DIR/<view>.png and exit."),
                                   QStringLiteral("DIR"));
    const QCommandLineOption shotWait(QStringLiteral("screenshot-wait"),
                                      QStringLiteral("Seconds of live data before the screenshots (default 4)."),
                                      QStringLiteral("S"), QStringLiteral("4"));
    cli.addOptions({server, token, shots, shotWait});
    cli.process(app);

    auto settings = loom::console::ConnectionSettings::resolve(cli.value(server), cli.value(token));
    loom::console::MainWindow window;
    window.resize(1600, 1000);
    if (cli.isSet(shots)) {
        window.show();
        return window.runScreenshots(settings, cli.value(shots), cli.value(shotWait).toDouble())
                   ? 0
                   : 1;
    }
    window.show();
    window.start(settings);
    return app.exec();
}
