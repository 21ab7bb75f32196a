// Routing of the backend fabric: ECMP next-hop groups (RoCE/BGP) and LFTs (InfiniBand).
//
// Model. Every switch is a possible routing target. RoCE routes to one prefix per rack (the
// RTSW's host subnet), so its targets are the tier-1 switches; InfiniBand routes to one LID
// per HCA port and per switch, so every switch is a target and an HCA LID follows its leaf.
// For a target t and switch s the router keeps, in flat arrays indexed target × switch:
//   - mode: how s reaches t — Self, Down (s sits above t and goes only down), Up (s first
//     climbs: valley-free, up-then-down), or None (unreachable);
//   - dist: hops to t along shortest valley-free paths;
//   - bw: the bandwidth (Gb/s) s can push toward t, the BGP link-bandwidth community value:
//     Σ over next-hop neighbours of min(capacity of the links to it, its own bw).
// The next hops of s toward t are the usable links to neighbours one hop closer in the same
// direction. RoCE weights each next-hop link by the bandwidth behind it (unequal-cost
// multipath when links are lost; all weights 1 on a healthy fabric) and interns the group, so
// the table is one int32 per (switch, target). InfiniBand picks one of the candidate ports
// per destination LID, as a pure function of the LID (d-mod-k at each tier, like ftree), so
// every destination uses each tier's uplinks evenly and the choice never depends on history.
// In RoCE a CTSW never reaches a rack of its own zone through an ATSW (the CTSWs of a zone
// share an ASN, so BGP would drop that path as an AS loop); this mirrors the ASN plan.
//
// Incremental updates (setLinkState/setSwitchUp) recompute, per target, the entries next to
// the change and then only the entries whose inputs actually changed (change-driven, in the
// acyclic order of the up/down dependencies); the result is identical to a full recompute
// (tests/fabric checks this on random failure and repair sequences).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/fabric/topology.hpp"

namespace loom::fabric {

enum class RouteMode : std::uint8_t { None, Self, Down, Up };

struct NextHop {
    std::int32_t link;
    std::uint32_t weight;  // relative ECMP weight; 1 everywhere on a healthy fabric
    friend bool operator==(const NextHop&, const NextHop&) = default;
};

inline constexpr std::int32_t kNoRoute = -1;       // group id: target unreachable
inline constexpr std::int32_t kLocal = -2;         // group id: the switch's own rack prefix
inline constexpr std::uint8_t kNoPort = 255;       // LFT entry: drop
inline constexpr std::uint8_t kUnreachable = 255;  // dist

struct UpdateStats {
    std::int32_t targetsRecomputed = 0;  // targets where some entry changed
    std::int64_t entriesRecomputed = 0;  // (switch, target) entries recomputed
    bool full = false;                   // fell back to recomputeAll (nothing was recorded)
};

// (switch, target) entries an incremental update recomputed (Router::recordChanges).
using EntryChanges = std::vector<std::pair<std::int32_t, std::int32_t>>;

class Router {
public:
    // Computes the full routing of the topology (which the router keeps and owns).
    explicit Router(Topology topo);
    // RoCE only: routes to the given tier-1 switches only (each at most once), in that order
    // as target slots 0..n-1. SummaryRouter keeps one such slot per class of equivalent racks.
    Router(Topology topo, std::vector<std::int32_t> targets);
    Router(const Router&) = default;
    Router& operator=(const Router&) = default;
    Router(Router&&) noexcept = default;
    Router& operator=(Router&&) noexcept = default;

    const Topology& topology() const { return topo_; }

    // Targets: RoCE the tier-1 switches (rack prefixes), InfiniBand every switch.
    std::int32_t targetCount() const { return static_cast<std::int32_t>(targets_.size()); }
    std::int32_t targetSwitch(std::int32_t target) const { return targets_[target]; }
    std::int32_t targetOf(std::int32_t sw) const { return targetOf_[sw]; }  // kNone if none

    RouteMode mode(std::int32_t sw, std::int32_t target) const { return mode_[at(sw, target)]; }
    std::uint8_t dist(std::int32_t sw, std::int32_t target) const { return dist_[at(sw, target)]; }
    float bandwidth(std::int32_t sw, std::int32_t target) const { return bw_[at(sw, target)]; }

    // The usable next-hop links of sw toward target, weighted as RoCE would (also valid on
    // InfiniBand, where it is the candidate set the LFT picks from). Empty if unreachable
    // or sw is the target.
    void nextHops(std::int32_t sw, std::int32_t target, std::vector<NextHop>& out) const;

    // RoCE: the interned ECMP group of (sw, target): kNoRoute, kLocal or a group id.
    std::int32_t groupOf(std::int32_t sw, std::int32_t target) const {
        return group_[at(sw, target)];
    }
    std::span<const NextHop> group(std::int32_t id) const { return pool_.get(id); }
    std::int32_t groupCount() const { return pool_.size(); }

