// The SIMD paths for one instruction set: included once by each simd_<isa>.cpp inside its own
// namespace and `#pragma GCC target` region, with kW (the lane count) defined there. It and the
// files it includes include no headers (simd_isa_includes.h has them all, outside the region).
#include "simd.h"
#include "ex2_batch_impl.h"
#include "decode_simd_impl.h"
#include "writer_simd_impl.h"

constexpr SimdKernels make_kernels(const char* isa) {
  return {isa, &ex2_lanes, &expf_lanes, &fraction_lanes, &decode_warp, &decode_cta, &writer_v_row};
}
