// loomctl's verbs. Each lives in its own file and registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace loom::loomctl {

// `fabric export -f SPEC --format frr|opensm|slurm|json -o DIR` (offline, on a spec file).
void addFabricCommands(CLI::App& fabric);

// The verbs that talk to loomd (files of the same name, `_command.cpp`). Global options
// (--server, --token, ...) are added by addGlobalOptions() in context.hpp.
void addConfigCommands(CLI::App& app);        // config set-server|set-token|view
void addVersionCommand(CLI::App& app);        // version
void addApplyCommands(CLI::App& app);         // apply, diff
void addGetCommands(CLI::App& app);           // get, describe
void addEventsCommand(CLI::App& app);         // events [--follow]
void addTokenCommands(CLI::App& app);         // token create|list|revoke
void addProvisioningCommands(CLI::App& app);  // rack ..., host quarantine, phase ...
void addCompletionCommand(CLI::App& app);     // completion bash|zsh|fish (from the tree)
void addLabelCommand(CLI::App& app);          // label|annotate KIND NAME k=v k- [--overwrite]
void addJobsCommands(CLI::App& app);          // jobs place --gpus N
// fabric routes|config|impact|degradation (on the `fabric` subcommand made in main.cpp).
void addFabricServerCommands(CLI::App& fabric);

}  // namespace loom::loomctl
