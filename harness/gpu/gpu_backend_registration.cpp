// Registers the GPU as `tqref check --backend gpu` (judge/backend.h). CMake links this object into
// the CLI exactly when CUDA is built (harness/gpu/CMakeLists.txt, tqref_gpu_backend_registration),
// so no command needs to know whether there is a GPU backend.
#include "gpu/gpu_backend.h"

namespace tqref::gpu {

namespace {

std::unique_ptr<judge::Backend> open_gpu_backend(const judge::BackendOptions& o, const Ex2Profile* ex2) {
  try {
    return std::make_unique<GpuBackend>(
        GpuOptions{o.device, o.module, o.hdim, o.threshold, o.launch_timeout,
                   /*reset_after_fault=*/true, o.variant == "gqa"},
        ex2);
  } catch (const ModuleError& e) {
    throw judge::BackendError(kExitBadInput, e.what());
  } catch (const Error& e) {
    throw judge::BackendError(e.fault ? kExitGpuFault : kExitNoDevice,
                              std::string("--backend gpu: no usable GPU: ") + e.what());
  }
}

const bool registered = judge::register_backend("gpu", &open_gpu_backend);

}  // namespace

}  // namespace tqref::gpu
