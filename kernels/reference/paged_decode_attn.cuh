// paged_decode_attn_bf16k_turbo{2,3,4}v: paged decode attention over the BF16-K / Turbo-V cache,
// SPEC section 5, in the spec's exact operation order (the CPU model is model/decode.cpp).
// Grid [num_q_heads, num_seqs, 1], block [256, 1, 1] = 8 warps. Lane l owns dims
// l*VEC .. l*VEC+VEC-1 with VEC = HDIM/32. Each warp runs an online softmax over its part of the
// sequence (cache block by cache block: batches of 4, then singles), then the 8 warp states are
// merged through shared memory (stride 4, 2, 1) and warp 0 writes the bf16 output.
// Every product and sum is written with an explicit round-to-nearest intrinsic and the file is
// compiled with --fmad=false: one rounding per operation, in the written order.
#pragma once
#include <cstdint>

#include "../common/expf.cuh"
#include "../common/turbo_common.cuh"

// HDIM: the compile-time head dimension of this build (128 or 256). Addressing uses the runtime
// head_dim; lanes always cover HDIM dims, so a launch with head_dim != HDIM reads and writes
// the wrong elements exactly as the published kernels do (SPEC section 5).
#ifndef HDIM
#error "HDIM must be defined (128 or 256)"
#endif
static_assert(HDIM == 128 || HDIM == 256, "HDIM must be 128 or 256");

// Sparse-V threshold. Compared as a float even if defined as a double literal.
#ifndef TQ_PLUS_SPARSE_V_THRESHOLD
#define TQ_PLUS_SPARSE_V_THRESHOLD 1e-3f
#endif

namespace tqref::gpu {

inline constexpr float kThresh = static_cast<float>(TQ_PLUS_SPARSE_V_THRESHOLD);

// Read-only views of the launch parameters that the per-position helpers need.
struct DecodeCtx {
  const uint16_t* q;        // bf16 bits
  const uint16_t* k_cache;  // [num_blocks, B, H, D] bf16 bits
  const uint8_t* v_cache;
  const int32_t* block_table;  // this sequence's row
  uint32_t head_dim, block_size, num_kv_heads, kvh;
  uint64_t v_block_stride, v_data_section;
  bool k_aligned;  // k_cache 16-byte aligned: vector loads allowed
};

// Loads VEC bf16 values as f32 (exact). `aligned` is warp-uniform: with D a multiple of 16 and
// a 16-byte aligned pool, a lane's VEC elements start on a VEC*2-byte boundary.
template <uint32_t VEC>
__device__ __forceinline__ void load_bf16(const uint16_t* p, bool aligned, float (&x)[VEC]) {
  if (aligned) {
    uint32_t w[VEC / 2];
    if constexpr (VEC == 4) {
      const uint2 u = *reinterpret_cast<const uint2*>(p);
      w[0] = u.x; w[1] = u.y;
    } else {
      static_assert(VEC == 8);
      const uint4 u = *reinterpret_cast<const uint4*>(p);
      w[0] = u.x; w[1] = u.y; w[2] = u.z; w[3] = u.w;
    }
#pragma unroll
    for (uint32_t i = 0; i < VEC / 2; ++i) {
      x[2 * i] = bf16_bits_to_f32(static_cast<uint16_t>(w[i] & 0xFFFFu));
      x[2 * i + 1] = bf16_bits_to_f32(static_cast<uint16_t>(w[i] >> 16));
    }
  } else {
#pragma unroll
    for (uint32_t i = 0; i < VEC; ++i) x[i] = bf16_bits_to_f32(p[i]);
  }
}

// Score of one position: per-lane pairwise partial dot product, xor butterfly, times inv_sqrt_d.
// All 32 lanes end with the same bits (each butterfly step adds the same two values).
template <uint32_t VEC>
__device__ __forceinline__ float score(const float (&qf)[VEC], const float (&kf)[VEC],
                                       float inv_sqrt_d) {
  float part = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < VEC / 2; ++i) {
#if TQREF_MUTANT == 13
    // MUTANT 13: fused multiply-add as --fmad=true would contract it
    part = __fadd_rn(part, __fmaf_rn(qf[2 * i], kf[2 * i], __fmul_rn(qf[2 * i + 1], kf[2 * i + 1])));
#else
    // --fmad=false: two products, then their sum, then the running sum, each rounded
    part = __fadd_rn(part, __fadd_rn(__fmul_rn(qf[2 * i], kf[2 * i]),
                                     __fmul_rn(qf[2 * i + 1], kf[2 * i + 1])));
#endif
  }
#if TQREF_MUTANT == 10
#pragma unroll
  for (uint32_t off = 1; off <= 16; off <<= 1)  // MUTANT 10: butterfly in ascending order
    part = __fadd_rn(part, __shfl_xor_sync(0xFFFFFFFFu, part, off));
#else
#pragma unroll
  for (uint32_t off = 16; off >= 1; off >>= 1)
    part = __fadd_rn(part, __shfl_xor_sync(0xFFFFFFFFu, part, off));
#endif
  return __fmul_rn(part, inv_sqrt_d);
}