    // InfiniBand: LIDs. HCA ports get 1..nicCount in leaf-major order (leaf ordinal, leaf
    // port), switches follow. Limit: maxLid() ≤ 0xBFFF (the unicast LID space).
    std::uint16_t nicLid(std::int32_t nic) const { return nicLid_[nic]; }
    std::uint16_t switchLid(std::int32_t sw) const { return switchLid_[sw]; }
    std::int32_t maxLid() const { return maxLid_; }
    std::int32_t lidNode(std::uint16_t lid) const { return lidNode_[lid]; }  // node id or kNone
    // Output port of sw for destination lid: 0 = the switch itself, kNoPort = drop.
    std::uint8_t lftPort(std::int32_t sw, std::uint16_t lid) const {
        if (lid > maxLid_ || lidTarget_[lid] == kNone) return kNoPort;
        auto ti = lidTarget_[lid];
        return lft_[lftBlock_[ti] + static_cast<std::size_t>(sw) * lftWidth_[ti] + lidCol_[lid]];
    }

    // InfiniBand: the LFT of sw (port per LID, index 0..maxLid(), as lftPort gives it) as it
    // would be with `linkStates` in place of the current states of those links (and `switches`
    // in place of those switches' up-ness): an earlier version of the fabric (GET
    // /fabric/config/{sw}?previous=true). Exactly the row a copy of this router would hold after
    // setLinkStates(linkStates) and setSwitchUp of each, but computed one target at a time
    // in O(switches + LIDs) scratch, without copying the tables (a copy is tens of MB at 24k).
    // Costs about one single-threaded full routing pass. Safe beside other const readers.
    std::vector<std::uint8_t> lftRowWith(std::int32_t sw, LinkStates linkStates,
                                         SwitchUps switches = {}) const;

    // State changes with incremental reroute. No-ops when the state does not change
    // usability. Returns what was recomputed.
    UpdateStats setLinkState(std::int32_t link, LinkState state);
    UpdateStats setSwitchUp(std::int32_t sw, bool up);
    // Many switches at once (a rack's switch follows it in and out of service, a zone's switches
    // follow its first or last rack): one reroute pass, as setLinkStates; equal to setSwitchUp of
    // each in turn. Falls back to a full recompute past a quarter of the switches.
    UpdateStats setSwitchesUp(std::span<const std::pair<std::int32_t, bool>> changes);
    // Many link changes (a rack put into service, a line card lost) in one reroute pass;
    // equal to applying them one by one, much cheaper. Falls back to a full recompute
    // when the changes touch more than a quarter of the switches.
    UpdateStats setLinkStates(std::span<const std::pair<std::int32_t, LinkState>> changes);
    void recomputeAll();
    // RoCE routers built with explicit targets: points slot `target` at tier-1 switch sw
    // (change-driven from the old target: cheap when both route alike), or adds a slot for sw
    // (returned; computed in full). sw must not be the target of another slot. setTarget's
    // recomputed entries are recorded (recordChanges), addTarget's are not.
    void setTarget(std::int32_t target, std::int32_t sw);
    std::int32_t addTarget(std::int32_t sw);
    // Incremental updates append every (switch, target) entry they recompute to *sink, so a
    // derived table (RouteSummary) can follow without rescanning; nullptr stops it. A full
    // recompute (UpdateStats::full, recomputeAll) appends nothing: rebuild then. The pointer
    // is copied with the Router: reset it on copies.
    void recordChanges(EntryChanges* sink) { changes_ = sink; }

    // Same routes (modes, distances, bandwidths, next-hop groups by content, LFTs).
    // On mismatch, a description of the first difference.
    std::string firstDifference(const Router& other) const;

