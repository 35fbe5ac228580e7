#include "io/isolated_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

// Present when a sanitizer runtime is linked (ASan, UBSan; libFuzzer registers its crash-input
// dump there); null otherwise.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace tqref {

namespace {

// Exit statuses of the child besides 0 (fn returned true). A sanitizer report exits with 1.
constexpr int kChildRefused = 41;
constexpr int kChildThrew = 42;
constexpr int kChildWriteFailed = 43;

// Pipe frames: one tag byte, a 4-byte length (host order: both ends are this process image),
// then the payload. Notes are cut to kMaxNote bytes; the result travels in frames of kMaxFrame.
constexpr char kNoteTag = 'N', kResultTag = 'R';
constexpr size_t kMaxNote = 4096, kMaxFrame = size_t(1) << 20, kHeader = 5;

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) _exit(kChildWriteFailed);
    p += k;
    n -= size_t(k);
  }
}

void send_frame(int fd, char tag, const char* p, size_t n) {
  char h[kHeader];
  const uint32_t len = uint32_t(n);
  h[0] = tag;
  std::memcpy(h + 1, &len, 4);
  write_all(fd, h, kHeader);
  write_all(fd, p, n);
}

// RLIMIT_DATA counts the data segment and every private writable mapping (Linux >= 4.7), the
// inherited ones included (a sanitizer's shadow memory: terabytes of reservation), so the limit
// is set relative to the child's data size at the fork (VmData of /proc/self/status).
void limit_memory(uint64_t extra) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return;
  unsigned long long kib = 0;
  char line[256];
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmData: %llu kB", &kib) == 1) break;
  std::fclose(f);
  if (kib == 0) return;
  const uint64_t limit = uint64_t(kib) * 1024 + extra;
  const rlimit r{limit, limit};
  ::setrlimit(RLIMIT_DATA, &r);
}

[[noreturn]] void child(int fd, const std::function<bool(std::string&, const IsolatedNote&)>& fn,
                        uint64_t max_extra_memory) {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ, SIGPIPE})
    ::signal(sig, SIG_DFL);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);
  // Dies with the parent; the parent may already be gone when prctl takes effect.
  const pid_t parent = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(kChildWriteFailed);
  if (max_extra_memory) limit_memory(max_extra_memory);
  const IsolatedNote note = [fd](const std::string& s) {
    send_frame(fd, kNoteTag, s.data(), std::min(s.size(), kMaxNote));
  };
  std::string out;
  bool ok = false;
  try {
    ok = fn(out, note);
  } catch (...) {
    _exit(kChildThrew);
  }
  if (!ok) _exit(kChildRefused);
  for (size_t done = 0; done < out.size(); done += kMaxFrame)
    send_frame(fd, kResultTag, out.data() + done, std::min(kMaxFrame, out.size() - done));
  _exit(0);
}

// Kills and reaps the child (it may be stuck in a loop that never reads or writes).
void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Splits the bytes received so far into frames; returns false when the result outgrows max_bytes.
bool take_frames(std::string& pending, IsolatedResult& r, size_t max_bytes) {
  size_t at = 0;
  while (pending.size() - at >= kHeader) {
    uint32_t len = 0;
    std::memcpy(&len, pending.data() + at + 1, 4);
    if (pending.size() - at - kHeader < len) break;
    const char* p = pending.data() + at + kHeader;
    if (pending[at] == kNoteTag) {
      r.last_note.assign(p, len);
    } else {
      if (r.data.size() + len > max_bytes) return false;
      r.data.append(p, len);
    }
    at += kHeader + len;
  }
  pending.erase(0, at);
  return true;
}

}  // namespace

std::string IsolatedResult::describe(double idle_timeout_s) const {
  char b[160];
  switch (status) {
    case Status::ok:
      return "";
    case Status::refused:
      return "the library reported an error";
    case Status::failed:
      if (signal) std::snprintf(b, sizeof b, "signal %d (%s)", signal, strsignal(signal));
      else if (exit_code == kChildThrew) std::snprintf(b, sizeof b, "an exception in the reader");
      else std::snprintf(b, sizeof b, "exit status %d (a sanitizer report, if any, is above)", exit_code);
      return b;
    case Status::timed_out:
      std::snprintf(b, sizeof b, "no progress within %.0f s; the reader was stopped", idle_timeout_s);
      return b;
    case Status::too_large:
      return "the result exceeds the size limit";
  }
  return "";
}

IsolatedResult run_isolated(const std::function<bool(std::string&, const IsolatedNote&)>& fn,
                            const IsolatedOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("isolated read: pipe failed: ") + std::strerror(errno));
  std::fflush(nullptr);  // nothing buffered is inherited twice (the child never flushes anyway)
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("isolated read: fork failed: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], fn, options.max_extra_memory);
  }
  ::close(fds[1]);
  IsolatedResult r;
  using clock = std::chrono::steady_clock;
  const auto idle = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(options.idle_timeout_s));
  auto deadline = clock::now() + idle;
  std::string pending;
  char buf[65536];
  for (;;) {
    // Rounded up: a truncated remainder would stop the child up to 1 ms before its deadline.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      r.status = IsolatedResult::Status::timed_out;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int k = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (k <= 0) continue;  // interrupted or nothing yet: poll again until the deadline
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child closed the pipe (it exited or died)
    deadline = clock::now() + idle;
    pending.append(buf, size_t(n));
    if (!take_frames(pending, r, options.max_bytes)) {
      r.status = IsolatedResult::Status::too_large;
      break;
    }
  }
  ::close(fds[0]);
  if (r.status != IsolatedResult::Status::ok) {
    kill_and_reap(pid);
    r.data.clear();
    return r;
  }
  // EOF seen: the child has exited or is exiting; one that closed the pipe and then hangs is
  // still bounded by the deadline.
  int st = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      r.status = IsolatedResult::Status::failed;
      return r;
    }
    if (clock::now() >= deadline) {
      kill_and_reap(pid);
      r.status = IsolatedResult::Status::timed_out;
      r.data.clear();
      return r;
    }
    ::usleep(200);
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && pending.empty()) return r;
  r.data.clear();
  if (WIFEXITED(st) && WEXITSTATUS(st) == kChildRefused) {
    r.status = IsolatedResult::Status::refused;
  } else {
    r.status = IsolatedResult::Status::failed;
    if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
    else r.exit_code = WEXITSTATUS(st);
  }
  return r;
}

}  // namespace tqref
