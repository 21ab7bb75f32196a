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
#pragma once

#include "loom/inventory/kind_vector.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
inline constexpr Kind kAllKinds[kKindCount] = {Kind::Site,   Kind::Zone, Kind::Row,  Kind::Rack,
                                               Kind::Host,   Kind::Gpu,  Kind::Nic,  Kind::Switch,
                                               Kind::Port,   Kind::Link, Kind::StorageNode};

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
    std::string name;
    std::string description;
    Labels labels;
    std::int64_t resourceVersion = 0;
};

// An AI zone (RoCE) or a pod (InfiniBand): the racks under one set of cluster switches.
struct Zone {
    std::string name;
    std::string site;
    Labels labels;
    std::int64_t resourceVersion = 0;
};

struct Row {
    std::string name;
    std::string zone;
    int index = 0;  // position of the row on the floor, 0-based
    Labels labels;
    std::int64_t resourceVersion = 0;
};

struct Rack {
    std::string name;
    std::string row;
    std::string zone;
    int position = 0;  // position within the row, 0-based
    std::string model;
    Labels labels;
    // operational
    std::string state = "planned";
    std::string serial;
    std::int64_t resourceVersion = 0;
};

struct Host {
    std::string name;
    std::string rack;
    int slot = 0;  // position in the rack (0-based, bottom up)
    std::string model;
    Labels labels;
    // operational
    std::string state = "planned";
    std::string serial;
    std::int64_t resourceVersion = 0;
};

struct Gpu {
    std::string name;
    std::string host;
    int index = 0;  // 0..7 on a Grand Teton host; equals the rail of its backend NIC
    std::string model;
    // operational
    std::string state = "ok";
    std::string serial;
    std::string uuid;
    std::int64_t resourceVersion = 0;
};

struct Nic {
    std::string name;
    std::string host;  // host or storage node
    int index = 0;     // backend NICs: the rail (0..7, one per GPU)
    Network network = Network::Backend;
    std::string model;
    int speedGbps = 400;
    // operational
    std::string state = "ok";
    std::string mac;
    std::int64_t resourceVersion = 0;
};

struct Switch {
    std::string name;
    SwitchRole role = SwitchRole::Rtsw;
    std::string model;
    std::string zone;  // empty for switches above zones (atsw, core)
    std::string rack;  // empty for switches not in a compute rack
    int portCount = 0;
    int speedGbps = 400;
    Labels labels;
    // operational
    std::string state = "planned";
    std::string serial;
    std::int64_t resourceVersion = 0;
};

struct Port {
    std::string name;    // "<device>/<port>", e.g. "z1-r001-rtsw/p17", "z1-r001-h0-nic3/p1"
    std::string device;  // switch, NIC or storage node name
    DeviceKind deviceKind = DeviceKind::Switch;
    int index = 0;  // 1-based physical port number
    int speedGbps = 400;
    // operational
    std::string state = "planned";
    std::int64_t resourceVersion = 0;
};

// A cable between two ports. aPort is the lower tier end (NIC or the lower switch).
struct Link {
    std::string name;  // "<aPort>--<bPort>"
    std::string aPort;
    std::string bPort;
    Network network = Network::Backend;
    Medium medium = Medium::Dac;
    double lengthM = 0;
    int speedGbps = 400;
    // operational
    std::string state = "planned";  // planned | active | drained | down
    std::int64_t resourceVersion = 0;
};

struct StorageNode {
    std::string name;
    std::string rack;  // storage rack name (a Rack with no compute hosts)
    std::string model;
    double capacityTb = 0;
    Labels labels;
    // operational
    std::string state = "planned";
    std::string serial;
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
