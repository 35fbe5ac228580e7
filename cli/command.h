// Subcommands of the `tqref` CLI register themselves here; main() dispatches by name.
#pragma once
#include <string>
#include <vector>

#include "io/exit_code.h"

namespace tqref::cli {

// The exit codes (io/exit_code.h) under the names the subcommands use: cli::kExitOk, ...
using enum ::tqref::ExitCode;

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

// Called from static initialisers in each cmd_*.cpp (compiled into the executable itself, so the
// linker keeps them).
bool register_command(const Command& c);
const std::vector<Command>& commands();

}  // namespace tqref::cli

#define TQREF_COMMAND(NAME, SUMMARY, FN) \
  static const bool tqref_registered_##FN = ::tqref::cli::register_command({NAME, SUMMARY, FN})