// K row of position p (physical block `phys`, slot `slot`) for this lane's dims.
template <uint32_t VEC>
__device__ __forceinline__ void load_k(const DecodeCtx& c, int32_t phys, uint32_t slot,
                                       uint32_t lane, float (&kf)[VEC]) {
  const uint64_t row = (static_cast<uint64_t>(static_cast<int64_t>(phys)) * c.block_size + slot) *
                           c.num_kv_heads + c.kvh;
  load_bf16<VEC>(c.k_cache + row * c.head_dim + lane * VEC, c.k_aligned, kf);
}

// dequant(p) for this lane's dims: v[i] = f32(f32(fp16(CB)[code_i]) * gs). Reads exactly the
// bytes holding the lane's codes and its group's scale byte (V rows may have any alignment).
template <Format F, uint32_t VEC>
__device__ __forceinline__ void dequant(const DecodeCtx& c, int32_t phys, uint32_t slot,
                                        uint32_t lane, const float* s_cb16, float (&v)[VEC]) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  const uint64_t n = static_cast<uint64_t>(c.num_kv_heads) * c.head_dim;
#if TQREF_MUTANT == 8
  // MUTANT 8: block stride assumed tight (data section + scale section, no padding)
  const uint64_t vstride = c.v_data_section + c.block_size * (n / kGroupSize);
#else
  const uint64_t vstride = c.v_block_stride;
#endif
#if TQREF_MUTANT == 7
  // MUTANT 7: scale section assumed at the tight offset B*n*b/8
  const uint64_t data_section = c.block_size * n * kBits / 8;
#else
  const uint64_t data_section = c.v_data_section;
#endif
  const uint8_t* vblk = c.v_cache + static_cast<uint64_t>(static_cast<int64_t>(phys)) * vstride;
  const uint64_t e0 = static_cast<uint64_t>(c.kvh) * c.head_dim + lane * VEC;  // first element
  // Codes: bits e0*b .. (e0+VEC)*b of the row; the start bit offset is 0 or 4 and the span
  // covers at most 4 bytes (VEC*b <= 32, and offset 4 only occurs with VEC*b = 12).
  const uint64_t bit0 = e0 * kBits;
  const uint8_t* cp = vblk + slot * (n * kBits / 8) + bit0 / 8;
  const uint32_t shift = static_cast<uint32_t>(bit0 % 8);
  const uint32_t nbytes = (shift + VEC * kBits + 7) / 8;
  uint32_t w = 0;
#pragma unroll
  for (uint32_t k = 0; k < 4; ++k)
    if (k < nbytes) w |= static_cast<uint32_t>(cp[k]) << (8 * k);
#if TQREF_MUTANT == 6
  const uint64_t group = (e0 / kGroupSize) ^ 1u;  // MUTANT 6: the neighbouring group's scale
#else
  const uint64_t group = e0 / kGroupSize;  // VEC divides 16: one group per lane
