// paged_decode_attn_bf16k_turbo{2,3,4}v: paged decode attention over the BF16-K / Turbo-V cache,
// docs/spec.md section 5, in the spec's exact operation order (the CPU model is model/decode.cpp).
// Grid [num_q_heads, num_seqs, 1], block [256, 1, 1] = 8 warps. Lane l owns dims
// l*VEC .. l*VEC+VEC-1 with VEC = HDIM/32. Each warp runs an online softmax over its part of the
// sequence (cache block by cache block: batches of 4, then singles), then the 8 warp states are
// merged through shared memory (stride 4, 2, 1) and warp 0 writes the bf16 output.
// Every product and sum is written with an explicit round-to-nearest intrinsic and the module is
// compiled with --fmad=false: one rounding per operation, in the written order. The steps a
// mutant may change are R::... calls of the rules policy R (contract_rules.cuh; ContractRules in
// the reference modules).
#pragma once
#include <cstdint>

#include "../common/expf.cuh"
#include "../common/turbo_common.cuh"
#include "contract_rules.cuh"

// HDIM: the compile-time head dimension of this build (128 or 256). Addressing uses the runtime
// head_dim. A launch with head_dim != HDIM follows the extension of docs/spec.md section 5.1:
// head_dim < HDIM (a multiple of 16): lanes whose dims lie at or above head_dim are inactive
// (score part +0, no global loads or stores), which equals the HDIM build on zero-padded q and
// K; any other head_dim: every output row of a sequence with L > 0 is bf16 NaN. Either way the
// kernel touches only the buffers the launch describes.
#ifndef HDIM
#error "HDIM must be defined (128 or 256)"
#endif
static_assert(HDIM == 128 || HDIM == 256, "HDIM must be 128 or 256");

namespace tqref::gpu {

// Read-only views of the launch parameters that the per-position helpers need.
struct DecodeCtx {
  const uint16_t* q;        // bf16 bits
  const uint16_t* k_cache;  // [num_blocks, B, H, D] bf16 bits
  const uint8_t* v_cache;
  const int32_t* block_table;  // this sequence's row
  uint32_t head_dim, block_size, num_kv_heads, kvh;
  uint64_t v_block_stride, v_data_section;
  bool k_aligned;  // k_cache 16-byte aligned: vector loads allowed
  bool active;     // this lane's dims lie below head_dim (docs/spec.md section 5.1)
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
template <uint32_t VEC, class R>
__device__ __forceinline__ float score(const float (&qf)[VEC], const float (&kf)[VEC],
                                       float inv_sqrt_d) {
  float part = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < VEC / 2; ++i)
    part = R::add_pair_products(part, qf[2 * i], kf[2 * i], qf[2 * i + 1], kf[2 * i + 1]);
  return R::f32_mul(R::butterfly_sum(part), inv_sqrt_d);
}

// K row of position p (physical block `phys`, slot `slot`) for this lane's dims.
template <uint32_t VEC, class R>
__device__ __forceinline__ void load_k(const DecodeCtx& c, int32_t phys, uint32_t slot,
                                       uint32_t lane, float (&kf)[VEC]) {
  if (!c.active) {  // section 5.1: an inactive lane's q and K are +0, its part +0
#pragma unroll
    for (uint32_t i = 0; i < VEC; ++i) kf[i] = 0.0f;
    return;
  }
  const uint64_t row = (static_cast<uint64_t>(static_cast<int64_t>(phys)) * c.block_size + slot) *
                           c.num_kv_heads + c.kvh;
  load_bf16<VEC>(c.k_cache + R::pool_offset(row * c.head_dim + lane * VEC), c.k_aligned, kf);
}

// dequant(p) for this lane's dims: v[i] = f32(f32(fp16(CB)[code_i]) * gs). Reads exactly the
// bytes holding the lane's codes and its group's scale byte (V rows may have any alignment).
template <Format F, uint32_t VEC, class R>
__device__ __forceinline__ void dequant(const DecodeCtx& c, int32_t phys, uint32_t slot,
                                        uint32_t lane, const float* s_cb16, float (&v)[VEC]) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  if (!c.active) {  // section 5.1: no V for an inactive lane (its o is never observed)
#pragma unroll
    for (uint32_t i = 0; i < VEC; ++i) v[i] = 0.0f;
    return;
  }
  const uint64_t n = static_cast<uint64_t>(c.num_kv_heads) * c.head_dim;
  const uint64_t vstride = R::v_block_stride(c.v_block_stride, c.v_data_section, c.block_size, n);
  const uint64_t data_section = R::scale_section(c.v_data_section, c.block_size, n, kBits);
  const uint8_t* vblk =
      c.v_cache + R::pool_offset(static_cast<uint64_t>(static_cast<int64_t>(phys)) * vstride);
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
  const uint64_t group = R::scale_group(e0);  // VEC divides 16: one group per lane
  const float gs = fp8e4m3_to_f32(vblk[data_section + slot * (n / kGroupSize) + group]);
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i) {
    const uint32_t code = (w >> (shift + i * kBits)) & ((1u << kBits) - 1u);
    v[i] = R::f32_mul(s_cb16[code], gs);
  }
}

