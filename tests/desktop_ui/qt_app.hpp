// One QApplication for the whole test binary, offscreen (tests run headless), with QSettings
// and the token file in a scratch config directory: what one run persists (event filters, the
// utilization window, tokens) never leaks into the next run or into the user's own settings.
#pragma once

#include <QApplication>
#include <QSettings>
#include <QTemporaryDir>

namespace loom::console::test {

inline QApplication* qtApp()
{
    static int argc = 1;
    static char arg0[] = "loom_console_tests";
    static char* argv[] = {arg0, nullptr};
    static QApplication* app = [] {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        static QTemporaryDir config;
        qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
        qputenv("LOOM_CONSOLE_TOKEN_STORE", "file");
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, config.path());
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, config.path());
        QApplication::setOrganizationName(QStringLiteral("loom-test"));
        return new QApplication(argc, argv);
    }();
    return app;
}

}  // namespace loom::console::test
