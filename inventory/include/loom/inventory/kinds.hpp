// One description per inventory kind: each field's API name, SQL column, C++ member, spec or
// operational, the kinds it references, whether PATCH may set it, and how loomctl shows the
// kind. Everything that used to repeat a kind's fields is derived from here: plan's diff and
// the content digests (spec fields), apply's COPY columns and rows and the loaders
// (db/src/inventory_rows.*), the list/get/filter/PATCH columns (db/src/inventory_query.cpp)
// and loomctl's table columns (backend/client/src/render.cpp). A test checks every
// description against the tables' information_schema.columns (tests/db/kinds_schema_test.cpp).
//
// Adding a field: a migration (db/migrations/00NN_*.sql: ALTER TABLE ... ADD COLUMN) and one
// line here (plus its name in `wide`/`columns` to show it in loomctl). An operational field
// that no C++ code reads needs no member (opsTextField<Gpu>("firmware")): the API lists, filters,
// gets and PATCHes it, apply leaves it alone. A field C++ code reads is a member of its struct
// in model.hpp, named here with a pointer to member; a spec field is also read by the spec
// parser (inventory/src/spec_parse.cpp), and its column goes into the kind's digest trigger
// (0013).
//
// The description is a constexpr tuple, visited at compile time (forEachField), so the COPY
// path of apply (about a million rows at 98k) formats each field with no call through a
// pointer; kindInfo() gives the same fields as a runtime table for the API and the client.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "loom/inventory/model.hpp"

namespace loom::inventory {

// Spec: from the cluster spec; apply writes it, plan compares it, the digests hash it.
// Operational: discovery's and provisioning's; apply writes it on create only.
enum class Group : std::uint8_t { Spec, Operational };

// How a field is stored: text, integer, double precision, a jsonb map of strings, an enum as
// its name (text), or a reference (the id of the named entity: bigint, NULL when empty).
enum class ValueType : std::uint8_t { Text, Integer, Real, Labels, Enum, Ref };

// One column of a reference and the kind whose id it holds.
struct RefColumn {
    std::string_view column;
    Kind kind = Kind::Site;
};

template <class T, class M>
struct FieldDesc {
    using Entity = T;
    using Value = M;
    std::string_view api;          // JSON key; the filter and PATCH name
    M T::*member = nullptr;        // nullptr: a field only the database and the API hold
    std::string_view column = {};  // SQL column; empty for a reference over several columns
    Group group = Group::Spec;
    bool patchable = false;        // PATCH may set it (operational text fields)
    std::string_view header = {};  // loomctl header; empty: the API name as UPPER-KEBAB
    // A reference: the column(s) and the kind(s) the member names. Several: the first that
    // resolves (a NIC's host or storage node), or the one `selector` picks (a port's device).
    std::array<RefColumn, 3> refs = {};
    std::uint8_t refCount = 0;
    DeviceKind T::*selector = nullptr;

