// reshape_and_cache_flash_bf16k_turbo{2,3,4}v: the writer of SPEC section 4.
// Grid [num_tokens, 1, 1], block [256, 1, 1]. CTA t handles token t: the 256 threads copy its K row
// with 8-byte vectors, then each thread quantises whole V groups g = tid, tid+256, ... in the exact
// operation order of SPEC section 4 steps 1-7 (the CPU model is model/quantize.cpp).
// Arithmetic is written with explicit round-to-nearest intrinsics and the file is compiled with
// --fmad=false, so every product and sum is rounded once, in the written order.
#include "../common/turbo_common.cuh"

namespace tqref::gpu {

// Index of y: the number of bounds BD[j] with BD[j] <= y. A NaN y compares false with every
// bound and gets index 0; -0.0 <= y counts a 0.0 bound as IEEE requires.
template <Format F> __device__ __forceinline__ uint32_t code_index(float y) {
  const float* bd = Tables<F>::bounds();
  uint32_t n = 0;
#pragma unroll
  for (uint32_t j = 0; j + 1 < FormatConst<F>::levels; ++j) {
#if TQREF_MUTANT == 2
    n += (bd[j] < y) ? 1u : 0u;  // MUTANT 2: strict compare, a value on a bound goes down
#else
    n += (bd[j] <= y) ? 1u : 0u;
#endif
  }
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

// SPEC section 4 steps 1-7 for one group; writes its packed codes and its scale byte.
// s_cb: the fp32 codebook in shared memory (indexed by a per-thread code).
template <Format F>
__device__ __forceinline__ void quantize_group(const uint16_t* src, uint8_t* code_dst,
                                               uint8_t* scale_dst, const float* s_cb) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  constexpr float kMax = FormatConst<F>::max;
  float x[kGroupSize];
  load_group(src, x);

  // 1. squared norm, sequential
  float nsq = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) {
#if TQREF_MUTANT == 13
    nsq = nsq + x[i] * x[i];  // MUTANT 13: plain expression, contracted to an FMA by --fmad=true
#else
    nsq = __fadd_rn(nsq, __fmul_rn(x[i], x[i]));  // --fmad=false: two roundings, as the model
#endif
  }
  // 2. absolute maximum; fmaxf passes over NaN elements, so amax stays finite or +Inf
  float amax = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) amax = fmaxf(amax, fabsf(x[i]));
  // 3. inverse scale onto the codebook's range (IEEE division)
  const float inv = amax > 1e-12f ? __fdiv_rn(kMax, amax) : 1.0f;
  // 4. codes of the scaled values, packed LSB-first: code i at bits i*b .. i*b+b-1 of the
  //    group's 2b bytes, which is SPEC section 2's packing for all three formats
  //    (tqref::pack_group_codes in format.h writes the same bytes).
  uint32_t c[kGroupSize];
  uint64_t packed = 0;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    c[i] = code_index<F>(__fmul_rn(x[i], inv));
    packed |= static_cast<uint64_t>(c[i]) << (i * kBits);
  }
  // 5. squared norm of the chosen fp32 codebook entries, sequential
  float rsq = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    const float cb = s_cb[c[i]];
#if TQREF_MUTANT == 13
    // MUTANT 13: plain expression, contracted to an FMA by --fmad=true. This is the one that
    // shows: x*x above is exact for bf16 x, fp32 CB[c]^2 is not (golden Dist::fma_sensitive).
    rsq = rsq + cb * cb;
#else
    rsq = __fadd_rn(rsq, __fmul_rn(cb, cb));  // --fmad=false: two roundings, as the model
#endif
  }
  // 6. matched-norm scale (IEEE sqrt and division), clamped to the fp8 maximum; NaN stays NaN
  const float rn = __fsqrt_rn(rsq);
  float s = rn > 1e-10f ? __fdiv_rn(__fsqrt_rn(nsq), rn) : __fdiv_rn(amax, kMax);
  if (s > 448.0f) s = 448.0f;
  // 7. scale byte and packed codes
  uint8_t sb = f32_to_fp8e4m3_satfinite(s);
#if TQREF_MUTANT == 9
  if (sb != 0 && fp8e4m3_to_f32(sb) > s) sb -= 1;  // MUTANT 9: fp8 scale truncated (s >= 0)
#endif
  *scale_dst = sb;
  store_bytes<2 * kBits>(code_dst, packed);
}

