// Entry points paged_decode_attn_bf16k_turbo{2,3,4}v_gqa (and _gqa_stats): the 16 parameters of
// the reference-order decoders (docs/spec.md section 5) with another launch geometry: grid
// [num_q_heads / HT, num_seqs], block [256], HT = heads per CTA in 1..8 dividing
// num_q_heads / num_kv_heads, chosen by the launcher (docs/gqa-decoders.md).
// Output bits equal the reference-order kernel's.
// An invalid grid (heads_per_cta() == 0) traps: silently wrong geometry must not pass.
#pragma once
#include "gqa_ops_cuda.cuh"

#ifndef HDIM
#error "HDIM must be defined (128 or 256)"
#endif
static_assert(HDIM == 128 || HDIM == 256, "HDIM must be 128 or 256");

// CTAs per SM the register allocation must allow: 2 at HDIM 128 (128 registers, no spills; the
// main shapes have about 2 CTAs per SM), 1 at HDIM 256 (capping it at 128 registers spills
// about 0.9 KB per thread).
#define TQREF_GQA_MIN_CTAS (HDIM == 128 ? 2 : 1)

namespace tqref::gqa {

template <Format F, uint32_t kHdim, bool kStats>
__device__ __forceinline__ void decode_gqa_entry(const Args& a) {
  __shared__ Shared<kHdim> sm;
  CudaOps ops;
  const uint32_t ht = heads_per_cta(a.num_q_heads, a.num_kv_heads, gridDim.x);
  const uint32_t qh0 = blockIdx.x * ht, seq = blockIdx.y;
  static_assert(kMaxHT == 8, "one case per HT below");
  switch (ht) {
    case 1: decode_cta<CudaOps, F, kHdim, 1, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    case 2: decode_cta<CudaOps, F, kHdim, 2, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    case 3: decode_cta<CudaOps, F, kHdim, 3, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    case 4: decode_cta<CudaOps, F, kHdim, 4, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    case 5: decode_cta<CudaOps, F, kHdim, 5, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    case 6: decode_cta<CudaOps, F, kHdim, 6, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    case 7: decode_cta<CudaOps, F, kHdim, 7, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    case 8: decode_cta<CudaOps, F, kHdim, 8, kStats>(a, qh0, seq, threadIdx.x, sm, ops); break;
    default: __trap();  // heads_per_cta() == 0: no valid HT for this grid
  }
}

}  // namespace tqref::gqa

// The 16 parameters of docs/spec.md section 5, in order (every variant decoder's signature).
#define TQREF_DECODE_PARAMS                                                                      \
  const __nv_bfloat16 *q, const __nv_bfloat16 *k_cache, const uint8_t *v_cache,                  \
      __nv_bfloat16 *output, const int32_t *block_tables, const int32_t *seq_lens,               \
      uint32_t max_blocks_per_seq, uint32_t num_q_heads, uint32_t num_kv_heads,                  \
      uint32_t head_dim, uint32_t block_size, float inv_sqrt_d, uint32_t q_stride,               \
      uint64_t v_block_stride_bytes, uint64_t v_data_section_bytes, uint32_t sliding_window

#define TQREF_GQA_ARGS_FROM_PARAMS(STATS)                                                        \
  tqref::gqa::Args a{reinterpret_cast<const uint16_t*>(q),                                    \
                         reinterpret_cast<const uint16_t*>(k_cache), v_cache,                     \
                         reinterpret_cast<uint16_t*>(output), block_tables, seq_lens,            \
                         max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim, block_size,     \
                         inv_sqrt_d, q_stride, v_block_stride_bytes, v_data_section_bytes,        \
                         sliding_window, STATS, nullptr}

#define TQREF_DEFINE_GQA_DECODER(NAME, FMT)                                                      \
  extern "C" __global__ void __launch_bounds__(256, TQREF_GQA_MIN_CTAS) NAME(                                        \
      TQREF_DECODE_PARAMS) {                                                                    \
    const TQREF_GQA_ARGS_FROM_PARAMS(nullptr);                                                   \
    tqref::gqa::decode_gqa_entry<tqref::Format::FMT, HDIM, false>(a);                             \
  }                                                                                              \
  extern "C" __global__ void __launch_bounds__(256, TQREF_GQA_MIN_CTAS) NAME##_stats(                                \
      TQREF_DECODE_PARAMS,                                                                       \
      unsigned long long* stats) {                                                               \
    const TQREF_GQA_ARGS_FROM_PARAMS(stats);                                                     \
    tqref::gqa::decode_gqa_entry<tqref::Format::FMT, HDIM, true>(a);                             \
  }
