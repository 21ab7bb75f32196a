// loomctl's verbs. Each lives in its own file and registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace loom::loomctl {

// `fabric export -f SPEC --format frr|opensm|slurm|json -o DIR` (offline, on a spec file).
void addFabricCommands(CLI::App& fabric);

}  // namespace loom::loomctl
