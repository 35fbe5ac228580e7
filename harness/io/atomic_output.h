// Output files that appear whole or not at all. An AtomicOutput hands out a temporary path next
// to the final one (<path>.partial-<pid>, same directory, so the rename stays on one file
// system); commit() renames it into place; destruction without commit() removes it. Every live
// temporary is registered, so an interrupt (SIGINT, SIGTERM, SIGHUP) that reaches the handler of
// install_interrupt_cleanup() unlinks them all and exits with kExitInterrupted (130): a killed
// command leaves neither a partial output nor a temporary behind.
#pragma once
#include <string>

#include "io/exit_code.h"

namespace tqref::common {

class AtomicOutput {
 public:
  // Registers the temporary; throws std::runtime_error when too many outputs are open at once
  // (kMaxOpenOutputs) or the path is too long for the registry (PATH_MAX).
  explicit AtomicOutput(std::string path);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_; }
  // Renames the temporary to path(). The writer must have closed it. Throws std::runtime_error
  // naming both paths when the rename fails (the temporary is then removed).
  void commit();

 private:
  std::string path_, temp_;
  int slot_ = -1;
  bool committed_ = false;
};

inline constexpr int kMaxOpenOutputs = 64;
// Exit status after an interrupt.
inline constexpr int kInterruptExitCode = kExitInterrupted;

// "" when a file can be written at `path` (its directory exists and is writable, and `path` is not
// a directory); otherwise why not, naming the path. Commands check their outputs with this
// before any work, so a typo in --out fails in a second, not after an hour of generation.
std::string output_path_problem(const std::string& path);

// Writes `text` to `path` through an AtomicOutput; throws std::runtime_error naming the path.
void write_file_atomic(const std::string& path, const std::string& text);

// Installs the SIGINT/SIGTERM/SIGHUP handler (idempotent). The handler is async-signal-safe: it
// unlinks the registered temporaries, writes one line to stderr and calls _exit(130).
void install_interrupt_cleanup();

}  // namespace tqref::common