    constexpr FieldDesc patch() const {
        FieldDesc f = *this;
        f.patchable = true;
        return f;
    }
    constexpr FieldDesc head(std::string_view h) const {
        FieldDesc f = *this;
        f.header = h;
        return f;
    }
    constexpr FieldDesc by(DeviceKind T::*s) const {
        FieldDesc f = *this;
        f.selector = s;
        return f;
    }
};

// Builders, as the descriptions below use them. `column` defaults to the API name.
template <class T, class M>
constexpr FieldDesc<T, M> specField(std::string_view api, M T::*m, std::string_view column = {}) {
    return {api, m, column.empty() ? api : column, Group::Spec};
}
template <class T, class M>
constexpr FieldDesc<T, M> opsField(std::string_view api, M T::*m, std::string_view column = {}) {
    return {api, m, column.empty() ? api : column, Group::Operational};
}
// An operational text field with no C++ member.
template <class T>
constexpr FieldDesc<T, Text> opsTextField(std::string_view api, std::string_view column = {}) {
    return {api, nullptr, column.empty() ? api : column, Group::Operational};
}
template <class T>
constexpr FieldDesc<T, Text> refField(std::string_view api, Text T::*m, std::string_view column,
                                      Kind target) {
    return {api, m, column, Group::Spec, false, {}, {RefColumn{column, target}}, 1};
}
template <class T>
constexpr FieldDesc<T, Text> refAnyField(std::string_view api, Text T::*m,
                                         std::array<RefColumn, 3> refs, std::uint8_t n) {
    return {api, m, {}, Group::Spec, false, {}, refs, n};
}

template <class T>
struct KindDesc;  // one per kind, below

template <>
struct KindDesc<Site> {
    static constexpr Kind kind = Kind::Site;
    static constexpr auto list = &Inventory::sites;
    static constexpr auto fields = std::tuple{
        specField("description", &Site::description),
        specField("labels", &Site::labels),
    };
    // loomctl get: API names in column order; `wide` follows with -o wide.
    static constexpr std::string_view columns = "description";
    static constexpr std::string_view wide = "";
};

template <>
struct KindDesc<Zone> {
    static constexpr Kind kind = Kind::Zone;
    static constexpr auto list = &Inventory::zones;
    static constexpr auto fields = std::tuple{
        refField("site", &Zone::site, "site_id", Kind::Site),
        specField("labels", &Zone::labels),
    };
    static constexpr std::string_view columns = "site";
    static constexpr std::string_view wide = "";
};

template <>
struct KindDesc<Row> {
    static constexpr Kind kind = Kind::Row;
    static constexpr auto list = &Inventory::rows;
    static constexpr auto fields = std::tuple{
        refField("zone", &Row::zone, "zone_id", Kind::Zone),
        specField("index", &Row::index),
        specField("labels", &Row::labels),
    };
    static constexpr std::string_view columns = "zone index";
    static constexpr std::string_view wide = "";
};

template <>
struct KindDesc<Rack> {
    static constexpr Kind kind = Kind::Rack;
    static constexpr auto list = &Inventory::racks;
    static constexpr auto fields = std::tuple{
        refField("row", &Rack::row, "row_id", Kind::Row),
        refField("zone", &Rack::zone, "zone_id", Kind::Zone),
        specField("position", &Rack::position),
        specField("model", &Rack::model),
        specField("labels", &Rack::labels),
        opsField("state", &Rack::state),
        opsField("serial", &Rack::serial).patch(),
    };
    static constexpr std::string_view columns = "zone row position state";
    static constexpr std::string_view wide = "model serial labels";
};

template <>
struct KindDesc<Host> {
    static constexpr Kind kind = Kind::Host;
    static constexpr auto list = &Inventory::hosts;
    static constexpr auto fields = std::tuple{
        refField("rack", &Host::rack, "rack_id", Kind::Rack),
        specField("slot", &Host::slot),
        specField("model", &Host::model),
        specField("labels", &Host::labels),
        opsField("state", &Host::state),
        opsField("serial", &Host::serial).patch(),
    };
    static constexpr std::string_view columns = "rack slot state";
    static constexpr std::string_view wide = "model serial labels";
};

template <>
struct KindDesc<Gpu> {
    static constexpr Kind kind = Kind::Gpu;
    static constexpr auto list = &Inventory::gpus;
    static constexpr auto fields = std::tuple{
        refField("host", &Gpu::host, "host_id", Kind::Host),
        specField("index", &Gpu::index),
        specField("model", &Gpu::model),
        opsField("state", &Gpu::state),
        opsField("serial", &Gpu::serial).patch(),
        opsField("uuid", &Gpu::uuid).patch(),
        opsTextField<Gpu>("firmware").patch(),
    };
    static constexpr std::string_view columns = "host index state health";
    static constexpr std::string_view wide = "model uuid serial firmware";
};

template <>
struct KindDesc<Nic> {
    static constexpr Kind kind = Kind::Nic;
    static constexpr auto list = &Inventory::nics;
    static constexpr auto fields = std::tuple{
        refAnyField(
            "host", &Nic::host,
            {RefColumn{"host_id", Kind::Host}, RefColumn{"storage_node_id", Kind::StorageNode}}, 2),
        specField("index", &Nic::index),
        specField("network", &Nic::network),
        specField("model", &Nic::model),
        specField("speedGbps", &Nic::speedGbps, "speed_gbps"),
        specField("hcaType", &Nic::hcaType, "hca_type"),
        specField("pci", &Nic::pci, "pci_address"),
        opsField("state", &Nic::state),
        opsField("mac", &Nic::mac).patch(),
    };
    static constexpr std::string_view columns = "host index network speedGbps state";
    static constexpr std::string_view wide = "model hcaType pci mac";
};

template <>
struct KindDesc<Switch> {
    static constexpr Kind kind = Kind::Switch;
    static constexpr auto list = &Inventory::switches;
    static constexpr auto fields = std::tuple{
        specField("role", &Switch::role),
        specField("model", &Switch::model),
        refField("zone", &Switch::zone, "zone_id", Kind::Zone),
        refField("rack", &Switch::rack, "rack_id", Kind::Rack),
        specField("portCount", &Switch::portCount, "port_count").head("PORTS"),
        specField("speedGbps", &Switch::speedGbps, "speed_gbps"),
        specField("portNaming", &Switch::portNaming, "port_naming"),
        specField("labels", &Switch::labels),
        opsField("state", &Switch::state),
        opsField("serial", &Switch::serial).patch(),
    };
    static constexpr std::string_view columns = "role zone rack state health";
    static constexpr std::string_view wide = "model portCount speedGbps serial labels";
};

template <>
struct KindDesc<Port> {
    static constexpr Kind kind = Kind::Port;
    static constexpr auto list = &Inventory::ports;
    static constexpr auto fields = std::tuple{
        refAnyField("device", &Port::device,
                    {RefColumn{"switch_id", Kind::Switch}, RefColumn{"nic_id", Kind::Nic},
                     RefColumn{"storage_node_id", Kind::StorageNode}},
                    3)
            .by(&Port::deviceKind),
        specField("deviceKind", &Port::deviceKind, "device_kind"),
        specField("index", &Port::index),
        specField("speedGbps", &Port::speedGbps, "speed_gbps"),
        opsField("state", &Port::state),
        // The other end of the port's cable, null without one (0026): written by apply from the
        // links, not by PATCH; C++ reads the links instead.
        opsTextField<Port>("link"),
        opsTextField<Port>("peerPort", "peer_port"),
        opsTextField<Port>("peer"),
    };
    static constexpr std::string_view columns = "device index speedGbps state peerPort";
    static constexpr std::string_view wide = "deviceKind link";
};

template <>
struct KindDesc<Link> {
    static constexpr Kind kind = Kind::Link;
    static constexpr auto list = &Inventory::links;
    static constexpr auto fields = std::tuple{
        refField("aPort", &Link::aPort, "a_port_id", Kind::Port),
        refField("bPort", &Link::bPort, "b_port_id", Kind::Port),
        specField("network", &Link::network),
        specField("medium", &Link::medium),
        specField("lengthM", &Link::lengthM, "length_m"),
        specField("speedGbps", &Link::speedGbps, "speed_gbps"),
        opsField("state", &Link::state),
    };
    static constexpr std::string_view columns = "network state health";
    static constexpr std::string_view wide = "aPort bPort medium lengthM speedGbps";
};

template <>
struct KindDesc<StorageNode> {
    static constexpr Kind kind = Kind::StorageNode;
    static constexpr auto list = &Inventory::storageNodes;
    static constexpr auto fields = std::tuple{
        refField("rack", &StorageNode::rack, "rack_id", Kind::Rack),
        specField("model", &StorageNode::model),
        specField("capacityTb", &StorageNode::capacityTb, "capacity_tb"),
        specField("labels", &StorageNode::labels),
        opsField("state", &StorageNode::state),
        opsField("serial", &StorageNode::serial).patch(),
    };
    static constexpr std::string_view columns = "rack capacityTb state";
    static constexpr std::string_view wide = "model serial labels";
};

// ---------------------------------------------------------------------------------------
// Visiting the descriptions at compile time.

template <class T>
constexpr std::size_t kFieldCount =
    std::tuple_size_v<std::remove_cv_t<decltype(KindDesc<T>::fields)>>;

// Calls f(std::integral_constant<size_t, I>) for each field I of T; inside, the field is a
// constant expression: `constexpr auto& fd = std::get<I>(KindDesc<T>::fields);`.
template <class T, class F>
constexpr void forEachField(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (f(std::integral_constant<std::size_t, I>{}), ...);
    }
    (std::make_index_sequence<kFieldCount<T>>{});
}

