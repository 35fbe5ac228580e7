// Waiting for asynchronous work with a deadline (the GPU launch watchdog, harness/gpu/watchdog.h).
// Host-only and independent of CUDA, so the polling logic is tested on any machine.
#pragma once
#include <algorithm>
#include <chrono>
#include <thread>

namespace tqref::common {

enum class WaitOutcome { done, failed, timed_out };

struct WaitResult {
  WaitOutcome outcome = WaitOutcome::done;
  int code = 0;         // the query's last status (failed: the error code)
  double seconds = 0;   // time spent waiting
};

// Polls `query()` until it returns 0 (complete), a value other than `not_ready` (an error), or
// `deadline` passes. The poll interval starts at 20 us (short kernels cost little latency) and
// doubles up to 2 ms (a long kernel costs little CPU).
template <class Query>
WaitResult wait_with_deadline(Query&& query, int not_ready, std::chrono::duration<double> deadline) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto pause = std::chrono::microseconds(20);
  WaitResult r;
  for (;;) {
    r.code = query();
    r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    if (r.code == 0) return r;
    if (r.code != not_ready) {
      r.outcome = WaitOutcome::failed;
      return r;
    }
    if (clock::now() - t0 >= deadline) {
      r.outcome = WaitOutcome::timed_out;
      return r;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

}  // namespace tqref::common
