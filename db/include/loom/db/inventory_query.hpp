// Read access to the stored inventory for the HTTP API: list with filters and keyset
// pagination, get by name, and the label/operational-field PATCH with optimistic concurrency.
//
// Objects come back as JSON text built by PostgreSQL (jsonb_build_object), in the shape of
// docs/api.md (`name`, `kind`, `resourceVersion`, `createdAt`, `updatedAt`, `labels` and the
// fields of the kind, parents by name), so the server never decodes rows it only forwards.
//
//   ListQuery q{.kind = Kind::Rack, .limit = 100};
//   q.filters = {{"zone", "z1"}, {"label.team", "ml"}};
//   auto page = listObjects(conn, q);          // page->items: JSON object texts
//   if (page && !page->nextCursor.empty()) q.cursor = page->nextCursor;
//
// Filters: any scalar field of the kind and its relation filters (see filterFields(); e.g.
// gpus by `rack`, links by `switch` at either end, ports by `peer`), compared as text or with
// NetBox's `__` lookups, and labels as `label.<key>`. A filter given twice is an alternative
// (OR); different filters AND. Unknown filter fields are rejected (InvalidArgument naming the
// field and the valid ones). Limits: limit 1..5000; at most 32 filters.
#pragma once

#include "loom/db/database.hpp"
#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom::db {

inline constexpr int kMaxListLimit = 5000;
inline constexpr int kDefaultListLimit = 500;
inline constexpr std::size_t kMaxListFilters = 32;

struct ListQuery {
    inventory::Kind kind = inventory::Kind::Rack;
    int limit = kDefaultListLimit;
    std::string cursor;  // opaque, from a previous page's nextCursor
    std::vector<std::pair<std::string, std::string>> filters;  // field or label.<key>, value
    // Links: the backend links that pass every `health` filter by their live word (the hub's,
    // docs/api.md "Link health"), as loomd found them. Set, a `health` filter takes these names
    // for backend links and the stored rule (state, open events) for the others.
    struct LiveLinks {
        std::vector<std::string> names;
        // `names` are the backend links that do NOT pass (loomd sends the shorter list: at 98k
        // `health=up` passes ~330k links and fails a few).
        bool failing = false;
    };
    std::optional<LiveLinks> liveBackendLinks;
};

struct ListPage {
    std::vector<std::string> items;  // JSON object texts, ordered by name
    std::string nextCursor;          // empty on the last page
};

// The scalar fields a list of this kind can filter on (API names, e.g. "zone", "state").
std::vector<std::string> filterFields(inventory::Kind kind);

Result<ListPage> listObjects(Connection& conn, const ListQuery& query);

// The object as JSON text; NotFound naming the kind and name.
Result<std::string> getObject(Connection& conn, inventory::Kind kind,
                              const std::string& name);

inline constexpr std::int64_t kMaxAnnotationBytes = 256 * 1024;  // as Kubernetes'

struct ObjectPatch {
    // A JSON object text: keys with string values are set, keys with null are removed.
    std::optional<std::string> labels;
    // The same for annotations (0020_annotations): all set by hand, at most
    // kMaxAnnotationBytes of JSON per object after the merge (a larger result is a 400).
    std::optional<std::string> annotations;
    // Operational fields the API may set: those inventory/kinds.hpp marks .patch() (serial,
    // uuid, firmware, mac, ...). Lifecycle `state` belongs to provisioning.
    std::vector<std::pair<std::string, std::string>> fields;
    std::optional<std::int64_t> ifMatch;  // expected resourceVersion; stale -> 412
    std::string actor;                    // recorded in change_log
};

// The fields a PATCH may set on this kind (besides labels).
std::vector<std::string> patchableFields(inventory::Kind kind);

// Applies the patch in one transaction with a change_log row; returns the updated object.
// NotFound, PreconditionFailed ("resourceVersion is 8, If-Match said 7"), InvalidArgument.
Result<std::string> patchObject(Connection& conn, inventory::Kind kind,
                                const std::string& name, const ObjectPatch& patch);

// The trigram indexes on port and link names (migration 0022) that serve `__ic`, `__isw` and
// `__iew`. A bulk apply drops them with the other secondary indexes before its COPY and leaves
// them to be built after its commit, outside its transaction (~550 ms of server CPU at 24k):
// call this after applyPlan (loomd apply, the API's apply and loomd's start-up do). Builds
// those that are missing and returns how many; lists are correct meanwhile (by a scan). Then
// vacuums ports and links when their visibility map is mostly unset (after a bulk load), so
// name-filtered lists walk the sort_key index without reading the table (0025).
Result<int> buildNameIndexes(Connection& conn);

// Counts per kind and per state for /api/v1/summary, as a JSON object text:
// {"cluster": "...", "fabric": "roce", "generation": 3, "kinds": {"racks": {"total": 4,
//  "states": {"planned": 4}}, ...}}
Result<std::string> inventorySummary(Connection& conn);

}  // namespace loom::db
