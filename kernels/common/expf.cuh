// The decoder's exponential (docs/spec.md section 5, EXPF): the kernel's `__expf` as nvcc compiles it
// for sm_90 and sm_121, written out so that every operation is visible:
//   y = f32(x * log2(e))                     (0x3FB8AA3B, one rounding)
//   y >= -126 or NaN:  EX2(y)
//   otherwise:         r = EX2(f32(y * 0.5)); f32(r * r)   (keeps results below 2^-126 that the
//                                                            flush-to-zero unit would lose)
// EX2 is the bare MUFU.EX2 unit, PTX ex2.approx.ftz.f32 (the instruction the calibration probe
// kernels/testing/probes/ex2_probe.cu measures; the CPU model is tqref::Ex2Profile).
#pragma once
#include <cstdint>

#include "turbo_common.cuh"

namespace tqref::gpu {

__device__ __forceinline__ float ex2_unit(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// log2(e) rounded to binary32: the constant nvcc's __expf multiplies by.
inline constexpr uint32_t kLog2eBits = 0x3FB8AA3Bu;

__device__ __forceinline__ float expf_kernel(float x) {
  const float y = __fmul_rn(x, __uint_as_float(kLog2eBits));
  if (y >= -126.0f || isnan(y)) return ex2_unit(y);
  const float r = ex2_unit(__fmul_rn(y, 0.5f));
  return __fmul_rn(r, r);
}

}  // namespace tqref::gpu
