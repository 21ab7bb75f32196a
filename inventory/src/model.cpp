#include "loom/inventory/model.hpp"

#include <array>

namespace loom::inventory {
namespace {

template <class E, std::size_t N>
std::optional<E> lookup(const std::array<std::string_view, N>& names, std::string_view s) {
    for (std::size_t i = 0; i < N; ++i)
        if (names[i] == s) return static_cast<E>(i);
    return std::nullopt;
}

constexpr std::array<std::string_view, kKindCount> kKindNames = {
    "site", "zone", "row", "rack", "host", "gpu", "nic", "switch", "port", "link", "storage_node"};
constexpr std::array<std::string_view, kKindCount> kKindPlurals = {
    "sites", "zones", "rows",     "racks", "hosts", "gpus",
    "nics",  "switches", "ports", "links", "storage_nodes"};
constexpr std::array<std::string_view, 2> kFabricNames = {"roce", "infiniband"};
constexpr std::array<std::string_view, 3> kNetworkNames = {"backend", "frontend", "storage"};
constexpr std::array<std::string_view, 9> kRoleNames = {"rtsw",  "ctsw", "atsw", "leaf", "spine",
                                                        "core",  "fsw",  "fcsw", "ssw"};
constexpr std::array<std::string_view, 3> kMediumNames = {"dac", "aoc", "optic"};
constexpr std::array<std::string_view, 3> kDeviceKindNames = {"switch", "nic", "storage_node"};

}  // namespace

std::string_view kindName(Kind k) { return kKindNames[static_cast<int>(k)]; }
std::string_view kindPlural(Kind k) { return kKindPlurals[static_cast<int>(k)]; }
std::optional<Kind> parseKind(std::string_view s) {
    if (auto k = lookup<Kind>(kKindNames, s)) return k;
    if (auto k = lookup<Kind>(kKindPlurals, s)) return k;
    if (s == "storagenode" || s == "storagenodes" || s == "storage") return Kind::StorageNode;
    if (s == "cable" || s == "cables") return Kind::Link;
    return std::nullopt;
}

std::string_view fabricTypeName(FabricType t) { return kFabricNames[static_cast<int>(t)]; }
std::optional<FabricType> parseFabricType(std::string_view s) {
    if (s == "ib") return FabricType::Infiniband;
    return lookup<FabricType>(kFabricNames, s);
}

std::string_view networkName(Network n) { return kNetworkNames[static_cast<int>(n)]; }
std::optional<Network> parseNetwork(std::string_view s) { return lookup<Network>(kNetworkNames, s); }

std::string_view switchRoleName(SwitchRole r) { return kRoleNames[static_cast<int>(r)]; }
std::optional<SwitchRole> parseSwitchRole(std::string_view s) {
    return lookup<SwitchRole>(kRoleNames, s);
}
int switchTier(SwitchRole r) {
    switch (r) {
        case SwitchRole::Rtsw:
        case SwitchRole::Leaf:
        case SwitchRole::Fsw:
        case SwitchRole::Ssw: return 1;
        case SwitchRole::Ctsw:
        case SwitchRole::Spine:
        case SwitchRole::Fcsw: return 2;
        case SwitchRole::Atsw:
        case SwitchRole::Core: return 3;
    }
    return 1;
}

std::string_view mediumName(Medium m) { return kMediumNames[static_cast<int>(m)]; }
std::optional<Medium> parseMedium(std::string_view s) { return lookup<Medium>(kMediumNames, s); }

std::string_view deviceKindName(DeviceKind d) { return kDeviceKindNames[static_cast<int>(d)]; }
std::optional<DeviceKind> parseDeviceKind(std::string_view s) {
    return lookup<DeviceKind>(kDeviceKindNames, s);
}

std::size_t Inventory::count(Kind k) const {
    switch (k) {
        case Kind::Site: return sites.size();
        case Kind::Zone: return zones.size();
        case Kind::Row: return rows.size();
        case Kind::Rack: return racks.size();
        case Kind::Host: return hosts.size();
        case Kind::Gpu: return gpus.size();
        case Kind::Nic: return nics.size();
        case Kind::Switch: return switches.size();
        case Kind::Port: return ports.size();
        case Kind::Link: return links.size();
        case Kind::StorageNode: return storageNodes.size();
    }
    return 0;
}

std::size_t Inventory::totalEntities() const {
    std::size_t n = 0;
    for (Kind k : kAllKinds) n += count(k);
    return n;
}

}  // namespace loom::inventory