#endif
  const float gs = fp8e4m3_to_f32(vblk[data_section + slot * (n / kGroupSize) + group]);
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i) {
    const uint32_t code = (w >> (shift + i * kBits)) & ((1u << kBits) - 1u);
    v[i] = __fmul_rn(s_cb16[code], gs);
  }
}

template <Format F, uint32_t kHdim>
__device__ __forceinline__ void paged_decode_attn(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k_cache,
    const uint8_t* __restrict__ v_cache, __nv_bfloat16* __restrict__ output,
    const int32_t* __restrict__ block_tables, const int32_t* __restrict__ seq_lens,
    uint32_t max_blocks_per_seq, uint32_t num_q_heads, uint32_t num_kv_heads, uint32_t head_dim,
    uint32_t block_size, float inv_sqrt_d, uint32_t q_stride, uint64_t v_block_stride_bytes,
    uint64_t v_data_section_bytes, uint32_t sliding_window) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  constexpr uint32_t kLevels = FormatConst<F>::levels;
  __shared__ float s_cb16[kLevels];  // fp16(CB) as f32 (exact)
  __shared__ float s_m[kDecodeWarps], s_l[kDecodeWarps];
  __shared__ float s_o[kDecodeWarps][kHdim];

  const uint32_t qh = blockIdx.x, seq = blockIdx.y;
  const uint32_t warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int32_t L = seq_lens[seq];
  if (L == 0) return;  // nothing is written (uniform across the CTA)

  if (threadIdx.x < kLevels) {
#if TQREF_MUTANT == 16
    s_cb16[threadIdx.x] = Tables<F>::codebook()[threadIdx.x];  // MUTANT 16: fp32 codebook
#else
    s_cb16[threadIdx.x] = __half2float(__float2half_rn(Tables<F>::codebook()[threadIdx.x]));
#endif
  }
  __syncthreads();

  // Partition (positions as int64 so that L near 2^31 cannot overflow; L < 0 is outside the
  // contract and gives empty ranges: zeros are written).
  const int64_t Ll = L;
#if TQREF_MUTANT == 12
  // MUTANT 12: window one position too long
  const int64_t start = (sliding_window > 0u && Ll > sliding_window) ? Ll - sliding_window - 1 : 0;
#else
  const int64_t start = (sliding_window > 0u && Ll > sliding_window) ? Ll - sliding_window : 0;
#endif
  const int64_t A = Ll - start;
  const int64_t chunk = (A + kDecodeWarps - 1) / kDecodeWarps;
  const int64_t w_begin = start + warp * chunk;
  const int64_t w_end = w_begin + chunk < Ll ? w_begin + chunk : Ll;

  DecodeCtx c;
  c.q = reinterpret_cast<const uint16_t*>(q);
  c.k_cache = reinterpret_cast<const uint16_t*>(k_cache);
  c.v_cache = v_cache;
  c.block_table = block_tables + static_cast<uint64_t>(seq) * max_blocks_per_seq;
  c.head_dim = head_dim;
  c.block_size = block_size;
  c.num_kv_heads = num_kv_heads;
  c.kvh = qh / (num_q_heads / num_kv_heads);
  c.v_block_stride = v_block_stride_bytes;
  c.v_data_section = v_data_section_bytes;
  c.k_aligned = (reinterpret_cast<uintptr_t>(k_cache) & 15u) == 0;

  float qf[VEC];
  {
    const uint16_t* qp = c.q + static_cast<uint64_t>(seq) * q_stride +
                         static_cast<uint64_t>(qh) * head_dim + lane * VEC;
#pragma unroll
    for (uint32_t i = 0; i < VEC; ++i) qf[i] = bf16_bits_to_f32(qp[i]);  // q_stride: any value
  }

  float m = -1e30f, l = 0.0f, o[VEC];
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i) o[i] = 0.0f;

  int64_t p = w_begin;
  while (p < w_end) {
    // One cache block: batches of 4 while 4 remain in the block and the range, then singles.
    const int64_t lb = p / block_size;
    const int64_t blk_end = (lb + 1) * block_size < w_end ? (lb + 1) * block_size : w_end;
    const int32_t phys = c.block_table[lb];
#if TQREF_MUTANT != 3  // MUTANT 3: no batches, every position is a single
    for (; p + 4 <= blk_end; p += 4) {
      const uint32_t slot0 = static_cast<uint32_t>(p - lb * block_size);
      float kf[4][VEC];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) load_k<VEC>(c, phys, slot0 + b, lane, kf[b]);
      float sc[4];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) sc[b] = score<VEC>(qf, kf[b], inv_sqrt_d);
      const float mn = fmaxf(fmaxf(fmaxf(fmaxf(m, sc[0]), sc[1]), sc[2]), sc[3]);
      const float eo = expf_kernel(__fsub_rn(m, mn));
