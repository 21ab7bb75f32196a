// SummaryRouter: the summarised RoCE routing tables (RouteSummary's cells) computed directly,
// without the full switch × rack tables of a Router.
//
// Why it is exact. Take a zone Z whose switches satisfy two conditions: (a) every switch of Z
// with an up-link leaving Z is a tier-2 switch of Z (a CTSW: it never climbs toward a rack of
// its own zone, the ASN rule of routing.hpp), and (b) no switch outside Z has an up-link into
// Z. Then, for a rack t of Z:
//   - the entries of Z's own switches toward t depend only on Z's switches and links (a zone
//     router: a Router on Z's sub-topology, racks of Z as targets);
//   - the entries of every switch outside Z toward t depend on t only through the (mode,
//     distance, bandwidth) of Z's boundary switches toward t — the rack's *signature*.
// Racks of Z with equal signatures form a class; one representative per class is routed over
// the whole fabric (a Router with explicit target slots, the representatives router). A
// switch outside Z then holds, for Z, one aggregate (the group of the class with most racks)
// and more-specifics for the racks of the other classes whose group differs: on a healthy
// fabric every rack of a zone has the same signature, so each zone is one class and the
// representatives router routes one rack per zone (32 targets at 98k instead of 6,144).
// Zones that fail (a) or (b), and racks outside any zone, get one slot per rack.
//
// Queries are those of RouteSummary (aggregate, specifics, lookup, expand, entryCount), with
// group ids of this object's own pool (group(id): next-hop links of the whole topology).
// tests/fabric/summary_router_test.cpp expands it and compares every (switch, rack) with a
// full Router, healthy and under random failures and repairs.
//
// Incremental: setLinkState / setSwitchUp / setLinkStates / setSwitchesUp update the zone router of
// the change's zone (if the change is inside one) and the representatives router, move the racks
// whose signature changed to their new class (routing a new representative when a class is
// new), and re-summarise only the cells whose entries changed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary.hpp"

namespace loom::fabric {

class SummaryRouter : public SummaryTable {
public:
    // RoCE only (an InfiniBand topology gives an empty summary: zoneCount() 0, no targets).
    explicit SummaryRouter(Topology topo);
    ~SummaryRouter();
    SummaryRouter(SummaryRouter&&) noexcept;
    SummaryRouter& operator=(SummaryRouter&&) noexcept;

    const Topology& topology() const;

    // Targets as in Router: the tier-1 switches in tier order.
    std::int32_t targetCount() const { return static_cast<std::int32_t>(targetZone_.size()); }
    std::int32_t targetSwitch(std::int32_t target) const;
    std::int32_t targetOf(std::int32_t sw) const;

    // The cells and their queries (zoneCount, aggregated, zonePrefixes, aggregate, specifics,
    // lookup, expand, entryCount, aggregateCount) are SummaryTable's.
    // Router::groupOf's answer (the same as lookup), so code can take either router.
    std::int32_t groupOf(std::int32_t sw, std::int32_t target) const { return lookup(sw, target); }
    // Router::bandwidth of (sw, rack target): from the zone router for the rack's own zone's
    // switches, else from the representative of the rack's class (equal signatures give equal
    // entries outside the zone). What the degradation map reads.
    float bandwidth(std::int32_t sw, std::int32_t target) const;

    // The next hops of a group id from aggregate/specifics/lookup (kNoRoute, kLocal: none).
    std::span<const NextHop> group(std::int32_t id) const;
    std::int32_t groupCount() const;

    std::size_t memoryBytes() const;

    // Classes of racks (one representative routed per class) and representative slots.
    std::int32_t classCount() const;
    std::int32_t representativeSlots() const;

    struct Stats {
        std::int32_t zonesRerouted = 0;   // zone routers that recomputed something
        std::int32_t classesChanged = 0;  // zones whose classes changed
        std::int32_t cellsSummarised = 0;
        bool full = false;
    };
    Stats setLinkState(std::int32_t link, LinkState state);
    Stats setSwitchUp(std::int32_t sw, bool up);
    // Many switches in one pass per router (Router::setSwitchesUp); equal to one by one.
    Stats setSwitchesUp(std::span<const std::pair<std::int32_t, bool>> changes);
    Stats setLinkStates(std::span<const std::pair<std::int32_t, LinkState>> changes);

private:
    struct Impl;
    void summarise(std::int32_t sw, std::int32_t zone);
    Stats finish(std::span<const std::int32_t> touchedZones, std::span<const std::uint8_t> zoneFull,
                 bool repFull);
    std::unique_ptr<Impl> impl_;
};

}  // namespace loom::fabric
