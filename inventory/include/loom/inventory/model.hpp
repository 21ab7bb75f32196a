// The cluster model: every concrete thing in the data hall, as plain values.
//
// An Inventory is what a cluster spec expands to (inventory/spec.hpp), what the database
// stores and loads (db/), and what the fabric module builds its graph from (fabric/).
// Entities refer to each other by unique name (a rack names its row, a port its device, a
// link its two ports), so an Inventory can be diffed, serialized and loaded without ids.
//
// Fields fall in two groups:
//  - spec fields: written by `apply` from the cluster spec (names, models, counts, cabling,
//    labels). plan() compares only these.
//  - operational fields: `state`, `serial`/`uuid`/`mac` when discovered, `resourceVersion`.
//    Owned by provisioning and discovery; apply never overwrites them on an existing row.
//    A new row gets the default state of its kind.
//
// String fields are Text (text.hpp): 8 bytes, immutable, shared on copy — a port's device
// shares its switch's name, a state the process-wide block of its value. They read as
// std::string_view (and convert to std::string); assign a string, a view or a literal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/inventory/kind_vector.hpp"
#include "loom/inventory/text.hpp"

namespace loom::inventory {

enum class Kind : std::uint8_t {
    Site,
    Zone,
    Row,
    Rack,
    Host,
    Gpu,
    Nic,
    Switch,
    Port,
    Link,
    StorageNode,
};
inline constexpr int kKindCount = 11;
// In dependency order: parents before children. Creates run in this order, deletes reversed.
inline constexpr Kind kAllKinds[kKindCount] = {
    Kind::Site, Kind::Zone,   Kind::Row,  Kind::Rack, Kind::Host,       Kind::Gpu,
    Kind::Nic,  Kind::Switch, Kind::Port, Kind::Link, Kind::StorageNode};

std::string_view kindName(Kind k);    // "site", "zone", ..., "storage_node"
std::string_view kindPlural(Kind k);  // "sites", ..., "storage_nodes" (API paths, table names)
std::optional<Kind> parseKind(std::string_view s);  // accepts singular, plural, "storagenode"

// Fabric technology of the backend (training) network.
enum class FabricType : std::uint8_t { Roce, Infiniband };
std::string_view fabricTypeName(FabricType t);  // "roce", "infiniband"
std::optional<FabricType> parseFabricType(std::string_view s);

// Which network a NIC, port or link belongs to.
enum class Network : std::uint8_t { Backend, Frontend, Storage };
std::string_view networkName(Network n);  // "backend", "frontend", "storage"
std::optional<Network> parseNetwork(std::string_view s);

// Switch roles. RoCE backend: rtsw (rack), ctsw (cluster, per AI zone), atsw (aggregator,
// between zones). InfiniBand backend: leaf, spine, core. Frontend/storage: fsw (frontend rack
// switch), fcsw (frontend cluster switch), ssw (storage switch).
enum class SwitchRole : std::uint8_t { Rtsw, Ctsw, Atsw, Leaf, Spine, Core, Fsw, Fcsw, Ssw };
std::string_view switchRoleName(SwitchRole r);
std::optional<SwitchRole> parseSwitchRole(std::string_view s);
// Tier in the backend Clos: 1 = rack/leaf, 2 = cluster/spine, 3 = aggregator/core; frontend
// and storage switches report their own tiers (fsw 1, fcsw 2, ssw 1).
int switchTier(SwitchRole r);

enum class Medium : std::uint8_t { Dac, Aoc, Optic };
std::string_view mediumName(Medium m);  // "dac", "aoc", "optic"
std::optional<Medium> parseMedium(std::string_view s);

// What a port belongs to.
enum class DeviceKind : std::uint8_t { Switch, Nic, StorageNode };
std::string_view deviceKindName(DeviceKind d);  // "switch", "nic", "storage_node"
std::optional<DeviceKind> parseDeviceKind(std::string_view s);

// Labels, sorted by key, unique keys (a flat vector: most entities have none or one).
using Labels = std::vector<std::pair<std::string, std::string>>;

struct Site {
    Text name;
    Text description;
    Labels labels;
    std::int64_t resourceVersion = 0;
};

// An AI zone (RoCE) or a pod (InfiniBand): the racks under one set of cluster switches.
struct Zone {
    Text name;
    Text site;
    Labels labels;
    std::int64_t resourceVersion = 0;
};

struct Row {
    Text name;
    Text zone;
    int index = 0;  // position of the row on the floor, 0-based
    Labels labels;
    std::int64_t resourceVersion = 0;
};

struct Rack {
    Text name;
    Text row;
    Text zone;
    int position = 0;  // position within the row, 0-based
    Text model;
    Labels labels;
    // operational
    Text state = Text::shared("planned");
    Text serial;
    std::int64_t resourceVersion = 0;
};

struct Host {
    Text name;
    Text rack;
    int slot = 0;  // position in the rack (0-based, bottom up)
    Text model;
    Labels labels;
    // operational
    Text state = Text::shared("planned");
    Text serial;
    std::int64_t resourceVersion = 0;
};

struct Gpu {
    Text name;
    Text host;
    int index = 0;  // 0..7 on a Grand Teton host; equals the rail of its backend NIC
    Text model;
    // operational
    Text state = Text::shared("ok");
    Text serial;
    Text uuid;
    std::int64_t resourceVersion = 0;
};

struct Nic {
    Text name;
    Text host;      // host or storage node
    int index = 0;  // backend NICs: the rail (0..7, one per GPU)
    Network network = Network::Backend;
    Text model;
    int speedGbps = 400;
    // How telemetry tells it from the host's other RDMA devices (nic_identity.hpp): the
    // hca_type node_exporter reports ("MT4129") and its PCI address ("0000:18:00.0"); "" when
    // the spec does not say.
    Text hcaType;
    Text pci;
    // operational
    Text state = Text::shared("ok");
    Text mac;
    std::int64_t resourceVersion = 0;
};

struct Switch {
    Text name;
    SwitchRole role = SwitchRole::Rtsw;
    Text model;
    Text zone;  // empty for switches above zones (atsw, core)
    Text rack;  // empty for switches not in a compute rack
    int portCount = 0;
    int speedGbps = 400;
    // How its network OS names the front-panel ports (port_naming.hpp's canonical text, from
    // the switch model or a per-switch override; empty = Loom's own pN/swpN/EthernetN/N).
    Text portNaming;
    Labels labels;
    // operational
    Text state = Text::shared("planned");
    Text serial;
    std::int64_t resourceVersion = 0;
};

struct Port {
    Text name;    // "<device>/<port>", e.g. "z1-r001-rtsw/p17", "z1-r001-h0-nic3/p1"
    Text device;  // switch, NIC or storage node name
    DeviceKind deviceKind = DeviceKind::Switch;
    int index = 0;  // 1-based physical port number
    int speedGbps = 400;
    // operational
    Text state = Text::shared("planned");
    std::int64_t resourceVersion = 0;
};

// A cable between two ports. aPort is the lower tier end (NIC or the lower switch).
struct Link {
    Text name;  // "<aPort>--<bPort>"
    Text aPort;
    Text bPort;
    Network network = Network::Backend;
    Medium medium = Medium::Dac;
    double lengthM = 0;
    int speedGbps = 400;
    // operational
    Text state = Text::shared("planned");  // planned | active | drained | down
    std::int64_t resourceVersion = 0;
};

struct StorageNode {
    Text name;
    Text rack;  // storage rack name (a Rack with no compute hosts)
    Text model;
    double capacityTb = 0;
    Labels labels;
    // operational
    Text state = Text::shared("planned");
    Text serial;
    std::int64_t resourceVersion = 0;
};

struct Inventory {
    std::string cluster;  // metadata.name of the spec
    FabricType fabric = FabricType::Roce;

    // Each kind is shared copy-on-write (kind_vector.hpp): copying an Inventory is cheap and
    // a copy that changes one kind's states copies that kind alone.
    KindVector<Site> sites;
    KindVector<Zone> zones;
    KindVector<Row> rows;
    KindVector<Rack> racks;
    KindVector<Host> hosts;
    KindVector<Gpu> gpus;
    KindVector<Nic> nics;
    KindVector<Switch> switches;
    KindVector<Port> ports;
    KindVector<Link> links;
    KindVector<StorageNode> storageNodes;

    std::size_t count(Kind k) const;
    std::size_t totalEntities() const;
};

}  // namespace loom::inventory
