#include "loom/console/xid.hpp"

#include <QRegularExpression>

#include <array>

namespace loom::console {

namespace {
struct Row {
    int code;
    const char* meaning;
    const char* action;
    bool hardware;
};

// Ordered by code. Meanings and actions written for this console, after NVIDIA's catalogue.
constexpr std::array kXids = {
    Row{13, "Graphics engine exception: the running kernel faulted (out-of-range access, illegal instruction)",
        "Usually the job's own bug: check its logs. Repeated on one GPU with different jobs: run diagnostics", false},
    Row{31, "GPU memory page fault: a kernel touched an address it does not own",
        "Usually the application or its framework; if it follows this GPU across jobs, run diagnostics", false},
    Row{43, "GPU stopped processing: a user context hit a fault and was torn down",
        "The GPU itself is healthy; look at the job that was running", false},
    Row{45, "Preemptive cleanup: work was stopped because a process ended or another error came first",
        "Look for the error that came before it on this GPU", false},
    Row{48, "Double-bit ECC error: uncorrectable memory error in GPU memory",
        "Drain the host and reset the GPU; if it comes back, replace the GPU", true},
    Row{61, "Internal micro-controller breakpoint or warning",
        "Reset the GPU; update the driver and firmware if it repeats", true},
    Row{62, "Internal micro-controller halt", "Reset the GPU (drain first); replace if it repeats", true},
    Row{63, "ECC page retirement / row remapping recorded: a bad memory row was mapped out",
        "Reset the GPU when it is idle so the remap takes effect; no other action", false},
    Row{64, "ECC page retirement / row remapping failed: the bad row could not be mapped out",
        "Drain the host; the GPU needs replacement (RMA)", true},
    Row{74, "NVLink error: a link between GPUs (or to an NVSwitch) reported a fault",
        "Drain the host and reset; check the NVLink/NVSwitch tray; replace the part if it repeats", true},
    Row{79, "GPU has fallen off the bus: it no longer answers on PCIe",
        "Drain the host and power-cycle it; check power and cooling; likely RMA if it repeats", true},
    Row{92, "High single-bit ECC error rate: many corrected memory errors",
        "Keep running but watch it; schedule the GPU for replacement if the rate keeps rising", true},
    Row{94, "Contained ECC error: an uncorrectable error was contained to the application that hit it",
        "That application was stopped; reset the GPU when idle to retire the row", false},
    Row{95, "Uncontained ECC error: an uncorrectable error that may have affected every process on the GPU",
        "Drain the host now and reset the GPU; replace it if it repeats", true},
    Row{119, "GSP RPC timeout: the GPU System Processor did not answer the driver",
        "Reset the GPU (drain first); update driver and firmware if it repeats", true},
    Row{120, "GSP error: the GPU System Processor reported a fault",
        "Reset the GPU (drain first); update driver and firmware if it repeats", true},
};
}  // namespace

std::optional<XidInfo> xidInfo(int code)
{
    for (const auto& r : kXids)
        if (r.code == code)
            return XidInfo{r.code, QString::fromUtf8(r.meaning), QString::fromUtf8(r.action), r.hardware};
    return std::nullopt;
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
