// The SIMD paths compiled for AVX-512 (F, BW, DQ, VL): 16-lane vectors (simd_kernels.h).
#include "simd_isa_includes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
namespace tqref::simd::avx512 {
inline constexpr int kW = 16;
#include "simd_isa_impl.h"
}  // namespace tqref::simd::avx512
#pragma GCC pop_options

namespace tqref::simd {
extern const SimdKernels kAvx512 = avx512::make_kernels("avx512");
}  // namespace tqref::simd
#endif
