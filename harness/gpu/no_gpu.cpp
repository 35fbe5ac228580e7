// CPU-only builds: the entry points of harness/gpu that the CLI calls, answering "no GPU in this
// build". CMake links this file (tqref_gpu_none) exactly where CUDA is not built, in place of
// tqref_gpu, the way tqref_gpu_backend_registration adds `--backend gpu` only where it is; so no
// command tests for a GPU build. It links no CUDA and includes no header that needs one.
#include "gpu/availability.h"
#include "gpu/calibrate_ex2.h"
#include "gpu/conform_session.h"
#include "io/exit_code.h"

namespace tqref {

std::string gpu::unavailable_reason() { return "this tqref was built without CUDA (no nvcc at configure time)"; }

// Not reached from the CLI: its GPU check (unavailable_reason above) refuses first.
int gpu::calibrate_ex2(const CalibrateEx2Options&) { return kExitNoDevice; }

// Not reached from the CLI: its GPU check refuses first, after the pre-check.
int conform::run_conform_session(ConformResult&, SessionOptions) { return kExitNoDevice; }

}  // namespace tqref
