// The per-kind tables of the inventory and the COPY rows apply writes (internal to db/):
// columns per table, name -> id resolution of references, one COPY text line per entity.
// Shared by inventory_apply.cpp (writes) and inventory_load.cpp (reads).
#pragma once

#include <charconv>
#include <cstdint>
#include <deque>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "copy_text.hpp"
#include "loom/inventory/model.hpp"
#include "loom/inventory/natural_order.hpp"

namespace loom::db::detail {

using inventory::DeviceKind;
using inventory::Gpu;
using inventory::Host;
using inventory::Inventory;
using inventory::kAllKinds;
using inventory::Kind;
using inventory::kKindCount;
using inventory::Labels;
using inventory::Link;
using inventory::Nic;
using inventory::Port;
using inventory::Rack;
using inventory::Row;
using inventory::Site;
using inventory::StorageNode;
using inventory::Switch;
using inventory::Zone;

// Columns per table: id, name, spec columns (written by apply, compared by plan), then
// operational columns (written on create only).
struct TableDef {
    const char* table;
    std::vector<const char*> spec;
    std::vector<const char*> ops;
};

const TableDef& tableDef(Kind k);
std::vector<std::string> copyColumns(const TableDef& d);

template <class T>
const std::vector<T>& entities(const Inventory& inv);
template <>
inline const std::vector<Site>& entities(const Inventory& i) {
    return i.sites;
}
template <>
inline const std::vector<Zone>& entities(const Inventory& i) {
    return i.zones;
}
template <>
inline const std::vector<Row>& entities(const Inventory& i) {
    return i.rows;
}
template <>
inline const std::vector<Rack>& entities(const Inventory& i) {
    return i.racks;
}
template <>
inline const std::vector<Host>& entities(const Inventory& i) {
    return i.hosts;
}
template <>
inline const std::vector<Gpu>& entities(const Inventory& i) {
    return i.gpus;
}
template <>
inline const std::vector<Nic>& entities(const Inventory& i) {
    return i.nics;
}
template <>
inline const std::vector<Switch>& entities(const Inventory& i) {
    return i.switches;
}
template <>
inline const std::vector<Port>& entities(const Inventory& i) {
    return i.ports;
}
template <>
inline const std::vector<Link>& entities(const Inventory& i) {
    return i.links;
}
template <>
inline const std::vector<StorageNode>& entities(const Inventory& i) {
    return i.storageNodes;
}

// ---------------------------------------------------------------------------------------
// Name -> id resolution for references of created and updated rows.

class Resolver {
public:
    void addCreated(Kind k, std::string_view name, std::int64_t id) { ids_[idx(k)][name] = id; }
    void reserve(Kind k, std::size_t n) { ids_[idx(k)].reserve(ids_[idx(k)].size() + n); }
    void need(Kind k, std::string_view name) {
        if (name.empty() || ids_[idx(k)].contains(name)) return;
        needed_[idx(k)].emplace(name, 0);
    }
    // Fetches the ids of every needed name that exists: one query per kind.
    void fetch(pqxx::work& tx);
    std::optional<std::int64_t> find(Kind k, std::string_view name) const {
        auto it = ids_[idx(k)].find(name);
        if (it == ids_[idx(k)].end()) return std::nullopt;
        return it->second;
    }

private:
    static int idx(Kind k) { return static_cast<int>(k); }
    std::unordered_map<std::string_view, std::int64_t> ids_[kKindCount];
    std::unordered_map<std::string_view, int> needed_[kKindCount];
    std::deque<std::string> owned_;
};

// References of each kind: (field value, kind it names). Nic::host may name a host or a
// storage node; Port::device names the kind in deviceKind.
template <class F>
void refs(const Site&, F&&) {}
template <class F>
void refs(const Zone& e, F&& f) {
    f(e.site, Kind::Site);
}
template <class F>
void refs(const Row& e, F&& f) {
    f(e.zone, Kind::Zone);
}
template <class F>
void refs(const Rack& e, F&& f) {
    f(e.row, Kind::Row);
    f(e.zone, Kind::Zone);
}
template <class F>
void refs(const Host& e, F&& f) {
    f(e.rack, Kind::Rack);
}
template <class F>
void refs(const Gpu& e, F&& f) {
    f(e.host, Kind::Host);
}
template <class F>
void refs(const Nic& e, F&& f) {
    f(e.host, Kind::Host);
    f(e.host, Kind::StorageNode);
}
template <class F>
void refs(const Switch& e, F&& f) {
    f(e.zone, Kind::Zone);
    f(e.rack, Kind::Rack);
}
inline Kind deviceKindOf(DeviceKind d) {
    switch (d) {
        case DeviceKind::Switch:
            return Kind::Switch;
        case DeviceKind::Nic:
            return Kind::Nic;
        case DeviceKind::StorageNode:
            return Kind::StorageNode;
    }
    return Kind::Switch;
}
template <class F>
void refs(const Port& e, F&& f) {
    f(e.device, deviceKindOf(e.deviceKind));
}
template <class F>
void refs(const Link& e, F&& f) {
    f(e.aPort, Kind::Port);
    f(e.bPort, Kind::Port);
}
template <class F>
void refs(const StorageNode& e, F&& f) {
    f(e.rack, Kind::Rack);
}

// ---------------------------------------------------------------------------------------
// One COPY line per entity, columns in tableDef order.

struct MissingRef {
    std::string message;
};

class LineWriter {
public:
    LineWriter(std::string& out, const Resolver& r) : out_(out), r_(r) {}
    void text(std::string_view s) {
        sep();
        detail::copyEscape(out_, s);
    }
    void integer(std::int64_t v) {
        sep();
        out_ += std::to_string(v);
    }
    void real(double v) {
        sep();
        char buf[32];
        auto res = std::to_chars(buf, buf + sizeof buf, v);
        out_.append(buf, res.ptr);
    }
    void labels(const Labels& l) {
        sep();
        if (l.empty())
            out_ += "{}";
        else
            detail::copyEscape(out_, detail::labelsJson(l));
    }
    void null() {
        sep();
        out_ += "\\N";
    }
    // A reference: NULL when empty, else the id; a name that does not exist is an error.
    void ref(const char* owner, std::string_view field, std::string_view name, Kind k) {
        if (name.empty()) return null();
        auto id = r_.find(k, name);
        if (!id)
            throw MissingRef{std::string(owner) + ": " + std::string(field) + " \"" +
                             std::string(name) + "\" does not exist"};
        integer(*id);
    }
    // Nic::host: exactly one of the (host, storage node) columns.
    void hostOrStorage(const std::string& owner, std::string_view name) {
        if (name.empty()) return null(), null();
        if (auto id = r_.find(Kind::Host, name)) return integer(*id), null();
        if (auto id = r_.find(Kind::StorageNode, name)) return null(), integer(*id);
        throw MissingRef{owner + ": host \"" + std::string(name) + "\" does not exist"};
    }
    const std::string& owner() const { return owner_; }
    void begin(std::int64_t id, const std::string& name) {
        out_.clear();
        first_ = true;
        owner_ = name;
        integer(id);
        text(name);
        text(naturalSortKey(name));
    }

private:
    void sep() {
        if (!first_) out_ += '\t';
        first_ = false;
    }
    std::string& out_;
    const Resolver& r_;
    bool first_ = true;
    std::string owner_;
};

void writeRow(LineWriter& w, const Site& e);
void writeRow(LineWriter& w, const Zone& e);
void writeRow(LineWriter& w, const Row& e);
void writeRow(LineWriter& w, const Rack& e);
void writeRow(LineWriter& w, const Host& e);
void writeRow(LineWriter& w, const Gpu& e);
void writeRow(LineWriter& w, const Nic& e);
void writeRow(LineWriter& w, const Switch& e);
void writeRow(LineWriter& w, const Port& e);
void writeRow(LineWriter& w, const Link& e);
void writeRow(LineWriter& w, const StorageNode& e);

template <class F>
void visitKind(Kind k, F&& f) {
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
}

}  // namespace loom::db::detail
