// `rack`, `host` and `phase`: provisioning actions (endpoints in docs/api.md).
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

#include <iostream>
#include <memory>

namespace loom::loomctl {

using nlohmann::json;

namespace {

// "rack/z1-r001: burn_in -> validated" when the server says which transition happened.
void printTransition(const std::string& kind, const std::string& name, const std::string& verb,
                     const json& r) {
    std::string from = client::field(r, "from"), to = client::field(r, "to");
    if (to.empty() && r.contains("transition")) {
        from = client::field(r["transition"], "from");
        to = client::field(r["transition"], "to");
    }
    if (to.empty()) to = client::field(r, "state");
    std::cout << kind << '/' << name << ' ' << verb;
    if (!to.empty()) std::cout << ": " << (from.empty() ? "" : from + " -> ") << to;
    std::cout << '\n';
}

void addAction(CLI::App& parent, const std::string& kind, const std::string& plural,
               const std::string& verb, const std::string& help, const std::string& done) {
    struct Opts {
        std::string name, reason;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = parent.add_subcommand(verb, help);
    cmd->add_option("name", o->name, kind + " name")->required();
    cmd->add_option("--reason", o->reason, "why (kept in the audit record)");
    cmd->callback([o, kind, plural, verb, done] {
        auto client = makeClient();
        json body = json::object();
        if (!o->reason.empty()) body["reason"] = o->reason;
        auto r = orExit(client.postJson("/api/v1/" + plural + "/" + client::urlEncode(o->name) +
                                            "/" + verb,
                                        body),
                        client);
        printTransition(kind, o->name, done, r);
    });
}

std::string phaseCell(const json& p, const char* key) { return client::field(p, key); }

}  // namespace

void addProvisioningCommands(CLI::App& app) {
    auto* rack = app.add_subcommand("rack", "Rack lifecycle actions (operator)");
    rack->require_subcommand(1);
    addAction(*rack, "rack", "racks", "advance", "Move a rack to its next lifecycle state", "advanced");
    addAction(*rack, "rack", "racks", "fail", "Mark a rack failed", "failed");
    addAction(*rack, "rack", "racks", "drain", "Drain a rack (its links leave the fabric)", "draining");
    addAction(*rack, "rack", "racks", "repair", "Send a failed rack to repair", "in repair");

    auto* host = app.add_subcommand("host", "Host lifecycle actions (operator)");
    host->require_subcommand(1);
    addAction(*host, "host", "hosts", "quarantine", "Quarantine a host (out of scheduling and burn-in)", "quarantined");

    auto* phase = app.add_subcommand("phase", "Phased provisioning: plans and their progress (admin)");
    phase->require_subcommand(1);

    auto file = std::make_shared<std::string>();
    auto* apply = phase->add_subcommand("apply", "Store a phase plan (YAML, kind: PhasePlan; - for stdin)");
    apply->add_option("-f,--filename", *file, "phase plan file, or - for stdin")->required();
    apply->callback([file] {
        auto client = makeClient();
        client::RequestOptions opts;
        opts.body = readInput(*file);
        auto first = opts.body.find_first_not_of(" \t\r\n");
        if (first == std::string::npos) failWith(Error::invalid(*file + " is empty"));
        opts.contentType = opts.body[first] == '{' ? "application/json" : "application/yaml";
        auto r = client.call("POST", "/api/v1/phaseplans", std::move(opts));
        if (!r) {
            const Error& e = r.error();
            if (e.code == Errc::InvalidArgument && e.line > 0) {
                std::cerr << "error: " << *file << ":" << e.line << ": "
                          << (e.path.empty() ? "" : e.path + ": ") << e.message << '\n';
                exitWith(kExitUsage);
            }
            failWith(e, &client.config());
        }
        std::string name = client::field(*r, "name");
        std::cout << "phaseplan" << (name.empty() ? "" : "/" + name) << " stored";
        if (r->contains("phases") && (*r)["phases"].is_array()) {
            std::cout << " (" << (*r)["phases"].size() << " phases)";
        }
        std::cout << '\n';
    });

    for (const auto& [verb, help, done] :
         std::initializer_list<std::tuple<const char*, const char*, const char*>>{
             {"start", "Start a phase", "started"},
             {"pause", "Pause a running phase (steps in flight finish)", "paused"},
             {"resume", "Resume a paused phase", "resumed"},
             {"abort", "Abort a phase (racks stay where they are)", "aborted"}}) {
        auto name = std::make_shared<std::string>();
        auto* cmd = phase->add_subcommand(verb, help);
        cmd->add_option("name", *name, "phase name")->required();
        std::string v = verb, d = done;
        cmd->callback([name, v, d] {
            auto client = makeClient();
            auto r = orExit(client.postJson("/api/v1/phases/" + client::urlEncode(*name) + "/" + v,
                                            json::object()),
                            client);
            std::string state = client::field(r, "state");
            std::cout << "phase/" << *name << ' ' << d << (state.empty() ? "" : " (state: " + state + ")")
                      << '\n';
        });
    }

    auto output = std::make_shared<std::string>("table");
    auto* list = phase->add_subcommand("list", "Phases with their progress");
    list->add_option("-o,--output", *output, "table (default), json or yaml")
        ->check(CLI::IsMember({"table", "json", "yaml"}));
    list->callback([output] {
        auto client = makeClient();
        auto r = orExit(client.getJson("/api/v1/phases"), client);
        json items = r.is_array() ? r : (r.is_object() && r.contains("items") ? r["items"] : (r.is_object() && r.contains("phases") ? r["phases"] : json::array()));
        if (*output == "json") {
            std::cout << json{{"items", items}}.dump(2) << '\n';
            return;
        }
        if (*output == "yaml") {
            std::cout << client::toYaml(json{{"items", items}});
            return;
        }
        if (items.empty()) {
            std::cerr << "No phases found.\n";
            return;
        }
        std::vector<std::vector<std::string>> rows{{"NAME", "PLAN", "STATE", "RACKS", "IN-SERVICE", "FAILED", "PROGRESS"}};
        for (const auto& p : items) {
            std::string racks = phaseCell(p, "racks");
            if (p.contains("racks") && p["racks"].is_array()) racks = std::to_string(p["racks"].size());
            if (racks.empty()) racks = phaseCell(p, "total");
            std::string progress = phaseCell(p, "progress");
            if (!progress.empty() && progress.find('%') == std::string::npos) progress += "%";
            std::vector<std::string> row{phaseCell(p, "name"), phaseCell(p, "plan"), phaseCell(p, "state"),
                                         racks, phaseCell(p, "inService"), phaseCell(p, "failed"), progress};
            for (auto& cell : row) if (cell.empty()) cell = "<none>";
            rows.push_back(std::move(row));
        }
        std::cout << client::renderRows(rows);
    });
}

}  // namespace loom::loomctl
