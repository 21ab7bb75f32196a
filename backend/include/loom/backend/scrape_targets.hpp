// Exporter targets from the inventory: loomd.yaml's `telemetry.targets` templates expanded for
// every host and switch whose rack is rolled in, each target with its kind and the entity it
// stands for. GET /api/v1/sd/prometheus serves them in Prometheus's HTTP SD format.
//
//   telemetry:
//     targets:
//       dcgm: "http://{host}:9400/metrics"
//       node: "http://{host}:9100/metrics"
//       snmp: {url: "http://{exporter}/snmp?target={switch}&module=if_mib",
//              intervalMs: 15000, roles: [rtsw]}   # a template may carry its own interval,
//                                                   # timeout and (snmp) switch roles
//       snmpExporter: "127.0.0.1:9116"
//       addresses: {z1-r001-h0: 10.1.0.11}   # {address}: the entity's address, else its name
//       addressFile: /etc/loom/exporters.hosts  # the same in hosts(5) format
//
//   auto ts = expandTargets(templates, *services.inventory(), ExporterKind::Dcgm);
//   auto sd = prometheusSd(ts);   // [{"targets": ["z1-r001-h0:9400"], "labels": {...}}, ...]
#pragma once

#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/inventory/error.hpp"

namespace loom::inventory {
struct Inventory;
}

namespace loom::backend {

enum class ExporterKind { Dcgm, Node, Snmp };
std::string_view exporterKindName(ExporterKind k);  // "dcgm", "node", "snmp"
std::optional<ExporterKind> parseExporterKind(std::string_view s);

// What a template may carry besides its URL (`{url, intervalMs, timeoutMs, roles}`).
struct KindOptions {
    std::chrono::milliseconds interval{0};  // 0: the scraper's (1 s)
    std::chrono::milliseconds timeout{0};   // 0: the scraper's (5 s)
    // snmp only: the switch roles scraped ("rtsw", "ctsw", ...); empty: every switch.
    std::vector<std::string> roles;
};

struct TargetTemplates {
    std::string dcgm;          // placeholder {host}
    std::string node;          // placeholder {host}
    std::string snmp;          // placeholders {switch}, {exporter}
    std::string snmpExporter;  // "host:port" of snmp_exporter, for {exporter}
    // {address}: the entity's address where the names do not resolve (a lab, a loopback farm,
    // a management network without DNS); an entity not listed is reached by its name.
    std::unordered_map<std::string, std::string> addresses;
    std::array<KindOptions, 3> options;  // by ExporterKind
    const std::string& of(ExporterKind k) const;
    std::string& of(ExporterKind k) { return const_cast<std::string&>(std::as_const(*this).of(k)); }
    const KindOptions& optionsOf(ExporterKind k) const { return options[static_cast<int>(k)]; }
    KindOptions& optionsOf(ExporterKind k) { return options[static_cast<int>(k)]; }
};

// One template: only known placeholders, the entity's placeholder present ({host} for dcgm and
// node, {switch} for snmp, or {address} for either), and an http:// URL once expanded. Errors
// say what is wrong.
Result<void> checkTemplate(ExporterKind kind, std::string_view tmpl);

// `tmpl` with {host} / {switch} replaced by `entity`, {exporter} by `exporter` and {address} by
// `address` (an IPv6 address in brackets); an empty `address` is the entity's name.
std::string expandTemplate(std::string_view tmpl, std::string_view entity,
                           std::string_view exporter, std::string_view address = {});

// A hosts(5)-format text (`ADDRESS NAME [NAME...]` lines, `#` comments) into `out`, name ->
// address; the first line naming a name wins, as in /etc/hosts. Errors name the line:
// an address that is not an IPv4 or IPv6 address, a line with no name.
Result<void> readAddressFile(std::string_view text, std::string_view fileName,
                             std::unordered_map<std::string, std::string>& out);

// A rack's exporters answer from `powered` until it is drained or decommissioned: planned,
// delivered, racked, cabled, drained and decommissioned racks are not scraped.
bool rackIsScraped(std::string_view rackState);

struct ExporterTarget {
    ExporterKind kind = ExporterKind::Dcgm;
    std::string entity;  // the host or switch this target stands for
    std::string url;
    std::string rack, zone, role, state;  // role: "host" for hosts, the switch's role
    // The template's interval and timeout (0: the scraper's).
    std::chrono::milliseconds interval{0}, timeout{0};
};

// Every target of `kind` (empty when its template is empty): hosts of scraped racks (not in
// rma or decommissioned), and for snmp the switches of scraped racks plus every switch outside
// a compute rack (CTSW, spine, core) that is not decommissioned, only those of the template's
// roles when it lists some. Each target carries its template's interval and timeout. In
// inventory order.
std::vector<ExporterTarget> expandTargets(const TargetTemplates& templates,
                                          const inventory::Inventory& inv, ExporterKind kind);

// Prometheus HTTP SD: one group per target; `__address__` is the URL's host:port, its path is
// `__metrics_path__`, its query parameters `__param_<name>`; labels cluster, rack, zone, role,
// state, and `host` or `switch`; for snmp `instance` is the switch (as Loom's ingest expects).
nlohmann::json prometheusSd(const std::vector<ExporterTarget>& targets, std::string_view cluster);

}  // namespace loom::backend
