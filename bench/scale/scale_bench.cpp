// Scale benchmark (issue 14): for one cluster spec, one JSON object per measured step
// (InfiniBand: expand, topology, routing, reroute_leaf/spine_uplink, export_opensm/json, peak):
//   expand     - load + validate + expand the spec
//   topology   - buildTopology
//   summary_routing - SummaryRouter: the summarised tables computed directly (zone routers +
//                one representative per class of racks), wall, CPU, entries, peak RSS so far
//   summary_reroute_* - one RTSW uplink / one CTSW uplink down then up on the SummaryRouter
//   summary_export_json/frr - the exports written from the SummaryRouter alone
//                (everything: zone router, representatives, reclassing, cells), median / max
//   routing    - full routing (Router: every switch x rack entry), wall and process CPU
//   summary    - RouteSummary from those tables; entries summarised vs full
//   reroute    - one RTSW uplink down then up again, and one CTSW uplink: Router incremental
//                update + RouteSummary::update, median / max of the repetitions
//   export_*   - json (summarised and per rack) and frr, bytes counted, nothing kept
//   peak       - peak RSS of the process
// One spec per process, so the RSS is that cluster's.
//
//   loom_bench_scale SPEC [--reps N] [--summary-only]
#include "lib/measure.hpp"


#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "loom/fabric/export.hpp"
#include "loom/fabric/summary.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/inventory/spec.hpp"

namespace {

using loom::bench::Clock;
using loom::bench::cpuMs;
using loom::bench::msSince;
using loom::bench::peakRssMb;

// Counts what an export writes; keeps nothing.
class CountingSink : public loom::fabric::ExportSink {
public:
    loom::Result<void> open(const std::string&) override {
        ++files;
        return {};
    }
    loom::Result<void> write(std::string_view chunk) override {
        bytes += chunk.size();
        return {};
    }
    loom::Result<void> close() override { return {}; }
    std::size_t files = 0, bytes = 0;
};

void step(const char* name, double wall, double cpu, const std::string& extra = {}) {
    std::printf("{\"step\":\"%s\",\"wall_ms\":%.1f,\"cpu_ms\":%.1f%s%s,\"peak_rss_mb\":%ld}\n", name,
                wall, cpu, extra.empty() ? "" : ",", extra.c_str(), peakRssMb());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    using namespace loom::fabric;
    if (argc < 2) {
        std::fprintf(stderr, "usage: loom_bench_scale SPEC [--reps N]\n");
        return 2;
    }
    std::string spec = argv[1];
    int reps = 21;
    bool summaryOnly = false;
    for (int i = 2; i < argc; ++i) {
        if (std::string(argv[i]) == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[i + 1]));
        if (std::string(argv[i]) == "--summary-only") summaryOnly = true;
    }

    auto t = Clock::now();
    double c = cpuMs();
    auto inv = loom::inventory::loadClusterSpecFile(spec);
    if (!inv) {
        std::fprintf(stderr, "%s: %s\n", spec.c_str(), inv.error().toString().c_str());
        return 2;
    }
    step("expand", msSince(t), cpuMs() - c,
         "\"gpus\":" + std::to_string(inv->gpus.size()) + ",\"entities\":" + std::to_string(inv->totalEntities()));

    t = Clock::now();
    c = cpuMs();
    auto topo = buildTopology(*inv);
    if (!topo) {
        std::fprintf(stderr, "%s\n", topo.error().toString().c_str());
        return 1;
    }
    *inv = {};  // the inventory is not needed any more
    step("topology", msSince(t), cpuMs() - c,
         "\"switches\":" + std::to_string(topo->switchCount()) + ",\"links\":" + std::to_string(topo->linkCount()));

    // InfiniBand has no summarised routing (every switch holds a full LFT): the full Router,
    // its reroutes (leaf and spine uplinks) and the opensm export below.
    const bool ib = topo->type == loom::inventory::FabricType::Infiniband;
    if (!ib) {
        t = Clock::now();
        c = cpuMs();
        SummaryRouter sr(summaryOnly ? std::move(*topo) : *topo);
        step("summary_routing", msSince(t), cpuMs() - c,
             "\"entries\":" + std::to_string(sr.entryCount()) + ",\"aggregates\":" +
                 std::to_string(sr.aggregateCount()) + ",\"classes\":" + std::to_string(sr.classCount()) +
                 ",\"summary_mb\":" + std::to_string(sr.memoryBytes() >> 20));
        const auto& tp = sr.topology();
        for (int tier : {1, 2}) {
            const auto& sws = tp.tierSwitches[tier];
            if (sws.empty()) continue;
            auto sw = sws[sws.size() / 2];
            if (tp.upLinks(sw).empty()) continue;
            auto link = tp.upLinks(sw)[0];
            std::vector<double> times, cpus;
            int cells = 0;
            for (int i = 0; i < reps; ++i)
                for (auto state : {LinkState::Down, LinkState::Up}) {
                    auto t0 = Clock::now();
                    auto c0 = cpuMs();
                    auto st = sr.setLinkState(link, state);
                    times.push_back(msSince(t0));
                    cpus.push_back(cpuMs() - c0);
                    cells = std::max(cells, st.cellsSummarised);
                }
            std::sort(times.begin(), times.end());
            std::sort(cpus.begin(), cpus.end());
            char extra[320];
            std::snprintf(extra, sizeof extra,
                          "\"tier\":%d,\"median_ms\":%.3f,\"p90_ms\":%.3f,\"max_ms\":%.3f,\"cpu_median_ms\":%.3f,"
                          "\"cells_max\":%d",
                          tier, times[times.size() / 2], times[times.size() * 9 / 10], times.back(),
                          cpus[cpus.size() / 2], cells);
            step(tier == 1 ? "summary_reroute_rtsw_uplink" : "summary_reroute_ctsw_uplink", 0, 0, extra);
        }
        // The RoCE exports from the SummaryRouter alone (what loomctl fabric export writes).
        for (auto [name, format] : {std::pair{"summary_export_json", ExportFormat::Json},
                                    std::pair{"summary_export_frr", ExportFormat::Frr}}) {
            CountingSink sink;
            t = Clock::now();
            c = cpuMs();
            if (auto ok = writeExport(sr, format, sink); !ok) {
                std::fprintf(stderr, "%s: %s\n", name, ok.error().toString().c_str());
                return 1;
            }
            step(name, msSince(t), cpuMs() - c,
                 "\"files\":" + std::to_string(sink.files) + ",\"mb\":" + std::to_string(sink.bytes >> 20));
        }
        if (summaryOnly) {
            std::printf("{\"step\":\"peak\",\"peak_rss_mb\":%ld}\n", peakRssMb());
            return 0;
        }
    }

