// Exporters: the computed routes as files the real systems load.
//
//   frr     one `<switch>.conf` per RoCE switch: FRR integrated config with BGP unnumbered
//           eBGP on the AddressPlan ASNs, multipath-relax, maximum-paths 64, loopback and
//           rack prefix `network` statements, and the link-bandwidth extended community
//           (`set extcommunity bandwidth cumulative`) so unequal-cost multipath follows lost links.
//           Drained or down links get `neighbor swpN shutdown`. Interfaces are `swp<port>`.
//           Version-dependent lines follow ExportOptions::frrVersion (FrrProfile).
//   opensm  `opensm-lfts.dump` in the format of OpenSM's `file` routing engine (-R file -U),
//           streamed (bounded memory, formatted on several threads), `guid2lid` in
//           OpenSM's database format (opensm -x / honor_guid2lid) with Loom's LIDs, and
//           `node-name-map` (GUID -> name, rdma-core's node name map format). GUIDs are
//           deterministic: switch 0x0002c90300000000 + id + 1, HCA port 0x0002c90400000000 +
//           NIC index + 1 (inventory carries no GUIDs yet).
//   slurm   `topology.conf` for the tree plugin: leaf switches with their hosts (a host sits
//           under the leaf of its first backend NIC), one logical switch per zone, one root.
//   json    `routes/<switch>.json`: RoCE {switch, asn, loopback, groups, routes: prefix→group}
//           (summarised: zone aggregates + own-zone racks + more-specifics, ExportOptions);
//           InfiniBand {switch, lid, guid, lft: [port per LID]} (255 = drop).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary.hpp"
#include "loom/fabric/summary_router.hpp"

