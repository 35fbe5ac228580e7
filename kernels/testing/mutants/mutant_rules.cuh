// The deliberate mutants of docs/mutants.md as rules policies: each derives from ContractRules
// (kernels/reference/contract_rules.cuh) and hides the one step it gets wrong; the reference
// kernels instantiated with it (writers_mutant.cu, decode_mutant.cu) are otherwise the
// reference kernels themselves. A policy is named by its short name in mutants.tsv, which is
// how CMake selects it (-DTQREF_MUTANT_RULES=tqref::gpu::mutant::<short>).
#pragma once
#include <cstdint>

#include "../../reference/contract_rules.cuh"

namespace tqref::gpu::mutant {

// 1: every token lands one slot too far.
struct writer_slot_plus1 : ContractRules {
  static __device__ __forceinline__ int64_t written_slot(int64_t s) { return s < 0 ? s : s + 1; }
};

// 2: strict compare; a value exactly on a bound gets the lower index.
struct bound_strict : ContractRules {
  static __device__ __forceinline__ bool bound_counts(float bound, float y) { return bound < y; }
};

// 3: never a batch of 4; every position is a single.
struct no_batch : ContractRules {
  static constexpr bool kTakesBatches = false;
};

// 4: warp 0 absorbs warps 1..7 one after another instead of the stride-4/2/1 tree.
struct merge_sequential : ContractRules {
  static constexpr uint32_t kMergeSteps = kDecodeWarps - 1;
  static __device__ __forceinline__ bool merge_partner(uint32_t step, uint32_t warp,
                                                       uint32_t& other) {
    other = step + 1;
    return warp == 0;
  }
};

// 5: a factor equal to THRESH is not skipped.
struct thresh_ge : ContractRules {
  static __device__ __forceinline__ bool uses_v(float factor) { return factor >= kThresh; }
};

// 6: dequant reads the scale byte of the neighbouring group.
struct neighbour_scale : ContractRules {
  static __device__ __forceinline__ uint64_t scale_group(uint64_t e) {
    return (e / kGroupSize) ^ 1u;
  }
};

// 7 (decoder) and 17 (writer): the scale section assumed at the engine's tight offset B*n*b/8.
struct tight_data_section : ContractRules {
  static __device__ __forceinline__ uint64_t scale_section(uint64_t, uint64_t block_size,
                                                           uint64_t n, uint32_t bits) {
    return block_size * n * bits / 8;
  }
};
using writer_tight_data_section = tight_data_section;

// 8: the V block stride assumed tight (data section + scale section, no padding).
struct tight_block_stride : ContractRules {
  static __device__ __forceinline__ uint64_t v_block_stride(uint64_t, uint64_t v_data_section,
                                                            uint64_t block_size, uint64_t n) {
    return v_data_section + block_size * (n / kGroupSize);
  }
};

// 9: the fp8 scale rounded toward zero instead of to nearest-even (s >= 0 here).
struct scale_fp8_rz : ContractRules {
  static __device__ __forceinline__ uint8_t scale_byte(float s) {
    uint8_t sb = f32_to_fp8e4m3_satfinite(s);
    if (sb != 0 && fp8e4m3_to_f32(sb) > s) sb -= 1;
    return sb;
  }
};

// 10: butterfly offsets in ascending order 1, 2, 4, 8, 16.
struct butterfly_ascending : ContractRules {
  static __device__ __forceinline__ float butterfly_sum(float part) {
#pragma unroll
    for (uint32_t off = 1; off <= 16; off <<= 1)
      part = __fadd_rn(part, __shfl_xor_sync(0xFFFFFFFFu, part, off));
    return part;
  }
};

// 11: padding tokens (slot < 0) overwrite slot 0.
struct writer_pad_slot0 : ContractRules {
  static __device__ __forceinline__ int64_t written_slot(int64_t s) { return s < 0 ? 0 : s; }
};

// 12: the window starts one position early (L - W - 1).
struct window_plus1 : ContractRules {
  static __device__ __forceinline__ int64_t window_start(int64_t L, uint32_t sliding_window) {
    return (sliding_window > 0u && L > sliding_window) ? L - sliding_window - 1 : 0;
  }
};

// 13: fused multiply-add. Built with --fmad=true (mutants.tsv): the writer's squared norms are
// plain expressions that nvcc then contracts; the decoder's score pairs and o updates are
// explicit FMAs. Only rsq changes in the writer: x*x is exact for bf16 x, fp32 CB[c]^2 is not
// (golden Dist::fma_sensitive).
struct fmad : ContractRules {
  static __device__ __forceinline__ float add_square(float acc, float x) { return acc + x * x; }
  static __device__ __forceinline__ float add_pair_products(float part, float q0, float k0,
                                                            float q1, float k1) {
    return __fadd_rn(part, __fmaf_rn(q0, k0, __fmul_rn(q1, k1)));
  }
  static __device__ __forceinline__ float batch_accumulate(float o, float ef, float v) {
    return __fmaf_rn(ef, v, o);
  }
  static __device__ __forceinline__ float single_update(float o, float eo, float en, float v) {
    return __fmaf_rn(en, v, __fmul_rn(o, eo));
  }
};

// 14: EXPF calls EX2 directly below -126: results under 2^-126 flush to zero.
struct expf_no_split : ContractRules {
  static __device__ __forceinline__ float expf(float x) {
    return ex2_unit(__fmul_rn(x, __uint_as_float(kLog2eBits)));
  }
};

// 15: sparse-V skip disabled: V of every position is loaded and used.
struct no_sparse_skip : ContractRules {
  static __device__ __forceinline__ bool uses_v(float) { return true; }
};

// 16: dequant with the fp32 codebook instead of fp16(CB).
struct fp32_codebook : ContractRules {
  static __device__ __forceinline__ float decoder_codebook(float cb) { return cb; }
};

// The invariance mutants (docs/invariance-and-anatomy.md): each passes W/D where it can and
// fails level I.
// 18: a "dense path" for launches of more than 32 sequences (gridDim.y): V of every position is
// read. Every committed suite has at most 18 sequences per case; level I's large batch has 33+.
struct dense_large_batch : ContractRules {
  static __device__ __forceinline__ bool uses_v(float factor) {
    return gridDim.y > 32u || factor > kThresh;
  }
};

// 19: the lowest output bit follows the parity of the physical block that holds the sequence's
// last position (a block id leaking into the result).
struct block_parity_lsb : ContractRules {
  static __device__ __forceinline__ uint16_t output_bits(uint16_t bits, const int32_t* block_table,
                                                         int64_t L, uint32_t block_size) {
    return bits ^ static_cast<uint16_t>(block_table[(L - 1) / block_size] & 1);
  }
};

// 20: when the first, middle and last slots look like one contiguous run, token t is written to
// slot_mapping[0] + t (a shortcut that samples the batch instead of reading it).
struct writer_contiguous : ContractRules {
  static __device__ __forceinline__ int64_t token_slot(const int64_t* __restrict__ slot_mapping,
                                                       uint32_t t) {
    const int64_t T = gridDim.x, s0 = slot_mapping[0];
    const bool run = s0 >= 0 && slot_mapping[T - 1] - s0 == T - 1 && slot_mapping[T / 2] - s0 == T / 2;
    return run ? s0 + t : slot_mapping[t];
  }
};

// 21: 32-bit offset arithmetic: pool offsets (K element index, V byte offset) wrap modulo 2^32,
// as `uint32_t` index arithmetic does. Invisible below 2^32 elements/bytes; the pools suite puts
// blocks beyond 2^32 and 2^33 bytes (docs/golden-schema.md, "Pools of production size").
struct offset32 : ContractRules {
  static __device__ __forceinline__ uint64_t pool_offset(uint64_t x) {
    return static_cast<uint32_t>(x);
  }
};

}  // namespace tqref::gpu::mutant

// 22-27: the build-flag mutants (plain operators, one nvcc flag each).
#include "plain_rules.cuh"
