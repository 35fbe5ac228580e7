#include "io/isolated_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
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

[[noreturn]] void child(int fd, const std::function<bool(std::string&)>& fn) {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM, SIGHUP, SIGPIPE})
    ::signal(sig, SIG_DFL);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);
  std::string out;
  bool ok = false;
  try {
    ok = fn(out);
  } catch (...) {
    _exit(kChildThrew);
  }
  if (!ok) _exit(kChildRefused);
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(kChildWriteFailed);
    done += size_t(n);
  }
  _exit(0);
}

// Kills and reaps the child (it may be stuck in a loop that never reads or writes).
void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::string IsolatedResult::describe(double timeout_s) const {
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
      std::snprintf(b, sizeof b, "no result within %.0f s; the reader was stopped", timeout_s);
      return b;
    case Status::too_large:
      return "the result exceeds the size limit";
  }
  return "";
}

IsolatedResult run_isolated(const std::function<bool(std::string&)>& fn, double timeout_s,
                            size_t max_bytes) {
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
    child(fds[1], fn);
  }
  ::close(fds[1]);
  IsolatedResult r;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      r.status = IsolatedResult::Status::timed_out;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int k = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) continue;  // 0: poll again until the deadline
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child closed the pipe (it exited or died)
    if (r.data.size() + size_t(n) > max_bytes) {
      r.status = IsolatedResult::Status::too_large;
      break;
    }
    r.data.append(buf, size_t(n));
  }
  ::close(fds[0]);
  if (r.status != IsolatedResult::Status::ok) {
    kill_and_reap(pid);
    r.data.clear();
    return r;
  }
  // EOF seen: the child has exited or is exiting; a child that closed the pipe and then hangs is
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
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return r;
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
