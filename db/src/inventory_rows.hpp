// The inventory's tables as apply writes them (internal to db/): columns and one COPY text
// line per entity, derived from inventory/kinds.hpp, and the name -> id resolution of the
// references. Shared by inventory_apply.cpp (writes) and inventory_load.cpp (reads).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

#include "copy_text.hpp"
#include "loom/inventory/kinds.hpp"
#include "loom/inventory/model.hpp"
#include "loom/inventory/name_table.hpp"
#include "loom/inventory/natural_order.hpp"

namespace loom::db::detail {

using inventory::Group;
using inventory::Inventory;
using inventory::kAllKinds;
using inventory::Kind;
using inventory::KindDesc;
using inventory::kKindCount;
using inventory::Labels;

// Columns per table, from inventory/kinds.hpp: the spec columns (written by apply, compared by
// plan) and the operational ones (written on create only), each of a field with a C++ member,
// in the order of the description; a reference over several columns gives each.
struct TableDef {
    const char* table;
    std::vector<const char*> spec;
    std::vector<const char*> ops;
};
const TableDef& tableDef(Kind k);

inline const char* tableOf(Kind k) { return tableDef(k).table; }

// COPY columns of apply: id, name, sort_key (0021, the natural order's key of the name), then
// the spec and the operational columns, quoted.
std::vector<std::string> copyColumns(const TableDef& d);

using inventory::entitiesOf;
using inventory::visitKind;
template <class T>
const std::vector<T>& entities(const Inventory& inv) {
    return entitiesOf<T>(inv);
}

// Calls f(integral_constant<I>) for the fields of T that are stored with a C++ member: the
// spec fields, then the operational ones (TableDef's order), at compile time.
template <class T, class F>
void forEachStored(F&& f) {
    inventory::forEachField<T>([&](auto i) {
        constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
        if constexpr (fd.member != nullptr && fd.group == Group::Spec) f(i);
    });
    inventory::forEachField<T>([&](auto i) {
        constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
        if constexpr (fd.member != nullptr && fd.group != Group::Spec) f(i);
    });
}

// ---------------------------------------------------------------------------------------
// Name -> id resolution for references of created and updated rows.

class Resolver {
private:
    static constexpr std::int64_t kUnknown = -1;  // needed, not (yet) found in the database
    static int idx(Kind k) { return static_cast<int>(k); }
    // Per kind: the names in insertion order, their ids, and the flat index over both.
    struct Names {
        std::vector<std::string_view> names;
        std::vector<std::int64_t> ids;
        inventory::NameTable table;
        std::size_t needed = 0;
        auto nameOf() const {
            return [this](std::uint32_t i) { return names[i]; };
        }
    };

public:
    // Room for `n` more names of kind k.
    void reserve(Kind k, std::size_t n) {
        Names& t = of_[idx(k)];
        t.names.reserve(t.names.size() + n);
        t.ids.reserve(t.ids.size() + n);
        t.table.reserve(t.names.size() + n);
    }
    // `name` (a view that outlives the resolver: the plan's or the desired inventory's) is
    // created with `id`.
    void addCreated(Kind k, std::string_view name, std::int64_t id) {
        Names& t = of_[idx(k)];
        auto [at, inserted] =
            t.table.insert(name, static_cast<std::uint32_t>(t.names.size()), t.nameOf());
        if (!inserted) {
            t.ids[at] = id;
            return;
        }
        t.names.push_back(name);
        t.ids.push_back(id);
    }
    // `name` is referred to and is not created here: fetch() looks it up.
    void need(Kind k, std::string_view name) {
        if (name.empty()) return;
        Names& t = of_[idx(k)];
        auto [at, inserted] =
            t.table.insert(name, static_cast<std::uint32_t>(t.names.size()), t.nameOf());
        if (!inserted) return;
        t.names.push_back(name);
        t.ids.push_back(kUnknown);
        ++t.needed;
    }
    // Fetches the ids of every needed name that exists: one query per kind.
    void fetch(pqxx::work& tx);
    std::optional<std::int64_t> find(Kind k, std::string_view name) const {
        const Names& t = of_[idx(k)];
        auto at = t.table.find(name, t.nameOf());
        if (!at || t.ids[*at] == kUnknown) return std::nullopt;
        return t.ids[*at];
    }

private:
    Names of_[kKindCount];
};

// Calls f(name, kind) for each reference of a spec field of e: a reference over several
// columns names each of its kinds, or the one its selector picks (a port's device).
template <class T, class F>
void refs(const T& e, F&& f) {
    inventory::forEachField<T>([&](auto i) {
        constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
        if constexpr (fd.refCount > 0 && fd.member != nullptr) {
            if constexpr (fd.selector != nullptr) {
                f(e.*fd.member, fd.refs[static_cast<int>(e.*fd.selector)].kind);
            } else {
                for (int r = 0; r < fd.refCount; ++r) f(e.*fd.member, fd.refs[r].kind);
            }
        }
    });
}

// ---------------------------------------------------------------------------------------
// One COPY line per entity, columns in copyColumns order.

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
        char buf[24];
        auto res = std::to_chars(buf, buf + sizeof buf, v);
        out_.append(buf, res.ptr);
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
    void ref(std::string_view field, std::string_view name, Kind k) {
        if (name.empty()) return null();
        auto id = r_.find(k, name);
        if (!id) missing(field, name);
        integer(*id);
    }
    // A reference over several columns (one per kind it may name): the id in one of them, the
    // others NULL. `pick` >= 0: that column's kind; else the first kind the name resolves in.
    void refOneOf(std::string_view field, std::string_view name,
                  const std::array<inventory::RefColumn, 3>& refs, int count, int pick) {
        int chosen = -1;
        std::optional<std::int64_t> id;
        if (!name.empty()) {
            for (int r = 0; r < count && chosen < 0; ++r) {
                if (pick >= 0 && r != pick) continue;
                if ((id = r_.find(refs[r].kind, name))) chosen = r;
            }
            if (chosen < 0) missing(field, name);
        }
        for (int r = 0; r < count; ++r) r == chosen ? integer(*id) : null();
    }
    std::string_view owner() const { return owner_; }
    // A new row of `name` (a view that outlives the row) with `id`.
    void begin(std::int64_t id, std::string_view name) {
        out_.clear();
        first_ = true;
        owner_ = name;
        integer(id);
        text(name);
        key_.clear();
        appendNaturalSortKey(key_, name);
        text(key_);
    }

private:
    void sep() {
        if (!first_) out_ += '\t';
        first_ = false;
    }
    [[noreturn]] void missing(std::string_view field, std::string_view name) const {
        throw MissingRef{std::string(owner_) + ": " + std::string(field) + " \"" +
                         std::string(name) + "\" does not exist"};
    }
    std::string& out_;
    const Resolver& r_;
    bool first_ = true;
    std::string_view owner_;
    std::string key_;  // the sort key's scratch, reused row after row
};