// Calls f(static_cast<T*>(nullptr)) with T the struct of kind k.
template <class F>
decltype(auto) visitKind(Kind k, F&& f) {
    switch (k) {
        case Kind::Site:
            return f(static_cast<Site*>(nullptr));
        case Kind::Zone:
            return f(static_cast<Zone*>(nullptr));
        case Kind::Row:
            return f(static_cast<Row*>(nullptr));
        case Kind::Rack:
            return f(static_cast<Rack*>(nullptr));
        case Kind::Host:
            return f(static_cast<Host*>(nullptr));
        case Kind::Gpu:
            return f(static_cast<Gpu*>(nullptr));
        case Kind::Nic:
            return f(static_cast<Nic*>(nullptr));
        case Kind::Switch:
            return f(static_cast<Switch*>(nullptr));
        case Kind::Port:
            return f(static_cast<Port*>(nullptr));
        case Kind::Link:
            return f(static_cast<Link*>(nullptr));
        case Kind::StorageNode:
            return f(static_cast<StorageNode*>(nullptr));
    }
    return f(static_cast<Site*>(nullptr));
}

template <class T>
const std::vector<T>& entitiesOf(const Inventory& inv) {
    return (inv.*KindDesc<T>::list).vec();
}
template <class T>
std::vector<T>& entitiesOf(Inventory& inv) {
    return (inv.*KindDesc<T>::list).mut();
}

