// What an NVIDIA XID code means and what a technician does about it, for the codes seen in
// training clusters: short wording of our own after NVIDIA's XID catalogue ("XID Errors",
// docs.nvidia.com/deploy/xid-errors). One table for everything that explains an XID: loomd's
// Alertmanager annotations (backend/alerting.hpp) and the console's event panels
// (desktop_ui/src/xid.cpp). Header-only and constexpr, so the console uses it without linking
// any Loom library.
//
//   if (const auto* x = loom::telemetry::findXid(79)) std::cout << x->meaning;
#pragma once

#include <array>
#include <string_view>

namespace loom::telemetry {

struct XidEntry {
    int code;
    std::string_view meaning;  // what happened
    std::string_view action;   // what to do about it
    bool hardware;             // likely a hardware fault (drain / RMA) rather than the job's own
};

// Ordered by code.
inline constexpr std::array kXidCatalog = {
    XidEntry{13,
             "Graphics engine exception: the running kernel faulted (out-of-range access, illegal "
             "instruction)",
             "Usually the job's own bug: check its logs. Repeated on one GPU with different jobs: "
             "run diagnostics",
             false},
    XidEntry{31, "GPU memory page fault: a kernel touched an address it does not own",
             "Usually the application or its framework; if it follows this GPU across jobs, run "
             "diagnostics",
             false},
    XidEntry{43, "GPU stopped processing: a user context hit a fault and was torn down",
             "The GPU itself is healthy; look at the job that was running", false},
    XidEntry{
        45,
        "Preemptive cleanup: work was stopped because a process ended or another error came first",
        "Look for the error that came before it on this GPU", false},
    XidEntry{48, "Double-bit ECC error: uncorrectable memory error in GPU memory",
             "Drain the host and reset the GPU; if it comes back, replace the GPU", true},
    XidEntry{61, "Internal micro-controller breakpoint or warning",
             "Reset the GPU; update the driver and firmware if it repeats", true},
    XidEntry{62, "Internal micro-controller halt",
             "Reset the GPU (drain first); replace if it repeats", true},
    XidEntry{63, "ECC page retirement / row remapping recorded: a bad memory row was mapped out",
             "Reset the GPU when it is idle so the remap takes effect; no other action", false},
    XidEntry{64, "ECC page retirement / row remapping failed: the bad row could not be mapped out",
             "Drain the host; the GPU needs replacement (RMA)", true},
    XidEntry{
        74, "NVLink error: a link between GPUs (or to an NVSwitch) reported a fault",
        "Drain the host and reset; check the NVLink/NVSwitch tray; replace the part if it repeats",
        true},
    XidEntry{79, "GPU has fallen off the bus: it no longer answers on PCIe",
             "Drain the host and power-cycle it; check power and cooling; likely RMA if it repeats",
             true},
    XidEntry{92, "High single-bit ECC error rate: many corrected memory errors",
             "Keep running but watch it; schedule the GPU for replacement if the rate keeps rising",
             true},
    XidEntry{
        94,
        "Contained ECC error: an uncorrectable error was contained to the application that hit it",
        "That application was stopped; reset the GPU when idle to retire the row", false},
    XidEntry{95,
             "Uncontained ECC error: an uncorrectable error that may have affected every process "
             "on the GPU",
             "Drain the host now and reset the GPU; replace it if it repeats", true},
    XidEntry{119, "GSP RPC timeout: the GPU System Processor did not answer the driver",
             "Reset the GPU (drain first); update driver and firmware if it repeats", true},
    XidEntry{120, "GSP error: the GPU System Processor reported a fault",
             "Reset the GPU (drain first); update driver and firmware if it repeats", true},
};

// The entry of `code`, or nullptr for a code not in the table.
constexpr const XidEntry* findXid(int code) {
    for (const auto& x : kXidCatalog)
        if (x.code == code) return &x;
    return nullptr;
}

}  // namespace loom::telemetry
