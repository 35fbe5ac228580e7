// The fast paths compiled for AVX2: 8-lane vectors (fast_kernels.h).
#include "fast_isa_includes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2")
namespace tqref::fast::avx2 {
inline constexpr int kW = 8;
#include "fast_isa_impl.h"
}  // namespace tqref::fast::avx2
#pragma GCC pop_options

namespace tqref::fast {
extern const FastKernels kAvx2 = avx2::make_kernels("avx2");
}  // namespace tqref::fast
#endif
