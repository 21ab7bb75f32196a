// Helpers shared by the exporters (export.cpp, export_opensm.cpp, export_summary.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/fabric/export.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/inventory/json_text.hpp"

namespace loom::fabric::detail {

inline int localPort(const Topology& t, std::int32_t l, std::int32_t node) {
    return t.linkA[l] == node ? t.linkAPort[l] : t.linkBPort[l];
}

inline std::string nodeName(const Topology& t, std::int32_t v) {
    return t.isSwitch(v) ? t.switchNames[v] : t.nicNames[v - t.switchCount()];
}

// One RoCE switch's route table as one JSON line, per rack (routesJson) or summarised
// (summaryRoutesJson): {"switch", "asn", "loopback"[, "summarised": true], "groups": [[next
// hops]], "routes": {prefix: group index | "local" | null}}. Groups are numbered in the order
// the routes first use them.
class RoceTableJson {
public:
    // The next hops of a group id (Router::group or SummaryRouter::group).
    using Groups = std::function<std::span<const NextHop>(std::int32_t)>;
    RoceTableJson(const Topology& t, Groups groups, std::int32_t sw, bool summarised);
    void route(std::string_view prefix, std::int32_t group);  // group: an id, kLocal or kNoRoute
    std::string finish() &&;

private:
    const Topology& t_;
    Groups groups_;
    std::int32_t sw_;
    std::string head_, routes_;
    std::map<std::int32_t, std::int32_t> local_;  // global group id -> local index
};

// What follows "0xLLLL PPP" on an LFT line (ExportOptions::opensmNames/opensmGuids).
enum class LftComment { Named, Guid, None };

LftComment lftComment(const ExportOptions& opt);

// Formats the switches' tables on `threads` threads while the calling thread writes the
// previous round in order: at most 2 * threads tables in memory (export_opensm.cpp).
Result<void> streamLftDump(const Router& r,
                           const std::function<std::uint64_t(std::int32_t)>& guidOf,
                           ExportSink& sink, int threads, LftComment comment);

// Collects a streamed export in memory.
class MemorySink : public ExportSink {
public:
    std::vector<ExportFile> files;
    Result<void> open(const std::string& name) override {
        files.push_back({name, {}});
        return {};
    }
    Result<void> write(std::string_view chunk) override {
        files.back().content += chunk;
        return {};
    }
    Result<void> close() override { return {}; }
};

}  // namespace loom::fabric::detail
