// The untrusted-input policy for every file tqref reads (docs/reliability.md, "Untrusted files"):
// a regular file only (no FIFO, device, socket or directory: checked on an open descriptor before
// libhdf5 or a stream touches the path, so a FIFO cannot block and /dev/zero cannot be read
// without end), text inputs up to a size limit, and the identity (device, inode) of every input
// remembered so that no output replaces one (atomic_output.h). HDF5 inputs get their structural
// checks on top of this (hdf5_validate.h).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tqref {

// An input that breaks the policy; what() names the file and the limit. Callers map it to exit 3.
struct InputError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Size limits of the text inputs (YAML sweeps, prompt files, value files): far above any real
// one, small enough that a stray multi-gigabyte file is refused before it is read.
inline constexpr uint64_t kMaxTextInputBytes = uint64_t(1) << 20;

// (device, inode) of a file.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileIdentity& o) const { return dev == o.dev && ino == o.ino; }
};

// An input opened for reading after the checks above; closes its descriptor when destroyed.
class InputFile {
 public:
  // `what` names the input in messages ("--config", "golden file", ...).
  InputFile(const std::string& path, const std::string& what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  const FileIdentity& identity() const { return id_; }
  // Reads the whole file (at most `max_bytes`, else InputError naming the limit).
  std::string read_all(uint64_t max_bytes) const;

 private:
  std::string path_, what_;
  int fd_ = -1;
  uint64_t size_ = 0;
  FileIdentity id_;
};

// A whole text input (kMaxTextInputBytes unless given).
std::string read_text_input(const std::string& path, const std::string& what,
                            uint64_t max_bytes = kMaxTextInputBytes);

// Every input opened through InputFile in this process, for the output checks.
std::vector<FileIdentity> inputs_read();
// The identity of an existing path (following symbolic links) or of an open descriptor; false
// when there is none.
bool identity_of(const std::string& path, FileIdentity* id);
bool identity_of_fd(int fd, FileIdentity* id);

}  // namespace tqref
