// Core of the GQA decode kernels paged_decode_attn_bf16k_turbo{2,3,4}v_gqa (docs/gqa-decoders.md,
// "GQA decoders"): one CTA serves HT q heads of one kv head (HT in 1..8, HT divides the
// GQA ratio), so every K row and V row is read once for the HT heads. Each q head keeps
// exactly the reference-order kernel's arithmetic (docs/spec.md section 5): its 8-warp partition,
// batches of 4 within a cache block then singles, the per-lane pairwise score and the
// 16,8,4,2,1 butterfly, the per-head skip decision, the stride-4/2/1 merge. Only the order in
// which independent values are computed and the way bytes are fetched differ:
//  - warp w walks its range segment by segment (the part of one cache block in its range), in
//    tiles of up to kTile positions of one segment made of whole steps (a step = one batch of
//    4 or one single), loading the tile's K rows once for all HT heads and prefetching the next
//    tile's into L2;
//  - the HT x kTile butterflies of a tile run as "transposed" reductions, one per head group
//    (HT split into groups of 4, 2 and 1 heads, so that each group's combination count is a
//    power of two of at most 32): at every xor step a lane keeps half of its values and swaps
//    the other half with its partner, so each add is the butterfly's own
//    `part(l) + part(l xor off)` on the same two values, with about 1 shuffle per
//    (head, position) instead of 5;
//  - the scalar softmax chain (m, l, eo, ef) of head h runs in lanes with lane % HT == h and
//    goes to shared memory; then every lane updates its o for all heads in step order;
//  - a position's V bytes are read once if any of the HT heads uses it (ef > THRESH);
//  - two-phase pipeline: phase A of tile i+1 (scores, softmax chain, V loads) runs before
//    phase B of tile i (o updates), so V loads are in flight during the next tile's scores.
// This header is plain C++ templated on an Ops policy so that the very same code runs on the
// GPU (gqa_ops_cuda.cuh) and in a host simulation of one CTA with 256 threads
// (tests/test_gqa_decode_sim.cpp), which checks it against the CPU model.
#pragma once
#include <cstdint>
#include <type_traits>

#include "tqref/format.h"

#if defined(__CUDACC__)
#define TQF_HD __host__ __device__ __forceinline__
#define TQF_UNROLL _Pragma("unroll")
#else
#define TQF_HD inline
#define TQF_UNROLL
#endif

