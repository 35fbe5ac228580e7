// The Ops policy of gqa_decode_core.h on the GPU: every product and sum
// is an explicit round-to-nearest intrinsic (and the module is compiled with --fmad=false); EXPF
// (expf_kernel) and the conversions are the reference-order kernels' own (kernels/common/).
#pragma once
#include <cstdint>

#include "../common/expf.cuh"
#include "../common/turbo_common.cuh"
#include "gqa_decode_core.h"

namespace tqref::gqa {

struct CudaOps {
  static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
  static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ __forceinline__ float fmax(float a, float b) { return fmaxf(a, b); }
  static __device__ __forceinline__ float thresh() { return tqref::gpu::kThresh; }
  __device__ __forceinline__ float expf(float x) const { return tqref::gpu::expf_kernel(x); }
  static __device__ __forceinline__ float shfl_xor(float v, uint32_t off) {
    return __shfl_xor_sync(0xFFFFFFFFu, v, off);
  }
  static __device__ __forceinline__ float shfl_idx(float v, uint32_t src) {
    return __shfl_sync(0xFFFFFFFFu, v, src);
  }
  __device__ __forceinline__ void sync_warp() const { __syncwarp(); }
  __device__ __forceinline__ void sync_cta() const { __syncthreads(); }
  __device__ __forceinline__ void atomic_add(unsigned long long* p, unsigned long long v) const {
    atomicAdd(p, v);
  }
  static __device__ __forceinline__ int32_t load_i32(const int32_t* p) { return *p; }
  static __device__ __forceinline__ uint8_t load_u8(const uint8_t* p) { return *p; }
  static __device__ __forceinline__ uint16_t load_u16(const uint16_t* p) { return *p; }
  static __device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {  // p 4-byte aligned
    return *reinterpret_cast<const uint32_t*>(p);
  }
  static __device__ __forceinline__ void store_u16(uint16_t* p, uint16_t v) { *p = v; }
  // A hint: the line holding p into L2 (no register, no fault on any address the kernel
  // would read anyway; only K rows of positions in use are prefetched).
  static __device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
  }
  static __device__ __forceinline__ bool aligned4(const void* p) {
    return (reinterpret_cast<uintptr_t>(p) & 3u) == 0;
  }
  static __device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
  }
  static __device__ __forceinline__ float bf16(uint16_t h) { return tqref::gpu::bf16_bits_to_f32(h); }
  static __device__ __forceinline__ uint16_t to_bf16(float x) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  }
  static __device__ __forceinline__ float fp8(uint32_t b) {
    return tqref::gpu::fp8e4m3_to_f32(static_cast<uint8_t>(b));
  }
  template <Format F> static __device__ __forceinline__ float codebook16(uint32_t i) {
    return __half2float(__float2half_rn(tqref::gpu::Tables<F>::codebook()[i]));
  }
  // Four consecutive shared-memory floats as one vector access (p 16-byte aligned): q.
  static __device__ __forceinline__ void lds4(const float* p, float* out) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w;
  }
  // VEC bf16 of one lane as VEC/2 words (element 2i in the low half of word i): one 8-byte
  // (VEC 4) or 16-byte (VEC 8) load when the pool is 16-byte aligned, as the reference kernel.
  template <uint32_t VEC>
  static __device__ __forceinline__ void load_k_raw(const uint16_t* p, bool aligned, uint32_t (&w)[VEC / 2]) {
    if (aligned) {
      if constexpr (VEC == 4) {
        const uint2 u = *reinterpret_cast<const uint2*>(p);
        w[0] = u.x; w[1] = u.y;
      } else {
        static_assert(VEC == 8);
        const uint4 u = *reinterpret_cast<const uint4*>(p);
        w[0] = u.x; w[1] = u.y; w[2] = u.z; w[3] = u.w;
      }
    } else {
#pragma unroll
      for (uint32_t i = 0; i < VEC / 2; ++i)
        w[i] = static_cast<uint32_t>(p[2 * i]) | (static_cast<uint32_t>(p[2 * i + 1]) << 16);
    }
  }
};

}  // namespace tqref::gqa
