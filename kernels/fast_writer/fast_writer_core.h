// Core of the bandwidth writers reshape_and_cache_flash_bf16k_turbo{2,3,4}v_fast (docs/kernels.md,
// "Fast writer"). Same bytes as the reference-order writer (docs/spec.md section 4) for every
// input; only the launch geometry and the way bytes are fetched differ:
//  - a CTA of 256 threads serves TPC = floor(256 / G) tokens (G = n/16 groups per token), so
//    every thread quantises one group instead of one thread in four (n = 1024: 4 tokens per CTA);
//  - thread u of the CTA owns group u % G of token u / G: it loads that group's 32 bytes of V and
//    the 32 bytes of K with the same element range, all before any store or arithmetic, so that
//    about 64 bytes per thread are in flight at once;
//  - the K bytes are copied with 16-byte accesses (8-byte ones where the key/k_cache alignment
//    does not allow 16), and when a warp's 32 groups lie in one token row, lane l copies the
//    warp's chunks l, l+32, ... instead of its own group's chunks: each store instruction then
//    writes one contiguous 512-byte (or 256-byte) span;
//  - f32(CB[c] * CB[c]) of step 5 is computed once per CTA into a table (the same rounded
//    product for every c), and the index of step 4 is a b-step binary search over the bounds
//    (the count of bounds <= y, as the model's code index), whose first two steps use constants.
// Each group's arithmetic is the spec's steps 1-7 in their order, one rounding per operation
// through the Ops policy (explicit _rn intrinsics and --fmad=false on the GPU).
// The header is plain C++ templated on an Ops policy so that the very same code runs on the GPU
// (reshape_and_cache_fast.cu) and in a host simulation (tests/test_fast_writer_sim.cpp), which
// compares whole pools with the CPU model.
#pragma once
#include <cstdint>

#include "tqref/format.h"

#if defined(__CUDACC__)
#define TQWR_UNROLL _Pragma("unroll")
#else
#define TQWR_UNROLL
#endif

