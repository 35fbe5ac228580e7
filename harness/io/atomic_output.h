// Output files that appear whole or not at all. An AtomicOutput hands out a temporary path next
// to the final one (<path>.partial-<pid>, same directory, so the rename stays on one file
// system); commit() flushes it to disk and renames it into place; destruction without commit()
// removes it. Every live temporary is registered, so an interrupt (SIGINT, SIGTERM, SIGHUP,
// SIGQUIT) or a file-size limit (SIGXFSZ) that reaches the handler of install_interrupt_cleanup()
// unlinks them all and exits with kExitInterrupted (130): a killed command leaves neither a
// partial output nor a temporary behind. No output replaces an input of the same process
// (input_file.h) or anything but a regular file.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

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
  // Flushes the temporary to disk (fsync) and renames it to path(). The writer must have closed
  // it. Throws OutputError naming both paths (the temporary then removed) when the flush or the
  // rename fails, or when path() is now an input this process read or not a regular file.
  void commit();

 private:
  std::string path_, temp_;
  int slot_ = -1;
  bool committed_ = false;
};

inline constexpr int kMaxOpenOutputs = 64;
// Exit status after an interrupt.
inline constexpr int kInterruptExitCode = kExitInterrupted;

// An output that cannot be written (disk full, refused destination); callers map it to exit 3.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "" when a file can be written at `path`, otherwise why not, naming the path: `path` is not a
// directory nor an existing file of another kind than a regular file (a character device such as
// /dev/null, a FIFO), it is not the same file (same device and inode, or the same path once
// resolved) as any of `others` (the command's inputs and its other outputs), and its directory
// takes a new file of the temporary's name (one is created and removed at once: a missing or
// read-only directory, /proc, a name longer than the file system allows all fail here).
// Commands check their outputs with this before any work, so a typo in --out fails in a second,
// not after an hour of generation.
std::string output_path_problem(const std::string& path, const std::vector<std::string>& others = {});

// The same for an output directory (--reproducer-dir): an existing directory that takes a new
// file, or a path whose nearest existing ancestor is a directory that takes a new file and whose
// missing part can be created (the directory itself is created only when the first file is
// written).
std::string output_dir_problem(const std::string& dir);

// Writes `text` to `path` through an AtomicOutput; throws OutputError naming the path when a
// write, the flush or the close fails.
void write_file_atomic(const std::string& path, const std::string& text);

// Installs the handler of SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGXFSZ (idempotent; a SIGXFSZ
// ignored when tqref starts stays ignored: writes past the file-size limit then fail with EFBIG
// and are reported as failed writes, exit 3). The handler is async-signal-safe: it unlinks the
// registered temporaries, writes one line to stderr and calls _exit(130).
void install_interrupt_cleanup();

}  // namespace tqref::common
