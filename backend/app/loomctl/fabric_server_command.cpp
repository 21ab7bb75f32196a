// `fabric routes|config|impact|degradation`: the fabric as loomd computed it from the stored
// inventory (the offline `fabric export` on a spec file lives in fabric_command.cpp).
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

#include <algorithm>
#include <iostream>
#include <memory>
#include <set>

namespace loom::loomctl {

using nlohmann::json;

namespace {

// A table of objects whose fields are not known in advance: one column per scalar key in
// first-seen order, arrays joined with commas.
std::string genericTable(const json& items) {
    std::vector<std::string> keys;
    std::set<std::string> seen;
    for (const auto& o : items) {
        if (!o.is_object()) continue;
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (it.value().is_object()) continue;
            if (seen.insert(it.key()).second) keys.push_back(it.key());
        }
    }
    // NAME first when there is one, as everywhere in loomctl.
    auto nameIt = std::find(keys.begin(), keys.end(), "name");
    if (nameIt != keys.end()) std::rotate(keys.begin(), nameIt, nameIt + 1);
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header;
    for (const auto& k : keys) {
        std::string h;
        for (char c : k) {
            if (std::isupper(static_cast<unsigned char>(c)) && !h.empty()) h += '-';
            h += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        header.push_back(h);
    }
    rows.push_back(header);
    for (const auto& o : items) {
        std::vector<std::string> r;
        for (const auto& k : keys) {
            std::string v = client::field(o, k);
            r.push_back(v.empty() ? "<none>" : v);
        }
        rows.push_back(std::move(r));
    }
    return client::renderRows(rows);
}

bool printStructured(const json& j, const std::string& output) {
    if (output == "json") {
        std::cout << j.dump(2) << '\n';
        return true;
    }
    if (output == "yaml") {
        std::cout << client::toYaml(j);
        return true;
    }
    return false;
}

void runRoutes(const std::string& sw, const std::string& output) {
    auto client = makeClient();
    auto r = orExit(client.getJson("/api/v1/fabric/routes/" + client::urlEncode(sw)), client);
    if (printStructured(r, output)) return;
    // Scalars first (switch, type, version), then every table the answer holds.
    bool any = false;
    for (auto it = r.begin(); it != r.end(); ++it) {
        if (!it.value().is_structured()) {
            std::cout << it.key() << ": " << client::scalarText(it.value()) << '\n';
        }
    }
    for (auto it = r.begin(); it != r.end(); ++it) {
        if (!it.value().is_array()) continue;
        any = true;
        std::cout << '\n' << it.key() << " (" << it.value().size() << "):\n";
        if (!it.value().empty() && it.value().front().is_object()) std::cout << genericTable(it.value());
        else std::cout << client::toYaml(it.value());
    }
    if (!any && r.is_object()) {
        for (auto it = r.begin(); it != r.end(); ++it) {
            if (it.value().is_object()) std::cout << it.key() << ":\n" << client::toYaml(it.value());
        }
    }
}

void runConfig(const std::string& sw, const std::string& output) {
    auto client = makeClient();
    auto r = orExit(client.getJson("/api/v1/fabric/config/" + client::urlEncode(sw)), client);
    if (printStructured(r, output)) return;
    // The configuration text itself goes to stdout (pipe it to a file); its version to stderr.
    for (const char* key : {"config", "text", "frr", "content"}) {
        if (r.contains(key) && r[key].is_string()) {
            std::string v = client::field(r, "version").empty() ? client::field(r, "configVersion")
                                                                 : client::field(r, "version");
            if (!v.empty()) std::cerr << "# " << sw << " config version " << v << '\n';
            std::string text = r[key].get<std::string>();
            std::cout << text << (text.ends_with("\n") ? "" : "\n");
            return;
        }
    }
    std::cout << client::toYaml(r);
}

void runImpact(const std::string& hosts, const std::string& collective, const std::string& output) {
    json list = json::array();
    std::size_t pos = 0;
    while (pos <= hosts.size()) {
        auto comma = hosts.find(',', pos);
        std::string h = hosts.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (!h.empty()) list.push_back(h);
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    if (list.empty()) failWith(Error::invalid("--hosts needs at least one host name (h1,h2,...)"));
    auto client = makeClient();
    auto r = orExit(client.postJson("/api/v1/fabric/impact",
                                    json{{"hosts", list}, {"collective", collective}}),
                    client);
    if (printStructured(r, output)) return;
    std::cout << collective << " over " << list.size() << " hosts: bus bandwidth "
              << client::field(r, "busBwNormalized") << "% of nominal\n";
    if (r.contains("bottlenecks") && r["bottlenecks"].is_array() && !r["bottlenecks"].empty()) {
        std::cout << "bottlenecks:\n";
        if (r["bottlenecks"].front().is_object()) std::cout << genericTable(r["bottlenecks"]);
        else
            for (const auto& b : r["bottlenecks"]) std::cout << "  " << client::scalarText(b) << '\n';
    }
    for (auto it = r.begin(); it != r.end(); ++it) {
        if (it.key() == "busBwNormalized" || it.key() == "bottlenecks" || it.value().is_structured()) continue;
        std::cout << it.key() << ": " << client::scalarText(it.value()) << '\n';
    }
}

void runDegradation(double below, const std::string& output) {
    auto client = makeClient();
    auto r = orExit(client.getJson("/api/v1/fabric/degradation"), client);
    if (printStructured(r, output)) return;
    json racks = r.contains("racks") && r["racks"].is_array() ? r["racks"] : json::array();
    std::vector<json> rows;
    std::size_t outOfService = 0;
    for (const auto& rk : racks) {
        // A rack with no cable in service carries no job: null, not a 0 % rack.
        const auto it = rk.find("busBwNormalized");
        if (it == rk.end() || !it->is_number()) {
            ++outOfService;
            continue;
        }
        if (it->get<double>() < below) rows.push_back(rk);
    }
    // Worst first: that is where to look.
    std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
        return a.value("busBwNormalized", 100.0) < b.value("busBwNormalized", 100.0);
    });
    if (rows.empty()) {
        std::cout << "no degraded racks (all " << racks.size() - outOfService
                  << " racks in service at or above " << below << "% of nominal bus bandwidth; "
                  << outOfService << " not in service)\n";
        return;
    }
    std::vector<std::vector<std::string>> t{{"RACK", "BUS-BW-%", "DETAIL"}};
    for (const auto& rk : rows) {
        std::string detail;
        for (auto it = rk.begin(); it != rk.end(); ++it) {
            if (it.key() == "name" || it.key() == "busBwNormalized") continue;
            if (!detail.empty()) detail += ' ';
            detail += it.key() + "=" + client::scalarText(it.value());
        }
        t.push_back({client::field(rk, "name"), client::field(rk, "busBwNormalized"),
                     detail.empty() ? "<none>" : detail});
    }
    std::cout << client::renderRows(t);
    std::cout << rows.size() << " of " << racks.size() << " racks below " << below << "%\n";
}

}  // namespace