namespace tqref::gqa {

inline constexpr uint32_t kTile = 8;    // positions per tile (whole steps only)
inline constexpr uint32_t kMaxHT = 8;   // q heads per CTA at most (larger groups: several CTAs)

// The 16 decoder parameters of docs/spec.md section 5 (same names and meaning) plus an optional
// statistics buffer (the _stats entry points): counters[0] += (head, position) pairs,
// counters[1] += skipped pairs, counters[2] += V rows read (positions used by any head).
struct Args {
  const uint16_t* q;             // [num_seqs][q_stride] bf16 bits
  const uint16_t* k_cache;       // [num_blocks, B, H, D] bf16 bits
  const uint8_t* v_cache;
  uint16_t* output;              // [num_seqs, num_q_heads, D] bf16 bits
  const int32_t* block_tables;   // [num_seqs][max_blocks_per_seq]
  const int32_t* seq_lens;       // [num_seqs]
  uint32_t max_blocks_per_seq, num_q_heads, num_kv_heads, head_dim, block_size;
  float inv_sqrt_d;
  uint32_t q_stride;
  uint64_t v_block_stride, v_data_section;
  uint32_t sliding_window;
  unsigned long long* stats;     // nullptr: no statistics
  float* out_f32;                // test hook, nullptr on the GPU: o*inv before the bf16 rounding,
                                 // [num_seqs, num_q_heads, D] (the model's out_f32 diagnostic)
};

// Shared memory of one CTA (one instance serves every HT; indices j*HT + h).
template <uint32_t kHdim> struct Shared {
  float cb16[16];                              // fp16(CB) as f32
  float fp8[256];                              // fp8 E4M3 byte -> f32 (exact)
  float sc[kDecodeWarps][kTile * kMaxHT];      // scores of the current tile
  float ef[2][kDecodeWarps][kTile * kMaxHT];   // softmax factors of a tile (two tiles in flight)
  float eo[2][kDecodeWarps][kTile * kMaxHT];   // rescale factor of the step starting at j
  float m[kDecodeWarps], l[kDecodeWarps];      // merge: warp states of one head
  float o[kDecodeWarps][kHdim];
  alignas(16) float q[kMaxHT][kHdim];          // q of the CTA's heads as f32 (exact), [h][d]
};

// Heads per CTA for a launch with grid.x CTAs per sequence: num_q_heads / grid_x when that is
// 1 .. kMaxHT and divides the GQA ratio (so a CTA never straddles two kv heads), else 0 (invalid
// launch). A group larger than kMaxHT (MQA, GQA 16) is split over G / HT CTAs.
TQF_HD uint32_t heads_per_cta(uint32_t num_q_heads, uint32_t num_kv_heads, uint32_t grid_x) {
  if (num_kv_heads == 0 || grid_x == 0 || num_q_heads % num_kv_heads != 0) return 0;
  if (num_q_heads % grid_x != 0) return 0;
  const uint32_t ht = num_q_heads / grid_x, g = num_q_heads / num_kv_heads;
  if (ht == 0 || ht > kMaxHT || g % ht != 0) return 0;
  return ht;
}

// The launcher's choice for a geometry: the largest HT the kernel accepts (the least K and V
// traffic per q head; a smaller one only pays when it fills idle SMs, which tqref bench measures).
// 0 only for a geometry no grid can serve (num_q_heads not a multiple of num_kv_heads). HT 1 is
// always valid otherwise, so every geometry with whole GQA groups gets a launch.
TQF_HD uint32_t widest_heads_per_cta(uint32_t num_q_heads, uint32_t num_kv_heads) {
  for (uint32_t ht = kMaxHT; ht >= 1; --ht)
    if (num_q_heads % ht == 0 && heads_per_cta(num_q_heads, num_kv_heads, num_q_heads / ht) == ht)
      return ht;
  return 0;
}

// Warp (chunk) w's range [begin, end) in the reference order's partition of the sequence of
// length L (docs/spec.md section 5). Non-empty ranges lie in [0, L) with L an int32; an empty one
// becomes [0, 0).
TQF_HD void chunk_range(const Args& a, int32_t L, uint32_t w, uint32_t& begin, uint32_t& end) {
  const int64_t Ll = L;
  const int64_t start =
      (a.sliding_window > 0u && Ll > a.sliding_window) ? Ll - a.sliding_window : 0;
  const int64_t A = Ll - start;
  const int64_t chunk = (A + kDecodeWarps - 1) / kDecodeWarps;
  const int64_t wb = start + w * chunk;
  const int64_t we = wb + chunk < Ll ? wb + chunk : Ll;
  begin = wb < we ? static_cast<uint32_t>(wb) : 0u;
  end = wb < we ? static_cast<uint32_t>(we) : 0u;
}

// The warp's walk over its range, one segment at a time: a segment is the part of one cache
// block inside the range (the reference-order kernel's block-by-block loop). Positions fit in
// uint32_t (seq_lens are int32). Only table entries of blocks holding positions of the range
// are read.
struct Walker {
  uint32_t p, w_end, seg_end, lb;  // next position, range end, end of p's segment, p's block
  int32_t phys;                    // physical block of p
};

template <class Ops>
TQF_HD void walker_init(Walker& w, uint32_t begin, uint32_t end, const int32_t* table, uint32_t B) {
  w.p = begin;
  w.w_end = end;
  w.lb = 0;
  w.seg_end = 0;
  w.phys = 0;
  if (begin < end) {
    w.lb = begin / B;
    const uint32_t blk_end = (w.lb + 1) * B;
    w.seg_end = blk_end < end ? blk_end : end;
    w.phys = Ops::load_i32(table + w.lb);
  }
}

// One tile: n <= kTile consecutive positions of one segment forming whole steps, slots
// slot0 .. slot0+n-1 of block `phys`. Bit j of start_mask: a step starts at position j; of
// batch_mask: that step is a batch of 4 (j+3 < n then).
struct Tile {
  uint32_t n, start_mask, batch_mask, slot0;
  int32_t phys;
};

// Bit j*HT + h of a use mask: head h uses position j. 32 bits up to HT 4 (the code HT 1, 2, 4
// always had), 64 above.
template <uint32_t HT>
using UseMask = std::conditional_t<(HT * kTile > 32), uint64_t, uint32_t>;

// A tile between its two phases: scores, factors and V loads done (factors in shared buffer
// `buf`), o updates pending. The V loads of one tile are in flight while the next tile's
// scores are computed.
template <uint32_t HT> struct Pending {
  Tile t;
  uint32_t buf;
  UseMask<HT> use_mask;  // bit j*HT + h: head h uses position j (ef > THRESH)
  uint32_t vlo[kTile], vhi[kTile], vscale[kTile];  // load_v_raw() results, decoded in phase B
};

// The reference-order kernel takes a batch at p iff 4 positions remain in the block and in the
// range (`p + 4 <= blk_end`), else a single. With r positions left in the segment: r >= 8 gives two
// batches; 4 <= r < 8 a batch and r-4 singles; r < 4 r singles. Then moves past the tile,
// entering the next segment when this one is done.
template <class Ops> TQF_HD void next_tile(Walker& w, Tile& t, const int32_t* table, uint32_t B) {
  const uint32_t r = w.seg_end - w.p;
  t.phys = w.phys;
  t.slot0 = w.p - w.lb * B;
  if (r >= kTile) {
    static_assert(kTile == 8, "next_tile assumes tiles of two batches");
    t.n = kTile;
    t.start_mask = 0x11u;
    t.batch_mask = 0x11u;
  } else {
    const uint32_t all = (1u << r) - 1u;
    t.n = r;
    t.batch_mask = r >= 4 ? 1u : 0u;
    t.start_mask = r >= 4 ? (1u | (all & ~0xFu)) : all;
  }
  w.p += t.n;
  if (w.p == w.seg_end && w.p < w.w_end) {
    ++w.lb;
    const uint32_t blk_end = (w.lb + 1) * B;
    w.seg_end = blk_end < w.w_end ? blk_end : w.w_end;
    w.phys = Ops::load_i32(table + w.lb);
  }
}

// Transposed butterfly over N = 2^K values per lane (value c of every lane is the lane's
// partial of combination c). Step s (off = 16 >> s, s < K): lanes with bit `off` clear keep
// the lower half, the others the upper half; each lane sends the half it drops and adds what
// its partner sends for the half it keeps: keep + partner's value of the same combination,
// which is the butterfly's `part + part_of_lane(l xor off)`. After K steps one value is left
// (combination lane >> (5 - K)); the remaining offsets are the plain butterfly. The result
// equals the reference-order butterfly's value for that combination bit for bit.
template <class Ops, uint32_t N, uint32_t kOff>
TQF_HD void transposed_steps(float* v, uint32_t lane) {
  if constexpr (N > 1) {
    constexpr uint32_t half = N / 2;
    const bool upper = (lane & kOff) != 0;
TQF_UNROLL
    for (uint32_t i = 0; i < half; ++i) {
      const float send = upper ? v[i] : v[half + i];
      const float keep = upper ? v[half + i] : v[i];
      v[i] = Ops::add(keep, Ops::shfl_xor(send, kOff));
    }
    transposed_steps<Ops, half, kOff / 2>(v, lane);
  } else if constexpr (kOff >= 1) {
    v[0] = Ops::add(v[0], Ops::shfl_xor(v[0], kOff));
    transposed_steps<Ops, 1, kOff / 2>(v, lane);
  }
}

// log2 of a head group's combination count (8, 16 or 32 for groups of 1, 2, 4 heads).
template <uint32_t N>
inline constexpr uint32_t kLog2 = N == 8 ? 3u : N == 16 ? 4u : N == 32 ? 5u : 99u;

// Heads of the score group that starts at head h0 of HT: the binary decomposition of HT into
// groups of 4, 2 and 1 (8 = 4+4, 7 = 4+2+1, 6 = 4+2, 5 = 4+1, 3 = 2+1; 1, 2 and 4 are one group,
// the reduction they always had). A group of G heads has G * kTile = 8, 16 or 32 combinations:
// a power of two that fits the warp, the transposed butterfly's one requirement.
template <uint32_t HT, uint32_t h0>
inline constexpr uint32_t kGroupHeads = HT - h0 >= 4 ? 4u : HT - h0 >= 2 ? 2u : 1u;

// Where this lane's V bytes lie for the positions of one tile (the reference-order kernel's
// dequant addressing): the tile's block, the lane's byte offset and bit shift inside a code row,
// its scale byte inside a scale row. When the pool, the block stride and the row length are all
// multiples of 4 bytes, the codes come from one or two aligned 32-bit words of the row (a word
// never leaves the row, whose length is a multiple of 4); otherwise byte by byte.
template <Format F, uint32_t VEC> struct VPlace {
  static constexpr uint32_t kBits = FormatConst<F>::bits;
  // A lane's VEC*b code bits never straddle a 32-bit word when VEC*b divides 32 (turbo2v,
  // turbo4v; head_dim a multiple of 16, else the byte path): then no second word is loaded.
  static constexpr bool kMayStraddle = 32 % (VEC * kBits) != 0;
  uint32_t row_bytes, scale_row_bytes;  // n*b/8 and n/16
  uint32_t byte0, shift;                // lane's first code byte in a row, bit shift inside it
  uint32_t word0, wshift;               // aligned path: lane's first 32-bit word, bit shift
  uint32_t scale_off;                   // lane's scale byte inside a scale row
  bool aligned, two_words;
};

template <class Ops, Format F, uint32_t VEC>
TQF_HD VPlace<F, VEC> v_place(const Args& a, uint32_t kvh, uint32_t lane) {
  VPlace<F, VEC> v;
  constexpr uint32_t kBits = FormatConst<F>::bits;
  const uint32_t n = a.num_kv_heads * a.head_dim;
  const uint32_t e0 = kvh * a.head_dim + lane * VEC;
  const uint32_t bit0 = e0 * kBits;
  v.row_bytes = n * kBits / 8;
  v.scale_row_bytes = n / kGroupSize;
  v.byte0 = bit0 / 8;
  v.shift = bit0 % 8;
  v.word0 = bit0 / 32;
  v.wshift = bit0 % 32;
  v.two_words = VPlace<F, VEC>::kMayStraddle && v.wshift + VEC * kBits > 32;
  v.scale_off = e0 / kGroupSize;
  v.aligned = Ops::aligned4(a.v_cache) && a.v_block_stride % 4 == 0 && v.row_bytes % 4 == 0 &&
              a.head_dim % kGroupSize == 0;
  return v;
}

// The raw bytes holding this lane's codes and its scale byte for slot `slot` of V block `vblk`.
// Aligned path: the one or two 32-bit words as loaded (lo, hi); the shift waits for v_codes(),
// so that nothing consumes the loads before phase B (a consumer right after the load would
// stall the warp for the whole memory latency). Byte path: the codes already shifted, in lo.
// load_v_rows() takes the slot's code row and scale row directly.
template <class Ops, Format F, uint32_t VEC>
TQF_HD void load_v_rows(const VPlace<F, VEC>& vp, const uint8_t* row, const uint8_t* scale_row,
                        uint32_t& lo, uint32_t& hi, uint32_t& scale_byte) {
  constexpr uint32_t kBits = FormatConst<F>::bits;
  if (vp.aligned) {
    lo = Ops::load_u32(row + 4 * vp.word0);
    hi = vp.two_words ? Ops::load_u32(row + 4 * vp.word0 + 4) : 0u;
  } else {
    const uint32_t nbytes = (vp.shift + VEC * kBits + 7) / 8;
    const uint8_t* cp = row + vp.byte0;
    uint32_t w = 0;
TQF_UNROLL
    for (uint32_t k = 0; k < 4; ++k)
      if (k < nbytes) w |= static_cast<uint32_t>(Ops::load_u8(cp + k)) << (8 * k);
    lo = w >> vp.shift;
    hi = 0;
  }
  scale_byte = Ops::load_u8(scale_row + vp.scale_off);
}

template <class Ops, Format F, uint32_t VEC>
TQF_HD void load_v_raw(const Args& a, const VPlace<F, VEC>& vp, const uint8_t* vblk, uint32_t slot,
                       uint32_t& lo, uint32_t& hi, uint32_t& scale_byte) {
  load_v_rows<Ops, F, VEC>(vp, vblk + slot * vp.row_bytes,
                           vblk + a.v_data_section + slot * vp.scale_row_bytes, lo, hi, scale_byte);
}

// The lane's VEC codes from bit 0, from what load_v_raw() loaded.
template <Format F, uint32_t VEC>
TQF_HD uint32_t v_codes(const VPlace<F, VEC>& vp, uint32_t lo, uint32_t hi) {
  if (!vp.aligned) return lo;
  if constexpr (!VPlace<F, VEC>::kMayStraddle) return lo >> vp.wshift;
  return static_cast<uint32_t>(((static_cast<uint64_t>(hi) << 32) | lo) >> vp.wshift);
}

// What one thread of a CTA knows for its whole run: the launch, its warp and lane, the kv head
// and the HT q heads it serves, where its K and V bytes lie (q is in shared memory).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT> struct CtaCtx {
  static constexpr uint32_t VEC = kHdim / kWarpSize;
  const Args& a;
  Shared<kHdim>& sm;
  Ops& ops;
  uint32_t warp, lane, seq, qh0, kvh;
  uint32_t my_h;                 // the head whose softmax chain this lane runs (lane % HT)
  const int32_t* table;          // this sequence's block-table row
  bool k_aligned;                // k_cache 16-byte aligned: vector K loads
  uint32_t B, k_row_stride;      // block_size; elements between slots of the K pool
  VPlace<F, VEC> vp;
};