    std::size_t memoryBytes() const;

private:
    std::size_t at(std::int32_t sw, std::int32_t target) const {
        return static_cast<std::size_t>(target) * topo_.switchCount() + sw;
    }
    struct GroupPool {
        std::vector<NextHop> hops;
        std::vector<std::int32_t> offset{0};
        std::vector<std::vector<std::int32_t>> buckets;  // hash -> group ids
        std::span<const NextHop> get(std::int32_t id) const {
            return {hops.data() + offset[id], hops.data() + offset[id + 1]};
        }
        std::int32_t size() const { return static_cast<std::int32_t>(offset.size()) - 1; }
        // Id of the group with this content; `last` is a per-switch cache tried first.
        std::int32_t intern(std::span<const NextHop> g, std::int32_t& last);
        void clear(std::size_t bucketCount);
    };
    // Scratch of one worker (full recompute runs targets on several threads).
    struct Work {
        std::vector<NextHop> hops;
        std::vector<std::uint8_t> ports;
        std::vector<std::int32_t> frontier, next;
        std::vector<float> capAcc, weightAcc;  // capAcc: per switch, zero between calls
        std::vector<std::uint32_t> seen;
        std::uint32_t seenEpoch = 0;
        std::vector<std::int32_t> lastGroup;  // per switch: interning cache
        GroupPool* pool = nullptr;            // set by each entry point
        void init(std::int32_t switches);
    };
    // One target's cells, where the per-target code reads and writes them: the router's own
    // tables (slot()), or a request's scratch (lftRowWith: one target at a time, and of the LFT
    // block only the row of switch `lftOnly`).
    struct Slot {
        RouteMode* mode;
        std::uint8_t* dist;
        float* bw;
        std::int32_t* group;           // RoCE; nullptr on InfiniBand
        std::uint8_t* lft;             // InfiniBand: the target's LFT block [switch][column]
        const std::uint8_t* up;        // per link: usable
        const std::uint8_t* switchUp;  // per switch: up (the topology's, or an earlier version's)
        std::int32_t lftOnly = kNone;  // scratch: lft is this one switch's row, others are skipped
    };
    // The router's own cells of target ti.
    Slot slot(std::int32_t target);
    void computeTarget(Work& w, std::int32_t target, const Slot& c) const;
    void computeUpEntry(Work& w, std::int32_t sw, std::int32_t target, const Slot& c) const;
    void finishEntry(Work& w, std::int32_t sw, std::int32_t target, const Slot& c) const;
    float gather(Work& w, std::int32_t sw, const Slot& c, std::vector<NextHop>& out) const;
    void writeLft(Work& w, std::int32_t sw, std::int32_t target, const Slot& c) const;
    void assignLids();
    // link: one switch-to-switch link changed (seeds = its two ends): per target only the
    // end whose entry reads the link is recomputed.
    UpdateStats propagate(std::span<const std::int32_t> seeds, std::int32_t link = kNone);
    void propagateTarget(std::int32_t target, std::span<const std::int32_t> seeds,
                         std::int32_t link, UpdateStats& st);

    Topology topo_;
    bool roce_ = true;
    std::vector<std::int32_t> targets_;
    std::vector<std::int32_t> targetOf_;
    std::vector<RouteMode> mode_;
    std::vector<std::uint8_t> dist_;
    std::vector<float> bw_;
    std::vector<std::int32_t> group_;

    GroupPool pool_;
    std::size_t bucketCount_ = 64;

    std::vector<std::uint16_t> nicLid_, switchLid_;
    std::vector<std::int32_t> lidNode_;
    std::vector<std::int32_t> targetNicBegin_, targetNics_;  // HCAs per leaf target (CSR)
    std::int32_t maxLid_ = 0;
    std::vector<std::int32_t> lidTarget_;  // LID -> target whose block holds it
    std::vector<std::uint16_t> lidCol_;    // LID -> column within that block
    std::vector<std::size_t> lftBlock_;    // target -> offset of its block in lft_
    std::vector<std::int32_t> lftWidth_;   // target -> LIDs per switch in its block
    std::vector<std::uint8_t> lft_;        // blocks of [switch][column]
    std::int32_t tier1Up_ = 1;             // nominal up-degree of a leaf: the d-mod-k divisor

    // Scratch of the calling thread (a Router is not safe for concurrent use, even const).
    mutable Work main_;
    std::vector<std::uint8_t> up_;  // per link: usable (state up and both ends up)
    std::vector<float> maxUpCap_, maxDownCap_;
    std::vector<std::uint32_t> mark1_, mark2_, forced_;
    std::uint32_t epoch_ = 0;
    std::vector<std::int32_t> q1_[4], q2_[4];
    EntryChanges* changes_ = nullptr;
};

// The deterministic addressing and ASN plan of a RoCE fabric (RFC 7938 style).
//   ASNs (4-byte private): all ATSWs 4200000000; the CTSWs of zone z 4200000001 + z;
//   RTSW (tier-1 ordinal i) 4200001000 + i.
//   Loopbacks: 10.254.0.0/16, switch id i -> 10.254.(i / 256).(i % 256)/32.
//   Rack prefixes: RTSW ordinal i -> 10.128.0.0 + 64·i, a /26 (≤ 62 host addresses);
//   NIC k of the rack gets prefix + 1 + k; the RTSW itself prefix + 62.
// Limits: ≤ 65,536 switches, ≤ 65,536 racks.
struct AddressPlan {
    static std::uint32_t asn(const Topology& t, std::int32_t sw);
    static std::string loopback(std::int32_t sw);          // "10.254.0.7"
    static std::string rackPrefix(std::int32_t ordinal);   // "10.128.1.64/26"
    static std::string rackGateway(std::int32_t ordinal);  // "10.128.1.126/26"
    // The fewest CIDR prefixes covering exactly the rack prefixes of ordinals first..last
    // (a zone's aggregate): 192 racks from ordinal 0 -> 10.128.0.0/19 and 10.128.32.0/20.
    static std::vector<std::string> rackRangePrefixes(std::int32_t first, std::int32_t last);
};

}  // namespace loom::fabric
