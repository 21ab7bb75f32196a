// loomd's subcommands. Each lives in its own file and registers itself on the CLI11 app;
// main() only wires them. A command's callback returns through loom::cli::exitWith().
#pragma once

#include <CLI/CLI.hpp>

namespace loom::loomd {

void addApplyCommand(CLI::App& app);  // apply -f FILE [--dry-run] [--prune]
void addServeCommand(CLI::App& app);  // serve [--listen HOST:PORT] [--simulate] ...
void addTokenCommand(CLI::App& app);  // token create --role R --name N | list | revoke N

}  // namespace loom::loomd
