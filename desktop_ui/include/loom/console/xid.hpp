// What an NVIDIA XID code means and what a technician does about it, as Qt strings: loomd's
// catalogue (GET /api/v1/catalog/xid, the one the web dashboard explains XIDs with), applied by
// the Session on every connect; until it answers, the table this console was built with
// (loom/telemetry/xid_catalog.hpp, loomd's of the same version). Codes not listed get a pointer
// to NVIDIA's catalogue.
#pragma once

#include <QJsonObject>
#include <QString>
#include <optional>

namespace loom::console {

struct XidInfo {
    int code = 0;
    QString meaning;        // what happened
    QString action;         // what to do about it
    bool hardware = false;  // likely a hardware fault (drain / RMA) rather than the job's own
};

// Applies loomd's answer ({"items": [{"code", "meaning", "action", "hardware"}]}); true when
// it changed what the console says. An answer without `items` is ignored (false).
bool applyXidCatalog(const QJsonObject& answer);
bool xidCatalogFromLoomd();
std::optional<XidInfo> xidInfo(int code);
// The XID code of an event: its labels' "xid", else "XID <n>" in its message; -1 if none.
int xidOfText(const QString& message);
// One line for tables and tooltips: "XID 79: GPU has fallen off the bus — drain the host ...".
QString xidSummary(int code);

}  // namespace loom::console
