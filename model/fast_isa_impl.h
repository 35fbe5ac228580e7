// The fast paths for one instruction set: included once by each fast_<isa>.cpp inside its own
// namespace and `#pragma GCC target` region, with kW (the lane count) defined there. It and the
// files it includes include no headers (fast_isa_includes.h has them all, outside the region).
#include "simd.h"
#include "ex2_batch_impl.h"
#include "decode_fast_impl.h"
#include "writer_fast_impl.h"

constexpr FastKernels make_kernels(const char* isa) {
  return {isa, &ex2_lanes, &expf_lanes, &fraction_lanes, &decode_warp, &decode_cta, &writer_v_row};
}