// Warp w's positions [begin, end) (docs/spec.md section 5, Partition). Positions are int64 so that L
// near 2^31 cannot overflow; L < 0 is outside the contract and gives empty ranges (zeros are
// written).
struct WarpRange {
  int64_t begin, end;
};
template <class R>
__device__ __forceinline__ WarpRange warp_range(int32_t L, uint32_t sliding_window,
                                                uint32_t warp) {
  const int64_t Ll = L;
  const int64_t start = R::window_start(Ll, sliding_window);
  const int64_t A = Ll - start;
  const int64_t chunk = (A + kDecodeWarps - 1) / kDecodeWarps;
  const int64_t w_begin = start + warp * chunk;
  const int64_t w_end = w_begin + chunk < Ll ? w_begin + chunk : Ll;
  return {w_begin, w_end};
}

// The launch parameters that the per-position helpers read, for CTA (qh, seq).
__device__ __forceinline__ DecodeCtx make_ctx(const __nv_bfloat16* __restrict__ q,
                                              const __nv_bfloat16* __restrict__ k_cache,
                                              const uint8_t* __restrict__ v_cache,
                                              const int32_t* __restrict__ block_tables,
                                              uint32_t seq, uint32_t max_blocks_per_seq,
                                              uint32_t qh, uint32_t num_q_heads,
                                              uint32_t num_kv_heads, uint32_t head_dim,
                                              uint32_t block_size, uint64_t v_block_stride_bytes,
                                              uint64_t v_data_section_bytes, bool active) {
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
  c.active = active;
  return c;
}

// This lane's VEC q values of head qh, sequence seq (q_stride may be any value: 2-byte loads).
template <uint32_t VEC>
__device__ __forceinline__ void load_q(const DecodeCtx& c, uint32_t seq, uint32_t qh,
                                       uint32_t q_stride, uint32_t lane, float (&qf)[VEC]) {
  if (!c.active) {
#pragma unroll
    for (uint32_t i = 0; i < VEC; ++i) qf[i] = 0.0f;
    return;
  }
  const uint16_t* qp = c.q + static_cast<uint64_t>(seq) * q_stride +
                       static_cast<uint64_t>(qh) * c.head_dim + lane * VEC;
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i) qf[i] = bf16_bits_to_f32(qp[i]);
}

