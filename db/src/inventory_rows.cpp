#include "inventory_rows.hpp"

#include <array>

#include "loom/db/database.hpp"

namespace loom::db::detail {

const TableDef& tableDef(Kind k) {
    static const std::array<TableDef, kKindCount> defs = [] {
        std::array<TableDef, kKindCount> out{};
        for (Kind kind : kAllKinds) {
            TableDef& d = out[static_cast<int>(kind)];
            d.table = inventory::kindPlural(kind).data();
            for (const auto& f : inventory::kindInfo(kind).fields) {
                if (!f.hasMember) continue;
                auto& cols = f.group == Group::Spec ? d.spec : d.ops;
                if (f.refCount > 1)
                    for (const auto& r : f.references()) cols.push_back(r.column.data());
                else
                    cols.push_back(f.column.data());
            }
        }
        return out;
    }();
    return defs[static_cast<int>(k)];
}

std::vector<std::string> copyColumns(const TableDef& d) {
    std::vector<std::string> cols = {"id", "name", "sort_key"};
    for (const char* c : d.spec) cols.push_back(quoteIdentifier(c));
    for (const char* c : d.ops) cols.push_back(quoteIdentifier(c));
    return cols;
}

void Resolver::fetch(pqxx::work& tx) {
    for (Kind k : kAllKinds) {
        Names& t = of_[idx(k)];
        if (t.needed == 0) continue;
        std::vector<std::string_view> names;
        names.reserve(t.needed);
        for (std::size_t i = 0; i < t.names.size(); ++i)
            if (t.ids[i] == kUnknown) names.push_back(t.names[i]);
        auto r = tx.exec_params(
            std::string("SELECT name, id FROM ") + tableOf(k) + " WHERE name = ANY($1::text[])",
            detail::pgTextArray(names));
        for (const auto& row : r)
            if (auto at = t.table.find(row[0].c_str(), t.nameOf()))
                t.ids[*at] = row[1].as<std::int64_t>();
        t.needed = 0;
    }
}

}  // namespace loom::db::detail
