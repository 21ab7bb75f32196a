#include "loom/provisioning/gates.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace loom::provisioning {

std::string_view mismatchKindName(MismatchKind k) {
    switch (k) {
        case MismatchKind::Missing: return "missing";
        case MismatchKind::Miswired: return "miswired";
        case MismatchKind::Unexpected: return "unexpected";
    }
    return "?";
}

std::string CablingReport::summary(std::size_t maxListed) const {
    if (ok()) return "all " + std::to_string(planned) + " planned ports match";
    std::string s = std::to_string(mismatches.size()) + " of " + std::to_string(planned) +
                    " ports mismatched: ";
    for (std::size_t i = 0; i < mismatches.size() && i < maxListed; ++i) {
        const auto& m = mismatches[i];
        if (i) s += "; ";
        s += m.port + " " + std::string(mismatchKindName(m.kind));
        switch (m.kind) {
            case MismatchKind::Missing: s += " (expected " + m.expected + ")"; break;
            case MismatchKind::Miswired:
                s += " (expected " + m.expected + ", observed " + m.observed + ")";
                break;
            case MismatchKind::Unexpected: s += " (observed " + m.observed + ")"; break;
        }
    }
    if (mismatches.size() > maxListed)
        s += "; and " + std::to_string(mismatches.size() - maxListed) + " more";
    return s;
}

CablingReport checkCabling(const std::vector<PlannedLink>& planned,
                           const std::vector<ObservedNeighbour>& observed) {
    CablingReport rep;
    rep.planned = planned.size();
    std::unordered_map<std::string_view, std::string_view> seen;
    seen.reserve(observed.size());
    for (const auto& o : observed)
        if (!o.peer.empty()) seen[o.port] = o.peer;
    std::unordered_map<std::string_view, bool> plannedPorts;
    plannedPorts.reserve(planned.size());
    for (const auto& p : planned) {
        plannedPorts[p.port] = true;
        auto it = seen.find(p.port);
        if (it == seen.end())
            rep.mismatches.push_back({MismatchKind::Missing, p.port, p.peer, ""});
        else if (it->second != p.peer)
            rep.mismatches.push_back(
                {MismatchKind::Miswired, p.port, p.peer, std::string(it->second)});
        else
            ++rep.matched;
    }
    // A cable on a port that should be empty is a fault too: it is somebody else's cable.
    for (const auto& o : observed)
        if (!o.peer.empty() && !plannedPorts.contains(o.port))
            rep.mismatches.push_back({MismatchKind::Unexpected, o.port, "", o.peer});
    std::sort(rep.mismatches.begin(), rep.mismatches.end(),
              [](const PortMismatch& a, const PortMismatch& b) { return a.port < b.port; });
    return rep;
}

BurnInVerdict judgeBurnIn(const BurnInResult& r, const BurnInPolicy& policy) {
    BurnInVerdict v;
    std::size_t healthy = 0;
    for (const auto& h : r.hosts) {
        if (h.passed) {
            ++healthy;
            continue;
        }
        v.quarantineHosts.push_back(h.host);
        v.quarantineGpus.insert(v.quarantineGpus.end(), h.failedGpus.begin(), h.failedGpus.end());
        v.quarantineDiagnostics.push_back(h.diagnostic.empty() ? "GPU diagnostic" : h.diagnostic);
        v.quarantineThresholds.push_back("every GPU passes (at most " +
                                         std::to_string(policy.maxQuarantinedHosts) +
                                         " hosts of a rack may be quarantined)");
    }
    char bw[64];
    std::snprintf(bw, sizeof bw, "%.1f GB/s", r.busBwGBps);
    if (r.hosts.empty()) {
        v.reason = "no hosts to burn in";
        return v;
    }
    if (healthy == 0) {
        v.reason = "all " + std::to_string(r.hosts.size()) + " hosts failed GPU diagnostics";
        return v;
    }
    if (static_cast<int>(v.quarantineHosts.size()) > policy.maxQuarantinedHosts) {
        v.reason = std::to_string(v.quarantineHosts.size()) +
                   " hosts failed GPU diagnostics (at most " +
                   std::to_string(policy.maxQuarantinedHosts) + " may be quarantined)";
        return v;
    }
    if (r.busBwGBps < policy.minBusBwGBps) {
        char need[64];
        std::snprintf(need, sizeof need, "%.1f GB/s", policy.minBusBwGBps);
        v.reason = std::string("rack all_reduce bus bandwidth ") + bw + " below threshold " + need;
        return v;
    }
    v.passed = true;
    v.reason = std::string("bus bandwidth ") + bw;
    if (!v.quarantineHosts.empty()) {
        v.reason += "; quarantined";
        for (const auto& h : v.quarantineHosts) v.reason += " " + h;
    }
    return v;
}

}  // namespace loom::provisioning