// Warp 0's output row: bf16(o * inv) with inv the correctly rounded 1/l (0 when l is 0 or NaN).
template <uint32_t VEC, class R>
__device__ __forceinline__ void store_output(__nv_bfloat16* output, uint32_t seq,
                                             uint32_t num_q_heads, uint32_t qh, uint32_t head_dim,
                                             uint32_t lane, float l, const float (&o)[VEC],
                                             const DecodeCtx& c, int64_t L) {
  if (!c.active) return;  // section 5.1: no output dims
  const float inv = l > 0.0f ? R::f32_div(1.0f, l) : 0.0f;
  uint16_t* out = reinterpret_cast<uint16_t*>(output) +
                  (static_cast<uint64_t>(seq) * num_q_heads + qh) * head_dim + lane * VEC;
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i)
    out[i] = R::output_bits(__bfloat16_as_ushort(__float2bfloat16_rn(R::f32_mul(o[i], inv))),
                            c.block_table, L, c.block_size);
}

// Merge (docs/spec.md section 5): every warp publishes (m, l, o) to shared memory; then in each step
// (stride 4, 2, 1) an absorbing warp takes in its partner's state if that state's l > 0.
// Warp 0 ends with the merged state in m, l, o.
template <uint32_t VEC, uint32_t kHdim, class R>
__device__ __forceinline__ void merge_warps(uint32_t warp, uint32_t lane, float* s_m, float* s_l,
                                            float (*s_o)[kHdim], float& m, float& l,
                                            float (&o)[VEC]) {
  if (lane == 0) {
    s_m[warp] = m;
    s_l[warp] = l;
  }
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i) s_o[warp][lane * VEC + i] = o[i];
  __syncthreads();
  for (uint32_t step = 0; step < R::kMergeSteps; ++step) {
    uint32_t other;
    if (R::merge_partner(step, warp, other)) {
      const float lo = s_l[other];
      if (lo > 0.0f) {  // a NaN or empty warp state is not merged
        const float mo = s_m[other];
        const float mn = fmaxf(m, mo);
        const float a = R::expf(R::f32_sub(m, mn));
        const float cf = R::expf(R::f32_sub(mo, mn));
        l = R::f32_add(R::f32_mul(l, a), R::f32_mul(lo, cf));  // --fmad=false: two roundings
        m = mn;
#pragma unroll
        for (uint32_t i = 0; i < VEC; ++i)
          o[i] = R::f32_add(R::f32_mul(o[i], a), R::f32_mul(s_o[other][lane * VEC + i], cf));
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
}

template <Format F, uint32_t kHdim, class R>
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
  if (head_dim == 0 || head_dim > kHdim || head_dim % kGroupSize != 0) {
    // section 5.1: a launch this build cannot compute; every element of the row is NaN
    uint16_t* out = reinterpret_cast<uint16_t*>(output) +
                    (static_cast<uint64_t>(seq) * num_q_heads + qh) * head_dim;
    for (uint32_t d = threadIdx.x; d < head_dim; d += blockDim.x) out[d] = 0x7FFFu;
    return;
  }

  if (threadIdx.x < kLevels)
    s_cb16[threadIdx.x] = R::decoder_codebook(Tables<F>::codebook()[threadIdx.x]);
  __syncthreads();

  const WarpRange r = warp_range<R>(L, sliding_window, warp);
  const int64_t w_begin = r.begin, w_end = r.end;
  const DecodeCtx c = make_ctx(q, k_cache, v_cache, block_tables, seq, max_blocks_per_seq, qh,
                               num_q_heads, num_kv_heads, head_dim, block_size,
                               v_block_stride_bytes, v_data_section_bytes, lane * VEC < head_dim);
  float qf[VEC];
  load_q<VEC>(c, seq, qh, q_stride, lane, qf);

  float m = -1e30f, l = 0.0f, o[VEC];
#pragma unroll
  for (uint32_t i = 0; i < VEC; ++i) o[i] = 0.0f;

  int64_t p = w_begin;
  while (p < w_end) {
    // One cache block: batches of 4 while 4 remain in the block and the range, then singles.
    const int64_t lb = p / block_size;
    const int64_t blk_end = (lb + 1) * block_size < w_end ? (lb + 1) * block_size : w_end;
    const int32_t phys = c.block_table[lb];
    for (; R::kTakesBatches && p + 4 <= blk_end; p += 4) {
      const uint32_t slot0 = static_cast<uint32_t>(p - lb * block_size);
      float kf[4][VEC];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) load_k<VEC, R>(c, phys, slot0 + b, lane, kf[b]);
      float sc[4];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) sc[b] = score<VEC, R>(qf, kf[b], inv_sqrt_d);
      const float mn = fmaxf(fmaxf(fmaxf(fmaxf(m, sc[0]), sc[1]), sc[2]), sc[3]);
      const float eo = R::expf(R::f32_sub(m, mn));
#pragma unroll
      for (uint32_t i = 0; i < VEC; ++i) o[i] = R::f32_mul(o[i], eo);
      l = R::f32_mul(l, eo);
      float ef[4];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) {
        ef[b] = R::expf(R::f32_sub(sc[b], mn));
        l = R::f32_add(l, ef[b]);
      }
      m = mn;
      float v[4][VEC];
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) {
        // ef[b] is warp-uniform, so a skipped position issues no V load at all.
        if (R::uses_v(ef[b])) {
          dequant<F, VEC, R>(c, phys, slot0 + b, lane, s_cb16, v[b]);
        } else {
#pragma unroll
          for (uint32_t i = 0; i < VEC; ++i) v[b][i] = 0.0f;
        }
      }
