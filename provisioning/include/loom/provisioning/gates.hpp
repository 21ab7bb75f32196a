// Gates a rack must pass on its way into service, as pure judgements over observations:
//  - cabling: the neighbours each port reports (LLDP) against the planned cables, every
//    mismatch listed per port;
//  - burn-in: per-host GPU diagnostics and one rack-level collective bandwidth figure,
//    judged against the phase's BurnInPolicy.
// Executors (executor.hpp) gather the observations; the reconciler applies the verdicts.
#pragma once

#include <string>
#include <vector>

#include "loom/provisioning/phase_plan.hpp"

namespace loom::provisioning {

// One end of a planned cable seen from the rack: `port` is on a device of the rack (a host
// NIC port or its RTSW), `peer` is the port it must be cabled to.
struct PlannedLink {
    std::string port;
    std::string peer;
};

// What a port's LLDP reports as its neighbour ("" = no neighbour seen).
struct ObservedNeighbour {
    std::string port;
    std::string peer;
};

enum class MismatchKind { Missing, Miswired, Unexpected };
std::string_view mismatchKindName(MismatchKind k);  // "missing", "miswired", "unexpected"

struct PortMismatch {
    MismatchKind kind = MismatchKind::Missing;
    std::string port;
    std::string expected;  // "" for unexpected
    std::string observed;  // "" for missing
};

struct CablingReport {
    std::size_t planned = 0;
    std::size_t matched = 0;
    std::vector<PortMismatch> mismatches;  // sorted by port

    bool ok() const { return mismatches.empty(); }
    // "2 of 34 ports mismatched: z1-r001-rtsw/p3 miswired (expected X, observed Y); ..."
    // (at most `maxListed` ports listed, then "and N more").
    std::string summary(std::size_t maxListed = 8) const;
};

CablingReport checkCabling(const std::vector<PlannedLink>& planned,
                           const std::vector<ObservedNeighbour>& observed);

struct HostDiag {
    std::string host;
    bool passed = false;
    std::vector<std::string> failedGpus;  // GPU names the diagnostic blamed
    std::string output;                   // capped command output, for the audit record
    std::string diagnostic;               // what ran ("dcgmi diag -r 3"), for the event
};

struct BurnInResult {
    std::vector<HostDiag> hosts;
    double busBwGBps = 0;  // rack-level all_reduce bus bandwidth over the passing hosts
    std::string output;
};

struct BurnInVerdict {
    bool passed = false;
    std::vector<std::string> quarantineHosts;
    std::vector<std::string> quarantineGpus;
    // Per quarantined host (same order): the diagnostic that failed, and the bar it missed —
    // what its host_quarantined event says (issue 39 item 3).
    std::vector<std::string> quarantineDiagnostics;
    std::vector<std::string> quarantineThresholds;
    std::string reason;  // why it failed, or what was quarantined when it passed
};

BurnInVerdict judgeBurnIn(const BurnInResult& r, const BurnInPolicy& policy);

}  // namespace loom::provisioning
