// HallLayout: the stable order of GPUs, switch ports and backend links that every packed
// telemetry array (TelemetryHub, the WebSocket stream, `GET /api/v1/hall`) refers to.
//
// Built once per inventory version from a loom::inventory::Inventory; immutable afterwards, so
// it is shared between threads as `std::shared_ptr<const HallLayout>` without locking.
//
//   auto layout = std::make_shared<const HallLayout>(HallLayout::build(inventory));
//   if (auto g = layout->gpuByHost("z1-r001-h0.dc1.example", 3)) hub.setGpuUtil(*g, 97);
//   server: respond(layout->toJson());  // GET /api/v1/hall (docs/api.md)
//
// Order (docs/api.md): racks by (zone, row index, row, position, name); a rack's hosts by slot,
// a host's GPUs by index, so each rack's GPUs are contiguous (gpuOffset, gpuCount). Switches by
// (tier, zone, rack order, name); ports by (switch order, port index). Backend links by (tier of
// the lower end, rack order of the lower end, name).
//
// Lookups take string_views and never allocate (transparent hashing): the ingest path calls
// them once per sample. Limits: at most 2^32-2 GPUs/ports/links (indices are uint32_t).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/inventory/model.hpp"
#include "loom/inventory/nic_identity.hpp"
#include "loom/inventory/port_naming.hpp"

namespace loom::telemetry {

inline constexpr std::uint32_t kNoIndex = 0xffffffffu;

// FNV-1a, also usable piecewise (the ingest path hashes "switch" "/" "port" without joining).
struct NameHash {
    using is_transparent = void;
    static constexpr std::uint64_t kBasis = 1469598103934665603ull;
    static std::uint64_t mix(std::uint64_t h, std::string_view s) noexcept {
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
        return h;
    }
    std::size_t operator()(std::string_view s) const noexcept { return mix(kBasis, s); }
};
using NameIndex = std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>>;
// The same over names the index's owner keeps (they must not move while it lives).
using NameViewIndex =
    std::unordered_map<std::string_view, std::uint32_t, NameHash, std::equal_to<>>;

// Administrative (inventory) state of a GPU or link, which the live health is layered over.
enum class AdminState : std::uint8_t { InService, Drained, Quarantined, NotInService, Down };

struct HallRack {
    std::string name, row, zone, state;
    int position = 0;
    std::vector<std::string> hosts;  // by slot
    std::string rtsw;                // the rack's training switch (empty if none)
    std::uint32_t zoneIndex = 0;
    std::uint32_t gpuOffset = 0, gpuCount = 0;
    std::uint32_t rtswIndex = kNoIndex;  // index into switches()
};

struct HallSwitch {
    std::string name, zone;
    inventory::SwitchRole role = inventory::SwitchRole::Rtsw;
    std::uint32_t rackIndex = kNoIndex;  // the compute rack it sits in, if any
    std::uint32_t portOffset = 0;        // its ports: ports()[portOffset .. portOffset+portSlots)
    // Highest port number in the inventory + 1 (all of portCount when the inventory lists no
    // ports of the switch): uncabled ports above the last cabled one take no memory.
    std::uint32_t portSlots = 0;
    std::uint32_t declaredPorts = 0;  // the model's port count (telemetry up to it is valid)
    // How its NOS names its ports (inventory Switch::portNaming); shared by the switches of one
    // scheme. Never null.
    std::shared_ptr<const inventory::PortNaming> naming;
};

// What an interface name of a switch denotes (HallLayout::interfacePort).
struct InterfacePort {
    enum Kind : std::uint8_t {
        Tracked,     // a cabled port: `port` is its slot
        Uncabled,    // a front-panel port of the model with no cable in the inventory
        OutOfRange,  // a port number above the model's port count
        SubPort,     // a breakout sub-port (Loom tracks the front-panel port only)
        NotAPort,    // no port of the switch's scheme (lo, mgmt0, PortChannel0001, Vlan1000)
    };
    Kind kind = NotAPort;
    std::uint32_t port = kNoIndex;
    int number = 0;  // the front-panel port number (Tracked, Uncabled, OutOfRange, SubPort)
};

struct HallPort {
    std::uint32_t switchIndex = kNoIndex;
    std::uint32_t linkIndex = kNoIndex;  // the backend link it terminates, if any
    std::int32_t number = 0;             // 1-based physical port number; 0 = slot unused
    std::uint32_t speedGbps = 0;
};

struct HallLink {
    std::string name;
    std::uint32_t aPort = kNoIndex, bPort = kNoIndex;  // switch ports (kNoIndex for a NIC end)
    std::uint32_t gpu = kNoIndex;                      // the GPU behind a NIC end, if any
    std::uint32_t rackIndex = kNoIndex;                // rack of the lower end, if any
    std::uint32_t speedGbps = 400;
    std::uint8_t tier = 0;  // 0 NIC-switch, 1 rack-cluster, 2 cluster-aggregator (lower end's tier)
};

class HallLayout {
public:
    // layoutVersion 0 = derive one from the structure (same inventory -> same version).
    static HallLayout build(const inventory::Inventory& inv, std::int64_t layoutVersion = 0);
    // The same structure with the states of `inv`, which must be the inventory this layout was
    // built from or a state-only refresh of it (db/live_states.hpp: same rows in the same
    // order, only states changed). O(racks + GPUs + links), nothing looked up by name; the
    // structure is shared, not copied. std::nullopt when `inv` has other row counts.
    std::optional<HallLayout> withStates(const inventory::Inventory& inv) const;

