// Failure impact: what bus bandwidth a collective over a set of hosts gets on the current
// routes, and a cluster-wide per-rack degradation map. The server's POST /fabric/impact and
// GET /fabric/degradation and the console call these.
//
// Flow model (documented limits, not a packet simulation):
//   - NCCL-style rails: rank traffic of GPU i leaves on backend NIC i and stays on rail i.
//     Ring AllReduce / AllGather: per rail, host j sends to host j+1 (in the order given);
//     AllToAll: per rail, every host sends to every other host.
//   - RoCE: a flow is split over the ECMP next hops in proportion to the weights (a fluid
//     model of per-flow hashing); InfiniBand: the single LFT path.
//   - Each link direction's load is the (fractional) number of flows on it (full duplex); a flow's rate is the minimum
//     over the links it uses of capacity / load, capped at the NIC rate.
//   - busBwNormalized = 100 · (slowest flow rate · flows per NIC) / NIC rate — nccl-tests'
//     busbw (allreduce algbw·2(n-1)/n, allgather and alltoall algbw·(n-1)/n) relative to
//     the line rate, since a ring's busbw equals the rate of its slowest link.
// Limits: AllToAll at most kAllToAllMaxHosts hosts (m² flows per rail).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"

namespace loom::fabric {

enum class Collective : std::uint8_t { AllReduce, AllGather, AllToAll };
std::optional<Collective> parseCollective(std::string_view s);  // "allreduce", "all_gather", ...
std::string_view collectiveName(Collective c);

inline constexpr std::int32_t kAllToAllMaxHosts = 1024;

struct Bottleneck {
    std::int32_t link = kNone;
    std::string name;
    bool up = true;          // direction: up = from the link's lower end (aPort) to its upper end
    double flows = 0;        // (fractional) flows on the link in that direction
    double gbpsPerFlow = 0;  // capacity / flows
};

struct ImpactResult {
    double busBwNormalized = 0;  // 0..100
    double busBwGbps = 0;
    std::int64_t flows = 0;
    std::int64_t unroutedFlows = 0;  // endpoints unreachable: they make the result 0
    std::vector<Bottleneck> bottlenecks;  // the links that set the slowest rate, worst first
    // Every link the collective's traffic crosses in either direction (NIC cables and fabric
    // links of every ECMP branch), ascending ids: what a change must touch to move the result.
    std::vector<std::int32_t> linksCrossed;
};

// hosts: host ids of the topology. Errors: empty set, unknown id, duplicate host, AllToAll
// over more than kAllToAllMaxHosts hosts.
Result<ImpactResult> impact(const Router& router, std::span<const std::int32_t> hosts,
                            Collective collective, std::size_t maxBottlenecks = 10);
// The same by host name; an unknown name is an InvalidArgument error naming it.
Result<ImpactResult> impactByName(const Router& router, std::span<const std::string> hosts,
                                  Collective collective, std::size_t maxBottlenecks = 10);
// The same on the summarised RoCE tables (loomd's fabric state on RoCE): the same results as
// on a full Router of the same fabric (tests/fabric/summary_router_export_test.cpp).
Result<ImpactResult> impact(const SummaryRouter& router, std::span<const std::int32_t> hosts,
                            Collective collective, std::size_t maxBottlenecks = 10);
Result<ImpactResult> impactByName(const SummaryRouter& router, std::span<const std::string> hosts,
                                  Collective collective, std::size_t maxBottlenecks = 10);

// For every rack (index into Topology::rackNames): the normalized bandwidth (0..100) a job
// spanning that rack and any other rack would get now — min over the rack's leaves and over
// every other live leaf (serving hosts, at least one usable uplink) of min(1, route bandwidth
// both ways / the leaf's host-facing capacity), counting only cables in service.
// Racks none of whose backend NIC cables is in service (planned, drained, failed, or a rack
// with no backend NICs such as storage) get kRackNotInService: they carry no job, so they are
// not "degraded", and they do not drag the other racks' scores down.
inline constexpr float kRackNotInService = -1.0f;
std::vector<float> degradationMap(const Router& router);
std::vector<float> degradationMap(const SummaryRouter& router);  // RoCE: the same map

}  // namespace loom::fabric