// A lane's running state: o for every head; m and l of head my_h (the chain lanes); the
// statistics counters of the _stats entry points.
template <uint32_t HT, uint32_t VEC> struct LaneState {
  float o[HT][VEC];
  float m, l;
  unsigned long long n_pairs, n_skipped, n_vrows;
};

// This lane's first K element of slot `slot` of physical block `phys` (head kvh).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD const uint16_t* k_lane(const CtaCtx<Ops, F, kHdim, HT>& c, int32_t phys, uint32_t slot) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  return c.a.k_cache +
         ((static_cast<uint64_t>(static_cast<int64_t>(phys)) * c.B + slot) * c.a.num_kv_heads +
          c.kvh) * c.a.head_dim +
         c.lane * VEC;
}

// Phase A, part 1: the tile's K rows, one vector load per lane and position, all issued before
// use; then the next tile's K rows into L2 while this tile computes (the walker is already past
// this tile: wk.p is the next tile's first position, in block wk.phys).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void load_tile_k(const CtaCtx<Ops, F, kHdim, HT>& c, const Walker& wk, const Tile& t,
                        uint32_t tn, uint32_t (&kraw)[kTile][kHdim / kWarpSize / 2]) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  const uint16_t* kp = k_lane(c, t.phys, t.slot0);
TQF_UNROLL
  for (uint32_t j = 0; j < kTile; ++j) {
    if (j < tn) {
      Ops::template load_k_raw<VEC>(kp + j * c.k_row_stride, c.k_aligned, kraw[j]);
    } else {
TQF_UNROLL
      for (uint32_t i = 0; i < VEC / 2; ++i) kraw[j][i] = 0;
    }
  }
  if (wk.p < wk.w_end) {
    const uint32_t next_n = wk.seg_end - wk.p < kTile ? wk.seg_end - wk.p : kTile;
    const uint16_t* np = k_lane(c, wk.phys, wk.p - wk.lb * c.B);
TQF_UNROLL
    for (uint32_t j = 0; j < kTile; ++j)
      if (j < next_n) Ops::prefetch_l2(np + j * c.k_row_stride);
  }
}