namespace tqref::fast_writer {

// The 13 writer parameters of docs/spec.md section 4 (k_block_stride_bytes is ignored, as there)
// plus num_tokens: the grid is [ceil(num_tokens / TPC)], so the last CTA must know where the
// tokens end.
struct Args {
  const uint16_t* key;           // [num_tokens][key_stride] bf16 bits
  const uint16_t* value;         // [num_tokens][value_stride] bf16 bits
  uint16_t* k_cache;             // [num_blocks, B, H, D] bf16 bits
  uint8_t* v_cache;              // blocks of v_block_stride bytes (docs/spec.md section 3)
  const int64_t* slot_mapping;   // [num_tokens], < 0 = padding
  uint32_t num_kv_heads, head_dim, block_size, key_stride, value_stride;
  uint64_t v_block_stride, v_data_section;
  uint32_t num_tokens;
  float* scale_f32;              // test hook, nullptr on the GPU: s of step 6 after the clamp,
                                 // [num_tokens][n/16] (the model's QuantizedGroup::scale)
};

// Tokens per CTA for G groups per token: as many whole tokens as fit 256 threads (at least one;
// with G > 256 the threads loop over the token's groups).
TQREF_HD uint32_t tokens_per_cta(uint32_t groups_per_token) {
  return groups_per_token >= kThreadsPerBlock ? 1u : kThreadsPerBlock / groups_per_token;
}
TQREF_HD uint32_t grid_x(uint32_t num_tokens, uint32_t num_kv_heads, uint32_t head_dim) {
  const uint32_t tpc = tokens_per_cta(num_kv_heads * head_dim / kGroupSize);
  return (num_tokens + tpc - 1) / tpc;
}

// The bounds that the first two steps of the index search compare with (code_index), as
// compile-time constants: the middle one, and the middle ones of the lower and upper halves.
template <Format F> struct SearchConst {
  static constexpr uint32_t L = FormatConst<F>::levels;
  static constexpr float mid = traits(F).bounds[L / 2 - 1];
  static constexpr float lo = traits(F).bounds[L / 4 - 1];
  static constexpr float hi = traits(F).bounds[L / 2 + L / 4 - 1];
  static_assert(mid == 0.0f, "the middle bound of every Turbo format is 0.0");
};

// Per-CTA tables (shared memory on the GPU).
struct CtaTables {
  float bd[16];  // bounds BD[j] (fp32, docs/spec.md section 2)
  float sq[16];  // f32(CB[c] * CB[c]) with the fp32 codebook: the product step 5 adds
};

// Thread tid's part of filling the tables (every thread calls it; a barrier must follow).
template <class Ops, Format F> TQREF_HD void init_tables(uint32_t tid, CtaTables& tb) {
  constexpr uint32_t L = FormatConst<F>::levels;
  if (tid + 1 < L) tb.bd[tid] = Ops::template bounds<F>(tid);
  if (tid < L) {
    const float cb = Ops::template codebook<F>(tid);
    tb.sq[tid] = Ops::mul(cb, cb);  // --fmad=false: the rounded product of step 5
  }
}

// Index of y (docs/spec.md section 2): the number of bounds BD[j] <= y, as a binary search over
// the ascending bounds: after the step of width w, n counts the bounds <= y among
// BD[0 .. n+w-1]. NaN fails every compare (index 0); -0.0 <= 0.0 holds. The middle bound of every
// format is 0.0 and the second step picks one of two constants, so only steps 3 and 4 read the
// table.
template <Format F> TQREF_HD uint32_t code_index(float y, const float* bd) {
  constexpr uint32_t L = FormatConst<F>::levels;
  using K = SearchConst<F>;
  const bool up = K::mid <= y;
  uint32_t n = up ? L / 2 : 0u;
  n += ((up ? K::hi : K::lo) <= y) ? L / 4 : 0u;
TQWR_UNROLL
  for (uint32_t w = L / 8; w > 0; w /= 2) n += (bd[n + w - 1] <= y) ? w : 0u;
  return n;
}

// docs/spec.md section 4 steps 1-7 for one group given as 8 words (element 2i in the low half of
// word i). Returns the packed codes (code i at bits i*b, section 2's packing) and the scale byte.
// Steps 4 and 5 share one loop: the codes are independent, and rsq still adds them in order.
template <class Ops, Format F>
TQREF_HD void quantize_group(const uint32_t (&w)[8], const CtaTables& tb, uint64_t& packed,
                             float& s, uint8_t& scale_byte) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  constexpr float kMax = FormatConst<F>::max;
  float x[kGroupSize];
TQWR_UNROLL
  for (uint32_t i = 0; i < 8; ++i) {
    x[2 * i] = Ops::bf16(static_cast<uint16_t>(w[i] & 0xFFFFu));
    x[2 * i + 1] = Ops::bf16(static_cast<uint16_t>(w[i] >> 16));
  }
  // 1. squared norm, sequential: a rounded product, then a rounded sum
  float nsq = 0.0f;
TQWR_UNROLL
  for (uint32_t i = 0; i < kGroupSize; ++i) nsq = Ops::add(nsq, Ops::mul(x[i], x[i]));
  // 2. absolute maximum; fmaxf passes over NaN elements
  float amax = 0.0f;
TQWR_UNROLL
  for (uint32_t i = 0; i < kGroupSize; ++i) amax = Ops::fmax(amax, Ops::abs(x[i]));
  // 3. inverse scale (IEEE division)
  const float inv = amax > 1e-12f ? Ops::div(kMax, amax) : 1.0f;
  // 4. codes of the scaled values; 5. rsq over the fp32 codebook squares, in element order
  packed = 0;
  float rsq = 0.0f;
TQWR_UNROLL
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    const uint32_t c = code_index<F>(Ops::mul(x[i], inv), tb.bd);
    packed |= static_cast<uint64_t>(c) << (i * kBits);
    rsq = Ops::add(rsq, tb.sq[c]);
  }
  // 6. matched-norm scale, clamped (a NaN s stays NaN); 7. fp8 byte
  const float rn = Ops::sqrt(rsq);
  s = rn > 1e-10f ? Ops::div(Ops::sqrt(nsq), rn) : Ops::div(amax, kMax);
  if (s > 448.0f) s = 448.0f;
  scale_byte = Ops::fp8(s);
}

// Stores the low N bytes of v (little-endian, the packed stream's byte order) at dst, which may
// have any alignment (padded v_block_stride / v_data_section values make rows odd), each piece
// with the widest access its address allows.
template <class Ops, uint32_t N> TQREF_HD void store_le(uint8_t* dst, uint64_t v) {
  uint32_t k = 0;
TQWR_UNROLL
  for (uint32_t step = 0; step < N; ++step) {  // at most N pieces; stops when k reaches N
    if (k >= N) break;
    const uintptr_t a = reinterpret_cast<uintptr_t>(dst + k);
    const uint64_t part = v >> (8 * k);
    if (N - k >= 8 && (a & 7u) == 0) {
      Ops::store_u64(dst + k, part);
      k += 8;
    } else if (N - k >= 4 && (a & 3u) == 0) {
      Ops::store_u32(dst + k, static_cast<uint32_t>(part));
      k += 4;
    } else if (N - k >= 2 && (a & 1u) == 0) {
      Ops::store_u16(dst + k, static_cast<uint16_t>(part));
      k += 2;
    } else {
      Ops::store_u8(dst + k, static_cast<uint8_t>(part));
      k += 1;
    }
  }
}

// The 32 bytes (16 bf16) of one group of `value`, which has only 2-byte alignment in general
// (value_stride may be odd): one pair of 16-byte loads when the address allows it.
template <class Ops> TQREF_HD void load_group(const uint16_t* src, uint32_t (&w)[8]) {
  if (Ops::aligned16(src)) {
    Ops::template load_chunk<16>(src, w);
    Ops::template load_chunk<16>(src + 8, w + 4);
  } else {
TQWR_UNROLL
    for (uint32_t i = 0; i < 8; ++i)
      w[i] = static_cast<uint32_t>(Ops::load_u16(src + 2 * i)) |
             (static_cast<uint32_t>(Ops::load_u16(src + 2 * i + 1)) << 16);
  }
}

