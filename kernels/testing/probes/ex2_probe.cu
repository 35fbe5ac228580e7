// Calibration probe: the bare MUFU.EX2 instruction (PTX ex2.approx.ftz.f32) over a contiguous
// range of input bit patterns. `cuobjdump -sass` must show a lone MUFU.EX2 between the load and
// the store (checked by `tqref calibrate ex2`, recorded in docs/ex2.md).
#include <cstdint>

extern "C" __global__ void tqref_ex2_probe(uint32_t first_bits, uint32_t count, uint32_t* out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float x = __uint_as_float(first_bits + i), y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  out[i] = __float_as_uint(y);
}
