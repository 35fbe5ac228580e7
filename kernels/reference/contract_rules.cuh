// The contract's steps that a wrong kernel most plausibly gets wrong, each written once as
// docs/spec.md states it. The reference-order kernels (reshape_and_cache_turbo.cuh,
// paged_decode_attn.cuh) are templates over a rules policy R and call these steps as R::step;
// the default builds instantiate them with ContractRules. A mutant (docs/mutants.md,
// kernels/testing/mutants/mutant_rules.cuh) derives from ContractRules and hides exactly one
// step, so every other line of the kernel is the reference's own. Every member is a
// __forceinline__ static: with ContractRules the kernels compile to the code they would have
// with these lines written in place.
#pragma once
#include <cstdint>

#include "../common/expf.cuh"
#include "../common/turbo_common.cuh"

namespace tqref::gpu {

struct ContractRules {
  // ---- Arithmetic (docs/spec.md section 1): every product, sum, quotient and square root of
  // the kernels is one of these, one IEEE binary32 operation rounded to nearest-even. The _rn
  // intrinsics make the bits independent of nvcc's flags; the plain-operator build of
  // kernels/testing/mutants/plain_rules.cuh writes them as the published kernels do (a * b,
  // a / b, sqrtf), where --fmad, -ftz, -prec-div and -prec-sqrt decide the bits.
  static __device__ __forceinline__ float f32_mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ __forceinline__ float f32_add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ __forceinline__ float f32_sub(float a, float b) { return __fsub_rn(a, b); }
  static __device__ __forceinline__ float f32_div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ __forceinline__ float f32_sqrt(float a) { return __fsqrt_rn(a); }

  // ---- Pool addressing (section 3): offsets into the K and V pools in 64 bits (pools of
  // production size pass 2^32 bytes; mutant offset32 truncates here).
  static __device__ __forceinline__ uint64_t pool_offset(uint64_t elements_or_bytes) {
    return elements_or_bytes;
  }

  // ---- Cache layout (docs/spec.md section 3), used by the writer and the decoder ----

  // The slot_mapping entry of token t (the CTA's blockIdx.x).
  static __device__ __forceinline__ int64_t token_slot(const int64_t* __restrict__ slot_mapping,
                                                       uint32_t t) {
    return slot_mapping[t];
  }
  // The slot a token is written to: its slot_mapping entry; negative means a padding token,
  // for which nothing is written.
  static __device__ __forceinline__ int64_t written_slot(int64_t slot_mapping_entry) {
    return slot_mapping_entry;
  }
  // Byte offset of the scale section inside a V block: the launch's v_data_section_bytes
  // (which may exceed the engine's tight B*n*b/8: padding).
  // (B = block_size, n and b are for layouts that derive it, as a wrong kernel might.)
  static __device__ __forceinline__ uint64_t scale_section(uint64_t v_data_section_bytes,
                                                           uint64_t /*B*/, uint64_t /*n*/,
                                                           uint32_t /*b*/) {
    return v_data_section_bytes;
  }
  // Bytes between consecutive V blocks: the launch's v_block_stride_bytes.
  static __device__ __forceinline__ uint64_t v_block_stride(uint64_t v_block_stride_bytes,
                                                            uint64_t /*v_data_section_bytes*/,
                                                            uint64_t /*B*/, uint64_t /*n*/) {
    return v_block_stride_bytes;
  }
  // Index of the group that element e belongs to (its scale byte in the scale row).
  static __device__ __forceinline__ uint64_t scale_group(uint64_t e) { return e / kGroupSize; }

  // ---- Writer (section 4) ----

  // Step 4 (index, section 2): bound BD[j] counts towards y's index when BD[j] <= y (IEEE
  // compare: NaN never counts, -0.0 counts a 0.0 bound).
  static __device__ __forceinline__ bool bound_counts(float bound, float y) { return bound <= y; }
  // Steps 1 and 5: one term of a sequential squared norm, f32(acc + f32(x*x)).
  static __device__ __forceinline__ float add_square(float acc, float x) {
    return __fadd_rn(acc, __fmul_rn(x, x));  // --fmad=false: two roundings, as the model
  }
  // Step 7: the scale byte, fp8 E4M3 encode with cvt.rn.satfinite (section 1).
  static __device__ __forceinline__ uint8_t scale_byte(float s) {
    return f32_to_fp8e4m3_satfinite(s);
  }

  // ---- Decoder (section 5) ----

  // First position of the sliding window (positions as int64: L near 2^31 cannot overflow).
  static __device__ __forceinline__ int64_t window_start(int64_t L, uint32_t sliding_window) {
    return (sliding_window > 0u && L > sliding_window) ? L - sliding_window : 0;
  }
  // The walk takes batches of 4 inside each cache block (while 4 positions remain in the block
  // and the range), then singles. A constant, not a function: the loop condition must stay a
  // plain compare for nvcc to give the code it gives without the policy.
  static constexpr bool kTakesBatches = true;
  // One step of a lane's partial score: part + (q0*k0 + q1*k1), every operation rounded.
  static __device__ __forceinline__ float add_pair_products(float part, float q0, float k0,
                                                            float q1, float k1) {
    // --fmad=false: two products, then their sum, then the running sum, each rounded
    return __fadd_rn(part, __fadd_rn(__fmul_rn(q0, k0), __fmul_rn(q1, k1)));
  }
  // The xor butterfly over the warp, offsets 16, 8, 4, 2, 1: all 32 lanes end with the same
  // bits (each step adds the same two values).
  static __device__ __forceinline__ float butterfly_sum(float part) {
#pragma unroll
    for (uint32_t off = 16; off >= 1; off >>= 1)
      part = __fadd_rn(part, __shfl_xor_sync(0xFFFFFFFFu, part, off));
    return part;
  }
  // EXPF: the kernel's __expf with its split below -126 (common/expf.cuh).
  static __device__ __forceinline__ float expf(float x) { return expf_kernel(x); }
  // Sparse V: a position's V is read and used only when its factor exceeds THRESH.
  static __device__ __forceinline__ bool uses_v(float factor) { return factor > kThresh; }
  // The decoder's codebook entry: fp16(CB) as f32 (exact).
  static __device__ __forceinline__ float decoder_codebook(float cb) {
    return __half2float(__float2half_rn(cb));
  }
  // Batch update of o by one position: f32(o + f32(ef * v)).
  static __device__ __forceinline__ float batch_accumulate(float o, float ef, float v) {
    return __fadd_rn(o, __fmul_rn(ef, v));  // --fmad=false: two roundings
  }
  // The bf16 bits warp 0 stores for one output element (block_table: the sequence's row; L its
  // length), as they come out of the final rounding.
  static __device__ __forceinline__ uint16_t output_bits(uint16_t bits, const int32_t*, int64_t,
                                                         uint32_t) {
    return bits;
  }
  // Single update of o: f32(f32(o * eo) + f32(en * v)).
  static __device__ __forceinline__ float single_update(float o, float eo, float en, float v) {
    return __fadd_rn(__fmul_rn(o, eo), __fmul_rn(en, v));  // --fmad=false
  }
  // Merge tree: in step 0, 1, 2 (stride 4, 2, 1) warp w < stride absorbs warp w + stride.
  static constexpr uint32_t kMergeSteps = 3;
  static __device__ __forceinline__ bool merge_partner(uint32_t step, uint32_t warp,
                                                       uint32_t& other) {
    const uint32_t stride = (kDecodeWarps / 2) >> step;
    other = warp + stride;
    return warp < stride;
  }
};

}  // namespace tqref::gpu