    std::int64_t layoutVersion() const { return shape_->layoutVersion_; }
    // Digest of the rack, GPU and link states (changes with any transition; the structure and
    // so the packed-array order stay those of layoutVersion).
    std::int64_t stateVersion() const { return stateVersion_; }
    const std::string& cluster() const { return shape_->cluster_; }
    inventory::FabricType fabric() const { return shape_->fabric_; }

    std::size_t gpuCount() const { return shape_->gpuNames_.size(); }
    std::size_t linkCount() const { return shape_->links_.size(); }
    std::size_t portCount() const { return shape_->ports_.size(); }  // switch port slots

    const std::vector<std::string>& zones() const { return shape_->zones_; }
    const std::vector<HallRack>& racks() const { return racks_; }
    const std::vector<std::string>& gpuNames() const { return shape_->gpuNames_; }
    const std::vector<std::uint32_t>& gpuRack() const {
        return shape_->gpuRack_;
    }  // GPU -> rack index
    const std::vector<std::string>& gpuHost() const { return shape_->gpuHostName_; }
    const std::vector<AdminState>& gpuAdmin() const { return gpuAdmin_; }
    const std::vector<HallSwitch>& switches() const { return shape_->switches_; }
    const std::vector<HallPort>& ports() const { return shape_->ports_; }
    const std::vector<HallLink>& links() const { return shape_->links_; }
    const std::vector<AdminState>& linkAdmin() const { return linkAdmin_; }

