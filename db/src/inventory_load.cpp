// Loading the inventory: one COPY ... TO STDOUT per table in one REPEATABLE READ read-only
// transaction, references turned back from ids into names; and per-kind row counts. The
// columns read and how each becomes a member come from inventory/kinds.hpp.

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "copy_text.hpp"
#include "inventory_rows.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/native.hpp"

namespace loom::db {

using namespace loom::inventory;
using namespace loom::db::detail;

namespace {

// id -> the entity's name: a reference to it becomes a copy of the same Text (a port's device
// shares its switch's name block, a link's ends their ports').
using IdNames = std::unordered_map<std::int64_t, Text>;

class TableReader {
public:
    TableReader(pqxx::transaction_base& tx, const char* table, std::vector<std::string> cols)
        : stream_(tx, table, cols), table_(table) {}
    // Calls f(fields) per row.
    template <class F>
    void each(F&& f) {
        std::string line;
        while (stream_.get_raw_line(line)) {
            detail::splitCopyLine(line, storage_, fields_);
            f(fields_);
        }
        stream_.complete();
    }

private:
    pqxx::stream_from stream_;
    const char* table_;
    std::vector<std::string> storage_;
    std::vector<detail::CopyField> fields_;
};

Text nameOf(const IdNames& m, const detail::CopyField& f) {
    if (f.isNull) return {};
    auto it = m.find(detail::toInt(f.text));
    return it == m.end() ? Text() : it->second;
}

template <class T>
IdNames indexNames(const std::vector<T>& v, const std::vector<std::int64_t>& ids) {
    IdNames m;
    m.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) m.emplace(ids[i], v[i].name);
    return m;
}

Labels labelsOf(const detail::CopyField& f) {
    Labels l;
    if (!f.isNull && f.text != "{}") detail::parseLabels(f.text, l);
    return l;
}

// States and models repeat (a handful of values over ~1M rows): one shared block each.
// Other text (serials, UUIDs, MACs, descriptions) is mostly unique: a block of its own.
void readField(const detail::CopyField& f, Text& v, bool repeats) {
    v = repeats ? Text::shared(f.text) : Text(f.text);
}
void readField(const detail::CopyField& f, int& v) { v = static_cast<int>(detail::toInt(f.text)); }
void readField(const detail::CopyField& f, double& v) { v = detail::toDouble(f.text); }
void readField(const detail::CopyField& f, Labels& v) { v = labelsOf(f); }
template <class E>
requires std::is_enum_v<E>
void readField(const detail::CopyField& f, E& v) { parseEnum(f.text, v); }

// Kinds in an order where every kind comes after the kinds it references (their id -> name
// maps must exist), and which kinds are referenced at all (only those keep the map).
struct LoadOrder {
    std::vector<Kind> order;
    bool referenced[kKindCount] = {};
};
LoadOrder loadOrder() {
    LoadOrder o;
    bool loaded[kKindCount] = {};
    while (o.order.size() < kKindCount) {
        std::size_t before = o.order.size();
        for (Kind k : kAllKinds) {
            if (loaded[static_cast<int>(k)]) continue;
            bool ready = true;
            for (const auto& f : kindInfo(k).fields)
                for (const auto& r : f.references()) {
                    o.referenced[static_cast<int>(r.kind)] = true;
                    if (r.kind != k && !loaded[static_cast<int>(r.kind)]) ready = false;
                }
            if (!ready) continue;
            loaded[static_cast<int>(k)] = true;
            o.order.push_back(k);
        }
        if (o.order.size() == before) break;  // a reference cycle: kinds.hpp is wrong
    }
    return o;
}

// Reads one kind's table into the inventory; names[k] gets its id -> name map when some kind
// references it.
template <class T>
void loadKind(pqxx::transaction_base& tx, Inventory& inv, IdNames (&names)[kKindCount],
              bool referenced, std::size_t estimate) {
    constexpr Kind kind = KindDesc<T>::kind;
    // id, name, the fields (sort_key is derived from the name, not loaded), resource_version
    // last (the raw COPY line's last field keeps its newline; toInt ignores it).
    std::vector<std::string> cols = copyColumns(tableDef(kind));
    cols.erase(cols.begin() + 2);
    cols.emplace_back("resource_version");
    std::vector<T>& out = entitiesOf<T>(inv);
    out.reserve(estimate);
    std::vector<std::int64_t> ids;
    using F = std::vector<detail::CopyField>;
    TableReader(tx, tableOf(kind), std::move(cols)).each([&](const F& f) {
        if (referenced || kind == Kind::Switch) ids.push_back(detail::toInt(f[0].text));
        T e;
        e.name = f[1].text;
        std::size_t p = 2;
        forEachStored<T>([&](auto i) {
            constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
            if constexpr (fd.refCount > 0) {
                // The first non-NULL of the reference's columns (at most one is set).
                for (int r = 0; r < fd.refCount; ++r, ++p)
                    if (!f[p].isNull && (e.*fd.member).empty())
                        e.*fd.member = nameOf(names[static_cast<int>(fd.refs[r].kind)], f[p]);
            } else if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e.*fd.member)>,
                                                Text>) {
                constexpr bool repeats = fd.api == "state" || fd.api == "model";
                readField(f[p++], e.*fd.member, repeats);
            } else {
                readField(f[p++], e.*fd.member);
            }
        });
        e.resourceVersion = detail::toInt(f[p].text);
        out.push_back(std::move(e));
    });
    // Switches in the order they were created (their ids), not the table's: the fabric numbers
    // the switches of a tier in inventory order, and a rack's address prefix is its RTSW's
    // number (fabric/address_plan.hpp). The table's order moves when a row is updated (a
    // switch's state follows its rack, a PATCH of its labels), so a restart renumbered the
    // racks' prefixes and the routes pointed at other racks.
    if constexpr (kind == Kind::Switch) {
        if (!std::is_sorted(ids.begin(), ids.end())) {
            std::vector<std::size_t> order(out.size());
            for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
            std::sort(order.begin(), order.end(),
                      [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
            std::vector<T> sorted;
            std::vector<std::int64_t> sortedIds;
            sorted.reserve(out.size());
            sortedIds.reserve(ids.size());
            for (auto i : order) {
                sorted.push_back(std::move(out[i]));
                sortedIds.push_back(ids[i]);
            }
            out = std::move(sorted);
            ids = std::move(sortedIds);
        }
    }
    // The planner's estimate may be stale (rows deleted since the last ANALYZE): give the
    // slack back, the snapshot lives until the next load.
    if (out.capacity() > out.size() + out.size() / 16) out.shrink_to_fit();
    if (referenced) names[static_cast<int>(kind)] = indexNames(out, ids);
}

}  // namespace

