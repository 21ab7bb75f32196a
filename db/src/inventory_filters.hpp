// The per-kind SQL of the inventory's read path (internal to db/): each kind's table, joins and
// fields as SQL expressions (derived from inventory/kinds.hpp), its relation filters, and the
// filter compiler that turns one API filter into a parameterised SQL condition. The statements
// that use them (list, get, PATCH, summary) are inventory_query.cpp; the filter compiler and
// the per-kind table are inventory_filters.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

namespace loom::db::detail {

struct Field {
    const char* api;  // API field name
    std::string sql;  // SQL expression over alias t and the joins
};

// A relation filter (NetBox's `gpus?rack=`, `links?switch=`, `ports?peer=`): a filter-only
// field that names a related object. `where` is a condition on the listed row `t` with one or
// two `{}`, each replaced by the lookup's condition on `expr` inside a subquery, so the filter
// is a few index probes instead of a join of every row.
//
// A pattern lookup (`peer__ic=ctsw`) can match thousands of related objects, and the subquery
// then builds every one's id list before the first row is listed: `rowWhere`, when set, is the
// relation tested per listed row instead (a correlated subquery over `rowExpr`), which costs a
// few probes per row the other filters leave or the page walks.
struct Relation {
    const char* api;
    const char* expr;
    const char* where;
    const char* rowExpr = nullptr;
    const char* rowWhere = nullptr;
};

struct KindSql {
    const char* table;
    const char* joins;
    std::vector<Field> fields;
    std::vector<const char*> patchable;
    std::span<const Relation> relations = {};  // the kind's relation filters
};

// The kind's SQL (a programming error for a reference kinds.hpp gives no join: logic_error).
const KindSql& kindSql(inventory::Kind k);

// `SELECT t.name, <object as JSON text> FROM <table> t <joins>`: the row's name (the cursor)
// and the object in the shape of docs/api.md. With `page`, a query over the kind's table (alias
// t) that returns the sort keys of the rows to list: `FROM (<page>) page JOIN <table> t ON
// t.sort_key = page.sort_key <joins>`.
std::string selectSql(inventory::Kind k, std::string_view page = {});

std::string joinNames(const std::vector<std::string>& v);

// The condition of a relation filter for all the values given for one key; see the definition.
Result<std::string> relationCondition(const Relation& r, const std::string& field,
                                      const std::string& base, const std::string& op,
                                      const std::vector<std::string>& values, bool narrowed,
                                      std::vector<std::string>& params);

// The SQL condition of one filter (`field` is `name`, a field, `label.<key>`, each with an
// optional `__lookup`); its values go to `params`.
Result<std::string> filterCondition(inventory::Kind kind, const std::string& field,
                                    const std::string& value, std::vector<std::string>& params);

}  // namespace loom::db::detail
