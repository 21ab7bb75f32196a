// What every loomctl verb shares: the global options (--server, --token, ...), building the
// client from flags/environment/config file, printing errors with hints, exit codes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "loom/client/client.hpp"

namespace loom::loomctl {

// Exit codes (DESIGN.md): 0 ok, 1 operation failed, 2 usage or input error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

struct GlobalOptions {
    std::string server;  // empty: not given on the command line
    std::string token;
    std::string configPath;  // empty: defaultConfigPath()
    bool insecureSkipTlsVerify = false;
    int timeoutSeconds = 60;
    bool localTime = false;  // --local: timestamps shown in the local time zone
};

GlobalOptions& globals();

// A timestamp as loomctl shows it in text output: as the server wrote it (RFC 3339 UTC), or
// with --local in the local time zone. JSON and YAML output always keep the server's text.
std::string shownTime(std::string_view rfc3339);

// Adds --server, --token, --config, --insecure-skip-tls-verify, --request-timeout to the app;
// they are accepted before or after the verb.
void addGlobalOptions(CLI::App& app);

// Ends the current command with an exit code (main() turns it into the process status).
[[noreturn]] void exitWith(int rc);

// The exit code for an error: 2 for bad input (the server's 400/413 included), 1 otherwise.
int exitCodeFor(const Error& e);

// Prints "error: <as the server wrote it>" and a hint for 401/403/unreachable server to stderr.
void printError(const Error& e, const client::ClientConfig* cfg = nullptr);

// printError + exitWith(exitCodeFor(e)).
[[noreturn]] void failWith(const Error& e, const client::ClientConfig* cfg = nullptr);

// The client for this invocation; a bad config (file, URL) ends the command with exit 2.
client::Client makeClient();

// Unwraps a result or ends the command with the error.
template <class T>
T orExit(Result<T> r, const client::Client& c) {
    if (!r) failWith(r.error(), &c.config());
    return std::move(*r);
}
inline void orExit(Result<void> r, const client::Client& c) {
    if (!r) failWith(r.error(), &c.config());
}

// The contents of FILE, or of stdin for "-". Missing file: exit 2 naming the file.
std::string readInput(const std::string& file);

// Whether stdout/stderr is a terminal (progress bars and colours only then).
bool stderrIsTerminal();

// One-line progress bar on stderr ("uploading [#####     ] 48% 12.0/25.0 MiB"); done() clears it.
class ProgressBar {
public:
    explicit ProgressBar(std::string label, bool enabled);
    ~ProgressBar();
    void update(std::size_t done, std::size_t total);
    void status(const std::string& text);
    void done();

private:
    std::string label_;
    bool enabled_;
    bool drawn_ = false;
    int lastPercent_ = -1;
};

// "rack" -> "racks", "racks" -> "racks", "sw" -> "switches"; nullopt for an unknown kind.
std::optional<std::string> resolveKind(const std::string& kind);
// "racks" -> "rack" (for `-o name`: rack/z1-r001).
std::string singularKind(const std::string& plural);
// The inventory kinds, plural, comma-separated (for error messages and --help).
std::string kindList();

}  // namespace loom::loomctl