template <Format F>
__device__ __forceinline__ void reshape_and_cache(
    const __nv_bfloat16* __restrict__ key, const __nv_bfloat16* __restrict__ value,
    __nv_bfloat16* __restrict__ k_cache, uint8_t* __restrict__ v_cache,
    const int64_t* __restrict__ slot_mapping, uint32_t num_kv_heads, uint32_t head_dim,
    uint32_t block_size, uint32_t key_stride, uint32_t value_stride,
    uint64_t v_block_stride_bytes, uint64_t v_data_section_bytes) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  __shared__ float s_cb[FormatConst<F>::levels];

  const uint32_t t = blockIdx.x;
  int64_t s = slot_mapping[t];
#if TQREF_MUTANT == 20
  {  // MUTANT 20: when the first, middle and last slots look like one contiguous run, every token
     // t is written to slot_mapping[0] + t (a shortcut that samples the batch instead of reading it)
    const int64_t T = gridDim.x, s0 = slot_mapping[0];
    if (s0 >= 0 && slot_mapping[T - 1] - s0 == T - 1 && slot_mapping[T / 2] - s0 == T / 2) s = s0 + t;
  }
#endif
#if TQREF_MUTANT == 11
  if (s < 0) s = 0;  // MUTANT 11: padding tokens overwrite slot 0
#else
  if (s < 0) return;  // padding token: nothing is written (uniform across the CTA)
#endif
#if TQREF_MUTANT == 1
  s += 1;  // MUTANT 1: every token lands one slot too far
#endif
  if (threadIdx.x < FormatConst<F>::levels) s_cb[threadIdx.x] = Tables<F>::codebook()[threadIdx.x];
  __syncthreads();

  const uint32_t n = num_kv_heads * head_dim;  // elements per token, a multiple of 16
  const uint64_t blk = static_cast<uint64_t>(s) / block_size;
  const uint64_t in_blk = static_cast<uint64_t>(s) % block_size;

  // K: dense pool [num_blocks, B, H, D]; 8-byte vectors (key 8-byte aligned, key_stride % 4 == 0
  // is the caller's contract; k_block_stride_bytes is ignored as the spec says).
  const uint2* ksrc = reinterpret_cast<const uint2*>(key + static_cast<uint64_t>(t) * key_stride);
  uint2* kdst = reinterpret_cast<uint2*>(k_cache + (blk * block_size + in_blk) * n);
  for (uint32_t i = threadIdx.x; i < n / 4; i += blockDim.x) kdst[i] = ksrc[i];

  // V: index row and scale row of the slot inside V block `blk`.
  uint8_t* vblock = v_cache + blk * v_block_stride_bytes;
  uint8_t* code_row = vblock + in_blk * (static_cast<uint64_t>(n) * kBits / 8);
#if TQREF_MUTANT == 17
  // MUTANT 17: scale section assumed at the engine's tight offset B*n*b/8
  uint8_t* scale_row = vblock + static_cast<uint64_t>(block_size) * n * kBits / 8 +
                       in_blk * (n / kGroupSize);
#else
  uint8_t* scale_row = vblock + v_data_section_bytes + in_blk * (n / kGroupSize);
#endif
  const uint16_t* vsrc = reinterpret_cast<const uint16_t*>(value) +
                         static_cast<uint64_t>(t) * value_stride;
  for (uint32_t g = threadIdx.x; g < n / kGroupSize; g += blockDim.x)
    quantize_group<F>(vsrc + g * kGroupSize, code_row + g * (2 * kBits), scale_row + g, s_cb);
}

}  // namespace tqref::gpu

#define TQREF_DEFINE_WRITER(NAME, FMT)                                                          \
  extern "C" __global__ void __launch_bounds__(256) NAME(                                       \
      const __nv_bfloat16* key, const __nv_bfloat16* value, __nv_bfloat16* k_cache,             \
      uint8_t* v_cache, const int64_t* slot_mapping, uint32_t num_kv_heads, uint32_t head_dim,  \
      uint32_t block_size, uint32_t key_stride, uint32_t value_stride,                          \
      uint64_t k_block_stride_bytes, uint64_t v_block_stride_bytes,                             \
      uint64_t v_data_section_bytes) {                                                          \
    (void)k_block_stride_bytes;                                                                 \
    tqref::gpu::reshape_and_cache<tqref::Format::FMT>(                                          \
        key, value, k_cache, v_cache, slot_mapping, num_kv_heads, head_dim, block_size,         \
        key_stride, value_stride, v_block_stride_bytes, v_data_section_bytes);                  \
  }

TQREF_DEFINE_WRITER(reshape_and_cache_flash_bf16k_turbo2v, turbo2v)
TQREF_DEFINE_WRITER(reshape_and_cache_flash_bf16k_turbo3v, turbo3v)
TQREF_DEFINE_WRITER(reshape_and_cache_flash_bf16k_turbo4v, turbo4v)