// Phase A, part 2, one head group: the scores of heads h0 .. h0+GH-1 at every position of the
// tile into sm.sc (index j*HT + h): the per-lane pairwise partials in the reference order,
// reduced by the transposed butterfly of the group's GH*kTile combinations (combination j*GH + g
// is head h0+g at position j), times inv_sqrt_d; then the next group. The groups are
// independent reductions of disjoint combinations, each on exactly the values the reference
// butterfly adds, so splitting HT cannot change a bit (docs/kernels.md, "Head groups").
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, uint32_t h0>
TQF_HD void score_group(const CtaCtx<Ops, F, kHdim, HT>& c,
                        const uint32_t (&kraw)[kTile][kHdim / kWarpSize / 2]) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  constexpr uint32_t GH = kGroupHeads<HT, h0>;
  constexpr uint32_t N = GH * kTile;  // combinations (head, position) of the group
  constexpr uint32_t K = kLog2<N>;
  static_assert(K <= 5, "a head group must have 8, 16 or 32 combinations");
  // q of the group's heads, this lane's dims: from shared memory for this group only, so that
  // no HT x VEC q registers stay live through the tile (HT 8 would spill them)
  float qf[GH][VEC];
TQF_UNROLL
  for (uint32_t g = 0; g < GH; ++g)
