// loomd: the Loom server, and the direct database commands (apply, token) that work without it.
#include "loomd/commands.hpp"
#include "loom/version.hpp"

#include <cstdio>
#include <spdlog/cfg/env.h>

int main(int argc, char** argv) {
    // SPDLOG_LEVEL=debug in the environment shows more (e.g. each live-state refresh, timed).
    spdlog::cfg::load_env_levels();
    CLI::App app{"loomd: the Loom control-plane server for AI training clusters"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "loomd " LOOM_VERSION);
    loom::loomd::addApplyCommand(app);
    loom::loomd::addServeCommand(app);
    loom::loomd::addTokenCommand(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::RuntimeError& e) {
        // A command's callback ends with `throw CLI::RuntimeError(rc)` to set the exit code
        // (0 ok, 1 operation failed, 2 usage or input error).
        return e.get_exit_code();
    } catch (const CLI::ParseError& e) {
        // CLI11 uses exit code 0 for --help; every other parse error is a usage error (2).
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    return 0;
}