// Where thread `u`'s group lives: token, group, slot; slot < 0 is padding.
struct Item {
  uint32_t t, g, lane;
  int64_t slot;
};

// One thread's work item u (< TPC*G): K bytes [32g, 32g+32) of the token row and V group g.
// C = 16 or 8: the K access width. `coalesced`: the warp's 32 items are groups g0..g0+31 of one
// token (warp-uniform), so lane l copies the warp's C-byte chunks l, l+32, ... of that span.
template <class Ops, Format F, uint32_t C>
TQREF_HD void write_item(const Args& a, const Item& it, bool coalesced, const CtaTables& tb) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  constexpr uint32_t kChunks = 32 / C;  // K chunks per thread
  const uint32_t n = a.num_kv_heads * a.head_dim, G = n / kGroupSize;
  // Loads first: K chunks and the V group, all in flight together with the slot load (they do not
  // depend on the slot; a padding token's input rows exist and are read, never written).
  const uint16_t* ksrc = a.key + static_cast<uint64_t>(it.t) * a.key_stride;
  uint32_t kw[kChunks][C / 4];
  uint32_t koff[kChunks];
TQWR_UNROLL
  for (uint32_t k = 0; k < kChunks; ++k) {
    koff[k] = coalesced ? (it.g - it.lane) * 16 + (it.lane + 32 * k) * (C / 2)
                        : it.g * 16 + k * (C / 2);
    Ops::template load_chunk<C>(ksrc + koff[k], kw[k]);
  }
  uint32_t vw[8];
  load_group<Ops>(a.value + static_cast<uint64_t>(it.t) * a.value_stride + it.g * kGroupSize, vw);
  if (it.slot < 0) return;  // padding token: nothing is written
  // The dense K pool row of slot s is row s ((s/B)*B + s%B).
  const uint64_t s = static_cast<uint64_t>(it.slot);
  uint16_t* kdst = a.k_cache + s * n;
TQWR_UNROLL
  for (uint32_t k = 0; k < kChunks; ++k) Ops::template store_chunk<C>(kdst + koff[k], kw[k]);
  // V: block s/B, row s%B (32-bit division when the slot fits, as it always does in practice).
  const uint64_t B = a.block_size;
  const uint64_t blk = s <= 0xFFFFFFFFull ? static_cast<uint32_t>(s) / a.block_size : s / B;
  const uint64_t in_blk = s - blk * B;
  uint8_t* vblock = a.v_cache + blk * a.v_block_stride;
  uint8_t* code_dst = vblock + in_blk * (static_cast<uint64_t>(G) * 2 * kBits) + it.g * (2 * kBits);
  uint8_t* scale_dst = vblock + a.v_data_section + in_blk * G + it.g;
  uint64_t packed;
  float scale;
  uint8_t sb;
  quantize_group<Ops, F>(vw, tb, packed, scale, sb);
  store_le<Ops, 2 * kBits>(code_dst, packed);
  Ops::store_u8(scale_dst, sb);
  if (a.scale_f32 != nullptr) a.scale_f32[static_cast<uint64_t>(it.t) * G + it.g] = scale;
}

// Thread tid of CTA cta (every thread of the CTA calls this after init_tables and a barrier).
template <class Ops, Format F>
TQREF_HD void write_cta(const Args& a, uint32_t cta, uint32_t tid, const CtaTables& tb) {
  const uint32_t n = a.num_kv_heads * a.head_dim, G = n / kGroupSize;
  const uint32_t tpc = tokens_per_cta(G);
  const uint32_t t0 = cta * tpc;
  if (t0 >= a.num_tokens) return;
  const uint32_t ntok = a.num_tokens - t0 < tpc ? a.num_tokens - t0 : tpc;
  const uint32_t items = ntok * G;
  // 16-byte K accesses need 16-byte rows on both sides: key, key_stride (elements) and k_cache
  // (rows are n*2 bytes, a multiple of 32). Otherwise the contract's 8-byte accesses.
  const bool k16 = Ops::aligned16(a.key) && a.key_stride % 8 == 0 && Ops::aligned16(a.k_cache);
  for (uint32_t u = tid; u < items; u += kThreadsPerBlock) {
    Item it;
    it.t = t0 + u / G;
    it.g = u % G;
    it.lane = tid % kWarpSize;
    it.slot = Ops::load_i64(a.slot_mapping + it.t);
    // The warp's items u - lane .. u - lane + 31 are groups g - lane .. g - lane + 31 of this
    // token iff this holds, and it evaluates equally in every lane of the warp: in a warp that
    // spans two tokens the first token's lanes see g - lane + 32 > G and the others g < lane;
    // a warp that runs past the last item (which ends a token) spans past that token's end.
    // A padding token's lanes all return after their loads (write_item).
    const bool coalesced = it.g >= it.lane && it.g - it.lane + kWarpSize <= G;
    if (k16) write_item<Ops, F, 16>(a, it, coalesced, tb);
    else write_item<Ops, F, 8>(a, it, coalesced, tb);
  }
}

}  // namespace tqref::fast_writer
