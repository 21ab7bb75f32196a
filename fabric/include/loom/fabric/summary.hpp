// RouteSummary: the RoCE routing tables as a BGP fabric that summarises would hold them.
//
// A switch keeps one entry per rack of its own zone (RTSW, CTSW), and for every other zone one
// aggregate (the zone's rack prefixes, see zonePrefixes) whose next-hop group is the one most
// racks of that zone have at this switch (ties: the group of the lowest rack), plus more-specific
// entries only for the racks whose group differs (failures break the symmetry: an unequal weight, a
// lost path, an unreachable rack, which becomes an explicit unreachable more-specific). ATSWs have
// no zone: every zone is remote. On a healthy fabric a switch thus holds racksInItsZone + zones
// entries instead of one per rack (meta-98k-roce: ~1.5 M entries instead of 41.5 M).
//
// The summary is exact by construction: lookup(sw, t) - the more-specific if there is one,
// else the zone aggregate - is the Router's groupOf(sw, t) for every switch and rack
// (tests/fabric/summary_test.cpp expands it and checks every pair, also under random failures).
// It is derived from a Router's tables: building it reads them once (O(switches × racks),
// integer compares); update() re-summarises only the (switch, zone) cells whose entries an
// incremental reroute recomputed (Router::recordChanges), so a one-link reroute stays cheap.
//
//   EntryChanges changes;
//   router.recordChanges(&changes);
//   RouteSummary summary(router);
//   auto st = router.setLinkState(l, LinkState::Down);
//   summary.update(router, changes, st.full);  // changes cleared
//
// A zone whose racks' tier-1 ordinals are not contiguous (so no CIDR cover equals it) and racks
// outside any zone are not aggregated: every switch lists them one by one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/fabric/routing.hpp"

namespace loom::fabric {

// The summarised cells both RouteSummary (derived from a Router's tables) and SummaryRouter
// (computed directly) hold, with the queries written once: per (switch, zone) an aggregate group
// and the more-specifics, sorted by target. Group ids are those of the owner's pool.
class SummaryTable {
public:
    struct Specific {
        std::int32_t target;
        std::int32_t group;  // kNoRoute: an explicit unreachable more-specific (under an aggregate)
        friend bool operator==(const Specific&, const Specific&) = default;
    };

    std::int32_t zoneCount() const { return zones_; }
    bool aggregated(std::int32_t zone) const { return zoneAggregated_[zone] != 0; }
    // The zone's aggregate as CIDR prefixes (its racks' /26s, AddressPlan), e.g. a /19 + a /20
    // for 192 racks; empty if the zone is not aggregated.
    std::vector<std::string> zonePrefixes(std::int32_t zone) const;

    // The aggregate group of `zone` at sw: kNoRoute when sw has none (its own zone, a zone not
    // aggregated, or most of the zone unreachable).
    std::int32_t aggregate(std::int32_t sw, std::int32_t zone) const {
        return aggregate_[cell(sw, zone)];
    }
    // The more-specific entries of sw for the racks of `zone` (sorted by target). For its own
    // zone and zones not aggregated: every reachable rack.
    std::span<const Specific> specifics(std::int32_t sw, std::int32_t zone) const {
        return specifics_[cell(sw, zone)];
    }
    // The zone whose cells hold target t (zoneCount() for racks outside any zone).
    std::int32_t zoneOfTarget(std::int32_t t) const { return targetZone_[t]; }

    // The group sw uses for rack target t: the more-specific, else the aggregate.
    std::int32_t lookup(std::int32_t sw, std::int32_t target) const;
    // lookup() for every target at once (out[t]), for exports and verification.
    void expand(std::int32_t sw, std::vector<std::int32_t>& out) const;

    // Entries: aggregates (one per zone, not per CIDR piece) + more-specifics, over all switches.
    std::int64_t entryCount() const;
    std::int64_t aggregateCount() const;
    // The bytes the cells hold (aggregates and more-specifics, with their vectors' capacity).
    std::size_t cellBytes() const;

protected:
    // The zones of the targets (tier-1 switches in target order), which zones are aggregated
    // (their racks' ordinals one contiguous range: one CIDR cover), and empty cells.
    void initCells(const Topology& t, std::span<const std::int32_t> targetSwitches);
    std::size_t cell(std::int32_t sw, std::int32_t zone) const {
        return static_cast<std::size_t>(sw) * (zones_ + 1) + zone;
    }
    // The aggregate rule: the group most racks of the zone have (ties: the group of the lowest
    // rack). groupOf(target) for the zone's targets in ascending order.
    template <class GroupOf>
    std::int32_t majority(std::span<const std::int32_t> targets, GroupOf&& groupOf);

    std::int32_t switches_ = 0;
    std::int32_t zones_ = 0;
    std::vector<std::int32_t> targetZone_;                // target -> zone (zones_: none)
    std::vector<std::vector<std::int32_t>> zoneTargets_;  // zone -> its targets, ascending
    std::vector<std::uint8_t> zoneAggregated_;            // zones_ + 1 entries
    std::vector<std::int32_t> zoneFirstOrdinal_, zoneLastOrdinal_;
    std::vector<std::int32_t> aggregate_;                       // cell -> group
    std::vector<std::vector<Specific>> specifics_;              // cell -> more-specifics
    std::vector<std::pair<std::int32_t, std::int32_t>> votes_;  // majority(): (group, racks)
};

template <class GroupOf>
std::int32_t SummaryTable::majority(std::span<const std::int32_t> targets, GroupOf&& groupOf) {
    votes_.clear();  // in the order of each group's lowest rack
    for (auto ti : targets) {
        auto g = groupOf(ti);
        auto it =
            std::find_if(votes_.begin(), votes_.end(), [g](const auto& v) { return v.first == g; });
        if (it == votes_.end())
            votes_.emplace_back(g, 1);
        else
            ++it->second;
    }
    std::int32_t best = 0, agg = kNoRoute;
    for (const auto& [g, n] : votes_)
        if (n > best) {
            best = n;
            agg = g;
        }
    return agg;
}

class RouteSummary : public SummaryTable {
public:
    // Summarises router's RoCE tables (an InfiniBand router gives an empty summary).
    explicit RouteSummary(const Router& router);

    // Follows an incremental update of the same router: `changes` as recorded by
    // Router::recordChanges since the last call (cleared here); `full` (UpdateStats::full)
    // rebuilds everything.
    void update(const Router& router, EntryChanges& changes, bool full = false);

    std::size_t memoryBytes() const;

private:
    void summarise(const Router& r, std::int32_t sw, std::int32_t zone);

    std::vector<std::uint32_t> mark_;  // cell -> epoch (update)
    std::uint32_t epoch_ = 0;
};

}  // namespace loom::fabric
