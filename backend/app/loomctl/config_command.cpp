// `config set-server|set-token|view` and `version`.
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"
#include "loom/version.hpp"

#include <iostream>
#include <memory>

namespace loom::loomctl {

namespace {

std::string configPath() {
    return globals().configPath.empty() ? client::defaultConfigPath() : globals().configPath;
}

client::ConfigFile loadOrExit(const std::string& path) {
    auto f = client::loadConfigFile(path);
    if (!f) failWith(f.error());
    return *f;
}

void saveOrExit(const std::string& path, const client::ConfigFile& f) {
    auto r = client::saveConfigFile(path, f);
    if (!r) failWith(r.error());
}

}  // namespace

void addConfigCommands(CLI::App& app) {
    auto* config = app.add_subcommand("config", "The config file (server and token; written with mode 0600)");
    config->require_subcommand(1);

    auto url = std::make_shared<std::string>();
    auto* setServer = config->add_subcommand("set-server", "Remember the loomd URL");
    setServer->add_option("url", *url, "e.g. http://127.0.0.1:8480 or https://loomd.example:8443")->required();
    setServer->callback([url] {
        if (auto u = client::parseUrl(*url); !u) failWith(u.error());
        auto path = configPath();
        auto f = loadOrExit(path);
        f.server = *url;
        while (!f.server.empty() && f.server.back() == '/') f.server.pop_back();
        saveOrExit(path, f);
        std::cout << "server set to " << f.server << " in " << path << '\n';
    });

    auto token = std::make_shared<std::string>();
    auto* setToken = config->add_subcommand("set-token", "Remember the bearer token (- reads it from stdin)");
    setToken->add_option("token", *token, "the token, or - to read it from stdin (keeps it out of shell history)")->required();
    setToken->callback([token] {
        std::string t = *token == "-" ? readInput("-") : *token;
        while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
        if (t.empty()) failWith(Error::invalid("the token is empty"));
        auto path = configPath();
        auto f = loadOrExit(path);
        f.token = t;
        saveOrExit(path, f);
        std::cout << "token set in " << path << '\n';
    });

    auto* view = config->add_subcommand("view", "Show the settings in effect and where each comes from (token redacted)");
    view->callback([] {
        const auto& g = globals();
        auto path = configPath();
        auto f = loadOrExit(path);
        auto env = [](const char* n) -> std::string {
            const char* v = std::getenv(n);
            return v ? v : "";
        };
        auto source = [&](const std::string& flag, const char* envName, const std::string& file) {
            if (!flag.empty()) return std::string("flag");
            if (!env(envName).empty()) return std::string(envName);
            if (!file.empty()) return path;
            return std::string("default");
        };
        auto cfg = client::resolveClientConfig(*client::ConfigInputs::fromEnvironment(
            g.server.empty() ? std::nullopt : std::optional<std::string>(g.server),
            g.token.empty() ? std::nullopt : std::optional<std::string>(g.token), path));
        if (!cfg) failWith(cfg.error());
        std::string tok = cfg->token.empty() ? "<none>"
                                             : cfg->token.substr(0, std::min<std::size_t>(4, cfg->token.size())) + "…(redacted)";
        std::cout << "config file: " << path << '\n'
                  << "server:      " << cfg->server << "   (from " << source(g.server, "LOOM_SERVER", f.server) << ")\n"
                  << "token:       " << tok << "   (from " << source(g.token, "LOOM_TOKEN", f.token) << ")\n";
    });
}

void addVersionCommand(CLI::App& app) {
    auto* version = app.add_subcommand("version", "Print the client's version and the server's");
    version->callback([] {
        std::cout << "Client Version: loomctl " << kVersion << '\n';
        auto client = makeClient();
        auto r = client.send("GET", "/healthz");
        if (!r) {
            std::cout << "Server Version: <unreachable>\n";
            failWith(r.error(), &client.config());
        }
        std::string v;
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (j.is_object()) v = client::field(j, "version");
        if (v.empty()) v = r->header("server");
        std::cout << "Server Version: " << (v.empty() ? "<unknown>" : v) << "   (" << client.config().server << ")\n";
    });
}

}  // namespace loom::loomctl
