// Shared plumbing of the loomctl verbs.
#include "loomctl/context.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace loom::loomctl {

GlobalOptions& globals() {
    static GlobalOptions g;
    return g;
}

void addGlobalOptions(CLI::App& app) {
    auto& g = globals();
    app.add_option("--server,-s", g.server,
                   "loomd URL, e.g. http://127.0.0.1:8480 (else LOOM_SERVER, else the config file)");
    app.add_option("--token", g.token,
                   "bearer token (else LOOM_TOKEN, else the config file)");
    app.add_option("--config", g.configPath,
                   "config file (default $LOOM_CONFIG or ~/.config/loom/config.yaml)");
    app.add_flag("--insecure-skip-tls-verify", g.insecureSkipTlsVerify,
                 "do not verify the server's TLS certificate (https only; for test servers)");
    app.add_option("--request-timeout", g.timeoutSeconds,
                   "seconds before a request is abandoned (default 60)")
        ->check(CLI::Range(1, 86400));
    app.add_flag("--local", g.localTime,
                 "show timestamps in text output in the local time zone (TZ), not UTC");
    // Global options may follow the verb (`loomctl get racks --server URL`), as in kubectl.
    app.fallthrough();
}

std::string shownTime(std::string_view rfc3339) {
    return globals().localTime ? client::localRfc3339(rfc3339) : std::string(rfc3339);
}

void exitWith(int rc) { throw CLI::RuntimeError(rc); }

int exitCodeFor(const Error& e) {
    return (e.code == Errc::InvalidArgument || e.code == Errc::TooLarge) ? kExitUsage
                                                                         : kExitFailed;
}

void printError(const Error& e, const client::ClientConfig* cfg) {
    std::cerr << "error: " << e.toString() << '\n';
    std::string server = cfg ? cfg->server : std::string(client::kDefaultServer);
    if (client::isConnectionError(e)) {
        std::cerr << "hint: is loomd running? set --server or LOOM_SERVER (now " << server
                  << ")\n";
    } else if (e.code == Errc::Unauthorized) {
        std::cerr << "hint: "
                  << (cfg && cfg->token.empty() ? "no token is set; " : "the token was refused; ")
                  << "pass one with --token, LOOM_TOKEN or `loomctl config set-token` "
                     "(an admin creates tokens with `loomd token create` or `loomctl token create`)\n";
    } else if (e.code == Errc::Forbidden) {
        std::cerr << "hint: the token's role is not enough: reads need viewer, apply and "
                     "rack/host actions operator, tokens and phases admin\n";
    }
}

void failWith(const Error& e, const client::ClientConfig* cfg) {
    printError(e, cfg);
    exitWith(exitCodeFor(e));
}

client::Client makeClient() {
    const auto& g = globals();
    auto in = client::ConfigInputs::fromEnvironment(
        g.server.empty() ? std::nullopt : std::optional<std::string>(g.server),
        g.token.empty() ? std::nullopt : std::optional<std::string>(g.token), g.configPath);
    if (!in) failWith(in.error());
    auto cfg = client::resolveClientConfig(*in);
    if (!cfg) failWith(cfg.error());
    cfg->insecureSkipTlsVerify = g.insecureSkipTlsVerify;
    cfg->timeout = std::chrono::seconds(g.timeoutSeconds);
    return client::Client(std::move(*cfg));
}

std::string readInput(const std::string& file) {
    if (file == "-") {
        std::string s{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
        return s;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) failWith(Error::invalid("cannot read " + file + ": no such file or not readable"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool stderrIsTerminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled) {}

ProgressBar::~ProgressBar() { done(); }

void ProgressBar::update(std::size_t done, std::size_t total) {
    if (!enabled_ || total == 0) return;
    int pct = static_cast<int>(done * 100 / total);
    if (pct == lastPercent_) return;  // redraw only when the figure changes
    lastPercent_ = pct;
    constexpr int kWidth = 30;
    int fill = pct * kWidth / 100;
    std::fprintf(stderr, "\r%s [%s%s] %3d%% %.1f/%.1f MiB\033[K", label_.c_str(),
                 std::string(fill, '#').c_str(), std::string(kWidth - fill, ' ').c_str(), pct,
                 done / 1048576.0, total / 1048576.0);
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressBar::status(const std::string& text) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r%s\033[K", text.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressBar::done() {
    if (!enabled_ || !drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

namespace {

struct KindAlias {
    const char* plural;
    const char* singular;
    std::initializer_list<const char*> more;
};

const KindAlias kKinds[] = {
    {"sites", "site", {}},
    {"zones", "zone", {"pod", "pods"}},
    {"rows", "row", {}},
    {"racks", "rack", {}},
    {"hosts", "host", {"node", "nodes"}},
    {"gpus", "gpu", {}},
    {"nics", "nic", {}},
    {"switches", "switch", {"sw"}},
    {"ports", "port", {}},
    {"links", "link", {"cables", "cable"}},
    {"storage_nodes", "storage_node", {"storagenode", "storagenodes", "storage"}},
    {"jobs", "job", {}},
};

}  // namespace

std::optional<std::string> resolveKind(const std::string& kind) {
    std::string k;
    for (char c : kind) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& a : kKinds) {
        if (k == a.plural || k == a.singular) return std::string(a.plural);
        for (const char* m : a.more) {
            if (k == m) return std::string(a.plural);
        }
    }
    return std::nullopt;
}

std::string singularKind(const std::string& plural) {
    for (const auto& a : kKinds) {
        if (plural == a.plural) return a.singular;
    }
    return plural;
}

std::string kindList() {
    std::string s;
    for (const auto& a : kKinds) {
        if (!s.empty()) s += ", ";
        s += a.plural;
    }
    return s;
}

}  // namespace loom::loomctl
