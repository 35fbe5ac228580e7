// The fast paths compiled for AVX-512 (F, BW, DQ, VL): 16-lane vectors (fast_kernels.h).
#include "fast_isa_includes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
namespace tqref::fast::avx512 {
inline constexpr int kW = 16;
#include "fast_isa_impl.h"
}  // namespace tqref::fast::avx512
#pragma GCC pop_options

namespace tqref::fast {
extern const FastKernels kAvx512 = avx512::make_kernels("avx512");
}  // namespace tqref::fast
#endif
