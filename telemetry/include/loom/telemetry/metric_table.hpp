// The metric table, read-only: every Prometheus metric name the telemetry hub keeps, and which
// exporter writes it. The table itself (telemetry/src/metric_table.cpp) is the one place that
// says what Loom reads; configs/exporters/ (dcgm-exporter counters, snmp_exporter module,
// node_exporter flags) and docs/telemetry.md are checked against this list by
// tests/telemetry/exporter_configs_test.cpp.
//
//   for (const auto& m : loom::telemetry::metricNames())
//       if (m.source == "dcgm") ...   // "DCGM_FI_DEV_GPU_UTIL", ...
#pragma once

#include <string_view>
#include <vector>

namespace loom::telemetry {

struct MetricName {
    std::string_view name;
    // "dcgm" (dcgm-exporter), "node" (node_exporter's InfiniBand collector), "snmp"
    // (snmp_exporter, IF-MIB) or "loom" (Loom's own port counters, for a site's collector).
    std::string_view source;
};

// Every name of the table, sorted by name.
std::vector<MetricName> metricNames();

}  // namespace loom::telemetry
