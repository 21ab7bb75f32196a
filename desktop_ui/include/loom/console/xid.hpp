// What an NVIDIA XID code means and what a technician does about it, as Qt strings: the table
// is loom/telemetry/xid_catalog.hpp (shared with loomd's Alertmanager annotations); codes not
// listed get a pointer to NVIDIA's catalogue.
#pragma once

#include <QString>

#include <optional>

namespace loom::console {

struct XidInfo {
    int code = 0;
    QString meaning;  // what happened
    QString action;   // what to do about it
    bool hardware = false;  // likely a hardware fault (drain / RMA) rather than the job's own
};

std::optional<XidInfo> xidInfo(int code);
// The XID code of an event: its labels' "xid", else "XID <n>" in its message; -1 if none.
int xidOfText(const QString& message);
// One line for tables and tooltips: "XID 79: GPU has fallen off the bus — drain the host ...".
QString xidSummary(int code);

}  // namespace loom::console