Result<Snapshot> loadSnapshot(Connection& c) {
    pqxx::connection& conn = native(c);
    try {
        pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(conn, "load");
        Snapshot snap;
        Inventory& inv = snap.inventory;
        auto st = tx.exec1("SELECT cluster, fabric, generation FROM inventory_state WHERE id = 1");
        inv.cluster = st[0].c_str();
        inv.fabric = parseFabricType(st[1].c_str()).value_or(FabricType::Roce);
        snap.generation = st[2].as<std::int64_t>();

        // Planner row estimates size every vector once without a count(*) scan per table
        // (-1 = never analysed: no hint).
        std::unordered_map<std::string, std::size_t> estimates;
        for (const auto& row : tx.exec("SELECT c.relname, c.reltuples FROM pg_class c JOIN "
                                       "pg_namespace n ON n.oid = c.relnamespace WHERE "
                                       "n.nspname = current_schema() AND c.relkind = 'r'"))
            estimates[row[0].c_str()] =
                row[1].as<double>() > 0 ? static_cast<std::size_t>(row[1].as<double>()) : 0;

        static const LoadOrder order = loadOrder();
        IdNames names[kKindCount];
        for (Kind k : order.order)
            visitKind(k, [&](auto* tag) {
                using T = std::remove_pointer_t<decltype(tag)>;
                loadKind<T>(tx, inv, names, order.referenced[static_cast<int>(k)],
                            estimates[tableOf(k)]);
            });
        tx.commit();
        return snap;
    } catch (...) {
        return fail(translateException("loading the inventory"));
    }
}

Result<Inventory> loadInventory(Connection& conn) {
    auto s = loadSnapshot(conn);
    if (!s) return fail(s.error());
    return std::move(s->inventory);
}

Result<std::size_t> countRows(Connection& c, Kind kind) {
    try {
        pqxx::nontransaction tx(native(c));
        return tx.exec(std::string("SELECT count(*) FROM ") + tableOf(kind))[0][0]
            .as<std::size_t>();
    } catch (...) {
        return fail(translateException("count"));
    }
}

}  // namespace loom::db
