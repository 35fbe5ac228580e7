// Device-side pieces shared by every kernel (reference-order, GQA, fast writer, testing): the format tables
// from the one shared header (model/tqref/format.h) copied into constant memory, exact fp8/fp16
// conversions, the decoders' THRESH. Compiled with -O3 --fmad=false and without fast-math
// (kernels/CMakeLists.txt).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <utility>

#include "tqref/format.h"

// The decoders' sparse-V threshold THRESH (docs/spec.md section 5): a compile-time constant, default
// 1e-3f; CMake builds extra decoder modules with others (docs/kernels.md, "Modules").
#ifndef TQ_PLUS_SPARSE_V_THRESHOLD
#define TQ_PLUS_SPARSE_V_THRESHOLD 1e-3f
#endif

namespace tqref::gpu {

// Compared as a float even if the macro is a double literal.
inline constexpr float kThresh = static_cast<float>(TQ_PLUS_SPARSE_V_THRESHOLD);

// A fixed-size float table that constant memory can be initialised from at compile time.
template <size_t N> struct FloatTable {
  float v[N];
};
template <size_t N, size_t... I>
constexpr FloatTable<N> make_table(const float (&a)[N], std::index_sequence<I...>) {
  return {{a[I]...}};
}
template <size_t N> constexpr FloatTable<N> make_table(const float (&a)[N]) {
  return make_table(a, std::make_index_sequence<N>{});
}

// docs/spec.md section 2 tables, bit-identical copies of tqref::kCodebook* / kBounds* (fp32).
__constant__ FloatTable<4> c_codebook2 = make_table(kCodebook2);
__constant__ FloatTable<3> c_bounds2 = make_table(kBounds2);
__constant__ FloatTable<8> c_codebook3 = make_table(kCodebook3);
__constant__ FloatTable<7> c_bounds3 = make_table(kBounds3);
__constant__ FloatTable<16> c_codebook4 = make_table(kCodebook4);
__constant__ FloatTable<15> c_bounds4 = make_table(kBounds4);

template <Format F> struct Tables;
template <> struct Tables<Format::turbo2v> {
  static __device__ __forceinline__ const float* codebook() { return c_codebook2.v; }
  static __device__ __forceinline__ const float* bounds() { return c_bounds2.v; }
};
template <> struct Tables<Format::turbo3v> {
  static __device__ __forceinline__ const float* codebook() { return c_codebook3.v; }
  static __device__ __forceinline__ const float* bounds() { return c_bounds3.v; }
};
template <> struct Tables<Format::turbo4v> {
  static __device__ __forceinline__ const float* codebook() { return c_codebook4.v; }
  static __device__ __forceinline__ const float* bounds() { return c_bounds4.v; }
};

// bf16 bits -> f32: exact (the bits become the upper half of a binary32).
__device__ __forceinline__ float bf16_bits_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

// f32 -> fp8 E4M3 with the writer's encoder, PTX `cvt.rn.satfinite.e4m3x2.f32` (docs/spec.md section 1):
// nearest-even, |x| > 448 and +-Inf saturate to +-448, NaN -> 0x7F. The x2 form packs two
// values; operand b (here x) goes to the low byte.
__device__ __forceinline__ uint8_t f32_to_fp8e4m3_satfinite(float x) {
  uint16_t pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(x));
  return static_cast<uint8_t>(pair & 0xFFu);
}

// fp8 E4M3 -> f32, exact: fp8 -> fp16 (every E4M3 value, NaN included, is an fp16 value) -> f32.
__device__ __forceinline__ float fp8e4m3_to_f32(uint8_t b) {
  __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), __NV_E4M3);
  return __half2float(__half(h));
}

}  // namespace tqref::gpu
