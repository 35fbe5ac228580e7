// The SIMD paths compiled for AVX2: 8-lane vectors (simd_kernels.h).
#include "simd_isa_includes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2")
namespace tqref::simd::avx2 {
inline constexpr int kW = 8;
#include "simd_isa_impl.h"
}  // namespace tqref::simd::avx2
#pragma GCC pop_options

namespace tqref::simd {
extern const SimdKernels kAvx2 = avx2::make_kernels("avx2");
}  // namespace tqref::simd
#endif