TQF_UNROLL
    for (uint32_t i = 0; i < VEC; i += 4) Ops::lds4(&c.sm.q[h0 + g][c.lane * VEC + i], &qf[g][i]);
  float val[N];
TQF_UNROLL
  for (uint32_t j = 0; j < kTile; ++j) {
    float kf[VEC];  // exact bf16 -> f32, converted again per group (registers over a few ALU ops)
TQF_UNROLL
    for (uint32_t i = 0; i < VEC / 2; ++i) {
      kf[2 * i] = Ops::bf16(static_cast<uint16_t>(kraw[j][i] & 0xFFFFu));
      kf[2 * i + 1] = Ops::bf16(static_cast<uint16_t>(kraw[j][i] >> 16));
    }
TQF_UNROLL
    for (uint32_t g = 0; g < GH; ++g) {
      float part = 0.0f;
TQF_UNROLL
      for (uint32_t i = 0; i < VEC / 2; ++i)
        // --fmad=false: two products, their sum, the running sum, each rounded
        part = Ops::add(part, Ops::add(Ops::mul(qf[g][2 * i], kf[2 * i]),
                                       Ops::mul(qf[g][2 * i + 1], kf[2 * i + 1])));
      val[j * GH + g] = part;
    }
  }
  transposed_steps<Ops, N, 16>(val, c.lane);
  const uint32_t combo = c.lane >> (5 - K);
  if ((c.lane & ((1u << (5 - K)) - 1u)) == 0)
    c.sm.sc[c.warp][(combo / GH) * HT + h0 + combo % GH] = Ops::mul(val[0], c.a.inv_sqrt_d);
  if constexpr (h0 + GH < HT) score_group<Ops, F, kHdim, HT, h0 + GH>(c, kraw);
}

// Phase A, part 2: the scores of every (head, position) of the tile, group by group.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void tile_scores(const CtaCtx<Ops, F, kHdim, HT>& c,
                        const uint32_t (&kraw)[kTile][kHdim / kWarpSize / 2]) {
  score_group<Ops, F, kHdim, HT, 0>(c, kraw);
}

// Phase A, part 3: the softmax chain of head my_h over the tile's steps, exactly as the
// reference-order batch/single updates; the factors go to buffer `buf` (eo at a step's first
// position, ef at every position).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, uint32_t VEC>
TQF_HD void softmax_chain(const CtaCtx<Ops, F, kHdim, HT>& c, LaneState<HT, VEC>& st,
                          uint32_t buf, uint32_t tn, uint32_t start_mask, uint32_t batch_mask) {
  const float(&sc)[kTile * kMaxHT] = c.sm.sc[c.warp];
  const uint32_t h = c.my_h;
  float mn = st.m;
TQF_UNROLL
  for (uint32_t j = 0; j < kTile; ++j) {
    if (j < tn) {
      const float s = sc[j * HT + h];
      if ((start_mask >> j) & 1u) {
        mn = Ops::fmax(st.m, s);
        if ((batch_mask >> j) & 1u) {
          if (j + 3 < kTile) {
            mn = Ops::fmax(mn, sc[(j + 1) * HT + h]);
            mn = Ops::fmax(mn, sc[(j + 2) * HT + h]);
            mn = Ops::fmax(mn, sc[(j + 3) * HT + h]);
          }
        }
        const float eo = c.ops.expf(Ops::sub(st.m, mn));
        st.l = Ops::mul(st.l, eo);
        if (c.lane < HT) c.sm.eo[buf][c.warp][j * HT + h] = eo;
        st.m = mn;
      }
      const float ef = c.ops.expf(Ops::sub(s, mn));
      st.l = Ops::add(st.l, ef);  // batch: l*eo then + ef[b] in order; single: f32(l*eo) + en
      if (c.lane < HT) c.sm.ef[buf][c.warp][j * HT + h] = ef;
    }
  }
}

