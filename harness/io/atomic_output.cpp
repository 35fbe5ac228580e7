#include "io/atomic_output.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

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
    throw std::runtime_error(temp + ": path longer than PATH_MAX-1 = " + std::to_string(PATH_MAX - 1));
  for (int i = 0; i < kMaxOpenOutputs; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kClaimed)) {
      std::memcpy(g_slots[i].path, temp.c_str(), temp.size() + 1);
      g_slots[i].state.store(kLive);
      return i;
    }
  }
  throw std::runtime_error(temp + ": more than " + std::to_string(kMaxOpenOutputs) +
                           " output files open at once");
}

void release(int slot) {
  if (slot >= 0) g_slots[slot].state.store(kFree);
}

void write_stderr(const char* s) {
  ssize_t r = ::write(2, s, std::strlen(s));
  (void)r;
}

extern "C" void on_interrupt(int sig) {
  int removed = 0;
  for (Slot& s : g_slots)
    if (s.state.load() == kLive && ::unlink(s.path) == 0) ++removed;
  write_stderr(sig == SIGINT ? "\ntqref: interrupted (SIGINT)" : sig == SIGTERM ? "\ntqref: terminated (SIGTERM)"
                                                                                 : "\ntqref: hang-up (SIGHUP)");
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

void AtomicOutput::commit() {
  if (committed_) return;
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp_.c_str());
    release(slot_);
    slot_ = -1;
    committed_ = true;  // nothing left to remove
    throw std::runtime_error(path_ + ": cannot rename the finished temporary " + temp_ + " into place: " + why);
  }
  committed_ = true;
  release(slot_);
  slot_ = -1;
}

std::string output_path_problem(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return "empty output path";
  std::error_code ec;
  if (fs::is_directory(path, ec)) return path + " is a directory; give a file name";
  const fs::path parent = fs::path(path).parent_path();
  const fs::path dir = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(dir, ec)) return path + ": directory " + dir.string() + " does not exist";
  if (::access(dir.c_str(), W_OK) != 0) return path + ": directory " + dir.string() + " is not writable";
  return "";
}

void write_file_atomic(const std::string& path, const std::string& text) {
  AtomicOutput out(path);
  {
    std::ofstream f(out.temp_path(), std::ios::binary);
    if (!f) throw std::runtime_error(path + ": cannot create (temporary " + out.temp_path() + ")");
    f << text;
    f.flush();
    if (!f) throw std::runtime_error(path + ": write failed (disk full?)");
  }
  out.commit();
}

void install_interrupt_cleanup() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  // While the handler runs, the other interrupts wait: it exits before they are delivered.
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGHUP);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

}  // namespace tqref::common
