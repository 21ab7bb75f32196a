// RouterRef: the routing the jobs code reads — a full fabric::Router, or the summarised RoCE
// tables (fabric::SummaryRouter) that loomd holds on RoCE instead (a full Router is ~400 MB at
// 98k GPUs, the summarised tables ~50 MB). Job impact and placement read only the topology and
// fabric::impact, which answer the same on both (tests/fabric/summary_router_export_test.cpp;
// tests/jobs/summary_jobs_test.cpp for the tracker and placement on top).
//
//   jobs::placeJob(summaryRouter, {.gpus = 4096}, avail);  // or a Router: converts implicitly
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "loom/fabric/impact.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/inventory/error.hpp"

namespace loom::jobs {

class RouterRef {
public:
    // Implicit on purpose: every call site passes the router it holds.
    RouterRef(const fabric::Router& r) : full_(&r) {}  // NOLINT(google-explicit-constructor)
    RouterRef(const fabric::SummaryRouter& r)
        : summary_(&r) {}  // NOLINT(google-explicit-constructor)

    const fabric::Topology& topology() const {
        return full_ ? full_->topology() : summary_->topology();
    }
    Result<fabric::ImpactResult> impact(std::span<const std::int32_t> hosts,
                                        fabric::Collective collective,
                                        std::size_t maxBottlenecks = 10) const {
        return full_ ? fabric::impact(*full_, hosts, collective, maxBottlenecks)
                     : fabric::impact(*summary_, hosts, collective, maxBottlenecks);
    }

private:
    const fabric::Router* full_ = nullptr;
    const fabric::SummaryRouter* summary_ = nullptr;
};

}  // namespace loom::jobs
