#include "loom/console/xid.hpp"

#include <QRegularExpression>

#include "loom/telemetry/xid_catalog.hpp"

namespace loom::console {

std::optional<XidInfo> xidInfo(int code)
{
    const auto* x = telemetry::findXid(code);
    if (!x) return std::nullopt;
    return XidInfo{x->code, QString::fromUtf8(x->meaning.data(), qsizetype(x->meaning.size())),
                   QString::fromUtf8(x->action.data(), qsizetype(x->action.size())), x->hardware};
}

int xidOfText(const QString& message)
{
    static const QRegularExpression re(QStringLiteral("\\bXID[ _:=]*(\\d{1,4})\\b"),
                                       QRegularExpression::CaseInsensitiveOption);
    const auto m = re.match(message);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

QString xidSummary(int code)
{
    if (const auto x = xidInfo(code))
        return QStringLiteral("XID %1: %2 — %3").arg(code).arg(x->meaning, x->action);
    return QStringLiteral("XID %1: not in the console's list; see NVIDIA's XID catalogue").arg(code);
}

}  // namespace loom::console
