// `token create|list|revoke`: API token administration (admin role).
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

#include <iostream>
#include <memory>

namespace loom::loomctl {

using nlohmann::json;

namespace {

json itemsOf(const json& r) {
    if (r.is_array()) return r;
    if (r.is_object()) {
        for (const char* k : {"items", "tokens"}) {
            if (r.contains(k) && r[k].is_array()) return r[k];
        }
    }
    return json::array();
}

}  // namespace

void addTokenCommands(CLI::App& app) {
    auto* token = app.add_subcommand("token", "API tokens: create (printed once), list, revoke (admin)");
    token->require_subcommand(1);

    struct CreateOpts {
        std::string name, role = "viewer", output;
    };
    auto c = std::make_shared<CreateOpts>();
    auto* create = token->add_subcommand("create", "Create a token; the secret is printed once, on the last line");
    create->add_option("--name", c->name, "a name for the token (shows in audit records)")->required();
    create->add_option("--role", c->role, "viewer (default), operator or admin")
        ->check(CLI::IsMember({"viewer", "operator", "admin"}));
    create->add_option("-o,--output", c->output, "json: the server's full answer")
        ->check(CLI::IsMember({"json"}));
    create->callback([c] {
        auto client = makeClient();
        auto r = orExit(client.postJson("/api/v1/tokens", json{{"name", c->name}, {"role", c->role}}), client);
        if (c->output == "json") {
            std::cout << r.dump(2) << '\n';
            return;
        }
        std::string secret = client::field(r, "token");
        std::cerr << "token \"" << c->name << "\" created with role " << c->role
                  << "; it is shown only now:\n";
        std::cout << secret << '\n';
    });

    auto output = std::make_shared<std::string>("table");
    auto* list = token->add_subcommand("list", "List tokens (names, roles, dates; never the secrets)");
    list->add_option("-o,--output", *output, "table (default), json or yaml")
        ->check(CLI::IsMember({"table", "json", "yaml"}));
    list->callback([output] {
        auto client = makeClient();
        auto r = orExit(client.getJson("/api/v1/tokens"), client);
        json items = itemsOf(r);
        if (*output == "json") {
            std::cout << json{{"items", items}}.dump(2) << '\n';
            return;
        }
        if (*output == "yaml") {
            std::cout << client::toYaml(json{{"items", items}});
            return;
        }
        std::vector<std::vector<std::string>> rows{{"NAME", "ROLE", "AGE", "LAST-USED", "REVOKED"}};
        for (const auto& t : items) {
            std::string last = client::ageOf(client::field(t, "lastUsedAt"));
            std::string revoked = client::field(t, "revokedAt").empty()
                                      ? (client::field(t, "revoked") == "true" ? "yes" : "no")
                                      : "yes";
            rows.push_back({client::field(t, "name"), client::field(t, "role"),
                            client::ageOf(client::field(t, "createdAt")),
                            last.empty() ? "<never>" : last, revoked});
        }
        std::cout << client::renderRows(rows);
    });

    auto name = std::make_shared<std::string>();
    auto* revoke = token->add_subcommand("revoke", "Revoke a token by name; it stops working at once");
    revoke->add_option("name", *name, "token name")->required();
    revoke->callback([name] {
        auto client = makeClient();
        orExit(client.deleteJson("/api/v1/tokens/" + client::urlEncode(*name)), client);
        std::cout << "token \"" << *name << "\" revoked\n";
    });
}

}  // namespace loom::loomctl
