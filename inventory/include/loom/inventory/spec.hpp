// The cluster spec: a compact YAML (or JSON) description of a data hall, and its expansion
// into every concrete entity and cable of an Inventory.
//
//   auto inv = loadClusterSpecFile("configs/clusters/meta-24k-roce.yaml");
//   if (!inv) { std::cerr << inv.error().toString() << '\n'; return 2; }
//
// A spec holds counts, naming patterns and cabling rules rather than entities, plus explicit
// overrides for where the real hall deviates (a rack with one host, a different switch model,
// a miscabled port). The format, every key, its defaults and limits, the naming patterns and
// the port-to-port cabling rules are documented in docs/cluster-spec.md.
//
// Every failure is a loom::Error naming the document path and line; nothing throws. Parsing
// checks everything that can be checked on the compact form (types, keys, counts, references,
// port capacity); expansion checks what needs concrete names (overrides naming unknown
// entities, duplicate generated names, port capacity after model overrides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

namespace loom::inventory {

// Hard limits on an input document; exceeding any is an error, never a crash or a stall.
struct SpecLimits {
    std::size_t maxBytes = 8 << 20;  // document size (Errc::TooLarge)
    std::size_t maxNodes = 200'000;  // YAML nodes, aliases counted per use (Errc::TooLarge)
    int maxDepth = 24;               // nesting depth of maps/sequences
    int maxZones = 1024;             // zones (AI zones or pods)
    int maxRowsPerZone = 256;
    int maxRacksPerZone = 8192;
    int maxHostsPerRack = 64;
    int maxGpusPerHost = 64;
    int maxNicsPerHost = 64;
    int maxSwitchPorts = 4096;  // ports of a switch model
    int maxSwitchesPerTier = 100'000;
    int maxStorageNodes = 100'000;
    // Concrete entities the spec may expand to: ~8x the 24k cluster (247k entities, 53 MB),
    // so one request cannot make the server allocate gigabytes.
    std::size_t maxEntities = 2'000'000;
    std::size_t maxOverrides = 100'000;  // entries in spec.overrides, all lists together
};

// Where a part of the spec came from, so expansion errors can point into the document.
struct SpecSource {
    std::string path;  // "spec.zones[2]"
    int line = 0;      // 1-based, 0 if unknown
};

struct HostModelSpec {
    std::string name;
    int gpus = 8;
    std::string gpuModel = "H100-SXM5-80GB";
    int backendNics = 8;  // one per GPU: NIC i serves GPU i and is on rail i
    std::string backendNicModel = "ConnectX-7";
    int backendSpeedGbps = 400;
    int frontendNics = 1;
    std::string frontendNicModel = "ConnectX-6-Dx";
    int frontendSpeedGbps = 100;
    // NIC identity (nic_identity.hpp): what node_infiniband_info{hca_type} reports for each
    // kind of NIC (default: from the model's name, "" when not in the table) and, optionally,
    // each NIC's PCI address in NIC (rail) order, canonical.
    std::string backendNicHcaType;
    std::string frontendNicHcaType;
    std::vector<std::string> backendNicPci;
    std::vector<std::string> frontendNicPci;
    SpecSource source;
};

struct SwitchModelSpec {
    std::string name;
    int ports = 0;
    int speedGbps = 400;
    std::string portNaming;  // port_naming.hpp's canonical text; empty = Loom's own names
    SpecSource source;
};

struct StorageModelSpec {
    std::string name;
    double capacityTb = 0;
    int nics = 2;
    std::string nicModel = "ConnectX-7";
    int nicSpeedGbps = 200;
    SpecSource source;
};

// Naming patterns. Placeholders: {name} inserts a parent's name, {n} or {n:03} a number
// (zero-padded to the given width). Which placeholders each pattern accepts is listed in
// docs/cluster-spec.md; an unknown placeholder is a parse error.
struct NamingSpec {
    std::string zone = "z{n}";
    std::string row = "{zone}-row{n:02}";
    std::string rack = "{zone}-r{n:03}";
    std::string host = "{rack}-h{n}";
    std::string rtsw = "{rack}-rtsw";
    std::string ctsw = "{zone}-ctsw{n:02}";
    std::string atsw = "atsw{n:02}";
    std::string su = "su{n:03}";
    std::string leaf = "{su}-leaf{n}";
    std::string spine = "{zone}-spine{n:02}";
    std::string core = "core{n:03}";
    std::string fsw;  // default "{rack}-fsw" or "{row}-fsw", by frontend.fsw.per
    std::string fcsw = "fcsw{n:02}";
    std::string storageRow = "{zone}-srow{n:02}";
    std::string storageRack = "{zone}-s{n:02}";
    std::string storageNode = "{rack}-n{n}";
    std::string ssw = "{rack}-ssw";
    SpecSource source;
};

// Cable media and lengths from a simple floor model (docs/cluster-spec.md, "Floor").
struct FloorSpec {
    double rackWidthM = 0.6;  // pitch between racks in a row
    double rowPitchM = 3.0;   // pitch between rows (including the aisle)
    double inRackM = 2.0;     // DAC length inside a rack
    double slackM = 3.0;      // added to every rack-to-rack run (risers, bends)
    double aocMaxM = 30.0;    // longer runs use optics
};

struct ZoneSpec {
    std::string name;  // resolved from naming.zone unless given
    int rows = 1;
    int racks = 1;  // in the zone, spread evenly over its rows
    int hostsPerRack = 2;
    std::string hostModel;
    std::string rackModel = "ORv3";
    Labels labels;
    SpecSource source;
};

// One tier of the backend Clos. RoCE: rtsw (one per rack), ctsw (count per zone), atsw (count
// in total). InfiniBand: leaf (one per rail per scalable unit), spine (count per pod), core
// (count in total).
struct TierSpec {
    std::string model;
    int count = 0;    // ctsw/spine: per zone; atsw/core: total; rtsw/leaf: unused (derived)
    int uplinks = 0;  // per switch of this tier, to the tier above
    SpecSource source;
};

struct FabricSpec {
    FabricType type = FabricType::Roce;
    TierSpec tier1;       // rtsw | leaf
    TierSpec tier2;       // ctsw | spine
    TierSpec tier3;       // atsw | core (count 0: no third tier)
    int hostsPerSu = 32;  // InfiniBand: hosts in a scalable unit
    SpecSource source;
};

struct FrontendSpec {
    bool enabled = false;
    std::string fswModel;
    bool fswPerRow = false;  // one fsw per row instead of per rack
    int fswUplinks = 2;
    std::string fcswModel;
    int fcswCount = 0;
    SpecSource source;
};

struct StorageSpec {
    bool enabled = false;
    std::string zone;  // zone the storage row belongs to (default: the first zone)
    int racks = 0;
    int nodesPerRack = 0;
    std::string model;
    std::string sswModel;
    int sswUplinks = 0;  // to the fcsws of the frontend
    SpecSource source;
};

struct RackOverride {
    std::string name;
    std::optional<int> hosts;
    int hostsLine = 0;  // line of the hosts key, for errors found during expansion
    std::optional<std::string> model;
    Labels labels;
    SpecSource source;
};

struct SwitchOverride {
    std::string name;
    std::optional<std::string> model;
    std::optional<std::string> portNaming;  // canonical text (port_naming.hpp)
    Labels labels;
    SpecSource source;
};

struct LabelOverride {
    std::string name;  // any site, zone, row, rack, host, switch or storage node
    Labels labels;
    SpecSource source;
};

// A known cabling deviation. Swap: the cables plugged into ports a and b are exchanged at
// that end. Move: the cable end planned on port a is really on port b (which must be free).
struct CablingOverride {
    enum class Op : std::uint8_t { Swap, Move } op = Op::Swap;
    std::string a;
    std::string b;
    SpecSource source;
};

struct ClusterSpec {
    std::string name;  // metadata.name
    std::string siteName;
    std::string siteDescription;
    Labels siteLabels;
    std::vector<HostModelSpec> hostModels;
    std::vector<SwitchModelSpec> switchModels;
    std::vector<StorageModelSpec> storageModels;
    NamingSpec naming;
    FloorSpec floor;
    std::vector<ZoneSpec> zones;
    FabricSpec fabric;
    FrontendSpec frontend;
    StorageSpec storage;
    std::vector<RackOverride> rackOverrides;
    std::vector<SwitchOverride> switchOverrides;
    std::vector<LabelOverride> labelOverrides;
    std::vector<CablingOverride> cablingOverrides;
    SpecLimits limits;

    const HostModelSpec* hostModel(std::string_view name) const;
    const SwitchModelSpec* switchModel(std::string_view name) const;
    const StorageModelSpec* storageModel(std::string_view name) const;
};

// Parses and validates a document (YAML or JSON). Errors: InvalidArgument with path and line;
// TooLarge above limits.maxBytes or limits.maxNodes.
Result<ClusterSpec> parseClusterSpec(std::string_view text, const SpecLimits& limits = {});

// Every concrete entity and cable. Deterministic: the same spec gives identical output, in
// the same order.
Result<Inventory> expandClusterSpec(const ClusterSpec& spec);

Result<Inventory> loadClusterSpec(std::string_view text, const SpecLimits& limits = {});
Result<Inventory> loadClusterSpecFile(const std::string& path, const SpecLimits& limits = {});

}  // namespace loom::inventory
