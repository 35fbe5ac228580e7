// Launch watchdog: every kernel of `tqref check --backend gpu` runs on its own stream and is
// waited for with a deadline (cuStreamQuery polled, common/deadline_wait.h) instead of an
// unbounded cuCtxSynchronize. A kernel that faults (illegal address, trap, launch failure) or
// outlives the deadline (e.g. a loop that never ends for a mis-set block_size) is reported with
// the case and kernel name; the context is then unusable, so the backend launches no further case
// and `tqref check` writes its reports and exits kExitGpuFault (6) naming the case.
#pragma once
#include <string>

#include "gpu/driver.h"

namespace tqref::gpu {

// Default deadline of one launch. SPEC's largest test geometries (32k positions, HDIM 256) take
// milliseconds on an H200; a minute leaves room for slow GPUs, debuggers and JIT.
inline constexpr double kDefaultLaunchTimeoutS = 60.0;

// Returns when the work queued on `s` is complete. Throws gpu::Error: the kernel's CUDA error
// (fault = true for sticky errors), or on timeout CUDA_ERROR_LAUNCH_TIMEOUT with fault = true.
// `what` names the launch (case and kernel) in the message.
void wait_for_launch(const Stream& s, double timeout_s, const std::string& what);

}  // namespace tqref::gpu
