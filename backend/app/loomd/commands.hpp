// loomd's subcommands. Each lives in its own file and registers itself on the CLI11 app;
// main() only wires them. A command's callback returns through loom::cli::exitWith().
#pragma once

#include <CLI/CLI.hpp>

namespace loom::loomd {

void addApplyCommand(CLI::App& app);  // apply -f FILE [--dry-run] [--prune]

}  // namespace loom::loomd
