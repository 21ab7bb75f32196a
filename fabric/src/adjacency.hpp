// The CSR adjacency of a topology's links (Topology::adjOffset, adjLink, adjUpBegin), as
// buildTopology and the SummaryRouter's zone sub-topologies both build it: per node its
// down-links (the node is the link's upper end, linkB) first, then its up-links (linkA), each
// by the node's own port number, so next hops come in one order wherever they are computed.
//
//   auto adj = buildAdjacency(N, linkA, linkB, linkAPort, linkBPort);
//   t.adjOffset = std::move(adj.offset);
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace loom::fabric::detail {

struct Adjacency {
    std::vector<std::int32_t> offset;   // nodes + 1
    std::vector<std::int32_t> link;     // 2 x links
    std::vector<std::int32_t> upBegin;  // per node: first up-link position in `link`
};

inline Adjacency buildAdjacency(std::int32_t nodes, std::span<const std::int32_t> linkA,
                                std::span<const std::int32_t> linkB,
                                std::span<const std::uint16_t> aPort,
                                std::span<const std::uint16_t> bPort) {
    const auto L = static_cast<std::int32_t>(linkA.size());
    Adjacency adj;
    adj.offset.assign(static_cast<std::size_t>(nodes) + 1, 0);
    for (std::int32_t l = 0; l < L; ++l) {
        ++adj.offset[linkA[l] + 1];
        ++adj.offset[linkB[l] + 1];
    }
    for (std::int32_t v = 0; v < nodes; ++v) adj.offset[v + 1] += adj.offset[v];
    adj.link.assign(adj.offset[nodes], 0);
    std::vector<std::int32_t> fill(adj.offset.begin(), adj.offset.end() - 1);
    for (std::int32_t l = 0; l < L; ++l) {
        adj.link[fill[linkA[l]]++] = l;
        adj.link[fill[linkB[l]]++] = l;
    }
    adj.upBegin.assign(static_cast<std::size_t>(nodes), 0);
    for (std::int32_t v = 0; v < nodes; ++v) {
        auto b = adj.link.begin() + adj.offset[v], e = adj.link.begin() + adj.offset[v + 1];
        auto localPort = [&](std::int32_t l) { return linkA[l] == v ? aPort[l] : bPort[l]; };
        std::sort(b, e, [&](std::int32_t x, std::int32_t y) {
            const bool ux = linkA[x] == v, uy = linkA[y] == v;  // v is the lower end: up-link
            if (ux != uy) return !ux;
            return localPort(x) < localPort(y);
        });
        adj.upBegin[v] = static_cast<std::int32_t>(
            std::find_if(b, e, [&](std::int32_t l) { return linkA[l] == v; }) - adj.link.begin());
    }
    return adj;
}

}  // namespace loom::fabric::detail
