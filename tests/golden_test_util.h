// Helpers shared by test_golden and test_check: run the tqref CLI, read files, scratch dirs.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>

namespace tqref::test {

// Exit code of `tqref <args>` (stdout/stderr to <dir>/last.log).
inline int run_cli(const std::string& args, const std::filesystem::path& dir) {
  const std::string cmd = std::string(TQREF_CLI) + " " + args + " > " + (dir / "last.log").string() + " 2>&1";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A fresh directory under the system temp dir, unique per process and tag.
inline std::filesystem::path scratch(const std::string& tag) {
  auto d = std::filesystem::temp_directory_path() /
           ("tqref_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline const std::string kCommittedSmoke = std::string(TQREF_SOURCE_DIR) + "/data/golden/smoke.h5";

}  // namespace tqref::test
