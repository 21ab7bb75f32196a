// The summarised RoCE exports: the per-switch JSON table of a RouteSummary and the aggregates
// the ATSWs' FRR configs originate (export.hpp, ExportOptions::summarise).
#include <map>

#include "export_internal.hpp"
#include "loom/fabric/export.hpp"

namespace loom::fabric {

FrrAggregates frrAggregates(const Router& r, const RouteSummary& sum) {
    FrrAggregates out;
    const Topology& t = r.topology();
    for (std::int32_t z = 0; z < sum.zoneCount(); ++z)
        for (auto& p : sum.zonePrefixes(z)) out.prefixes.push_back(std::move(p));
    // Racks with a more-specific at some switch outside their zone.
    std::vector<std::uint8_t> asymmetric(r.targetCount(), 0);
    for (std::int32_t s = 0; s < t.switchCount(); ++s)
        for (std::int32_t z = 0; z < sum.zoneCount(); ++z) {
            if (z == t.switchZone[s] || !sum.aggregated(z)) continue;
            for (const auto& e : sum.specifics(s, z)) asymmetric[e.target] = 1;
        }
    for (std::int32_t ti = 0; ti < r.targetCount(); ++ti)
        if (asymmetric[ti])
            out.unsuppressed.push_back(
                AddressPlan::rackPrefix(t.switchOrdinal[r.targetSwitch(ti)]));
    return out;
}

std::string summaryRoutesJson(const Router& r, const RouteSummary& sum, std::int32_t sw) {
    const Topology& t = r.topology();
    std::string o = "{\"switch\":";
    appendJsonString(o, t.switchNames[sw]);
    o += ",\"asn\":" + std::to_string(AddressPlan::asn(t, sw));
    o += ",\"loopback\":\"" + AddressPlan::loopback(sw) + "/32\",\"summarised\":true";
    std::map<std::int32_t, std::int32_t> local;  // global group id -> local index
    std::string routes;
    auto route = [&](const std::string& prefix, std::int32_t g) {
        routes += routes.empty() ? "\"" : ",\"";
        routes += prefix;
        routes += "\":";
        if (g == kNoRoute) {
            routes += "null";
        } else if (g == kLocal) {
            routes += "\"local\"";
        } else {
            auto [it, fresh] = local.emplace(g, static_cast<std::int32_t>(local.size()));
            routes += std::to_string(it->second);
        }
    };
    for (std::int32_t z = 0; z <= sum.zoneCount(); ++z) {
        if (auto agg = sum.aggregate(sw, z); agg != kNoRoute)
            for (const auto& p : sum.zonePrefixes(z)) route(p, agg);
        for (const auto& e : sum.specifics(sw, z))
            route(AddressPlan::rackPrefix(t.switchOrdinal[r.targetSwitch(e.target)]), e.group);
    }
    std::vector<std::int32_t> order(local.size());
    for (auto [g, i] : local) order[i] = g;
    o += ",\"groups\":[";
    for (std::size_t i = 0; i < order.size(); ++i) {
        o += i ? ",[" : "[";
        bool first = true;
        for (const auto& nh : r.group(order[i])) {
            o += first ? "{" : ",{";
            first = false;
            o += "\"interface\":\"swp" + std::to_string(detail::localPort(t, nh.link, sw)) +
                 "\",\"peer\":";
            appendJsonString(o, detail::nodeName(t, t.peer(nh.link, sw)));
            o += ",\"weight\":" + std::to_string(nh.weight) + "}";
        }
        o += "]";
    }
    o += "],\"routes\":{" + routes + "}}\n";
    return o;
}

}  // namespace loom::fabric
