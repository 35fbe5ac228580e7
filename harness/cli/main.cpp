#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.h"
#include "io/atomic_output.h"

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
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tqref %s: internal error: %s\n", c.name, e.what());
      return kExitInternal;
    }
  }
  std::fprintf(stderr, "tqref: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return kExitUsage;
}
