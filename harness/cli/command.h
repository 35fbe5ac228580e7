// Subcommands of the `tqref` CLI register themselves here; main() dispatches by name.
#pragma once
#include <string>
#include <vector>

namespace tqref::cli {

// Exit codes shared by every subcommand (documented in docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitMismatch = 1,      // a check ran and found differences
  kExitUsage = 2,         // bad command line
  kExitBadInput = 3,      // input file or parameter outside what SPEC allows
  kExitNoDevice = 4,      // GPU backend asked for, no usable device or driver
  kExitInternal = 5,      // unexpected failure (a bug): the message says where
  kExitGpuFault = 6,      // a kernel trapped, faulted or timed out
  kExitInterrupted = 130, // SIGINT/SIGTERM: partial outputs removed
};

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