#pragma unroll
      for (uint32_t i = 0; i < VEC; ++i) o[i] = __fmul_rn(o[i], eo);
      l = __fmul_rn(l, eo);
      float ef[4];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) {
        ef[b] = expf_kernel(__fsub_rn(sc[b], mn));
        l = __fadd_rn(l, ef[b]);
      }
      m = mn;
      float v[4][VEC];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) {
        // ef[b] is warp-uniform, so a skipped position issues no V load at all.
#if TQREF_MUTANT == 5
        const bool use = ef[b] >= kThresh;  // MUTANT 5: a factor equal to THRESH is not skipped
#elif TQREF_MUTANT == 15
        const bool use = true;  // MUTANT 15: sparse-V skip disabled
#elif TQREF_MUTANT == 18
        // MUTANT 18: a "dense path" for launches of more than 32 sequences (gridDim.y): V of every
        // position is read. Passes D on suites of at most 32 sequences; level I's large batch shows it.
        const bool use = gridDim.y > 32u || ef[b] > kThresh;
#else
        const bool use = ef[b] > kThresh;
#endif
        if (use) {
          dequant<F, VEC>(c, phys, slot0 + b, lane, s_cb16, v[b]);
        } else {
#pragma unroll
          for (uint32_t i = 0; i < VEC; ++i) v[b][i] = 0.0f;
        }
      }
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) {
#pragma unroll
        for (uint32_t i = 0; i < VEC; ++i) {
#if TQREF_MUTANT == 13
          o[i] = __fmaf_rn(ef[b], v[b][i], o[i]);  // MUTANT 13: fused multiply-add
#else
          o[i] = __fadd_rn(o[i], __fmul_rn(ef[b], v[b][i]));  // --fmad=false: two roundings
#endif
        }
      }
    }
#endif
    for (; p < blk_end; ++p) {
      const uint32_t slot = static_cast<uint32_t>(p - lb * block_size);
      float kf[VEC];
      load_k<VEC>(c, phys, slot, lane, kf);
      const float sc = score<VEC>(qf, kf, inv_sqrt_d);
      const float mn = fmaxf(m, sc);
      const float eo = expf_kernel(__fsub_rn(m, mn));
      const float en = expf_kernel(__fsub_rn(sc, mn));
      l = __fadd_rn(__fmul_rn(l, eo), en);
      float v[VEC];
#if TQREF_MUTANT == 5
      const bool use = en >= kThresh;  // MUTANT 5
#elif TQREF_MUTANT == 15
      const bool use = true;  // MUTANT 15
#elif TQREF_MUTANT == 18
      const bool use = gridDim.y > 32u || en > kThresh;  // MUTANT 18
#else
      const bool use = en > kThresh;
#endif
      if (use) {
        dequant<F, VEC>(c, phys, slot, lane, s_cb16, v);
      } else {
#pragma unroll
        for (uint32_t i = 0; i < VEC; ++i) v[i] = 0.0f;
      }
#pragma unroll
      for (uint32_t i = 0; i < VEC; ++i) {
#if TQREF_MUTANT == 13
        o[i] = __fmaf_rn(en, v[i], __fmul_rn(o[i], eo));  // MUTANT 13
#else
        o[i] = __fadd_rn(__fmul_rn(o[i], eo), __fmul_rn(en, v[i]));  // --fmad=false
#endif
      }
      m = mn;
    }
  }

  // Merge: every warp publishes (m, l, o); then warps w < stride absorb warp w + stride.
  if (lane == 0) {
    s_m[warp] = m;
    s_l[warp] = l;
  }
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i) s_o[warp][lane * VEC + i] = o[i];
  __syncthreads();
