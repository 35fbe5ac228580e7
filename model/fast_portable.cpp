// The fast paths for the build's baseline instruction set (SSE2 on x86-64, NEON on aarch64, or
// whatever the target has): 4-lane (128-bit) vectors (fast_kernels.h). The path used on CPUs
// without AVX2 and on every other architecture.
#include "fast_isa_includes.h"

namespace tqref::fast::portable {
inline constexpr int kW = 4;
#include "fast_isa_impl.h"
}  // namespace tqref::fast::portable

namespace tqref::fast {
extern const FastKernels kPortable = portable::make_kernels("portable");
}  // namespace tqref::fast
