// The summarised RoCE exports: the per-switch JSON table of a RouteSummary and the aggregates
// the ATSWs' FRR configs originate (export.hpp, ExportOptions::summarise).
#include "export_internal.hpp"
#include "loom/fabric/export.hpp"

namespace loom::fabric {

namespace {

// Over a Router with its RouteSummary, or a SummaryRouter (router and summary at once).
template <class R, class S>
FrrAggregates aggregatesOf(const R& r, const S& sum) {
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

template <class R, class S>
std::string tableJsonOf(const R& r, const S& sum, std::int32_t sw) {
    const Topology& t = r.topology();
    detail::RoceTableJson table(
        t, [&r](std::int32_t g) { return r.group(g); }, sw, /*summarised=*/true);
    for (std::int32_t z = 0; z <= sum.zoneCount(); ++z) {
        if (auto agg = sum.aggregate(sw, z); agg != kNoRoute)
            for (const auto& p : sum.zonePrefixes(z)) table.route(p, agg);
        for (const auto& e : sum.specifics(sw, z))
            table.route(AddressPlan::rackPrefix(t.switchOrdinal[r.targetSwitch(e.target)]),
                        e.group);
    }
    return std::move(table).finish();
}

}  // namespace

FrrAggregates frrAggregates(const Router& r, const RouteSummary& sum) {
    return aggregatesOf(r, sum);
}
FrrAggregates frrAggregates(const SummaryRouter& r) { return aggregatesOf(r, r); }

std::string summaryRoutesJson(const Router& r, const RouteSummary& sum, std::int32_t sw) {
    return tableJsonOf(r, sum, sw);
}
std::string summaryRoutesJson(const SummaryRouter& r, std::int32_t sw) {
    return tableJsonOf(r, r, sw);
}

}  // namespace loom::fabric