// Phase A, part 4: the skip decisions of every (head, position) and the V bytes of the
// positions used by any head, all loads issued before use (decoded in phase B).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStats, uint32_t VEC>
TQF_HD void load_tile_v(const CtaCtx<Ops, F, kHdim, HT>& c, LaneState<HT, VEC>& st,
                        Pending<HT>& pd, uint32_t tn) {
  const int64_t phys = static_cast<int64_t>(pd.t.phys);
  const uint8_t* vblk = c.a.v_cache + static_cast<uint64_t>(phys) * c.a.v_block_stride;
  UseMask<HT> use_mask = 0;
TQF_UNROLL
  for (uint32_t j = 0; j < kTile; ++j) {
    pd.vlo[j] = 0;
    pd.vhi[j] = 0;
    pd.vscale[j] = 0;
    if (j < tn) {
      uint32_t any = 0;
TQF_UNROLL
      for (uint32_t h = 0; h < HT; ++h) {
        const uint32_t use = c.sm.ef[pd.buf][c.warp][j * HT + h] > Ops::thresh() ? 1u : 0u;
        use_mask |= static_cast<UseMask<HT>>(use) << (j * HT + h);
        any |= use;
      }
      if (any)
        load_v_raw<Ops, F, VEC>(c.a, c.vp, vblk, pd.t.slot0 + j, pd.vlo[j], pd.vhi[j],
                                pd.vscale[j]);
      if constexpr (kStats) st.n_vrows += any;
    }
  }
  pd.use_mask = use_mask;
}

// Phase A of a tile: K loads, scores, the softmax chain, skip decisions and V loads. kFull: a
// tile of kTile positions made of two batches (the common case inside a cache block), with
// every mask a constant; otherwise the masks of pd.t.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStats, bool kFull>
TQF_HD void phase_a(const CtaCtx<Ops, F, kHdim, HT>& c, const Walker& wk,
                    LaneState<HT, kHdim / kWarpSize>& st, Pending<HT>& pd) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  const uint32_t tn = kFull ? kTile : pd.t.n;
  const uint32_t start_mask = kFull ? 0x11u : pd.t.start_mask;
  const uint32_t batch_mask = kFull ? 0x11u : pd.t.batch_mask;
  uint32_t kraw[kTile][VEC / 2];
  load_tile_k(c, wk, pd.t, tn, kraw);
  tile_scores(c, kraw);
  c.ops.sync_warp();
  softmax_chain(c, st, pd.buf, tn, start_mask, batch_mask);
  c.ops.sync_warp();
  load_tile_v<Ops, F, kHdim, HT, kStats>(c, st, pd, tn);
}

// Phase B: o updates in step order, rescale at each step start, then o + ef*v per position.
// kAll: every head uses every position of the tile (the common case; no per-head tests).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStats, bool kFull, bool kAll>
TQF_HD void phase_b(const CtaCtx<Ops, F, kHdim, HT>& c, LaneState<HT, kHdim / kWarpSize>& st,
                    const Pending<HT>& pd) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  constexpr uint32_t kBits = FormatConst<F>::bits;
  const uint32_t tn = kFull ? kTile : pd.t.n;
  const uint32_t start_mask = kFull ? 0x11u : pd.t.start_mask;
  const UseMask<HT> use_mask = pd.use_mask;
  constexpr UseMask<HT> kHeads = (UseMask<HT>(1) << HT) - 1u;  // one position's HT bits
  const float(&ef_buf)[kTile * kMaxHT] = c.sm.ef[pd.buf][c.warp];
  const float(&eo_buf)[kTile * kMaxHT] = c.sm.eo[pd.buf][c.warp];
