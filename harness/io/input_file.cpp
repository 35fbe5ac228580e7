#include "io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace tqref {

namespace {

std::mutex g_inputs_mutex;
std::vector<FileIdentity> g_inputs;

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

}  // namespace

InputFile::InputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of blocking; the fstat
  // below then refuses it. O_NOCTTY: a terminal device never becomes the controlling terminal.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0)
    throw InputError(what + " " + path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  const bool stat_ok = ::fstat(fd_, &st) == 0;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    const std::string kind = stat_ok ? kind_of(st.st_mode) : std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw InputError(what + " " + path + " is " + kind + "; allowed: a regular file");
  }
  size_ = uint64_t(st.st_size);
  id_ = {st.st_dev, st.st_ino};
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  bool known = false;
  for (const auto& i : g_inputs) known |= i == id_;
  if (!known) g_inputs.push_back(id_);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read_all(uint64_t max_bytes) const {
  if (size_ > max_bytes)
    throw InputError(what_ + " " + path_ + ": " + std::to_string(size_) + " bytes; allowed: at most " +
                     std::to_string(max_bytes));
  std::string out;
  out.resize(size_t(size_));
  uint64_t done = 0;
  // pread from offset 0 up to the size fstat saw, plus one byte to notice a file that grew.
  for (;;) {
    if (done == out.size()) out.resize(out.size() + 1);
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(what_ + " " + path_ + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    done += uint64_t(n);
    if (done > max_bytes)
      throw InputError(what_ + " " + path_ + ": more than " + std::to_string(max_bytes) +
                       " bytes (it grew while being read); allowed: at most " + std::to_string(max_bytes));
  }
  out.resize(size_t(done));
  return out;
}

std::string read_text_input(const std::string& path, const std::string& what, uint64_t max_bytes) {
  return InputFile(path, what).read_all(max_bytes);
}

std::vector<FileIdentity> inputs_read() {
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  return g_inputs;
}

bool identity_of(const std::string& path, FileIdentity* id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  *id = {st.st_dev, st.st_ino};
  return true;
}

bool identity_of_fd(int fd, FileIdentity* id) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  *id = {st.st_dev, st.st_ino};
  return true;
}

}  // namespace tqref
