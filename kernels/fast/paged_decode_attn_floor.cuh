// Entry points paged_decode_attn_bf16k_turbo{2,3,4}v_floor: the 16 parameters of the
// reference-order decoders (docs/spec.md section 5), the GQA kernels' launch geometry (grid
// [num_q_heads / HT, num_seqs], block [256], HT in {1, 2, 4} dividing num_q_heads /
// num_kv_heads, chosen by the launcher), the core in floor_decode_core.h (docs/kernels.md, "Floor
// decode variants"). Output bits equal the reference-order kernel's. An invalid grid traps.
#pragma once
#include "fast_decode_ops_cuda.cuh"
#include "floor_decode_core.h"
#include "paged_decode_attn_gqa.cuh"

// CTAs per SM the register allocation must allow: 2 at HDIM 128 (128 registers), 1 at HDIM 256
// (a K row of 128 registers per thread).
#define TQREF_FLOOR_MIN_CTAS (HDIM == 128 ? 2 : 1)

namespace tqref::floordec {

template <Format F, uint32_t kHdim>
__device__ __forceinline__ void decode_floor_entry(const Args& a) {
  __shared__ Shared<kHdim> sm;
  fastdec::CudaOps ops;
  const uint32_t ht = heads_per_cta(a.num_q_heads, a.num_kv_heads, gridDim.x);
  const uint32_t qh0 = blockIdx.x * ht, seq = blockIdx.y;
  if (ht == 4) {
    decode_cta<fastdec::CudaOps, F, kHdim, 4>(a, qh0, seq, threadIdx.x, sm, ops);
  } else if (ht == 2) {
    decode_cta<fastdec::CudaOps, F, kHdim, 2>(a, qh0, seq, threadIdx.x, sm, ops);
  } else if (ht == 1) {
    decode_cta<fastdec::CudaOps, F, kHdim, 1>(a, qh0, seq, threadIdx.x, sm, ops);
  } else {
    __trap();
  }
}

}  // namespace tqref::floordec

#define TQREF_DEFINE_FLOOR_DECODER(NAME, FMT)                                                    \
  extern "C" __global__ void __launch_bounds__(256, TQREF_FLOOR_MIN_CTAS) NAME(                  \
      TQREF_DECODE_PARAMS) {                                                                    \
    const TQREF_FAST_ARGS_FROM_PARAMS(nullptr);                                                   \
    tqref::floordec::decode_floor_entry<tqref::Format::FMT, HDIM>(a);                             \
  }
