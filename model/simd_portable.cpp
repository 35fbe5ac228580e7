// The SIMD paths for the build's baseline instruction set (SSE2 on x86-64, NEON on aarch64, or
// whatever the target has): 4-lane (128-bit) vectors (simd_kernels.h). The path used on CPUs
// without AVX2 and on every other architecture.
#include "simd_isa_includes.h"

namespace tqref::simd::portable {
inline constexpr int kW = 4;
#include "simd_isa_impl.h"
}  // namespace tqref::simd::portable

namespace tqref::simd {
extern const SimdKernels kPortable = portable::make_kernels("portable");
}  // namespace tqref::simd
