#include "gpu/watchdog.h"

#include <cuda.h>

#include <cstdio>

#include "gpu/deadline_wait.h"

namespace tqref::gpu {

void wait_for_launch(const Stream& s, double timeout_s, const std::string& what) {
  const common::WaitResult r = common::wait_with_deadline([&s] { return s.query(); }, CUDA_ERROR_NOT_READY,
                                                          std::chrono::duration<double>(timeout_s));
  if (r.outcome == common::WaitOutcome::done) return;
  if (r.outcome == common::WaitOutcome::failed)
    Driver::require().check(r.code, "kernel " + what + " (after " + std::to_string(r.seconds) + " s)");
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", r.seconds);
  // The kernel is still running: nothing else can use this context. The caller stops launching.
  throw LaunchTimeout("kernel " + what + " did not finish within " + secs + " s (launch watchdog, --launch-timeout); "
              "it may never end (hang); the GPU context is abandoned",
              CUDA_ERROR_LAUNCH_TIMEOUT, true);
}

}  // namespace tqref::gpu
