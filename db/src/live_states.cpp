#include "loom/db/live_states.hpp"

#include "loom/db/native.hpp"

#include "copy_text.hpp"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loom::db {

namespace {

using inventory::Inventory;

struct Change {
    std::uint32_t index;
    std::string state;
    std::int64_t resourceVersion;
};

// Reads (name, state, resource_version) of one table and records the rows of `rows` whose
// state or version differ. Returns false when the table's rows are not those of `rows`
// (a row added, removed or renamed: a structural change the caller reloads for).
template <class T>
bool readKind(pqxx::transaction_base& tx, const char* table, const std::vector<T>& rows,
              std::vector<Change>& changes, std::size_t& read) {
    pqxx::stream_from stream(tx, table,
                             std::vector<std::string>{"name", "state", "resource_version"});
    std::string line;
    std::vector<std::string> storage;
    std::vector<detail::CopyField> f;
    // The table's physical order is the order the snapshot was loaded in, except for rows
    // updated since (a new tuple version moves): try the same position first, then by name.
    std::unordered_map<std::string_view, std::uint32_t> byName;
    std::size_t pos = 0, seen = 0;
    bool ok = true;
    while (stream.get_raw_line(line)) {
        ++read;
        if (!ok) continue;  // drain the COPY
        detail::splitCopyLine(line, storage, f);
        if (f.size() < 3) { ok = false; continue; }
        const std::string_view name = f[0].text;
        std::uint32_t i;
        if (pos < rows.size() && rows[pos].name == name) {
            i = static_cast<std::uint32_t>(pos);
        } else {
            if (byName.empty()) {
                byName.reserve(rows.size());
                for (std::uint32_t k = 0; k < rows.size(); ++k) byName.emplace(rows[k].name, k);
            }
            auto it = byName.find(name);
            if (it == byName.end()) { ok = false; continue; }
            i = it->second;
        }
        pos = i + 1;
        ++seen;
        const auto rv = detail::toInt(f[2].text);
        if (rows[i].state != f[1].text || rows[i].resourceVersion != rv)
            changes.push_back(Change{i, std::string(f[1].text), rv});
    }
    stream.complete();
    return ok && seen == rows.size();
}

// The rows of `table` written since the horizon `sinceXmin` (live_states.hpp), matched to
// `rows` by name. Returns false when one is not there (a row added or renamed behind us).
template <class T>
bool readChangedKind(pqxx::transaction_base& tx, const char* table, const std::vector<T>& rows,
                     std::int64_t sinceXmin, std::vector<Change>& changes, std::size_t& read) {
    // The horizon is our own number (never input); xid has no bind-parameter form in COPY.
    auto r = tx.exec(std::string("SELECT name, state, resource_version FROM ") + table +
                     " WHERE age(xmin) <= age('" + std::to_string(sinceXmin) + "'::xid)");
    if (r.empty()) return true;
    read += r.size();
    std::unordered_map<std::string_view, std::uint32_t> byName;
    byName.reserve(rows.size());
    for (std::uint32_t k = 0; k < rows.size(); ++k) byName.emplace(rows[k].name, k);
    for (const auto& row : r) {
        auto it = byName.find(std::string_view(row[0].c_str(), row[0].size()));
        if (it == byName.end()) return false;
        const auto i = it->second;
        const std::string_view state(row[1].c_str(), row[1].size());
        const auto rv = row[2].as<std::int64_t>();
        if (rows[i].state != state || rows[i].resourceVersion != rv)
            changes.push_back(Change{i, std::string(state), rv});
    }
    return true;
}

// Only a kind with changes is written, so only that kind is copied out of the snapshot it
// shares with (inventory/kind_vector.hpp); the others stay shared.
template <class T>
void patch(inventory::KindVector<T>& kind, const std::vector<Change>& changes) {
    if (changes.empty()) return;
    auto& rows = kind.mut();
    for (const auto& c : changes) {
        rows[c.index].state = inventory::Text::shared(c.state);
        rows[c.index].resourceVersion = c.resourceVersion;
    }
}

}  // namespace

Result<StateRefresh> refreshStates(Connection& c, const Inventory& current, std::int64_t generation,
                                   std::int64_t sinceXmin) {
    try {
        pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(native(c), "states");
        StateRefresh out;
        // The first statement takes the snapshot: its horizon is the next delta's start.
        const auto head = tx.exec1(
            "SELECT generation, (pg_snapshot_xmin(pg_current_snapshot())::text::numeric % "
            "4294967296)::bigint FROM inventory_state WHERE id = 1");
        const auto gen = head[0].as<std::int64_t>();
        out.snapshotXmin = head[1].as<std::int64_t>();
        if (gen != generation) {
            out.outcome = StateRefresh::Outcome::Structure;
            return out;
        }
        std::vector<Change> racks, hosts, gpus, links;
        std::size_t& n = out.rowsRead;
        const bool same =
            sinceXmin >= 0
                ? readChangedKind(tx, "racks", current.racks.vec(), sinceXmin, racks, n) &&
                      readChangedKind(tx, "hosts", current.hosts.vec(), sinceXmin, hosts, n) &&
                      readChangedKind(tx, "gpus", current.gpus.vec(), sinceXmin, gpus, n) &&
                      readChangedKind(tx, "links", current.links.vec(), sinceXmin, links, n)
                : readKind(tx, "racks", current.racks.vec(), racks, n) &&
                      readKind(tx, "hosts", current.hosts.vec(), hosts, n) &&
                      readKind(tx, "gpus", current.gpus.vec(), gpus, n) &&
                      readKind(tx, "links", current.links.vec(), links, n);
        tx.commit();
        if (!same) {
            out.outcome = StateRefresh::Outcome::Structure;
            return out;
        }
        out.changedRows = racks.size() + hosts.size() + gpus.size() + links.size();
        if (out.changedRows == 0) return out;
        out.outcome = StateRefresh::Outcome::Patched;
        out.inventory = current;  // shares every kind; patch() copies the changed ones
        patch(out.inventory.racks, racks);
        patch(out.inventory.hosts, hosts);
        patch(out.inventory.gpus, gpus);
        patch(out.inventory.links, links);
        return out;
    } catch (...) {
        return fail(translateException("live state refresh"));
    }
}

}  // namespace loom::db