    t = Clock::now();
    c = cpuMs();
    Router r(std::move(*topo));
    const auto full = static_cast<long long>(r.topology().switchCount()) * r.targetCount();
    step("routing", msSince(t), cpuMs() - c,
         "\"entries\":" + std::to_string(full) + ",\"tables_mb\":" + std::to_string(r.memoryBytes() >> 20));

    t = Clock::now();
    c = cpuMs();
    EntryChanges changes;
    std::optional<RouteSummary> sum;
    if (!ib) {
        r.recordChanges(&changes);
        sum.emplace(r);
        step("summary", msSince(t), cpuMs() - c,
             "\"entries\":" + std::to_string(sum->entryCount()) + ",\"aggregates\":" +
                 std::to_string(sum->aggregateCount()) + ",\"full_entries\":" +
                 std::to_string(full) + ",\"summary_mb\":" + std::to_string(sum->memoryBytes() >> 20));
    }

    // One-link reroutes: an RTSW uplink and a CTSW uplink in the middle of the fabric.
    const auto& tp = r.topology();
    for (int tier : {1, 2}) {
        const auto& sws = tp.tierSwitches[tier];
        if (sws.empty()) continue;
        auto sw = sws[sws.size() / 2];
        if (tp.upLinks(sw).empty()) continue;
        auto link = tp.upLinks(sw)[0];
        std::vector<double> route, summ;
        std::int64_t entries = 0;
        for (int i = 0; i < reps; ++i)
            for (auto state : {LinkState::Down, LinkState::Up}) {
                auto t0 = Clock::now();
                auto st = r.setLinkState(link, state);
                route.push_back(msSince(t0));
                entries = std::max(entries, st.entriesRecomputed);
                if (!sum) continue;
                auto t1 = Clock::now();
                sum->update(r, changes, st.full);
                summ.push_back(msSince(t1));
            }
        std::sort(route.begin(), route.end());
        std::sort(summ.begin(), summ.end());
        char extra[256];
        int n = std::snprintf(extra, sizeof extra,
                              "\"tier\":%d,\"router_median_ms\":%.3f,\"router_max_ms\":%.3f,"
                              "\"entries_recomputed\":%lld",
                              tier, route[route.size() / 2], route.back(),
                              static_cast<long long>(entries));
        if (!summ.empty())  // RoCE: the RouteSummary's update after the Router's
            std::snprintf(extra + n, sizeof extra - n,
                          ",\"summary_median_ms\":%.3f,\"summary_max_ms\":%.3f",
                          summ[summ.size() / 2], summ.back());
        step(tier == 1 ? (ib ? "reroute_leaf_uplink" : "reroute_rtsw_uplink")
                       : (ib ? "reroute_spine_uplink" : "reroute_ctsw_uplink"),
             0, 0, extra);
    }
    if (sum) r.recordChanges(nullptr);

    struct Ex {
        const char* name;
        ExportFormat format;
        bool summarise;
    };
    const std::vector<Ex> exports =
        ib ? std::vector<Ex>{Ex{"export_opensm", ExportFormat::Opensm, false},
                             Ex{"export_json", ExportFormat::Json, false}}
           : std::vector<Ex>{Ex{"export_json_summarised", ExportFormat::Json, true},
                             Ex{"export_frr", ExportFormat::Frr, true},
                             Ex{"export_json_per_rack", ExportFormat::Json, false}};
    for (const Ex& ex : exports) {
        CountingSink sink;
        t = Clock::now();
        c = cpuMs();
        auto ok = writeExport(r, ex.format, sink, {.summarise = ex.summarise});
        if (!ok) {
            std::fprintf(stderr, "%s: %s\n", ex.name, ok.error().toString().c_str());
            return 1;
        }
        step(ex.name, msSince(t), cpuMs() - c,
             "\"files\":" + std::to_string(sink.files) + ",\"mb\":" + std::to_string(sink.bytes >> 20));
    }
    std::printf("{\"step\":\"peak\",\"peak_rss_mb\":%ld}\n", peakRssMb());
    return 0;
}
