#include "loom/db/live_states.hpp"

#include "loom/db/native.hpp"

#include "copy_text.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::db {

namespace {

using inventory::Inventory;

struct Change {
    std::uint32_t index;
    std::string state;
    std::int64_t resourceVersion;
};

// Finds a row of `rows` by name: first at `hint` (a full read meets the rows in the order the
// snapshot was loaded in, except those updated since), then in the kind's (hash, index) table,
// the caller's (StateNameIndex, kept across refreshes) or one of its own.
template <class T>
class LiveStateRowLocator {
public:
    LiveStateRowLocator(const std::vector<T>& rows, StateNameIndex::Kind* kept)
        : rows_(rows), k_(kept ? kept : &own_) {}

    bool find(std::string_view name, std::size_t hint, std::uint32_t& out) {
        if (hint < rows_.size() && rows_[hint].name == name) {
            out = static_cast<std::uint32_t>(hint);
            return true;
        }
        if (!k_->built || k_->rows != rows_.size()) build();
        const std::uint64_t h = std::hash<std::string_view>{}(name);
        auto it = std::lower_bound(k_->byHash.begin(), k_->byHash.end(),
                                   std::pair<std::uint64_t, std::uint32_t>{h, 0});
        for (; it != k_->byHash.end() && it->first == h; ++it)
            if (it->second < rows_.size() && rows_[it->second].name == name) {
                out = it->second;
                return true;
            }
        return false;
    }

private:
    void build() {
        auto& v = k_->byHash;
        v.clear();
        v.reserve(rows_.size());
        for (std::uint32_t i = 0; i < rows_.size(); ++i)
            v.emplace_back(std::hash<std::string_view>{}(std::string_view(rows_[i].name)), i);
        std::sort(v.begin(), v.end());
        v.shrink_to_fit();
        k_->rows = rows_.size();
        k_->built = true;
    }

    const std::vector<T>& rows_;
    StateNameIndex::Kind own_;
    StateNameIndex::Kind* k_;
};

// Reads (name, state, resource_version) of one table and records the rows of `rows` whose
// state or version differ. Returns false when the table's rows are not those of `rows`
// (a row added, removed or renamed: a structural change the caller reloads for).
template <class T>
bool readKind(pqxx::transaction_base& tx, const char* table, const std::vector<T>& rows,
              StateNameIndex::Kind* kept, std::vector<Change>& changes, std::size_t& read) {
    pqxx::stream_from stream(tx, table,
                             std::vector<std::string>{"name", "state", "resource_version"});
    std::string line;
    std::vector<std::string> storage;
    std::vector<detail::CopyField> f;
    LiveStateRowLocator<T> locate(rows, kept);
    std::size_t pos = 0, seen = 0;
    bool ok = true;
    while (stream.get_raw_line(line)) {
        ++read;
        if (!ok) continue;  // drain the COPY
        detail::splitCopyLine(line, storage, f);
        if (f.size() < 3) {
            ok = false;
            continue;
        }
        std::uint32_t i;
        if (!locate.find(f[0].text, pos, i)) {
            ok = false;
            continue;
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
                     StateNameIndex::Kind* kept, std::int64_t sinceXmin,
                     std::vector<Change>& changes, std::size_t& read) {
    // The horizon is our own number (never input); xid has no bind-parameter form in COPY.
    auto r = tx.exec(std::string("SELECT name, state, resource_version FROM ") + table +
                     " WHERE age(xmin) <= age('" + std::to_string(sinceXmin) + "'::xid)");
    if (r.empty()) return true;
    read += r.size();
    LiveStateRowLocator<T> locate(rows, kept);
    for (const auto& row : r) {
        std::uint32_t i;
        if (!locate.find(std::string_view(row[0].c_str(), row[0].size()), rows.size(), i))
            return false;
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
                                   std::int64_t sinceXmin, StateNameIndex* names) {
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
        std::vector<Change> racks, hosts, gpus, links, switches;
        std::size_t& n = out.rowsRead;
        auto kept = [names](std::size_t k) { return names ? &names->kind(k) : nullptr; };
        const bool same =
            sinceXmin >= 0
                ? readChangedKind(tx, "racks", current.racks.vec(), kept(0), sinceXmin, racks, n) &&
                      readChangedKind(tx, "hosts", current.hosts.vec(), kept(1), sinceXmin, hosts,
                                      n) &&
                      readChangedKind(tx, "gpus", current.gpus.vec(), kept(2), sinceXmin, gpus,
                                      n) &&
                      readChangedKind(tx, "links", current.links.vec(), kept(3), sinceXmin, links,
                                      n) &&
                      readChangedKind(tx, "switches", current.switches.vec(), kept(4), sinceXmin,
                                      switches, n)
                : readKind(tx, "racks", current.racks.vec(), kept(0), racks, n) &&
                      readKind(tx, "hosts", current.hosts.vec(), kept(1), hosts, n) &&
                      readKind(tx, "gpus", current.gpus.vec(), kept(2), gpus, n) &&
                      readKind(tx, "links", current.links.vec(), kept(3), links, n) &&
                      readKind(tx, "switches", current.switches.vec(), kept(4), switches, n);
        tx.commit();
        if (!same) {
            out.outcome = StateRefresh::Outcome::Structure;
            return out;
        }
        out.changedRows =
            racks.size() + hosts.size() + gpus.size() + links.size() + switches.size();
        if (out.changedRows == 0) return out;
        out.outcome = StateRefresh::Outcome::Patched;
        out.inventory = current;  // shares every kind; patch() copies the changed ones
        patch(out.inventory.racks, racks);
        patch(out.inventory.hosts, hosts);
        patch(out.inventory.gpus, gpus);
        patch(out.inventory.links, links);
        patch(out.inventory.switches, switches);
        return out;
    } catch (...) {
        return fail(translateException("live state refresh"));
    }
}

}  // namespace loom::db
