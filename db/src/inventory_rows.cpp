#include "inventory_rows.hpp"

#include "loom/db/database.hpp"

namespace loom::db::detail {

using namespace loom::inventory;

const TableDef& tableDef(Kind k) {
    static const TableDef defs[kKindCount] = {
        {"sites", {"description", "labels"}, {}},
        {"zones", {"site_id", "labels"}, {}},
        {"rows", {"zone_id", "index", "labels"}, {}},
        {"racks", {"row_id", "zone_id", "position", "model", "labels"}, {"state", "serial"}},
        {"hosts", {"rack_id", "slot", "model", "labels"}, {"state", "serial"}},
        {"gpus", {"host_id", "index", "model"}, {"state", "serial", "uuid"}},
        {"nics",
         {"host_id", "storage_node_id", "index", "network", "model", "speed_gbps"},
         {"state", "mac"}},
        {"switches",
         {"role", "model", "zone_id", "rack_id", "port_count", "speed_gbps", "labels"},
         {"state", "serial"}},
        {"ports",
         {"device_kind", "switch_id", "nic_id", "storage_node_id", "index", "speed_gbps"},
         {"state"}},
        {"links",
         {"a_port_id", "b_port_id", "network", "medium", "length_m", "speed_gbps"},
         {"state"}},
        {"storage_nodes", {"rack_id", "model", "capacity_tb", "labels"}, {"state", "serial"}},
    };
    return defs[static_cast<int>(k)];
}

std::vector<std::string> copyColumns(const TableDef& d) {
    // sort_key: the natural order's key of the name (0021), written with it.
    std::vector<std::string> cols = {"id", "name", "sort_key"};
    for (const char* c : d.spec) cols.push_back(quoteIdentifier(c));
    for (const char* c : d.ops) cols.push_back(quoteIdentifier(c));
    return cols;
}

void Resolver::fetch(pqxx::work& tx) {
    for (Kind k : kAllKinds) {
        auto& need = needed_[idx(k)];
        if (need.empty()) continue;
        std::vector<std::string_view> names;
        names.reserve(need.size());
        for (const auto& [n, _] : need) names.push_back(n);
        auto r = tx.exec_params(std::string("SELECT name, id FROM ") + tableDef(k).table +
                                    " WHERE name = ANY($1::text[])",
                                detail::pgTextArray(names));
        for (const auto& row : r) {
            const std::string& stored = owned_.emplace_back(row[0].c_str());
            ids_[idx(k)][stored] = row[1].as<std::int64_t>();
        }
        need.clear();
    }
}

void writeRow(LineWriter& w, const Site& e) {
    w.text(e.description);
    w.labels(e.labels);
}
void writeRow(LineWriter& w, const Zone& e) {
    w.ref(e.name.c_str(), "site", e.site, Kind::Site);
    w.labels(e.labels);
}
void writeRow(LineWriter& w, const Row& e) {
    w.ref(e.name.c_str(), "zone", e.zone, Kind::Zone);
    w.integer(e.index);
    w.labels(e.labels);
}
void writeRow(LineWriter& w, const Rack& e) {
    w.ref(e.name.c_str(), "row", e.row, Kind::Row);
    w.ref(e.name.c_str(), "zone", e.zone, Kind::Zone);
    w.integer(e.position);
    w.text(e.model);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}
void writeRow(LineWriter& w, const Host& e) {
    w.ref(e.name.c_str(), "rack", e.rack, Kind::Rack);
    w.integer(e.slot);
    w.text(e.model);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}
void writeRow(LineWriter& w, const Gpu& e) {
    w.ref(e.name.c_str(), "host", e.host, Kind::Host);
    w.integer(e.index);
    w.text(e.model);
    w.text(e.state);
    w.text(e.serial);
    w.text(e.uuid);
}
void writeRow(LineWriter& w, const Nic& e) {
    w.hostOrStorage(e.name, e.host);
    w.integer(e.index);
    w.text(networkName(e.network));
    w.text(e.model);
    w.integer(e.speedGbps);
    w.text(e.state);
    w.text(e.mac);
}
void writeRow(LineWriter& w, const Switch& e) {
    w.text(switchRoleName(e.role));
    w.text(e.model);
    w.ref(e.name.c_str(), "zone", e.zone, Kind::Zone);
    w.ref(e.name.c_str(), "rack", e.rack, Kind::Rack);
    w.integer(e.portCount);
    w.integer(e.speedGbps);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}
void writeRow(LineWriter& w, const Port& e) {
    w.text(deviceKindName(e.deviceKind));
    for (DeviceKind d : {DeviceKind::Switch, DeviceKind::Nic, DeviceKind::StorageNode}) {
        if (d == e.deviceKind)
            w.ref(e.name.c_str(), "device", e.device, deviceKindOf(d));
        else
            w.null();
    }
    w.integer(e.index);
    w.integer(e.speedGbps);
    w.text(e.state);
}
void writeRow(LineWriter& w, const Link& e) {
    w.ref(e.name.c_str(), "aPort", e.aPort, Kind::Port);
    w.ref(e.name.c_str(), "bPort", e.bPort, Kind::Port);
    w.text(networkName(e.network));
    w.text(mediumName(e.medium));
    w.real(e.lengthM);
    w.integer(e.speedGbps);
    w.text(e.state);
}
void writeRow(LineWriter& w, const StorageNode& e) {
    w.ref(e.name.c_str(), "rack", e.rack, Kind::Rack);
    w.text(e.model);
    w.real(e.capacityTb);
    w.labels(e.labels);
    w.text(e.state);
    w.text(e.serial);
}

}  // namespace loom::db::detail