namespace loom::fabric {

enum class ExportFormat : std::uint8_t { Frr, Opensm, Slurm, Json };
std::optional<ExportFormat> parseExportFormat(std::string_view s);
std::string_view exportFormatName(ExportFormat f);

struct ExportFile {
    std::string name;  // relative path, e.g. "z1-r001-rtsw.conf" or "routes/core001.json"
    std::string content;
};

struct ExportOptions {
    // Threads formatting the opensm LFT dump (one switch table at a time each); 0 = one per
    // hardware thread. The output is the same for every value.
    int threads = 0;
    // opensm: each LFT line ends in `# portguid 0x…`, all that OpenSM's file engine reads of
    // it besides LID and port (the GUID lets it remap a LID; opensm/osm_ucast_file.c), and the
    // names go once into `node-name-map`. true: OpenSM's own comment, `# Channel Adapter
    // portguid 0x…: 'name'` on every line: twice the bytes (4.1 GB instead of 2.2 GB at 24k),
    // which made the dump miss 5 s on a loaded machine (issue 37).
    bool opensmNames = false;
    // opensm, with opensmNames false: no comment at all, `0xLLLL PPP` (11 bytes a line: 0.6 GB
    // at 24k instead of 2.2 GB). OpenSM's file engine then takes each LID as it is instead of
    // remapping it through the GUID, so load the exported guid2lid with it (OpenSM keeps
    // Loom's LIDs then; tests/fabric/daemons/opensm_test.cpp proves both on the real OpenSM).
    bool opensmGuids = true;
    // frr: the FRR version the configs are for ("MAJOR.MINOR"; Debian 12 ships 8.4). From
    // 7.3 on, zebra installs ECMP routes as kernel nexthop groups; on 8.4 the kernel FIB then
    // keeps fewer next hops than zebra's RIB after a link or switch flaps back (measured: 15
    // of 16, 11 of 16 after a switch repair). So for >= 7.3 Loom emits
    // `no zebra nexthop kernel enable` (routes carry their next hops inline, re-installed
    // whole); before 7.3 the command does not exist and nothing is emitted. A version shown
    // by the FRR daemon test to keep the FIB whole may be given an exception here.
    std::string frrVersion = "8.4";
    // RoCE json and frr follow the summarised routing (summary.hpp): json lists per switch the
    // racks of its own zone, one entry per CIDR piece of every other zone's aggregate and the
    // more-specifics (longest prefix wins; null = unreachable); frr makes the ATSWs originate
    // the zone aggregates (`aggregate-address … as-set summary-only`) and keep announcing the
    // racks some remote switch routes differently (`unsuppress-map`). false: one route per
    // rack everywhere, no aggregates (the Loom 0.x output).
    bool summarise = true;
};

// FRR config knobs that depend on the version (ExportOptions::frrVersion). Error: not
// "MAJOR.MINOR" (InvalidArgument, path "frr_version").
struct FrrProfile {
    int major = 8, minor = 4;
    bool disableKernelNexthopGroups = true;  // emit `no zebra nexthop kernel enable`
};
Result<FrrProfile> frrProfile(std::string_view version);

// Where a streamed export goes: files one after another, each as a sequence of chunks.
class ExportSink {
public:
    virtual ~ExportSink() = default;
    virtual Result<void> open(const std::string& name) = 0;
    // Called on the formatting threads, several chunks at once, before write(); a sink that
    // compresses does it here so compression runs in parallel too. Default: unchanged.
    virtual void encode(std::string& chunk) { (void)chunk; }
    virtual Result<void> write(std::string_view chunk) = 0;  // in file order
    virtual Result<void> close() = 0;
};

// Streams the export into `sink`. Memory stays bounded whatever the fabric size: the opensm
// dump is produced one switch table per chunk (~2 MB at 24k) with at most two chunks per
// thread in flight. Errors: frr on an InfiniBand fabric, opensm on a RoCE fabric
// (InvalidArgument), and whatever the sink returns.
Result<void> writeExport(const Router& router, ExportFormat format, ExportSink& sink,
                         const ExportOptions& options = {});

// The same collected in memory (the HTTP API, tests). Fine for frr/slurm/json at any size;
// the opensm dump of a 24k fabric is ~3.9 GB: stream it with writeExport instead.
Result<std::vector<ExportFile>> exportFabric(const Router& router, ExportFormat format,
                                             const ExportOptions& options = {});

// The RoCE exports (frr, json, slurm) from the summarised tables alone: byte for byte what the
// Router overloads write for the same fabric (tests/fabric/summary_export_test.cpp, under random
// failures), without the switches × racks tables (at 98k the Router's ~400 MB). InfiniBand:
// slurm only (LFTs are per LID: InvalidArgument for the others).
Result<void> writeExport(const SummaryRouter& router, ExportFormat format, ExportSink& sink,
                         const ExportOptions& options = {});
Result<std::vector<ExportFile>> exportFabric(const SummaryRouter& router, ExportFormat format,
                                             const ExportOptions& options = {});

// What the tier-3 switches' FRR configs summarise: every aggregated zone's prefixes and the
// rack prefixes still announced under them (racks that some switch outside their zone routes
// differently from the rest of the zone: failures broke the symmetry).
struct FrrAggregates {
    std::vector<std::string> prefixes;      // aggregate-address P as-set summary-only
    std::vector<std::string> unsuppressed;  // rack prefixes, via route-map LOOM-UNSUPPRESS
};
FrrAggregates frrAggregates(const Router& router, const RouteSummary& summary);
FrrAggregates frrAggregates(const SummaryRouter& router);

// aggregates: null (or a non-tier-3 switch) -> no aggregate lines. linkStates, switches: the
// config as it was with those link states and switch up-ness in place of the current ones (an
// earlier version); it reads no routes, only whether the switch's links carry traffic.
std::string frrConfig(const Router& router, std::int32_t sw, const FrrProfile& profile = {},
                      const FrrAggregates* aggregates = nullptr, LinkStates linkStates = {},
                      SwitchUps switches = {});
std::string frrConfig(const SummaryRouter& router, std::int32_t sw, const FrrProfile& profile = {},
                      const FrrAggregates* aggregates = nullptr, LinkStates linkStates = {},
                      SwitchUps switches = {});
std::string opensmLftDump(const Router& router);
// The same with the GUIDs a subnet manager discovered (node id -> node GUID for switches,
// port GUID for HCAs); 0 from guidOf keeps Loom's deterministic GUID.
std::string opensmLftDump(const Router& router,
                          const std::function<std::uint64_t(std::int32_t node)>& guidOf);
// The topology in the JSON of ../shared/tools/opensm-compare (nodes: hca/switch with port
// counts; links with 1-based ports), so the real OpenSM can route the identical fabric.
std::string opensmCompareJson(const Topology& topo);
// OpenSM's guid2lid cache (opensm -x / honor_guid2lid) with Loom's LIDs, in the format of
// OpenSM's own database files: `0xGUID 0xLID 0xLID` entries separated by a blank line.
std::string opensmGuid2lid(const Router& router);
// The names the dump leaves out, once per node: `0xNODEGUID "name"` (rdma-core's node name
// map, read by ibnetdiscover/dump_fts/ibroute --node-name-map and OpenSM's
// node_name_map_name). A switch's node GUID is switchGuid; an HCA's is hcaPortGuid - 1.
std::string opensmNodeNameMap(const Topology& topo);
// The fabric as an ibsim net file (ibnetdiscover syntax, node descriptions = Loom names),
// with `do Guid` lines giving every node Loom's GUIDs, so that OpenSM on ibsim sees Loom's
// GUIDs and can keep Loom's LIDs. The first node is the first HCA (ibsim's SM port).
std::string ibsimNet(const Topology& topo);
std::string slurmTopology(const Router& router);
std::string slurmTopology(const Topology& topo);
std::string routesJson(const Router& router, std::int32_t sw);
std::string routesJson(const SummaryRouter& router, std::int32_t sw);  // RoCE, one route per rack
// What GET /fabric/config/{sw} shows of a switch: RoCE its FRR config (frrConfig, default
// profile, no aggregates), InfiniBand its LFT (routesJson). With linkStates and switches: as it
// was with those link states and switch up-ness (an earlier version, ?previous=true), computed
// without copying the router (InfiniBand: Router::lftRowWith, about one single-threaded routing
// pass).
std::string switchConfig(const Router& router, std::int32_t sw, LinkStates linkStates = {},
                         SwitchUps switches = {});
std::string switchConfig(const SummaryRouter& router, std::int32_t sw, LinkStates linkStates = {},
                         SwitchUps switches = {});  // RoCE
// The summarised table of sw (ExportOptions::summarise): {switch, asn, loopback, summarised:
// true, groups, routes} with zone aggregate and more-specific prefixes.
std::string summaryRoutesJson(const Router& router, const RouteSummary& summary, std::int32_t sw);
std::string summaryRoutesJson(const SummaryRouter& router, std::int32_t sw);

std::uint64_t switchGuid(std::int32_t sw);
std::uint64_t hcaPortGuid(std::int32_t nic);

}  // namespace loom::fabric