#pragma unroll
      for (uint32_t b = 0; b < 4; ++b) {
#pragma unroll
        for (uint32_t i = 0; i < VEC; ++i) o[i] = R::batch_accumulate(o[i], ef[b], v[b][i]);
      }
    }
    for (; p < blk_end; ++p) {
      const uint32_t slot = static_cast<uint32_t>(p - lb * block_size);
      float kf[VEC];
      load_k<VEC, R>(c, phys, slot, lane, kf);
      const float sc = score<VEC, R>(qf, kf, inv_sqrt_d);
      const float mn = fmaxf(m, sc);
      const float eo = R::expf(R::f32_sub(m, mn));
      const float en = R::expf(R::f32_sub(sc, mn));
      l = R::f32_add(R::f32_mul(l, eo), en);
      float v[VEC];
      if (R::uses_v(en)) {
        dequant<F, VEC, R>(c, phys, slot, lane, s_cb16, v);
      } else {
#pragma unroll
        for (uint32_t i = 0; i < VEC; ++i) v[i] = 0.0f;
      }
#pragma unroll
      for (uint32_t i = 0; i < VEC; ++i) o[i] = R::single_update(o[i], eo, en, v[i]);
      m = mn;
    }
  }

  merge_warps<VEC, kHdim, R>(warp, lane, s_m, s_l, s_o, m, l, o);
  if (warp != 0) return;
  store_output<VEC, R>(output, seq, num_q_heads, qh, head_dim, lane, l, o, c, L);
}

}  // namespace tqref::gpu

// The decoder entry point NAME for format FMT with rules policy RULES (same name and parameters
// for the reference modules and every decoder mutant).
#define TQREF_DEFINE_DECODER(NAME, FMT, RULES)                                                   \
  extern "C" __global__ void __launch_bounds__(256) NAME(                                        \
      const __nv_bfloat16* q, const __nv_bfloat16* k_cache, const uint8_t* v_cache,              \
      __nv_bfloat16* output, const int32_t* block_tables, const int32_t* seq_lens,               \
      uint32_t max_blocks_per_seq, uint32_t num_q_heads, uint32_t num_kv_heads,                  \
      uint32_t head_dim, uint32_t block_size, float inv_sqrt_d, uint32_t q_stride,               \
      uint64_t v_block_stride_bytes, uint64_t v_data_section_bytes, uint32_t sliding_window) {   \
    tqref::gpu::paged_decode_attn<tqref::Format::FMT, HDIM, RULES>(                              \
        q, k_cache, v_cache, output, block_tables, seq_lens, max_blocks_per_seq, num_q_heads,    \
        num_kv_heads, head_dim, block_size, inv_sqrt_d, q_stride, v_block_stride_bytes,          \
        v_data_section_bytes, sliding_window);                                                   \
  }