TQF_UNROLL
  for (uint32_t j = 0; j < kTile; ++j) {
    if (j < tn) {
      if ((start_mask >> j) & 1u) {
TQF_UNROLL
        for (uint32_t h = 0; h < HT; ++h) {
          const float eo = eo_buf[j * HT + h];
TQF_UNROLL
          for (uint32_t i = 0; i < VEC; ++i) st.o[h][i] = Ops::mul(st.o[h][i], eo);
        }
      }
      float v[VEC];
      if (kAll || ((use_mask >> (j * HT)) & kHeads)) {
        const float gs = c.sm.fp8[pd.vscale[j]];
        const uint32_t codes = v_codes<F, VEC>(c.vp, pd.vlo[j], pd.vhi[j]);
TQF_UNROLL
        for (uint32_t i = 0; i < VEC; ++i)
          v[i] = Ops::mul(c.sm.cb16[(codes >> (i * kBits)) & ((1u << kBits) - 1u)], gs);
      } else {
TQF_UNROLL
        for (uint32_t i = 0; i < VEC; ++i) v[i] = 0.0f;
      }
TQF_UNROLL
      for (uint32_t h = 0; h < HT; ++h) {
        const float ef = ef_buf[j * HT + h];
        if (kAll || ((use_mask >> (j * HT + h)) & 1u)) {
TQF_UNROLL
          for (uint32_t i = 0; i < VEC; ++i)
            st.o[h][i] = Ops::add(st.o[h][i], Ops::mul(ef, v[i]));
        } else {
          const float z = Ops::mul(ef, 0.0f);  // the reference-order ef * v with v = 0
TQF_UNROLL
          for (uint32_t i = 0; i < VEC; ++i) st.o[h][i] = Ops::add(st.o[h][i], z);
          if constexpr (kStats) ++st.n_skipped;
        }
      }
      if constexpr (kStats) st.n_pairs += HT;
    }
  }
}

// Phase A with the variant the tile needs (all masks constant for a full tile).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStats>
TQF_HD void run_a(const CtaCtx<Ops, F, kHdim, HT>& c, const Walker& wk,
                  LaneState<HT, kHdim / kWarpSize>& st, Pending<HT>& pd) {
  if (pd.t.n == kTile) {
    phase_a<Ops, F, kHdim, HT, kStats, true>(c, wk, st, pd);
  } else {
    phase_a<Ops, F, kHdim, HT, kStats, false>(c, wk, st, pd);
  }
}

// Phase B with the variant the tile needs (no per-head tests when every head uses every
// position of a full tile).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStats>
TQF_HD void run_b(const CtaCtx<Ops, F, kHdim, HT>& c, LaneState<HT, kHdim / kWarpSize>& st,
                  const Pending<HT>& pd) {
  constexpr uint32_t kBitsInMask = 8 * sizeof(UseMask<HT>);
  const uint32_t used_bits = pd.t.n * HT;  // <= kBitsInMask
  const UseMask<HT> all_mask =
      used_bits >= kBitsInMask ? ~UseMask<HT>(0) : (UseMask<HT>(1) << used_bits) - 1u;
  if (pd.t.n == kTile && pd.use_mask == all_mask) {
    phase_b<Ops, F, kHdim, HT, kStats, true, true>(c, st, pd);
  } else if (pd.t.n == kTile) {
    phase_b<Ops, F, kHdim, HT, kStats, true, false>(c, st, pd);
  } else {
    phase_b<Ops, F, kHdim, HT, kStats, false, false>(c, st, pd);
  }
}

// Software pipeline over the warp's tiles of [w_begin, w_end): phase A of tile i+1 runs before
// phase B of tile i. The m/l chain (phase A) and the o updates (phase B) each stay in tile
// order.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStats>
TQF_HD void walk_tiles(const CtaCtx<Ops, F, kHdim, HT>& c, uint32_t w_begin, uint32_t w_end,
                       LaneState<HT, kHdim / kWarpSize>& st) {
  Walker wk{};
  walker_init<Ops>(wk, w_begin, w_end, c.table, c.B);
  if (wk.p >= wk.w_end) return;
  Pending<HT> cur;
  cur.buf = 0;
  next_tile<Ops>(wk, cur.t, c.table, c.B);
  run_a<Ops, F, kHdim, HT, kStats>(c, wk, st, cur);
  for (;;) {
    const bool more = wk.p < wk.w_end;
    Pending<HT> nxt;
    if (more) {
      nxt.buf = cur.buf ^ 1u;
      next_tile<Ops>(wk, nxt.t, c.table, c.B);
      run_a<Ops, F, kHdim, HT, kStats>(c, wk, st, nxt);
    }
    run_b<Ops, F, kHdim, HT, kStats>(c, st, cur);
    c.ops.sync_warp();  // buffer cur.buf is rewritten by the tile after next
    if (!more) break;
    cur = nxt;
  }
}

// Merge and output of head qh0 + h: the reference-order merge (stride 4, 2, 1, l > 0 test)
// with this head's warp states, then warp 0 stores bf16(o * 1/l).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void merge_head(const CtaCtx<Ops, F, kHdim, HT>& c,
                       const LaneState<HT, kHdim / kWarpSize>& st, uint32_t h) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  const Args& a = c.a;
  Shared<kHdim>& sm = c.sm;
  const uint32_t warp = c.warp, lane = c.lane;
  float mh = Ops::shfl_idx(st.m, h), lh = Ops::shfl_idx(st.l, h);
  float oh[VEC];
TQF_UNROLL
  for (uint32_t i = 0; i < VEC; ++i) oh[i] = st.o[h][i];
  if (lane == 0) {
    sm.m[warp] = mh;
    sm.l[warp] = lh;
  }
