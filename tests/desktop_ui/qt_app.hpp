// One QApplication for the whole test binary, offscreen (tests run headless).
#pragma once

#include <QApplication>

namespace loom::console::test {

inline QApplication* qtApp()
{
    static int argc = 1;
    static char arg0[] = "loom_console_tests";
    static char* argv[] = {arg0, nullptr};
    static QApplication* app = [] {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        QApplication::setOrganizationName(QStringLiteral("loom-test"));
        return new QApplication(argc, argv);
    }();
    return app;
}

}  // namespace loom::console::test