void addFabricServerCommands(CLI::App& fabric) {
    auto output = std::make_shared<std::string>();
    auto outputOpt = [output](CLI::App* c) {
        c->add_option("-o,--output", *output, "json or yaml instead of the readable form")
            ->check(CLI::IsMember({"json", "yaml"}));
    };

    auto sw = std::make_shared<std::string>();
    auto* routes = fabric.add_subcommand("routes", "A switch's routing table (ECMP groups or LFT) as loomd computed it");
    routes->add_option("switch", *sw, "switch name")->required();
    outputOpt(routes);
    routes->callback([sw, output] { runRoutes(*sw, *output); });

    auto* config = fabric.add_subcommand("config", "A switch's generated configuration (FRR text) and its version");
    config->add_option("switch", *sw, "switch name")->required();
    outputOpt(config);
    config->callback([sw, output] { runConfig(*sw, *output); });

    auto hosts = std::make_shared<std::string>();
    auto collective = std::make_shared<std::string>("allreduce");
    auto* impact = fabric.add_subcommand("impact", "Bus bandwidth a collective over these hosts gets on the live fabric");
    impact->add_option("--hosts", *hosts, "comma-separated host names")->required();
    impact->add_option("--collective", *collective, "allreduce (default), allgather, reducescatter, alltoall");
    outputOpt(impact);
    impact->callback([hosts, collective, output] { runImpact(*hosts, *collective, *output); });

    auto below = std::make_shared<double>(100.0);
    auto* degr = fabric.add_subcommand("degradation", "Racks whose collective bandwidth is reduced by failures");
    degr->add_option("--below", *below, "only racks below this % of nominal (default 100)");
    outputOpt(degr);
    degr->callback([below, output] { runDegradation(*below, *output); });
}

}  // namespace loom::loomctl
