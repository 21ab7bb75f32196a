#include "loom/console/xid.hpp"

#include <QHash>
#include <QJsonArray>
#include <QRegularExpression>
#include <algorithm>

#include "loom/telemetry/xid_catalog.hpp"

namespace loom::console {

namespace {

// loomd's catalogue (GET /api/v1/catalog/xid) once it has answered; until then the table this
// console was built with, which is loomd's of the same version (as the palette's tables hold
// loomd's colours until GET /api/v1/legends answers).
struct XidCatalogue {
    bool fromLoomd = false;
    QHash<int, XidInfo> byCode;
};

XidCatalogue& xidCatalogue() {
    static XidCatalogue c = [] {
        XidCatalogue built;
        for (const auto& x : telemetry::kXidCatalog)
            built.byCode.insert(
                x.code,
                XidInfo{x.code, QString::fromUtf8(x.meaning.data(), qsizetype(x.meaning.size())),
                        QString::fromUtf8(x.action.data(), qsizetype(x.action.size())),
                        x.hardware});
        return built;
    }();
    return c;
}

}  // namespace

bool applyXidCatalog(const QJsonObject& answer) {
    const QJsonValue items = answer.value(u"items");
    if (!items.isArray()) return false;
    QHash<int, XidInfo> next;
    for (const auto& v : items.toArray()) {
        const QJsonObject o = v.toObject();
        const int code = o.value(u"code").toInt(-1);
        if (code < 0) continue;
        next.insert(code, XidInfo{code, o.value(u"meaning").toString(),
                                  o.value(u"action").toString(), o.value(u"hardware").toBool()});
    }
    auto& c = xidCatalogue();
    const bool changed = !c.fromLoomd || next.size() != c.byCode.size() ||
                         std::any_of(next.cbegin(), next.cend(), [&](const XidInfo& x) {
                             const auto it = c.byCode.constFind(x.code);
                             return it == c.byCode.cend() || it->meaning != x.meaning ||
                                    it->action != x.action || it->hardware != x.hardware;
                         });
    c.byCode = std::move(next);
    c.fromLoomd = true;
    return changed;
}

bool xidCatalogFromLoomd() { return xidCatalogue().fromLoomd; }

std::optional<XidInfo> xidInfo(int code) {
    const auto& c = xidCatalogue();
    const auto it = c.byCode.constFind(code);
    if (it == c.byCode.cend()) return std::nullopt;
    return *it;
}

int xidOfText(const QString& message) {
    static const QRegularExpression re(QStringLiteral("\\bXID[ _:=]*(\\d{1,4})\\b"),
                                       QRegularExpression::CaseInsensitiveOption);
    const auto m = re.match(message);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

QString xidSummary(int code) {
    if (const auto x = xidInfo(code))
        return QStringLiteral("XID %1: %2 — %3").arg(code).arg(x->meaning, x->action);
    return QStringLiteral("XID %1: not in loomd's catalogue; see NVIDIA's XID list").arg(code);
}

}  // namespace loom::console
