// reshape_and_cache_flash_bf16k_turbo{2,3,4}v: the writer of docs/spec.md section 4, in its exact
// operation order (the CPU model is model/quantize.cpp).
// Grid [num_tokens, 1, 1], block [256, 1, 1]. CTA t handles token t: the 256 threads copy its K row
// with 8-byte vectors, then each thread quantises whole V groups g = tid, tid+256, ... in the
// order of docs/spec.md section 4 steps 1-7. Arithmetic is written with explicit round-to-nearest
// intrinsics and the module is compiled with --fmad=false, so every product and sum is rounded
// once, in the written order. The steps a mutant may change are R::... calls of the rules policy
// R (contract_rules.cuh; ContractRules in the reference module).
#pragma once
#include "../common/turbo_common.cuh"
#include "contract_rules.cuh"

namespace tqref::gpu {

// Index of y: the number of bounds BD[j] with BD[j] <= y. A NaN y compares false with every
// bound and gets index 0; -0.0 <= y counts a 0.0 bound as IEEE requires.
template <Format F, class R> __device__ __forceinline__ uint32_t code_index(float y) {
  const float* bd = Tables<F>::bounds();
  uint32_t n = 0;
#pragma unroll
  for (uint32_t j = 0; j + 1 < FormatConst<F>::levels; ++j)
    n += R::bound_counts(bd[j], y) ? 1u : 0u;
  return n;
}

// Stores the low N bytes of v (little-endian, the byte order of the packed stream) at dst, which
// may have any alignment: padded v_block_stride/v_data_section values can make rows odd.
template <uint32_t N> __device__ __forceinline__ void store_bytes(uint8_t* dst, uint64_t v) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst);
  if constexpr (N == 8) {
    if ((a & 7u) == 0) { *reinterpret_cast<uint64_t*>(dst) = v; return; }
  }
  if constexpr (N == 4) {
    if ((a & 3u) == 0) { *reinterpret_cast<uint32_t*>(dst) = static_cast<uint32_t>(v); return; }
  }
  if constexpr (N % 2 == 0) {
    if ((a & 1u) == 0) {
#pragma unroll
      for (uint32_t k = 0; k < N / 2; ++k)
        reinterpret_cast<uint16_t*>(dst)[k] = static_cast<uint16_t>(v >> (16 * k));
      return;
    }
  }
#pragma unroll
  for (uint32_t k = 0; k < N; ++k) dst[k] = static_cast<uint8_t>(v >> (8 * k));
}

// Loads the 16 bf16 values of one group as f32 (exact). `value` has no alignment guarantee
// beyond 2 bytes (value_stride may be any padded value), so the 16-byte path is taken only
// when the address allows it; both paths read the same 32 bytes.
__device__ __forceinline__ void load_group(const uint16_t* src, float (&x)[kGroupSize]) {
  if ((reinterpret_cast<uintptr_t>(src) & 15u) == 0) {
    const uint4 a = reinterpret_cast<const uint4*>(src)[0];
    const uint4 b = reinterpret_cast<const uint4*>(src)[1];
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (uint32_t i = 0; i < 8; ++i) {
      x[2 * i] = bf16_bits_to_f32(static_cast<uint16_t>(w[i] & 0xFFFFu));
      x[2 * i + 1] = bf16_bits_to_f32(static_cast<uint16_t>(w[i] >> 16));
    }
  } else {
#pragma unroll
    for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = bf16_bits_to_f32(src[i]);
  }
}

// docs/spec.md section 4 steps 1-7 for one group; writes its packed codes and its scale byte.
// s_cb: the fp32 codebook in shared memory (indexed by a per-thread code).
template <Format F, class R>
__device__ __forceinline__ void quantize_group(const uint16_t* src, uint8_t* code_dst,
                                               uint8_t* scale_dst, const float* s_cb) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  constexpr float kMax = FormatConst<F>::max;
  float x[kGroupSize];
  load_group(src, x);

  // 1. squared norm, sequential
  float nsq = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) nsq = R::add_square(nsq, x[i]);
  // 2. absolute maximum; fmaxf passes over NaN elements, so amax stays finite or +Inf
  float amax = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) amax = fmaxf(amax, fabsf(x[i]));
  // 3. inverse scale onto the codebook's range (IEEE division)
  const float inv = amax > 1e-12f ? R::f32_div(kMax, amax) : 1.0f;
  // 4. codes of the scaled values, packed LSB-first: code i at bits i*b .. i*b+b-1 of the
  //    group's 2b bytes, which is docs/spec.md section 2's packing for all three formats
  //    (tqref::pack_group_codes in format.h writes the same bytes).
  uint32_t c[kGroupSize];
  uint64_t packed = 0;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    c[i] = code_index<F, R>(R::f32_mul(x[i], inv));
    packed |= static_cast<uint64_t>(c[i]) << (i * kBits);
  }
  // 5. squared norm of the chosen fp32 codebook entries, sequential
  float rsq = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) rsq = R::add_square(rsq, s_cb[c[i]]);
  // 6. matched-norm scale (IEEE sqrt and division), clamped to the fp8 maximum; NaN stays NaN
  const float rn = R::f32_sqrt(rsq);
  float s = rn > 1e-10f ? R::f32_div(R::f32_sqrt(nsq), rn) : R::f32_div(amax, kMax);
  if (s > 448.0f) s = 448.0f;
  // 7. scale byte and packed codes
  *scale_dst = R::scale_byte(s);
  store_bytes<2 * kBits>(code_dst, packed);
}