// The fields of e after begin(), in copyColumns order. Visited at compile time: each field is
// a direct member access and one LineWriter call.
template <class T>
void writeRow(LineWriter& w, const T& e) {
    forEachStored<T>([&](auto i) {
        constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
        using M = typename std::remove_cvref_t<decltype(fd)>::Value;
        if constexpr (fd.refCount == 1) {
            w.ref(fd.api, e.*fd.member, fd.refs[0].kind);
        } else if constexpr (fd.refCount > 1) {
            int pick = -1;
            if constexpr (fd.selector != nullptr) pick = static_cast<int>(e.*fd.selector);
            w.refOneOf(fd.api, e.*fd.member, fd.refs, fd.refCount, pick);
        } else if constexpr (std::is_same_v<M, inventory::Text>) {
            w.text(e.*fd.member);
        } else if constexpr (std::is_same_v<M, int>) {
            w.integer(e.*fd.member);
        } else if constexpr (std::is_same_v<M, double>) {
            w.real(e.*fd.member);
        } else if constexpr (std::is_same_v<M, Labels>) {
            w.labels(e.*fd.member);
        } else {
            static_assert(std::is_enum_v<M>);
            w.text(inventory::enumName(e.*fd.member));
        }
    });
}

}  // namespace loom::db::detail
