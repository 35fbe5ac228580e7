// Launch watchdog: every kernel of `tqref check --backend gpu` runs on its own stream and is
// waited for with a deadline (cuStreamQuery polled, gpu/deadline_wait.h) instead of an
// unbounded cuCtxSynchronize. A kernel that faults (illegal address, trap, launch failure) or
// outlives the deadline (e.g. a loop that never ends for a mis-set block_size) is reported with
// the case and kernel name. After a sticky fault `tqref check` resets the context and goes on with
// the next case; after a timeout the context is abandoned (the kernel may still run), no further
// case is launched, and `tqref check` writes its reports and leaves with _exit(kExitGpuFault)
// without any CUDA teardown (docs/reliability.md, "GPU faults").
#pragma once
#include <string>

#include "gpu/driver.h"

namespace tqref::gpu {

// Default deadline of one launch. SPEC's largest test geometries (32k positions, HDIM 256) take
// milliseconds on an H200; a minute leaves room for slow GPUs, debuggers and JIT.
inline constexpr double kDefaultLaunchTimeoutS = 60.0;

// The deadline passed while the kernel was still running. Unlike a sticky error, the kernel may
// keep running: nothing that waits for the GPU (cuMemFree, cuModuleUnload, context teardown) may
// be called afterwards, or the process hangs with it (gpu_backend.cpp abandons the context).
struct LaunchTimeout : Error {
  using Error::Error;
};

// Returns when the work queued on `s` is complete. Throws gpu::Error: the kernel's CUDA error
// (fault = true for sticky errors), or on timeout LaunchTimeout (code CUDA_ERROR_LAUNCH_TIMEOUT,
// fault = true). `what` names the launch (case and kernel) in the message.
void wait_for_launch(const Stream& s, double timeout_s, const std::string& what);

}  // namespace tqref::gpu