#if TQREF_MUTANT == 4
  // MUTANT 4: warp 0 absorbs warps 1..7 one after another instead of the stride-4/2/1 tree
  constexpr uint32_t kMergeSteps = kDecodeWarps - 1;
#else
  constexpr uint32_t kMergeSteps = 3;  // stride 4, 2, 1
#endif
  for (uint32_t step = 0; step < kMergeSteps; ++step) {
#if TQREF_MUTANT == 4
    const bool absorbs = warp == 0;
    const uint32_t other = step + 1;
#else
    const uint32_t stride = (kDecodeWarps / 2) >> step;
    const bool absorbs = warp < stride;
    const uint32_t other = warp + stride;
#endif
    if (absorbs) {
      const float lo = s_l[other];
      if (lo > 0.0f) {  // a NaN or empty warp state is not merged
        const float mo = s_m[other];
        const float mn = fmaxf(m, mo);
        const float a = expf_kernel(__fsub_rn(m, mn));
        const float cf = expf_kernel(__fsub_rn(mo, mn));
        l = __fadd_rn(__fmul_rn(l, a), __fmul_rn(lo, cf));  // --fmad=false: two roundings
        m = mn;
#pragma unroll
        for (uint32_t i = 0; i < VEC; ++i)
          o[i] = __fadd_rn(__fmul_rn(o[i], a), __fmul_rn(s_o[other][lane * VEC + i], cf));
      }
      if (lane == 0) {
        s_m[warp] = m;
        s_l[warp] = l;
      }
#pragma unroll
      for (uint32_t i = 0; i < VEC; ++i) s_o[warp][lane * VEC + i] = o[i];
    }
    __syncthreads();
  }

  if (warp != 0) return;
  // Correctly rounded reciprocal; l_0 = 0 or NaN gives 0.
  const float inv = l > 0.0f ? __fdiv_rn(1.0f, l) : 0.0f;
  uint16_t* out = reinterpret_cast<uint16_t*>(output) +
                  (static_cast<uint64_t>(seq) * num_q_heads + qh) * head_dim + lane * VEC;
#if TQREF_MUTANT == 19
  // MUTANT 19: the lowest output bit follows the parity of the physical block that holds the
  // sequence's last position (a block id leaking into the result)
  const uint16_t flip = static_cast<uint16_t>(c.block_table[(Ll - 1) / block_size] & 1);
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i)
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(__fmul_rn(o[i], inv))) ^ flip;
#else
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i)
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(__fmul_rn(o[i], inv)));
#endif
}

}  // namespace tqref::gpu

#define TQREF_DEFINE_DECODER(NAME, FMT)                                                          \
  extern "C" __global__ void __launch_bounds__(256) NAME(                                        \
      const __nv_bfloat16* q, const __nv_bfloat16* k_cache, const uint8_t* v_cache,              \
      __nv_bfloat16* output, const int32_t* block_tables, const int32_t* seq_lens,               \
      uint32_t max_blocks_per_seq, uint32_t num_q_heads, uint32_t num_kv_heads,                  \
      uint32_t head_dim, uint32_t block_size, float inv_sqrt_d, uint32_t q_stride,               \
      uint64_t v_block_stride_bytes, uint64_t v_data_section_bytes, uint32_t sliding_window) {   \
    tqref::gpu::paged_decode_attn<tqref::Format::FMT, HDIM>(                                     \
        q, k_cache, v_cache, output, block_tables, seq_lens, max_blocks_per_seq, num_q_heads,    \
        num_kv_heads, head_dim, block_size, inv_sqrt_d, q_stride, v_block_stride_bytes,          \
        v_data_section_bytes, sliding_window);                                                   \
  }
