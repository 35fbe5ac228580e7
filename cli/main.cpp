#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.h"
#include "io/approx_units_io.h"
#include "io/atomic_output.h"
#include "io/case_io.h"
#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "io/input_file.h"
#include "io/memory_budget.h"
#include "io/exit_code.h"
#include "tqref/contract.h"

namespace tqref::cli {

static std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
bool register_command(const Command& c) {
  registry().push_back(c);
  return true;
}
const std::vector<Command>& commands() { return registry(); }

}  // namespace tqref::cli

static void usage(FILE* to) {
  std::fprintf(to, "usage: tqref [--max-memory SIZE] <command> [options]   (tqref <command> --help for "
               "its options)\n  --max-memory SIZE: memory budget for what files, sweeps and options "
               "ask for (default 8G; K, M, G, T suffixes)\n\n");
  for (const auto& c : tqref::cli::commands()) std::fprintf(to, "  %-12s %s\n", c.name, c.summary);
}

// The one map from what escapes a command to the exit codes of docs/cli.md. Commands catch only
// where they add context (which option, which file) or decide another code; the typed errors of
// the layers below end here. Called inside a catch block: rethrows the exception in flight.
static int exit_code_of_current_exception(const char* command) {
  using namespace tqref;
  const auto fail = [command](const std::exception& e, int code, const char* kind = "") {
    std::fprintf(stderr, "tqref %s: %s%s\n", command, kind, e.what());
    return code;
  };
  try {
    throw;
  } catch (const golden::BadCase& e) {  // a golden file or case outside the schema or contract
    return fail(e, kExitBadInput);
  } catch (const h5::Error& e) {  // an unreadable or malformed HDF5 file, an unwritable output
    return fail(e, kExitBadInput);
  } catch (const InputError& e) {  // an input outside the untrusted-file policy (io/input_file.h)
    return fail(e, kExitBadInput);
  } catch (const common::OutputError& e) {  // an output that cannot be written (disk full, ...)
    return fail(e, kExitBadInput);
  } catch (const ApproxUnitsError& e) {  // missing or bad approximate-unit tables
    return fail(e, kExitBadInput);
  } catch (const Ex2ProfileError& e) {  // no EX2 profile for the architecture, or a bad one
    return fail(e, kExitBadInput);
  } catch (const ContractError& e) {  // parameters the contract refuses
    return fail(e, kExitBadInput);
  } catch (const ExitCodeError& e) {  // names its code: gpu::Error (4 no usable device, 6 a trapped or
    return fail(e, e.exit_code);       // hung kernel), gpu::ModuleError (3 a module that cannot load)
  } catch (const std::exception& e) {  // anything else is a bug: the message says where
    return fail(e, kExitInternal, "internal error: ");
  }
}

// --max-memory SIZE (or --max-memory=SIZE), before or after the command name: the memory budget
// of every command (io/memory_budget.h), taken out of the arguments. Returns false after printing
// the problem.
static bool take_max_memory(std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (args[i] == "--max-memory" && i + 1 < args.size()) {
      value = args[i + 1];
      args.erase(args.begin() + long(i), args.begin() + long(i) + 2);
    } else if (args[i].rfind("--max-memory=", 0) == 0) {
      value = args[i].substr(13);
      args.erase(args.begin() + long(i));
    } else if (args[i] == "--max-memory") {
      std::fprintf(stderr, "tqref: --max-memory needs a SIZE\n");
      return false;
    } else {
      continue;
    }
    uint64_t bytes = 0;
    if (!tqref::parse_byte_size(value, &bytes) || bytes < (uint64_t(1) << 20)) {
      std::fprintf(stderr, "tqref: --max-memory %s; allowed: 1M .. 2^64-1 bytes (suffixes K, M, G, T)\n",
                   value.c_str());
      return false;
    }
    tqref::set_memory_budget(bytes);
    --i;
  }
  return true;
}

int main(int argc, char** argv) {
  using namespace tqref::cli;
  // SIGINT/SIGTERM/SIGHUP: registered temporaries are removed, exit kExitInterrupted.
  tqref::common::install_interrupt_cleanup();
  // The variants on the measured approximate division and square root load their tables on
  // first use (io/approx_units_io.h).
  tqref::install_approx_units_source();
  std::vector<std::string> all(argv + 1, argv + argc);
  if (!take_max_memory(all)) return kExitUsage;
  if (all.empty()) {
    usage(stderr);
    return kExitUsage;
  }
  const std::string name = all[0];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return kExitOk;
  }
  for (const auto& c : commands()) {
    if (name != c.name) continue;
    const std::vector<std::string> args(all.begin() + 1, all.end());
    try {
      return c.run(args);
    } catch (const std::exception&) {
      return exit_code_of_current_exception(c.name);
    }
  }
  std::fprintf(stderr, "tqref: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return kExitUsage;
}
