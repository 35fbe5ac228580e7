// Entry points reshape_and_cache_flash_bf16k_turbo{2,3,4}v_fast (module writers_fast): the
// reference writer's 13 parameters (docs/spec.md section 4) plus `u32 num_tokens`, grid
// [fast_writer::grid_x(num_tokens, num_kv_heads, head_dim), 1, 1], block [256, 1, 1]. The bytes
// written equal the reference-order writer's (fast_writer_core.h; docs/kernels.md, "Fast writer").
// Compiled with -O3 --fmad=false and without fast-math, like every module.
#include "../common/turbo_common.cuh"
#include "fast_writer_core.h"

namespace tqref::fast_writer {

// The Ops policy of fast_writer_core.h on the GPU: explicit round-to-nearest intrinsics (one
// rounding each, never contracted), the reference writer's conversions and fp8 encoder.
struct CudaWriterOps {
  static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
  static __device__ __forceinline__ float fmax(float a, float b) { return fmaxf(a, b); }
  static __device__ __forceinline__ float abs(float a) { return fabsf(a); }
  static __device__ __forceinline__ float bf16(uint16_t h) { return gpu::bf16_bits_to_f32(h); }
  static __device__ __forceinline__ uint8_t fp8(float s) { return gpu::f32_to_fp8e4m3_satfinite(s); }
  template <Format F> static __device__ __forceinline__ float bounds(uint32_t j) {
    return gpu::Tables<F>::bounds()[j];
  }
  template <Format F> static __device__ __forceinline__ float codebook(uint32_t i) {
    return gpu::Tables<F>::codebook()[i];
  }
  static __device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
  }
  static __device__ __forceinline__ int64_t load_i64(const int64_t* p) { return *p; }
  static __device__ __forceinline__ uint16_t load_u16(const uint16_t* p) { return *p; }
  // C bytes at p (C-byte aligned) as C/4 words, read-only path (inputs are never written here).
  template <uint32_t C> static __device__ __forceinline__ void load_chunk(const uint16_t* p, uint32_t* w) {
    if constexpr (C == 16) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
      w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
    } else {
      static_assert(C == 8);
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
      w[0] = v.x; w[1] = v.y;
    }
  }
  template <uint32_t C> static __device__ __forceinline__ void store_chunk(uint16_t* p, const uint32_t* w) {
    if constexpr (C == 16) *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    else *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  }
  static __device__ __forceinline__ void store_u64(uint8_t* p, uint64_t v) { *reinterpret_cast<uint64_t*>(p) = v; }
  static __device__ __forceinline__ void store_u32(uint8_t* p, uint32_t v) { *reinterpret_cast<uint32_t*>(p) = v; }
  static __device__ __forceinline__ void store_u16(uint8_t* p, uint16_t v) { *reinterpret_cast<uint16_t*>(p) = v; }
  static __device__ __forceinline__ void store_u8(uint8_t* p, uint8_t v) { *p = v; }
};

template <Format F> __device__ __forceinline__ void writer_fast_entry(const Args& a) {
  __shared__ CtaTables tb;
  init_tables<CudaWriterOps, F>(threadIdx.x, tb);
  __syncthreads();
  write_cta<CudaWriterOps, F>(a, blockIdx.x, threadIdx.x, tb);
}

}  // namespace tqref::fast_writer

// 4 CTAs of 256 threads per SM (at most 64 registers): enough loads in flight per SM to cover
// the memory latency (docs/kernels.md, "Fast writer").
#define TQREF_DEFINE_FAST_WRITER(NAME, FMT)                                                     \
  extern "C" __global__ void __launch_bounds__(256, 4) NAME(                                    \
      const __nv_bfloat16* key, const __nv_bfloat16* value, __nv_bfloat16* k_cache,             \
      uint8_t* v_cache, const int64_t* slot_mapping, uint32_t num_kv_heads, uint32_t head_dim,  \
      uint32_t block_size, uint32_t key_stride, uint32_t value_stride,                          \
      uint64_t k_block_stride_bytes, uint64_t v_block_stride_bytes,                             \
      uint64_t v_data_section_bytes, uint32_t num_tokens) {                                     \
    (void)k_block_stride_bytes;                                                                 \
    const tqref::fast_writer::Args a{reinterpret_cast<const uint16_t*>(key),                         \
                                reinterpret_cast<const uint16_t*>(value),                       \
                                reinterpret_cast<uint16_t*>(k_cache), v_cache, slot_mapping,    \
                                num_kv_heads, head_dim, block_size, key_stride, value_stride,   \
                                v_block_stride_bytes, v_data_section_bytes, num_tokens,          \
                                nullptr};                                                       \
    tqref::fast_writer::writer_fast_entry<tqref::Format::FMT>(a);                                    \
  }

TQREF_DEFINE_FAST_WRITER(reshape_and_cache_flash_bf16k_turbo2v_fast, turbo2v)
TQREF_DEFINE_FAST_WRITER(reshape_and_cache_flash_bf16k_turbo3v_fast, turbo3v)
TQREF_DEFINE_FAST_WRITER(reshape_and_cache_flash_bf16k_turbo4v_fast, turbo4v)
