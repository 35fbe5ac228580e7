#include "io/atomic_output.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/input_file.h"

namespace tqref::common {

namespace {

// Registry of temporaries, readable from a signal handler: fixed storage, no allocation, each
// slot published through an atomic state (free -> claimed while the path is copied -> live).
enum SlotState : int { kFree = 0, kClaimed = 1, kLive = 2 };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot g_slots[kMaxOpenOutputs];
static_assert(std::atomic<int>::is_always_lock_free, "the handler reads slot states lock-free");

int claim(const std::string& temp) {
  if (temp.size() >= PATH_MAX)
    throw OutputError(temp + ": path longer than PATH_MAX-1 = " + std::to_string(PATH_MAX - 1));
  for (int i = 0; i < kMaxOpenOutputs; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kClaimed)) {
      std::memcpy(g_slots[i].path, temp.c_str(), temp.size() + 1);
      g_slots[i].state.store(kLive);
      return i;
    }
  }
  throw OutputError(temp + ": more than " + std::to_string(kMaxOpenOutputs) + " output files open at once");
}

void release(int slot) {
  if (slot >= 0) g_slots[slot].state.store(kFree);
}

void write_stderr(const char* s) {
  ssize_t r = ::write(2, s, std::strlen(s));
  (void)r;
}

const char* signal_line(int sig) {
  switch (sig) {
    case SIGINT: return "\ntqref: interrupted (SIGINT)";
    case SIGTERM: return "\ntqref: terminated (SIGTERM)";
    case SIGHUP: return "\ntqref: hang-up (SIGHUP)";
    case SIGQUIT: return "\ntqref: quit (SIGQUIT)";
    default: return "\ntqref: file size limit exceeded (SIGXFSZ)";
  }
}

extern "C" void on_interrupt(int sig) {
  int removed = 0;
  for (Slot& s : g_slots)
    if (s.state.load() == kLive && ::unlink(s.path) == 0) ++removed;
  write_stderr(signal_line(sig));
  write_stderr(removed ? "; partial output removed, exit 130\n" : "; no partial output left, exit 130\n");
  ::_exit(kInterruptExitCode);
}

}  // namespace

AtomicOutput::AtomicOutput(std::string path)
    : path_(std::move(path)), temp_(path_ + ".partial-" + std::to_string(::getpid())) {
  slot_ = claim(temp_);
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) ::unlink(temp_.c_str());
  release(slot_);
}

namespace {

// Why the temporary must not become `path` now ("" when it may): the flush failed, the
// destination is not a regular file, or it is an input this process read.
std::string commit_problem(const std::string& temp, const std::string& path) {
  const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return "cannot flush the finished temporary " + temp + " to disk: " + why;
  }
  if (::close(fd) != 0) return "cannot close the temporary " + temp + ": " + std::strerror(errno);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  if (!S_ISREG(st.st_mode)) return "exists and is not a regular file; not replaced";
  for (const FileIdentity& in : inputs_read())
    if (in == FileIdentity{st.st_dev, st.st_ino}) return "is an input of this command; not replaced";
  return "";
}

// Creates and removes `probe` (a name in the directory an output goes to): "" or why it fails.
std::string probe_problem(const std::string& probe, const std::string& dir) {
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create a file in directory " + dir + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

const char* kind_of(mode_t m) {
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// The same file: one identity when both exist, else the same path once resolved.
bool same_file(const std::string& a, const std::string& b) {
  FileIdentity ia, ib;
  if (identity_of(a, &ia) && identity_of(b, &ib)) return ia == ib;
  std::error_code e1, e2;
  const auto ca = std::filesystem::weakly_canonical(a, e1), cb = std::filesystem::weakly_canonical(b, e2);
  return !e1 && !e2 && ca == cb;
}

}  // namespace

void AtomicOutput::commit() {
  if (committed_) return;
  std::string why = commit_problem(temp_, path_);
  if (why.empty() && std::rename(temp_.c_str(), path_.c_str()) != 0)
    why = "cannot rename the finished temporary " + temp_ + " into place: " + std::strerror(errno);
  committed_ = true;
  release(slot_);
  slot_ = -1;
  if (!why.empty()) {
    ::unlink(temp_.c_str());
    throw OutputError(path_ + ": " + why);
  }
}

std::string output_path_problem(const std::string& path, const std::vector<std::string>& others) {
  namespace fs = std::filesystem;
  if (path.empty()) return "empty output path";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return path + " is a directory; give a file name";
    if (!S_ISREG(st.st_mode))
      return path + " is " + kind_of(st.st_mode) + "; allowed: a regular file or a new name";
  }
  for (const std::string& o : others)
    if (!o.empty() && same_file(path, o)) return path + " is the same file as " + o + "; give another name";
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return path + ": directory " + dir + " does not exist";
  const std::string why = probe_problem(path + ".partial-" + std::to_string(::getpid()), dir);
  return why.empty() ? "" : path + ": " + why;
}

std::string output_dir_problem(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) return "empty output directory";
  std::error_code ec;
  fs::path existing = fs::path(dir);
  while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, ec))
    return dir + ": " + existing.string() + " exists and is not a directory";
  if (dir.size() + 64 >= PATH_MAX) return dir + ": path longer than PATH_MAX-64 = " + std::to_string(PATH_MAX - 64);
  const std::string why = probe_problem((existing / (".tqref-probe-" + std::to_string(::getpid()))).string(),
                                        existing.string());
  return why.empty() ? "" : dir + ": " + why;
}

void write_file_atomic(const std::string& path, const std::string& text) {
  AtomicOutput out(path);
  const int fd = ::open(out.temp_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw OutputError(path + ": cannot create the temporary " + out.temp_path() + ": " + std::strerror(errno));
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "no progress";
      ::close(fd);
      throw OutputError(path + ": write failed: " + why);
    }
    done += size_t(n);
  }
  if (::close(fd) != 0) throw OutputError(path + ": close failed: " + std::strerror(errno));
  out.commit();
}

void install_interrupt_cleanup() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  // While the handler runs, the other signals wait: it exits before they are delivered.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ}) sigaddset(&sa.sa_mask, sig);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  // An ignored SIGXFSZ (the caller wants EFBIG from write) stays ignored.
  struct sigaction old {};
  if (sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(SIGXFSZ, &sa, nullptr);
}

}  // namespace tqref::common