    // All return kNoIndex when unknown.
    std::uint32_t gpuByName(std::string_view name) const;
    std::uint32_t gpuByUuid(std::string_view uuid) const;
    // host: the inventory name, or a DCGM `Hostname` (FQDN: the first label is tried too).
    std::uint32_t hostByName(std::string_view host) const;
    std::uint32_t gpuByHost(std::string_view host, int gpuIndex) const;
    // The same in two steps, for callers that cache the host lookup.
    std::uint32_t gpuOfHost(std::uint32_t hostIndex, int gpuIndex) const;
    std::size_t hostCount() const { return shape_->hostGpuOffset_.size(); }
    // The host's GPUs: the first's index and how many (a host's GPUs are consecutive).
    std::pair<std::uint32_t, std::uint32_t> hostGpus(std::uint32_t hostIndex) const {
        return {shape_->hostGpuOffset_[hostIndex], shape_->hostGpuCount_[hostIndex]};
    }
    // What the inventory says about the host's NICs (Nic::hcaType, Nic::pci, by NIC index):
    // how node_exporter's devices are told apart (inventory/nic_identity.hpp).
    const inventory::HostNicIdentity& hostNics(std::uint32_t hostIndex) const {
        return shape_->nicIdentities_[shape_->hostNics_[hostIndex]];
    }
    const std::string& hostName(std::uint32_t hostIndex) const {
        return shape_->hostNames_[hostIndex];
    }
    std::uint32_t switchByName(std::string_view name) const;
    // port: Loom's own name ("p17", "17", the full "<switch>/p17") or a front-panel port name
    // of the switch's scheme ("swp17" on cumulus, "Ethernet128" on sonic lanes=8, ...).
    // kNoIndex when unknown; `exists` (optional) tells a real but untracked port of the switch
    // (number <= declaredPorts) from a bogus one.
    std::uint32_t portBySwitch(std::uint32_t switchIndex, std::string_view port,
                               bool* exists = nullptr) const;
    // An interface name as the switch reports it (IF-MIB ifName, and ifAlias, which SONiC sets
    // to the front-panel name), by the switch's port naming scheme only.
    InterfacePort interfacePort(std::uint32_t switchIndex, std::string_view ifName,
                                std::string_view ifAlias = {}) const;
    std::uint32_t portByName(std::string_view sw, std::string_view port) const {
        auto s = switchByName(sw);
        return s == kNoIndex ? kNoIndex : portBySwitch(s, port);
    }
    std::uint32_t rackByName(std::string_view name) const;
    std::uint32_t linkByName(std::string_view name) const;
    // Name of a port slot ("<switch>/p<number>") for event locations.
    std::string portName(std::uint32_t port) const;

    // The `GET /api/v1/hall` body (docs/api.md).
    nlohmann::json toJson() const;
    // The same, `GET /api/v1/hall?format=compact` (docs/api.md): names by rule, integer
    // columns as runs, states as integers with a legend (hall_compact.cpp). ~100x smaller.
    nlohmann::json toCompactJson() const;

private:
    // The structure, shared by every layout of one layoutVersion: a state refresh
    // (withStates) copies only the per-state part below.
    struct Shape {
        Shape() = default;
        Shape(const Shape&) = delete;  // gpuByName_ and linkByName_ view its own strings
        Shape& operator=(const Shape&) = delete;

        std::int64_t layoutVersion_ = 0;
        std::string cluster_;
        inventory::FabricType fabric_ = inventory::FabricType::Roce;
        std::vector<std::string> zones_;
        std::vector<std::pair<std::string, std::string>> rows_;  // name, zone (ordered)
        std::vector<int> rowIndex_;
        std::vector<std::string> gpuNames_, gpuHostName_;
        std::vector<std::uint32_t> gpuRack_;
        std::vector<std::uint32_t> hostGpuOffset_, hostGpuCount_;
        std::vector<std::string> hostNames_;
        // Host -> its NIC identity, one per distinct identity (every host of a model shares it).
        std::vector<std::uint32_t> hostNics_;
        std::vector<inventory::HostNicIdentity> nicIdentities_;
        std::vector<std::int8_t> gpuLocal_;  // GPU -> its index on the host
        std::vector<HallSwitch> switches_;
        std::vector<HallPort> ports_;
        std::vector<HallLink> links_;
        NameIndex gpuByUuid_, hostByName_, switchByName_, rackByName_;
        // Views of gpuNames_ and links_[].name: at 98k a copied key was ~320k more strings.
        NameViewIndex gpuByName_, linkByName_;
        // Where each rack, GPU (and its host) and link came from in the inventory it was built
        // from: withStates reads the states there, without a lookup by name.
        std::vector<std::uint32_t> rackInv_, gpuInv_, gpuHostInv_, linkInv_;
        std::size_t invRacks_ = 0, invHosts_ = 0, invGpus_ = 0, invLinks_ = 0;
    };
    void computeStates(const inventory::Inventory& inv);
    static std::shared_ptr<const Shape> emptyShape();

    std::shared_ptr<const Shape> shape_ = emptyShape();
    std::int64_t stateVersion_ = 0;
    std::vector<HallRack> racks_;  // small (one per rack): copied with its state
    std::vector<AdminState> gpuAdmin_, linkAdmin_;
};

}  // namespace loom::telemetry
