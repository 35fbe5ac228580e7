// What the GPU backend does after a launch of one golden case went wrong (harness/gpu/gpu_backend.cpp,
// docs/reliability.md "GPU faults"). Host-only and free of CUDA, so the decision is tested on any
// machine (tests/test_reliability.cpp); the GPU side is exercised by the faults plan
// (scripts/device-run.sh faults).
#pragma once
#include <string>

namespace tqref::common {

enum class AfterLaunchError {
  next_case,           // an ordinary error (refused launch, missing kernel): the context is intact
  reset_and_continue,  // sticky fault: reset the context, reload the modules, run the next case
  stop,                // sticky fault, no reset wanted (or it failed): launch nothing more
  abandon,             // watchdog timeout: the kernel may still run; no reset, no teardown, no launch
};

// fault: the CUDA error is sticky (the context is unusable); timed_out: the launch watchdog gave
// up while the kernel ran; reset_wanted: the caller asked to continue in a fresh context.
inline AfterLaunchError after_launch_error(bool fault, bool timed_out, bool reset_wanted) {
  // A reset while the kernel still runs could wait for it forever (cuDevicePrimaryCtxReset
  // synchronises): a timeout is never reset, whatever the caller wants.
  if (timed_out) return AfterLaunchError::abandon;
  if (!fault) return AfterLaunchError::next_case;
  return reset_wanted ? AfterLaunchError::reset_and_continue : AfterLaunchError::stop;
}

// The error recorded for a case that is not launched because case `faulted` stopped the backend.
inline std::string not_launched_message(const std::string& faulted, bool timed_out) {
  return timed_out ? "not launched: case " + faulted + " did not finish within the launch timeout; "
                     "its kernel may still run, so the GPU context was abandoned"
                   : "not launched: case " + faulted + " faulted the GPU context before it";
}

}  // namespace tqref::common
