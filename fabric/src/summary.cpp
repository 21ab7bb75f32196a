#include "loom/fabric/summary.hpp"

#include <algorithm>

namespace loom::fabric {

void SummaryTable::initCells(const Topology& t, std::span<const std::int32_t> targetSwitches) {
    switches_ = t.switchCount();
    zones_ = static_cast<std::int32_t>(t.zoneNames.size());
    const auto T = static_cast<std::int32_t>(targetSwitches.size());
    targetZone_.assign(T, zones_);
    zoneTargets_.assign(zones_ + 1, {});
    for (std::int32_t ti = 0; ti < T; ++ti) {
        auto z = t.switchZone[targetSwitches[ti]];
        targetZone_[ti] = (z == kNone || z >= zones_) ? zones_ : z;
        zoneTargets_[targetZone_[ti]].push_back(ti);
    }
    zoneAggregated_.assign(zones_ + 1, 0);
    zoneFirstOrdinal_.assign(zones_ + 1, 0);
    zoneLastOrdinal_.assign(zones_ + 1, -1);
    for (std::int32_t z = 0; z < zones_; ++z) {
        const auto& ts = zoneTargets_[z];
        if (ts.empty()) continue;
        std::vector<std::int32_t> ords;
        for (auto ti : ts) ords.push_back(t.switchOrdinal[targetSwitches[ti]]);
        std::sort(ords.begin(), ords.end());
        bool contiguous = std::adjacent_find(ords.begin(), ords.end(), [](auto a, auto b) {
                              return b != a + 1;
                          }) == ords.end();
        zoneAggregated_[z] = contiguous ? 1 : 0;
        zoneFirstOrdinal_[z] = ords.front();
        zoneLastOrdinal_[z] = ords.back();
    }
    const std::size_t cells = static_cast<std::size_t>(switches_) * (zones_ + 1);
    aggregate_.assign(cells, kNoRoute);
    specifics_.assign(cells, {});
}

std::vector<std::string> SummaryTable::zonePrefixes(std::int32_t zone) const {
    if (zone < 0 || zone >= zones_ || !zoneAggregated_[zone]) return {};
    return AddressPlan::rackRangePrefixes(zoneFirstOrdinal_[zone], zoneLastOrdinal_[zone]);
}

std::int32_t SummaryTable::lookup(std::int32_t sw, std::int32_t target) const {
    auto z = targetZone_[target];
    const auto& spec = specifics_[cell(sw, z)];
    auto it = std::lower_bound(spec.begin(), spec.end(), target,
                               [](const Specific& e, std::int32_t t) { return e.target < t; });
    if (it != spec.end() && it->target == target) return it->group;
    return aggregate_[cell(sw, z)];
}

void SummaryTable::expand(std::int32_t sw, std::vector<std::int32_t>& out) const {
    out.assign(targetZone_.size(), kNoRoute);
    for (std::int32_t z = 0; z <= zones_; ++z) {
        auto agg = aggregate_[cell(sw, z)];
        if (agg != kNoRoute)
            for (auto ti : zoneTargets_[z]) out[ti] = agg;
        for (const auto& e : specifics_[cell(sw, z)]) out[e.target] = e.group;
    }
}

std::int64_t SummaryTable::aggregateCount() const {
    return std::count_if(aggregate_.begin(), aggregate_.end(),
                         [](std::int32_t g) { return g != kNoRoute; });
}

std::int64_t SummaryTable::entryCount() const {
    std::int64_t n = aggregateCount();
    for (const auto& v : specifics_) n += static_cast<std::int64_t>(v.size());
    return n;
}

std::size_t SummaryTable::cellBytes() const {
    std::size_t n = aggregate_.capacity() * sizeof(std::int32_t) +
                    specifics_.capacity() * sizeof(specifics_[0]);
    for (const auto& v : specifics_) n += v.capacity() * sizeof(Specific);
    return n;
}

RouteSummary::RouteSummary(const Router& r) {
    const Topology& t = r.topology();
    if (t.type != inventory::FabricType::Roce) return;
    std::vector<std::int32_t> targets(r.targetCount());
    for (std::int32_t ti = 0; ti < r.targetCount(); ++ti) targets[ti] = r.targetSwitch(ti);
    initCells(t, targets);
    mark_.assign(aggregate_.size(), 0);
    for (std::int32_t s = 0; s < switches_; ++s)
        for (std::int32_t z = 0; z <= zones_; ++z) summarise(r, s, z);
}

// One (switch, zone) cell from the router's groups: own zone or not aggregated -> every
// reachable rack; otherwise the aggregate is the group most racks of the zone have at s (ties:
// the group of the lowest rack; SummaryRouter follows the same rule, so both write the same
// exports), and the racks whose group differs are more-specifics.
void RouteSummary::summarise(const Router& r, std::int32_t s, std::int32_t z) {
    const auto& ts = zoneTargets_[z];
    auto& spec = specifics_[cell(s, z)];
    spec.clear();
    std::int32_t& agg = aggregate_[cell(s, z)];
    agg = kNoRoute;
    if (ts.empty()) return;
    const auto own = r.topology().switchZone[s];
    if (!zoneAggregated_[z] || own == z) {
        for (auto ti : ts) {
            auto g = r.groupOf(s, ti);
            if (g != kNoRoute) spec.push_back({ti, g});
        }
        return;
    }
    agg = majority(ts, [&](std::int32_t ti) { return r.groupOf(s, ti); });
    if (votes_.size() == 1) return;
    for (auto ti : ts) {
        auto g = r.groupOf(s, ti);
        if (g != agg) spec.push_back({ti, g});
    }
}

void RouteSummary::update(const Router& r, EntryChanges& changes, bool full) {
    if (switches_ == 0) {
        changes.clear();
        return;
    }
    if (full) {
        changes.clear();
        for (std::int32_t s = 0; s < switches_; ++s)
            for (std::int32_t z = 0; z <= zones_; ++z) summarise(r, s, z);
        return;
    }
    if (++epoch_ == 0) {
        std::fill(mark_.begin(), mark_.end(), 0);
        epoch_ = 1;
    }
    for (auto [s, ti] : changes) {
        auto c = cell(s, targetZone_[ti]);
        if (mark_[c] == epoch_) continue;
        mark_[c] = epoch_;
        summarise(r, s, targetZone_[ti]);
    }
    changes.clear();
}

std::size_t RouteSummary::memoryBytes() const { return cellBytes() + mark_.capacity() * 4; }

}  // namespace loom::fabric
