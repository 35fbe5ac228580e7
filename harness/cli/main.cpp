#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.h"
#include "io/atomic_output.h"
#include "io/case_io.h"
#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "tqref/contract.h"
#if TQREF_HAVE_GPU
#include "gpu/driver.h"
#include "gpu/gpu_backend.h"
#endif

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
  std::fprintf(to, "usage: tqref <command> [options]   (tqref <command> --help for its options)\n\n");
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
  } catch (const Ex2ProfileError& e) {  // no EX2 profile for the architecture, or a bad one
    return fail(e, kExitBadInput);
  } catch (const ContractError& e) {  // parameters the contract refuses
    return fail(e, kExitBadInput);
#if TQREF_HAVE_GPU
  } catch (const gpu::ModuleError& e) {  // a kernel module that cannot be loaded or lacks a kernel
    return fail(e, kExitBadInput);
  } catch (const gpu::Error& e) {  // the driver: a trapped or hung kernel, or no usable device
    return fail(e, e.fault ? kExitGpuFault : kExitNoDevice);
#endif
  } catch (const std::exception& e) {  // anything else is a bug: the message says where
    return fail(e, kExitInternal, "internal error: ");
  }
}

int main(int argc, char** argv) {
  using namespace tqref::cli;
  // SIGINT/SIGTERM/SIGHUP: registered temporaries are removed, exit kExitInterrupted.
  tqref::common::install_interrupt_cleanup();
  if (argc < 2) {
    usage(stderr);
    return kExitUsage;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return kExitOk;
  }
  for (const auto& c : commands()) {
    if (name != c.name) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
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
