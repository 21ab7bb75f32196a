// `rack`, `host` and `phase`: provisioning actions (endpoints in docs/api.md).
#include <iostream>
#include <memory>

#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

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
        auto r =
            orExit(client.postJson(
                       "/api/v1/" + plural + "/" + client::urlEncode(o->name) + "/" + verb, body),
                   client);
        printTransition(kind, o->name, done, r);
    });
}

std::string phaseCell(const json& p, const char* key) { return client::field(p, key); }

// The phase a verb given no name acts on: the first of the stored plan's phases (in plan order)
// whose status is one of `wants` (space-separated). None: an error listing the phases, exit 1.
std::string phaseToActOn(client::Client& client, const std::string& verb,
                         const std::string& wants) {
    auto r = orExit(client.getJson("/api/v1/phases"), client);
    const std::string plan = client::field(r, "plan");
    const json phases = r.is_object() && r.contains("phases") && r["phases"].is_array()
                            ? r["phases"]
                            : json::array();
    if (plan.empty() || phases.empty()) {
        std::cerr
            << "error: no phase plan is stored: store one with `loomctl phase apply -f PLAN`\n";
        exitWith(kExitFailed);
    }
    std::string seen;
    for (const auto& p : phases) {
        const std::string status = phaseCell(p, "status");
        const std::string name = phaseCell(p, "name");
        if (!status.empty() && (" " + wants + " ").find(" " + status + " ") != std::string::npos)
            return name;
        seen += (seen.empty() ? "" : ", ") + name + " (" + status + ")";
    }
    std::string wanted = wants;
    if (auto sp = wanted.find(' '); sp != std::string::npos) wanted.replace(sp, 1, " or ");
    std::cerr << "error: no phase of plan " << plan << " is " << wanted << " (to " << verb
              << "); phases: " << seen << "\n";
    exitWith(kExitFailed);
}

}  // namespace

