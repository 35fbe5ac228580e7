#include <cstdio>

#include "command.h"
#include "tqref/build_info.h"

namespace {

int cmd_version(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("usage: tqref version\n  Prints the version, the git commit and whether CUDA was built in.\n");
    return tqref::kExitOk;
  }
  std::printf("tqref %s\ncommit %s\ncuda %s\n", tqref::kVersion, tqref::kGitCommit,
              tqref::kCudaBuilt ? "built in (kernels for " TQREF_CUDA_ARCHS_STR ")" : "not built in");
  return tqref::kExitOk;
}

}  // namespace

TQREF_COMMAND("version", "version, git commit and CUDA availability", cmd_version);