TQF_UNROLL
  for (uint32_t i = 0; i < VEC; ++i) sm.o[warp][lane * VEC + i] = oh[i];
  c.ops.sync_cta();
  for (uint32_t step = 0; step < 3; ++step) {
    const uint32_t stride = (kDecodeWarps / 2) >> step;  // 4, 2, 1
    if (warp < stride) {
      const uint32_t other = warp + stride;
      const float lo = sm.l[other];
      if (lo > 0.0f) {  // a NaN or empty warp state is not merged
        const float mo = sm.m[other];
        const float mn = Ops::fmax(mh, mo);
        const float af = c.ops.expf(Ops::sub(mh, mn));
        const float cf = c.ops.expf(Ops::sub(mo, mn));
        lh = Ops::add(Ops::mul(lh, af), Ops::mul(lo, cf));
        mh = mn;
TQF_UNROLL
        for (uint32_t i = 0; i < VEC; ++i)
          oh[i] = Ops::add(Ops::mul(oh[i], af), Ops::mul(sm.o[other][lane * VEC + i], cf));
      }
      if (lane == 0) {
        sm.m[warp] = mh;
        sm.l[warp] = lh;
      }
TQF_UNROLL
      for (uint32_t i = 0; i < VEC; ++i) sm.o[warp][lane * VEC + i] = oh[i];
    }
    c.ops.sync_cta();
  }
  if (warp == 0) {
    const float inv = lh > 0.0f ? Ops::div(1.0f, lh) : 0.0f;  // correctly rounded; NaN -> 0
    const uint64_t row = (static_cast<uint64_t>(c.seq) * a.num_q_heads + c.qh0 + h) * a.head_dim +
                         lane * VEC;
TQF_UNROLL
    for (uint32_t i = 0; i < VEC; ++i) {
      const float y = Ops::mul(oh[i], inv);
      Ops::store_u16(a.output + row + i, Ops::to_bf16(y));
      if (a.out_f32 != nullptr) a.out_f32[row + i] = y;
    }
  }
}

// One CTA: HT heads qh0 .. qh0+HT-1 of sequence `seq`, thread `tid` (0..255). Every thread of
// the CTA calls this; control flow around Ops::sync_warp/shuffles is warp-uniform. kStats: the
// _stats entry points (counters in a.stats); the other entry points carry no counting code.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStats>
TQF_HD void decode_cta(const Args& a, uint32_t qh0, uint32_t seq, uint32_t tid,
                       Shared<kHdim>& sm, Ops& ops) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  constexpr uint32_t kLevels = FormatConst<F>::levels;
  const uint32_t warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int32_t L = Ops::load_i32(a.seq_lens + seq);
  if (L == 0) return;  // nothing is written (uniform across the CTA)

  if (tid < kLevels) sm.cb16[tid] = Ops::template codebook16<F>(tid);
  sm.fp8[tid] = Ops::fp8(tid);  // 256 threads: every scale byte's value (exact)
  const uint16_t* q_seq = a.q + static_cast<uint64_t>(seq) * a.q_stride;
  for (uint32_t i = tid; i < HT * kHdim; i += 256) {  // q of head qh0 + i / kHdim, dim i % kHdim
    const uint32_t h = i / kHdim, d = i % kHdim;
    sm.q[h][d] = Ops::bf16(Ops::load_u16(q_seq + static_cast<uint64_t>(qh0 + h) * a.head_dim + d));
  }
  ops.sync_cta();

  // The reference-order kernel's partition, identical for every head of the sequence.
  uint32_t w_begin, w_end;
  chunk_range(a, L, warp, w_begin, w_end);

  const uint32_t kvh = qh0 / (a.num_q_heads / a.num_kv_heads);
  CtaCtx<Ops, F, kHdim, HT> c{a, sm, ops, warp, lane, seq, qh0, kvh, lane % HT,
                              a.block_tables + static_cast<uint64_t>(seq) * a.max_blocks_per_seq,
                              Ops::aligned16(a.k_cache), a.block_size,
                              a.num_kv_heads * a.head_dim, v_place<Ops, F, VEC>(a, kvh, lane)};

  LaneState<HT, VEC> st;
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h)
TQF_UNROLL
    for (uint32_t i = 0; i < VEC; ++i) st.o[h][i] = 0.0f;
  st.m = -1e30f;
  st.l = 0.0f;
  st.n_pairs = st.n_skipped = st.n_vrows = 0;

  walk_tiles<Ops, F, kHdim, HT, kStats>(c, w_begin, w_end, st);

  if (kStats && lane == 0) {
    ops.atomic_add(a.stats + 0, st.n_pairs);
    ops.atomic_add(a.stats + 1, st.n_skipped);
    ops.atomic_add(a.stats + 2, st.n_vrows);
  }
  // Merge and output, head by head.
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) merge_head(c, st, h);
}

}  // namespace tqref::gqa
