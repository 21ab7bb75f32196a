// Loading the inventory: one COPY ... TO STDOUT per table in one REPEATABLE READ read-only
// transaction, references turned back from ids into names; and per-kind row counts.

#include <unordered_map>

#include "copy_text.hpp"
#include "inventory_rows.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/native.hpp"

namespace loom::db {

using namespace loom::inventory;
using namespace loom::db::detail;

namespace {

using IdNames = std::unordered_map<std::int64_t, std::string_view>;

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

std::string nameOf(const IdNames& m, const detail::CopyField& f) {
    if (f.isNull) return {};
    auto it = m.find(detail::toInt(f.text));
    return it == m.end() ? std::string() : std::string(it->second);
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

std::vector<std::string> cols(std::initializer_list<const char*> names) {
    std::vector<std::string> out;
    for (const char* n : names) out.push_back(quoteIdentifier(n));
    return out;
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
        for (const auto& row :
             tx.exec("SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n "
                     "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = "
                     "'r'"))
            estimates[row[0].c_str()] =
                row[1].as<double>() > 0 ? static_cast<std::size_t>(row[1].as<double>()) : 0;
        auto count = [&](const char* table) { return estimates[table]; };
        using F = std::vector<detail::CopyField>;
        std::vector<std::int64_t> ids;

        // Sites.
        ids.clear();
        inv.sites.reserve(count("sites"));
        TableReader(tx, "sites", cols({"id", "name", "description", "labels", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                inv.sites.push_back(Site{std::string(f[1].text), std::string(f[2].text),
                                         labelsOf(f[3]), detail::toInt(f[4].text)});
            });
        IdNames siteNames = indexNames(inv.sites, ids);

        ids.clear();
        inv.zones.reserve(count("zones"));
        TableReader(tx, "zones", cols({"id", "name", "site_id", "labels", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                inv.zones.push_back(Zone{std::string(f[1].text), nameOf(siteNames, f[2]),
                                         labelsOf(f[3]), detail::toInt(f[4].text)});
            });
        IdNames zoneNames = indexNames(inv.zones, ids);

        ids.clear();
        inv.rows.reserve(count("rows"));
        TableReader(tx, "rows",
                    cols({"id", "name", "zone_id", "index", "labels", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                inv.rows.push_back(Row{std::string(f[1].text), nameOf(zoneNames, f[2]),
                                       static_cast<int>(detail::toInt(f[3].text)), labelsOf(f[4]),
                                       detail::toInt(f[5].text)});
            });
        IdNames rowNames = indexNames(inv.rows, ids);

        ids.clear();
        inv.racks.reserve(count("racks"));
        TableReader(tx, "racks",
                    cols({"id", "name", "row_id", "zone_id", "position", "model", "labels", "state",
                          "serial", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Rack r;
                r.name = f[1].text;
                r.row = nameOf(rowNames, f[2]);
                r.zone = nameOf(zoneNames, f[3]);
                r.position = static_cast<int>(detail::toInt(f[4].text));
                r.model = f[5].text;
                r.labels = labelsOf(f[6]);
                r.state = f[7].text;
                r.serial = f[8].text;
                r.resourceVersion = detail::toInt(f[9].text);
                inv.racks.push_back(std::move(r));
            });
        IdNames rackNames = indexNames(inv.racks, ids);

        ids.clear();
        inv.hosts.reserve(count("hosts"));
        TableReader(tx, "hosts",
                    cols({"id", "name", "rack_id", "slot", "model", "labels", "state", "serial",
                          "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Host h;
                h.name = f[1].text;
                h.rack = nameOf(rackNames, f[2]);
                h.slot = static_cast<int>(detail::toInt(f[3].text));
                h.model = f[4].text;
                h.labels = labelsOf(f[5]);
                h.state = f[6].text;
                h.serial = f[7].text;
                h.resourceVersion = detail::toInt(f[8].text);
                inv.hosts.push_back(std::move(h));
            });
        IdNames hostNames = indexNames(inv.hosts, ids);

        ids.clear();
        inv.storageNodes.reserve(count("storage_nodes"));
        TableReader(tx, "storage_nodes",
                    cols({"id", "name", "rack_id", "model", "capacity_tb", "labels", "state",
                          "serial", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                StorageNode s;
                s.name = f[1].text;
                s.rack = nameOf(rackNames, f[2]);
                s.model = f[3].text;
                s.capacityTb = detail::toDouble(f[4].text);
                s.labels = labelsOf(f[5]);
                s.state = f[6].text;
                s.serial = f[7].text;
                s.resourceVersion = detail::toInt(f[8].text);
                inv.storageNodes.push_back(std::move(s));
            });
        IdNames storageNames = indexNames(inv.storageNodes, ids);

        ids.clear();
        inv.gpus.reserve(count("gpus"));
        TableReader(tx, "gpus",
                    cols({"id", "name", "host_id", "index", "model", "state", "serial", "uuid",
                          "resource_version"}))
            .each([&](const F& f) {
                Gpu g;
                g.name = f[1].text;
                g.host = nameOf(hostNames, f[2]);
                g.index = static_cast<int>(detail::toInt(f[3].text));
                g.model = f[4].text;
                g.state = f[5].text;
                g.serial = f[6].text;
                g.uuid = f[7].text;
                g.resourceVersion = detail::toInt(f[8].text);
                inv.gpus.push_back(std::move(g));
            });

        ids.clear();
        inv.switches.reserve(count("switches"));
        TableReader(tx, "switches",
                    cols({"id", "name", "role", "model", "zone_id", "rack_id", "port_count",
                          "speed_gbps", "labels", "state", "serial", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Switch s;
                s.name = f[1].text;
                s.role = parseSwitchRole(f[2].text).value_or(SwitchRole::Rtsw);
                s.model = f[3].text;
                s.zone = nameOf(zoneNames, f[4]);
                s.rack = nameOf(rackNames, f[5]);
                s.portCount = static_cast<int>(detail::toInt(f[6].text));
                s.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                s.labels = labelsOf(f[8]);
                s.state = f[9].text;
                s.serial = f[10].text;
                s.resourceVersion = detail::toInt(f[11].text);
                inv.switches.push_back(std::move(s));
            });
        IdNames switchNames = indexNames(inv.switches, ids);

        ids.clear();
        inv.nics.reserve(count("nics"));
        TableReader(tx, "nics",
                    cols({"id", "name", "host_id", "storage_node_id", "index", "network", "model",
                          "speed_gbps", "state", "mac", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Nic n;
                n.name = f[1].text;
                n.host = f[2].isNull ? nameOf(storageNames, f[3]) : nameOf(hostNames, f[2]);
                n.index = static_cast<int>(detail::toInt(f[4].text));
                n.network = parseNetwork(f[5].text).value_or(Network::Backend);
                n.model = f[6].text;
                n.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                n.state = f[8].text;
                n.mac = f[9].text;
                n.resourceVersion = detail::toInt(f[10].text);
                inv.nics.push_back(std::move(n));
            });
        IdNames nicNames = indexNames(inv.nics, ids);

        ids.clear();
        inv.ports.reserve(count("ports"));
        TableReader(tx, "ports",
                    cols({"id", "name", "device_kind", "switch_id", "nic_id", "storage_node_id",
                          "index", "speed_gbps", "state", "resource_version"}))
            .each([&](const F& f) {
                ids.push_back(detail::toInt(f[0].text));
                Port p;
                p.name = f[1].text;
                p.deviceKind = parseDeviceKind(f[2].text).value_or(DeviceKind::Switch);
                switch (p.deviceKind) {
                    case DeviceKind::Switch:
                        p.device = nameOf(switchNames, f[3]);
                        break;
                    case DeviceKind::Nic:
                        p.device = nameOf(nicNames, f[4]);
                        break;
                    case DeviceKind::StorageNode:
                        p.device = nameOf(storageNames, f[5]);
                        break;
                }
                p.index = static_cast<int>(detail::toInt(f[6].text));
                p.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                p.state = f[8].text;
                p.resourceVersion = detail::toInt(f[9].text);
                inv.ports.push_back(std::move(p));
            });
        IdNames portNames = indexNames(inv.ports, ids);

        inv.links.reserve(count("links"));
        TableReader(tx, "links",
                    cols({"id", "name", "a_port_id", "b_port_id", "network", "medium", "length_m",
                          "speed_gbps", "state", "resource_version"}))
            .each([&](const F& f) {
                Link l;
                l.name = f[1].text;
                l.aPort = nameOf(portNames, f[2]);
                l.bPort = nameOf(portNames, f[3]);
                l.network = parseNetwork(f[4].text).value_or(Network::Backend);
                l.medium = parseMedium(f[5].text).value_or(Medium::Dac);
                l.lengthM = detail::toDouble(f[6].text);
                l.speedGbps = static_cast<int>(detail::toInt(f[7].text));
                l.state = f[8].text;
                l.resourceVersion = detail::toInt(f[9].text);
                inv.links.push_back(std::move(l));
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
        return tx.exec(std::string("SELECT count(*) FROM ") + tableDef(kind).table)[0][0]
            .as<std::size_t>();
    } catch (...) {
        return fail(translateException("count"));
    }
}

}  // namespace loom::db