template <Format F, class R>
__device__ __forceinline__ void reshape_and_cache(
    const __nv_bfloat16* __restrict__ key, const __nv_bfloat16* __restrict__ value,
    __nv_bfloat16* __restrict__ k_cache, uint8_t* __restrict__ v_cache,
    const int64_t* __restrict__ slot_mapping, uint32_t num_kv_heads, uint32_t head_dim,
    uint32_t block_size, uint32_t key_stride, uint32_t value_stride,
    uint64_t v_block_stride_bytes, uint64_t v_data_section_bytes) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  __shared__ float s_cb[FormatConst<F>::levels];

  const uint32_t t = blockIdx.x;
  const int64_t s = R::written_slot(R::token_slot(slot_mapping, t));
  if (s < 0) return;  // padding token: nothing is written (uniform across the CTA)
  if (threadIdx.x < FormatConst<F>::levels) s_cb[threadIdx.x] = Tables<F>::codebook()[threadIdx.x];
  __syncthreads();

  const uint32_t n = num_kv_heads * head_dim;  // elements per token, a multiple of 16
  const uint64_t blk = static_cast<uint64_t>(s) / block_size;
  const uint64_t in_blk = static_cast<uint64_t>(s) % block_size;

  // K: dense pool [num_blocks, B, H, D]; 8-byte vectors (key 8-byte aligned, key_stride % 4 == 0
  // is the caller's contract; k_block_stride_bytes is ignored as the spec says).
  const uint2* ksrc = reinterpret_cast<const uint2*>(key + static_cast<uint64_t>(t) * key_stride);
  uint2* kdst = reinterpret_cast<uint2*>(k_cache + R::pool_offset((blk * block_size + in_blk) * n));
  for (uint32_t i = threadIdx.x; i < n / 4; i += blockDim.x) kdst[i] = ksrc[i];

  // V: index row and scale row of the slot inside V block `blk`.
  uint8_t* vblock = v_cache + R::pool_offset(blk * v_block_stride_bytes);
  uint8_t* code_row = vblock + in_blk * (static_cast<uint64_t>(n) * kBits / 8);
  uint8_t* scale_row = vblock + R::scale_section(v_data_section_bytes, block_size, n, kBits) +
                       in_blk * (n / kGroupSize);
  const uint16_t* vsrc = reinterpret_cast<const uint16_t*>(value) +
                         static_cast<uint64_t>(t) * value_stride;
  for (uint32_t g = threadIdx.x; g < n / kGroupSize; g += blockDim.x)
    quantize_group<F, R>(vsrc + g * kGroupSize, code_row + g * (2 * kBits), scale_row + g, s_cb);
}

}  // namespace tqref::gpu

// The writer entry point NAME for format FMT with rules policy RULES (same name and parameters
// for the reference module and every writer mutant).
#define TQREF_DEFINE_WRITER(NAME, FMT, RULES)                                                   \
  extern "C" __global__ void __launch_bounds__(256) NAME(                                       \
      const __nv_bfloat16* key, const __nv_bfloat16* value, __nv_bfloat16* k_cache,             \
      uint8_t* v_cache, const int64_t* slot_mapping, uint32_t num_kv_heads, uint32_t head_dim,  \
      uint32_t block_size, uint32_t key_stride, uint32_t value_stride,                          \
      uint64_t k_block_stride_bytes, uint64_t v_block_stride_bytes,                             \
      uint64_t v_data_section_bytes) {                                                          \
    (void)k_block_stride_bytes;                                                                 \
    tqref::gpu::reshape_and_cache<tqref::Format::FMT, RULES>(                                   \
        key, value, k_cache, v_cache, slot_mapping, num_kv_heads, head_dim, block_size,         \
        key_stride, value_stride, v_block_stride_bytes, v_data_section_bytes);                  \
  }

// The module's three entry points with rules policy RULES.
#define TQREF_DEFINE_WRITERS(RULES)                                                             \
  TQREF_DEFINE_WRITER(reshape_and_cache_flash_bf16k_turbo2v, turbo2v, RULES)                    \
  TQREF_DEFINE_WRITER(reshape_and_cache_flash_bf16k_turbo3v, turbo3v, RULES)                    \
  TQREF_DEFINE_WRITER(reshape_and_cache_flash_bf16k_turbo4v, turbo4v, RULES)