void addProvisioningCommands(CLI::App& app) {
    auto* rack = app.add_subcommand("rack", "Rack lifecycle actions (operator)");
    rack->require_subcommand(1);
    addAction(*rack, "rack", "racks", "advance", "Move a rack to its next lifecycle state",
              "advanced");
    addAction(*rack, "rack", "racks", "fail", "Mark a rack failed", "failed");
    addAction(*rack, "rack", "racks", "drain", "Drain a rack (its links leave the fabric)",
              "draining");
    addAction(*rack, "rack", "racks", "repair", "Send a failed rack to repair", "in repair");
    {
        struct Opts {
            std::string name, output = "table";
            int limit = 1000;
        };
        auto o = std::make_shared<Opts>();
        auto* history = rack->add_subcommand(
            "history",
            "A rack's provisioning audit trail: every transition, who, why, executor output");
        history->add_option("name", o->name, "rack name")->required();
        history->add_option("-o,--output", o->output, "table (default), json or yaml")
            ->check(CLI::IsMember({"table", "json", "yaml"}));
        history->add_option("--limit", o->limit, "at most N records (default 1000)")
            ->check(CLI::Range(1, 5000));
        history->callback([o] {
            auto client = makeClient();
            auto r = orExit(
                client.getJson("/api/v1/provisioning/audit?entity=" + client::urlEncode(o->name) +
                               "&limit=" + std::to_string(o->limit)),
                client);
            json items = r.value("items", json::array());
            if (o->output != "table") {
                json doc{{"items", items}};
                std::cout << (o->output == "json" ? doc.dump(2) + "\n" : client::toYaml(doc));
                return;
            }
            if (items.empty()) {
                std::cerr << "No provisioning history for " << o->name << ".\n";
                return;
            }
            std::vector<std::vector<std::string>> rows{
                {"AT", "FROM", "TO", "ACTOR", "EXECUTOR", "REASON"}};
            for (const auto& a : items) {
                std::vector<std::string> row{
                    client::field(a, "at"),       client::field(a, "from"),
                    client::field(a, "to"),       client::field(a, "actor"),
                    client::field(a, "executor"), client::field(a, "reason")};
                for (auto& cell : row)
                    if (cell.empty()) cell = "<none>";
                rows.push_back(std::move(row));
            }
            std::cout << client::renderRows(rows);
        });
    }

    auto* host = app.add_subcommand("host", "Host lifecycle actions (operator)");
    host->require_subcommand(1);
    addAction(*host, "host", "hosts", "quarantine",
              "Quarantine a host (out of scheduling and burn-in)", "quarantined");

    auto* phase =
        app.add_subcommand("phase", "Phased provisioning: plans and their progress (admin)");
    phase->require_subcommand(1);

    auto file = std::make_shared<std::string>();
    auto* apply =
        phase->add_subcommand("apply", "Store a phase plan (YAML, kind: PhasePlan; - for stdin)");
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

    // Without a name, each verb takes the phase it can act on: start the plan's first pending
    // phase, pause the running one, resume the paused one, abort the running or paused one
    // (`loomctl phase start` right after `phase apply`, as the README's tour does).
    for (const auto& [verb, help, done, wants] :
         std::initializer_list<std::tuple<const char*, const char*, const char*, const char*>>{
             {"start", "Start a phase (default: the plan's first pending phase)", "started",
              "pending"},
             {"pause", "Pause a running phase (steps in flight finish; default: the running one)",
              "paused", "running"},
             {"resume", "Resume a paused phase (default: the paused one)", "resumed", "paused"},
             {"abort",
              "Abort a phase (racks stay where they are; default: the running or paused one)",
              "aborted", "running paused"}}) {
        auto name = std::make_shared<std::string>();
        auto* cmd = phase->add_subcommand(verb, help);
        cmd->add_option("name", *name, "phase name (loomctl phase list shows them)");
        std::string v = verb, d = done, w = wants;
        cmd->callback([name, v, d, w] {
            auto client = makeClient();
            if (name->empty()) *name = phaseToActOn(client, v, w);
            auto r = orExit(client.postJson("/api/v1/phases/" + client::urlEncode(*name) + "/" + v,
                                            json::object()),
                            client);
            std::string state = client::field(r, "state");
            std::cout << "phase/" << *name << ' ' << d
                      << (state.empty() ? "" : " (state: " + state + ")") << '\n';
        });
    }

    auto output = std::make_shared<std::string>("table");
    auto* list = phase->add_subcommand("list", "Phases with their progress");
    list->add_option("-o,--output", *output, "table (default), json or yaml")
        ->check(CLI::IsMember({"table", "json", "yaml"}));
    list->callback([output] {
        auto client = makeClient();
        auto r = orExit(client.getJson("/api/v1/phases"), client);
        // {"plan": NAME|null, "phases": [{name, status, message, progress: {...}, racks}]}
        const std::string plan = client::field(r, "plan");
        json items = r.is_object() && r.contains("phases") ? r["phases"] : json::array();
        if (*output == "json" || *output == "yaml") {
            json doc{{"plan", r.value("plan", json())}, {"items", items}};
            std::cout << (*output == "json" ? doc.dump(2) + "\n" : client::toYaml(doc));
            return;
        }
        if (items.empty()) {
            std::cerr << "No phases found (store a plan with `loomctl phase apply -f PLAN`).\n";
            return;
        }
        std::vector<std::vector<std::string>> rows{{"PLAN", "PHASE", "STATUS", "RACKS",
                                                    "IN-SERVICE", "IN-FLIGHT", "DRAINED", "FAILED",
                                                    "PROGRESS", "MESSAGE"}};
        for (const auto& p : items) {
            const json pr = p.value("progress", json::object());
            std::string pct = client::field(pr, "inServicePercent");
            if (auto dot = pct.find('.'); dot != std::string::npos) pct = pct.substr(0, dot);
            std::vector<std::string> row{plan,
                                         phaseCell(p, "name"),
                                         phaseCell(p, "status"),
                                         client::field(pr, "total"),
                                         client::field(pr, "inService"),
                                         client::field(pr, "inFlight"),
                                         client::field(pr, "drained"),
                                         client::field(pr, "failed"),
                                         pct.empty() ? "" : pct + "%",
                                         phaseCell(p, "message")};
            for (auto& cell : row)
                if (cell.empty()) cell = "<none>";
            rows.push_back(std::move(row));
        }
        std::cout << client::renderRows(rows);
    });
}

}  // namespace loom::loomctl
