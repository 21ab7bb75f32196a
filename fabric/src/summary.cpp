#include "loom/fabric/summary.hpp"

#include <algorithm>

namespace loom::fabric {

RouteSummary::RouteSummary(const Router& r) {
    const Topology& t = r.topology();
    if (t.type != inventory::FabricType::Roce) return;
    switches_ = t.switchCount();
    zones_ = static_cast<std::int32_t>(t.zoneNames.size());
    const auto T = r.targetCount();
    targetZone_.assign(T, zones_);
    zoneTargets_.assign(zones_ + 1, {});
    for (std::int32_t ti = 0; ti < T; ++ti) {
        auto z = t.switchZone[r.targetSwitch(ti)];
        targetZone_[ti] = (z == kNone || z >= zones_) ? zones_ : z;
        zoneTargets_[targetZone_[ti]].push_back(ti);
    }
    // A zone is aggregated when its racks' ordinals are one contiguous range (one CIDR cover).
    zoneAggregated_.assign(zones_ + 1, 0);
    zoneFirstOrdinal_.assign(zones_ + 1, 0);
    zoneLastOrdinal_.assign(zones_ + 1, -1);
    for (std::int32_t z = 0; z < zones_; ++z) {
        const auto& ts = zoneTargets_[z];
        if (ts.empty()) continue;
        std::vector<std::int32_t> ords;
        for (auto ti : ts) ords.push_back(t.switchOrdinal[r.targetSwitch(ti)]);
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
    mark_.assign(cells, 0);
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
    votes_.clear();  // (group, racks) in the order of each group's lowest rack
    for (auto ti : ts) {
        auto g = r.groupOf(s, ti);
        auto it =
            std::find_if(votes_.begin(), votes_.end(), [g](const auto& v) { return v.first == g; });
        if (it == votes_.end())
            votes_.emplace_back(g, 1);
        else
            ++it->second;
    }
    std::int32_t best = 0;
    for (const auto& [g, n] : votes_)
        if (n > best) {
            best = n;
            agg = g;
        }
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

std::vector<std::string> RouteSummary::zonePrefixes(std::int32_t zone) const {
    if (zone < 0 || zone >= zones_ || !zoneAggregated_[zone]) return {};
    return AddressPlan::rackRangePrefixes(zoneFirstOrdinal_[zone], zoneLastOrdinal_[zone]);
}

std::int32_t RouteSummary::lookup(std::int32_t sw, std::int32_t target) const {
    auto z = targetZone_[target];
    const auto& spec = specifics_[cell(sw, z)];
    auto it = std::lower_bound(spec.begin(), spec.end(), target,
                               [](const Specific& e, std::int32_t t) { return e.target < t; });
    if (it != spec.end() && it->target == target) return it->group;
    return aggregate_[cell(sw, z)];
}

void RouteSummary::expand(std::int32_t sw, std::vector<std::int32_t>& out) const {
    out.assign(targetZone_.size(), kNoRoute);
    for (std::int32_t z = 0; z <= zones_; ++z) {
        auto agg = aggregate_[cell(sw, z)];
        if (agg != kNoRoute)
            for (auto ti : zoneTargets_[z]) out[ti] = agg;
        for (const auto& e : specifics_[cell(sw, z)]) out[e.target] = e.group;
    }
}

std::int64_t RouteSummary::aggregateCount() const {
    return std::count_if(aggregate_.begin(), aggregate_.end(),
                         [](std::int32_t g) { return g != kNoRoute; });
}

std::int64_t RouteSummary::entryCount() const {
    std::int64_t n = aggregateCount();
    for (const auto& v : specifics_) n += static_cast<std::int64_t>(v.size());
    return n;
}

std::size_t RouteSummary::memoryBytes() const {
    std::size_t n = aggregate_.capacity() * sizeof(std::int32_t) + mark_.capacity() * 4 +
                    specifics_.capacity() * sizeof(specifics_[0]);
    for (const auto& v : specifics_) n += v.capacity() * sizeof(Specific);
    return n;
}

}  // namespace loom::fabric
