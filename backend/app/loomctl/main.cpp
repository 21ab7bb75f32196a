// loomctl: the command-line client of loomd, in the manner of kubectl.
#include "loom/version.hpp"
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

int main(int argc, char** argv) {
    CLI::App app{"loomctl: drive a Loom cluster (inventory, fabric, provisioning) from the shell"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "loomctl " LOOM_VERSION);
    loom::loomctl::addGlobalOptions(app);
    loom::loomctl::addApplyCommands(app);
    loom::loomctl::addGetCommands(app);
    loom::loomctl::addLabelCommand(app);
    loom::loomctl::addEventsCommand(app);
    loom::loomctl::addTokenCommands(app);
    loom::loomctl::addProvisioningCommands(app);
    loom::loomctl::addJobsCommands(app);
    loom::loomctl::addConfigCommands(app);
    loom::loomctl::addVersionCommand(app);
    auto* fabric = app.add_subcommand("fabric", "Fabric routing, configuration and failure impact");
    fabric->require_subcommand(1);
    loom::loomctl::addFabricCommands(*fabric);
    loom::loomctl::addFabricServerCommands(*fabric);
    loom::loomctl::addCompletionCommand(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::RuntimeError& e) {
        // A command's callback ends with `throw CLI::RuntimeError(rc)` to set the exit code
        // (0 ok, 1 operation failed, 2 usage or input error).
        return e.get_exit_code();
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    return 0;
}