template <class M>
constexpr ValueType valueTypeOf() {
    if constexpr (std::is_same_v<M, Text> || std::is_same_v<M, std::string>)
        return ValueType::Text;
    else if constexpr (std::is_same_v<M, int>)
        return ValueType::Integer;
    else if constexpr (std::is_same_v<M, double>)
        return ValueType::Real;
    else if constexpr (std::is_same_v<M, Labels>)
        return ValueType::Labels;
    else if constexpr (std::is_enum_v<M>)
        return ValueType::Enum;
    else
        static_assert(sizeof(M) == 0, "a field type kinds.hpp does not know");
}

// Enum fields as their names (the text the API and the database hold).
inline std::string_view enumName(Network v) { return networkName(v); }
inline std::string_view enumName(Medium v) { return mediumName(v); }
inline std::string_view enumName(SwitchRole v) { return switchRoleName(v); }
inline std::string_view enumName(DeviceKind v) { return deviceKindName(v); }
// Parses a stored name; unknown names become the enum's first value.
inline void parseEnum(std::string_view s, Network& v) { v = parseNetwork(s).value_or(Network{}); }
inline void parseEnum(std::string_view s, Medium& v) { v = parseMedium(s).value_or(Medium{}); }
inline void parseEnum(std::string_view s, SwitchRole& v) {
    v = parseSwitchRole(s).value_or(SwitchRole{});
}
inline void parseEnum(std::string_view s, DeviceKind& v) {
    v = parseDeviceKind(s).value_or(DeviceKind{});
}

// ---------------------------------------------------------------------------------------
// The same descriptions as runtime tables (API queries, the client, tests).

struct FieldInfo {
    std::string_view api;
    std::string_view column;  // empty for a reference over several columns (see refs)
    ValueType type = ValueType::Text;
    Group group = Group::Spec;
    bool patchable = false;
    bool hasMember = true;
    std::string_view header;  // loomctl header override, usually empty
    std::array<RefColumn, 3> refs = {};
    std::uint8_t refCount = 0;

    std::span<const RefColumn> references() const { return {refs.data(), refCount}; }
};

struct KindInfo {
    Kind kind = Kind::Site;
    std::span<const FieldInfo> fields;
    std::string_view columns;  // loomctl get
    std::string_view wide;     // loomctl get -o wide, after `columns`
    const FieldInfo* find(std::string_view api) const;
};

const KindInfo& kindInfo(Kind k);

// A loomctl header from an API name: "speedGbps" -> "SPEED-GBPS".
std::string headerOf(std::string_view api);
// The loomctl header of a kind's field: its own header (kinds.hpp), else headerOf(api).
std::string columnHeader(const KindInfo& k, std::string_view api);

}  // namespace loom::inventory
