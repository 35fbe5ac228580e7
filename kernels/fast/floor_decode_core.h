// Core of the floor decode kernels paged_decode_attn_bf16k_turbo{2,3,4}v_floor (docs/kernels.md,
// "Floor decode variants"): one CTA serves HT q heads of one kv head (HT in {1, 2, 4}, as the
// GQA kernels), with the reference-order kernel's arithmetic (docs/spec.md section 5) for every
// (q head, warp chunk): the 8-chunk partition, batches of 4 inside a cache block then singles,
// the per-lane pairwise partial sums, the 16,8,4,2,1 butterfly tree, the skip decision, the
// stride-4/2/1 merge. What differs is which thread computes what:
//  - warp-local rounds: warp c owns chunk c for the whole run and advances by tiles of at most
//    kRound positions made of whole steps (a step = one batch of 4 or one single; never split
//    between tiles); it waits for no other warp until the merge (only __syncwarp);
//  - scores: lane j computes the scores of position j of the tile for all HT heads, each by
//    evaluating the whole butterfly tree itself: the 32 lane partials of the reference order
//    (lane-group g = dims g*VEC .. g*VEC+VEC-1, pairwise, in dim order) combined as the
//    butterfly combines them. The butterfly is a fixed tree (after step `off` lane l holds
//    x(l) + x(l xor off), the same two values in every lane, and an IEEE sum is commutative), so
//    one thread evaluating that tree gets the bits every lane gets; no shuffles. The bf16 -> f32
//    conversion of a K element is done once for the HT heads;
//  - softmax: the running max after every step by a warp prefix scan of fmaxf (phase_softmax
//    says why its value is the reference order's), then every lane computes its own position's
//    factor ef and, at a step start, eo (one EXPF each, in parallel), the skip bits by a ballot;
//    l, a sequential IEEE recurrence, is carried by lane h for head h over the warp's own
//    shared-memory factor row;
//  - o: warp c keeps o of chunk c for the HT heads (lane l: dims l*VEC ..), rescaled once per
//    step, with the position's V row dequantised once for the HT heads (a table of P codebook
//    values per P packed codes: one shared-memory load per P dims).
// This header is plain C++ templated on an Ops policy (fast_decode_ops_cuda.cuh on the GPU, the
// host policy of tests/cta_sim.h in a simulation of one CTA with 256 threads).
#pragma once
#include <cstdint>

#include "fast_decode_core.h"

namespace tqref::floordec {

using fastdec::Args;
using fastdec::VPlace;

inline constexpr uint32_t kRound = kWarpSize;       // positions per chunk and round (a lane each)
inline constexpr uint32_t kChunks = kDecodeWarps;   // the reference order's 8 warp chunks
inline constexpr uint32_t kMaxHT = 4;               // q heads per CTA at most

// Heads per CTA of a floor launch: the GQA decoders' rule (fastdec::heads_per_cta) restricted to
// HT 1, 2 and 4, the ones this design's factor rows and V-load groups were built for; 0 for any
// other grid (the kernel traps).
TQF_HD uint32_t heads_per_cta(uint32_t num_q_heads, uint32_t num_kv_heads, uint32_t grid_x) {
  const uint32_t ht = fastdec::heads_per_cta(num_q_heads, num_kv_heads, grid_x);
  return ht == 1 || ht == 2 || ht == 4 ? ht : 0u;
}

// The launcher's choice: the largest of 4, 2, 1 heads_per_cta() accepts (0: none).
TQF_HD uint32_t widest_heads_per_cta(uint32_t num_q_heads, uint32_t num_kv_heads) {
  for (uint32_t ht = kMaxHT; ht >= 1; ht /= 2)
    if (num_q_heads % ht == 0 && heads_per_cta(num_q_heads, num_kv_heads, num_q_heads / ht) == ht)
      return ht;
  return 0;
}
// Positions per V-load group in the o phase (two groups in flight): 4 at HT 4, where o of 4
// heads and 2 x 8 positions of V bytes would not fit the 128 registers of 2 CTAs per SM.
template <uint32_t HT> inline constexpr uint32_t kGroup = HT == 4 ? 4u : 8u;

// Shared-memory row of one chunk (warp) in the factor buffers, [j][h]: lane j writes its HT
// factors as one vector (16-byte aligned rows), lane h of the l recurrence reads j*HT + h, the
// o phase reads a position's HT factors as a broadcast.
template <uint32_t HT> inline constexpr uint32_t kRowStride = kRound * HT;

// The dequantisation table: entry t holds fp16(CB) of the P codes packed in the P*b bits t
// (P*b <= 8, so that a table has at most 256 entries): turbo2v 4 codes, turbo3v and turbo4v 2.
template <Format F> struct VTab {
  static constexpr uint32_t kBits = FormatConst<F>::bits;
  static constexpr uint32_t P = kBits == 2 ? 4u : 2u;
  static constexpr uint32_t kIdxBits = P * kBits;
  static constexpr uint32_t kEntries = 1u << kIdxBits;
};
inline constexpr uint32_t kVTabFloats = 1024;  // largest table: turbo2v, 256 entries of 4

// A chunk's walk in rounds: p is the next position, end the chunk's end, blk_end the end of p's
// cache block (64-bit: a block end may lie past 2^32 for huge block sizes).
struct RWalker {
  uint32_t p, end;
  uint64_t blk_end;
};

// Shared memory of one CTA. The round buffers and the merge buffers are never live together
// (a CTA barrier separates the last round of every warp from the merge).
template <uint32_t kHdim> struct Shared {
  struct RoundBufs {
    alignas(16) float q[kHdim * kMaxHT];               // [d/4][h][4]: q of the HT heads as f32
    alignas(16) float ef[kChunks * kRowStride<kMaxHT>];  // factors, [c][j][h]
    alignas(16) float eo[kChunks * kRowStride<kMaxHT>];  // rescale factor of the step at j
  };
  struct MergeBufs {
    float m[kMaxHT][kChunks], l[kMaxHT][kChunks];
    alignas(16) float o[kMaxHT][kChunks][kHdim];
  };
  alignas(16) float vtab[kVTabFloats];
  float fp8[256];                                // fp8 E4M3 byte -> f32 (exact)
  uint64_t vcode[kChunks][kRound], vscale[kChunks][kRound];  // byte offsets of j's V rows
  RWalker walk[kChunks];  // chunk c's walk: here, not in 4 registers live across the score tree
  union {
    RoundBufs r;
    MergeBufs mg;
  };
};

// One round's tile of a chunk: n positions from t0, whole steps; bit j of smask: a step starts
// at position j of the tile; of bmask: that step is a batch of 4.
struct RTile {
  uint32_t t0, n, smask, bmask;
};

TQF_HD void rwalker_init(RWalker& w, uint32_t begin, uint32_t end, uint32_t B) {
  w.p = begin;
  w.end = end;
  w.blk_end = (static_cast<uint64_t>(begin) / B + 1) * B;
}

// The next tile: steps in the reference order (a batch at p iff p + 4 <= min(block end, chunk
// end), else a single), taken greedily while they fit in kRound positions; one iteration per
// cache-block segment.
TQF_HD RTile next_rtile(RWalker& w, uint32_t B) {
  RTile t{w.p, 0, 0, 0};
  while (w.p < w.end && t.n < kRound) {
    const uint64_t seg_end = w.blk_end < w.end ? w.blk_end : w.end;
    const uint32_t r = static_cast<uint32_t>(seg_end - w.p);
    const uint32_t room = kRound - t.n;
    const uint32_t nb = r / 4, take_b = nb < room / 4 ? nb : room / 4;
    // batch starts at t.n, t.n + 4, ...
    const uint32_t bbits = take_b == 0 ? 0u : (0x11111111u >> (32 - 4 * take_b)) << t.n;
    t.smask |= bbits;
    t.bmask |= bbits;
    t.n += 4 * take_b;
    w.p += 4 * take_b;
    if (take_b < nb) break;  // the next step is a batch that does not fit
    const uint32_t ns = r % 4, room2 = kRound - t.n, take_s = ns < room2 ? ns : room2;
    t.smask |= ((1u << take_s) - 1u) << (t.n & 31u);
    t.n += take_s;
    w.p += take_s;
    if (take_s < ns) break;
    if (w.p == seg_end && w.p < w.end) w.blk_end += B;
  }
  return t;
}

// Leaf index i of the butterfly tree -> lane (5-bit reversal): the tree of lane 0 combines
// lanes (0,16), then (0,8), (0,4), (0,2), (0,1), so leaves in the order 0,16,8,24,4,... form a
// perfect binary tree whose left subtree is always the lower half.
template <uint32_t i>
inline constexpr uint32_t kBitrev5 =
    ((i & 1u) << 4) | ((i & 2u) << 2) | (i & 4u) | ((i & 8u) >> 2) | ((i & 16u) >> 4);

// Lane group g's partial of every head: part = 0; part += (q*k + q*k) per dim pair (dims
// g*VEC ..). w: the group's VEC bf16 of K as VEC/2 words (element 2i in the low half of word i).
template <class Ops, uint32_t kHdim, uint32_t HT, uint32_t g>
TQF_HD void leaf(const float* qs, const uint32_t* w, float (&out)[HT]) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  float kf[VEC];
TQF_UNROLL
  for (uint32_t i = 0; i < VEC / 2; ++i) {
    kf[2 * i] = Ops::bf16(static_cast<uint16_t>(w[i] & 0xFFFFu));
    kf[2 * i + 1] = Ops::bf16(static_cast<uint16_t>(w[i] >> 16));
  }
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) {
    float qv[VEC];
TQF_UNROLL
    for (uint32_t d4 = 0; d4 < VEC / 4; ++d4)
      Ops::lds4(qs + ((g * VEC / 4 + d4) * HT + h) * 4, qv + 4 * d4);
    float part = 0.0f;
TQF_UNROLL
    for (uint32_t i = 0; i < VEC / 2; ++i)
      // --fmad=false: two products, their sum, the running sum, each rounded
      part = Ops::add(part, Ops::add(Ops::mul(qv[2 * i], kf[2 * i]),
                                     Ops::mul(qv[2 * i + 1], kf[2 * i + 1])));
    out[h] = part;
  }
}

// The butterfly tree over leaves kLo .. kLo+kN-1 (leaf i = lane group kBitrev5<i>), HDIM 256:
// a lane group is 16 bytes of K, loaded where its leaf is computed.
template <class Ops, uint32_t kHdim, uint32_t HT, uint32_t kLo, uint32_t kN>
TQF_HD void tree(const float* qs, const uint16_t* krow, bool aligned, float (&out)[HT]) {
  if constexpr (kN == 1) {
    constexpr uint32_t g = kBitrev5<kLo>;
    uint32_t w4[4];
    Ops::template load_k_raw<8>(krow + 8 * g, aligned, w4);
    leaf<Ops, kHdim, HT, g>(qs, w4, out);
  } else {
    float right[HT];
    tree<Ops, kHdim, HT, kLo, kN / 2>(qs, krow, aligned, out);
    tree<Ops, kHdim, HT, kLo + kN / 2, kN / 2>(qs, krow, aligned, right);
TQF_UNROLL
    for (uint32_t h = 0; h < HT; ++h) out[h] = Ops::add(out[h], right[h]);
  }
}

// HDIM 128: the root's two subtrees side by side. Leaf i < 16 is lane group kBitrev5<i> (even),
// leaf i + 16 the next lane group (the bit-reversed index gains bit 0), so one 16-byte K load
// feeds leaf i of the left subtree (x(0) of the butterfly's last step) and leaf i of the right
// one (x(1)); both subtrees have the same shape.
template <class Ops, uint32_t kHdim, uint32_t HT, uint32_t kLo, uint32_t kN>
TQF_HD void tree_pair(const float* qs, const uint16_t* krow, bool aligned, float (&left)[HT],
                      float (&right)[HT]) {
  static_assert(kHdim == 128, "two lane groups per 16 bytes of K");
  if constexpr (kN == 1) {
    constexpr uint32_t g = kBitrev5<kLo>;
    uint32_t w4[4];
    Ops::template load_k_raw<8>(krow + 4 * g, aligned, w4);
    leaf<Ops, kHdim, HT, g>(qs, w4, left);
    leaf<Ops, kHdim, HT, g + 1>(qs, w4 + 2, right);
  } else {
    float l2[HT], r2[HT];
    tree_pair<Ops, kHdim, HT, kLo, kN / 2>(qs, krow, aligned, left, right);
    tree_pair<Ops, kHdim, HT, kLo + kN / 2, kN / 2>(qs, krow, aligned, l2, r2);
TQF_UNROLL
    for (uint32_t h = 0; h < HT; ++h) {
      left[h] = Ops::add(left[h], l2[h]);
      right[h] = Ops::add(right[h], r2[h]);
    }
  }
}

// The score tree of every head for one K row: bits equal to the reference order's butterfly.
template <class Ops, uint32_t kHdim, uint32_t HT>
TQF_HD void score_tree(const float* qs, const uint16_t* krow, bool aligned, float (&s)[HT]) {
  if constexpr (kHdim == 128) {
    float right[HT];
    tree_pair<Ops, kHdim, HT, 0, kWarpSize / 2>(qs, krow, aligned, s, right);
TQF_UNROLL
    for (uint32_t h = 0; h < HT; ++h) s[h] = Ops::add(s[h], right[h]);
  } else {
    tree<Ops, kHdim, HT, 0, kWarpSize>(qs, krow, aligned, s);
  }
}

// What one thread knows for the whole CTA run.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT> struct Ctx {
  static constexpr uint32_t VEC = kHdim / kWarpSize;
  const Args& a;
  Shared<kHdim>& sm;
  Ops& ops;
  uint32_t warp, lane, seq, qh0, kvh;
  const int32_t* table;     // this sequence's block-table row
  bool k_aligned;           // k_cache 16-byte aligned: vector K loads
  uint32_t B;
  VPlace<F, VEC> vp;
};

// Phase S: this lane's position (j = lane) of the warp's tile: its V row offsets for the o
// phase, and the scores of the HT heads (sc; left 0 in lanes past the tile). phys: the
// position's physical block (loaded a round ahead).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void phase_scores(const Ctx<Ops, F, kHdim, HT>& c, const RTile& t, int32_t phys,
                         float (&sc)[HT]) {
  const Args& a = c.a;
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) sc[h] = 0.0f;
  if (c.lane >= t.n) return;
  const uint32_t p = t.t0 + c.lane, slot = p % c.B;
  const uint64_t blk = static_cast<uint64_t>(static_cast<int64_t>(phys));
  const uint64_t vblk = blk * a.v_block_stride;
  c.sm.vcode[c.warp][c.lane] = vblk + static_cast<uint64_t>(slot) * c.vp.row_bytes;
  c.sm.vscale[c.warp][c.lane] =
      vblk + a.v_data_section + static_cast<uint64_t>(slot) * c.vp.scale_row_bytes;
  const uint16_t* krow =
      a.k_cache + ((blk * c.B + slot) * a.num_kv_heads + c.kvh) * a.head_dim;
  float s[HT];
  score_tree<Ops, kHdim, HT>(c.sm.r.q, krow, c.k_aligned, s);
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) sc[h] = Ops::mul(s[h], a.inv_sqrt_d);
}

// The last position of lane j's step in tile t (j itself for a single, the batch start + 3 in a
// batch; batches never overlap, so at most one k matches).
TQF_HD uint32_t step_last(const RTile& t, uint32_t j) {
  uint32_t e = j;
TQF_UNROLL
  for (uint32_t k = 0; k < 4; ++k)
    if (j >= k && ((t.bmask >> (j - k)) & 1u)) e = j - k + 3;
  return e;
}

// Phase F: the softmax factors of the tile, every lane for its own position, for the HT heads.
// m (lane h for head h, one register): the chain's running max before the tile; after it, the
// max after the tile's last step. Writes ef of every position and eo of every step start to the
// warp's rows; use[h] bit j: head h uses position j (ef > THRESH).
//
// Why the bits are the reference order's. Its max after a step is a left fold of fmaxf over m
// and the step's scores, so after step k it is fmaxf folded over {m0 = -1e30, every score up to
// step k's last position}. fmaxf returns the other operand for one NaN operand and is an exact
// max otherwise, so any association of it over a set returns the same value except possibly
// the sign of a zero (fmaxf(-0, +0) may return either): the non-NaN maximum of the set, never
// NaN here because m0 is not. The inclusive warp scan P_j = fmaxf over the scores of lanes
// 0..j (shuffles), then mn = fmaxf(m, P_e) with e the step's last position, is such an
// association. Every use of mn or of the max before a step (mb) is a difference x - mn or
// mb - mn going into EXPF (here and in the merge, which only forms m - mn): with mn = +-0 and
// x nonzero the difference is exactly x whatever the zero's sign, with x = +-0 it is +-0, and
// EXPF(+0) = EXPF(-0) = 1 (EX2 of -0, +0 and every subnormal is 1.0, docs/ex2.md), so
// either zero gives the same bits. -inf scores are ordinary operands (the max is at least m0),
// +inf ones make mn +inf in both orders (and inf - inf = NaN factors in both). Lanes past the
// tile hold 0 but never reach a lane of the tile: P_j reads lanes <= j and e < t.n.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void phase_softmax(const Ctx<Ops, F, kHdim, HT>& c, const RTile& t, const float (&sc)[HT],
                          float& m, uint32_t (&use)[kMaxHT]) {
  const uint32_t lane = c.lane, e = step_last(t, lane);
  const bool in = lane < t.n, start = in && ((t.smask >> lane) & 1u);
  float ef[kMaxHT] = {}, eo[kMaxHT] = {};
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) {
    const float m0 = Ops::shfl_idx(m, h);  // lane h's m: read before lane h replaces it below
    float P = sc[h];
TQF_UNROLL
    for (uint32_t d = 1; d < kWarpSize; d *= 2) P = Ops::fmax(P, Ops::shfl_up(P, d));
    const float mn = Ops::fmax(m0, Ops::shfl_idx(P, e));
    const float before = Ops::shfl_up(P, 1);  // P_{j-1}; lane 0's own value, unused
    const float mb = lane == 0 ? m0 : Ops::fmax(m0, before);
    if (in) ef[h] = c.ops.expf(Ops::sub(sc[h], mn));
    if (start) eo[h] = c.ops.expf(Ops::sub(mb, mn));
    use[h] = Ops::ballot(in && ef[h] > Ops::thresh());
    const float m1 = Ops::shfl_idx(mn, t.n - 1);  // t.n >= 1: the max after the tile's last step
    if (lane == h) m = m1;
  }
  const uint32_t row = c.warp * kRowStride<HT> + lane * HT;
  if (in) Ops::template sts_n<HT>(c.sm.r.ef + row, ef);
  if (start) Ops::template sts_n<HT>(c.sm.r.eo + row, eo);
}

// Phase L: lane h's l of head h over the tile in the reference order (l*eo at a step start,
// then + ef per position), from the warp's factor rows. kStd: a tile of 8 batches.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStd>
TQF_HD void phase_l(const Ctx<Ops, F, kHdim, HT>& c, const RTile& t, float& l) {
  const uint32_t row = c.warp * kRowStride<HT> + c.lane;
  const float* ef = c.sm.r.ef + row;
  const float* eo = c.sm.r.eo + row;
  if constexpr (kStd) {
TQF_UNROLL
    for (uint32_t j = 0; j < kRound; ++j) {
      if (j % 4 == 0) l = Ops::mul(l, eo[j * HT]);
      l = Ops::add(l, ef[j * HT]);  // l*eo, then + ef[b] in order
    }
  } else {
    for (uint32_t j = 0; j < t.n; ++j) {
      if ((t.smask >> j) & 1u) l = Ops::mul(l, eo[j * HT]);
      l = Ops::add(l, ef[j * HT]);  // batch: l*eo then + ef[b] in order; single: f32(l*eo) + en
    }
  }
}

// V bytes of one position (this lane's codes and scale byte), loaded before use.
struct VRaw {
  uint32_t lo, hi, sb;
};

template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void load_v_pos(const Ctx<Ops, F, kHdim, HT>& c, uint32_t j, VRaw& v) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  const uint8_t* base = c.a.v_cache;
  fastdec::load_v_rows<Ops, F, VEC>(c.vp, base + c.sm.vcode[c.warp][j],
                                    base + c.sm.vscale[c.warp][j], v.lo, v.hi, v.sb);
}

// This lane's VEC dims of V: fp16(CB)[code] * scale, P codes per table load.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void dequant(const Ctx<Ops, F, kHdim, HT>& c, const VRaw& r, float (&v)[kHdim / kWarpSize]) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  using T = VTab<F>;
  static_assert(VEC % T::P == 0, "a lane's dims are whole table entries");
  const float gs = c.sm.fp8[r.sb];
  const uint32_t codes = fastdec::v_codes<F, VEC>(c.vp, r.lo, r.hi);
TQF_UNROLL
  for (uint32_t k = 0; k < VEC / T::P; ++k) {
    const uint32_t idx = (codes >> (k * T::kIdxBits)) & (T::kEntries - 1u);
    float cb[T::P];
    Ops::template lds_n<T::P>(c.sm.vtab + idx * T::P, cb);
TQF_UNROLL
    for (uint32_t i = 0; i < T::P; ++i) v[k * T::P + i] = Ops::mul(cb[i], gs);
  }
}

// One position of the o phase: rescale at a step start, then o + ef*v for every head (a head
// that skips the position adds ef * 0, the reference order's product with v = 0).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kAll>
TQF_HD void o_pos(const Ctx<Ops, F, kHdim, HT>& c, float (&o)[HT][kHdim / kWarpSize], uint32_t j,
                  bool step_start, uint32_t use_bits, const VRaw& raw) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  const float* row = c.sm.r.ef + c.warp * kRowStride<HT>;
  if (step_start) {
    float eo[kMaxHT];
    Ops::template lds_n<HT>(c.sm.r.eo + c.warp * kRowStride<HT> + j * HT, eo);
TQF_UNROLL
    for (uint32_t h = 0; h < HT; ++h)
TQF_UNROLL
      for (uint32_t i = 0; i < VEC; ++i) o[h][i] = Ops::mul(o[h][i], eo[h]);
  }
  float ef[kMaxHT];
  Ops::template lds_n<HT>(row + j * HT, ef);
  float v[VEC];
  if (kAll || use_bits != 0) {
    dequant(c, raw, v);
  } else {
TQF_UNROLL
    for (uint32_t i = 0; i < VEC; ++i) v[i] = 0.0f;
  }
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) {
    if (kAll || ((use_bits >> h) & 1u)) {
TQF_UNROLL
      for (uint32_t i = 0; i < VEC; ++i) o[h][i] = Ops::add(o[h][i], Ops::mul(ef[h], v[i]));
    } else {
      const float z = Ops::mul(ef[h], 0.0f);
TQF_UNROLL
      for (uint32_t i = 0; i < VEC; ++i) o[h][i] = Ops::add(o[h][i], z);
    }
  }
}

// Head-use bits of position j (bit h) from the chain's masks.
template <uint32_t HT> TQF_HD uint32_t use_of(const uint32_t (&use)[kMaxHT], uint32_t j) {
  uint32_t u = 0;
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) u |= ((use[h] >> j) & 1u) << h;
  return u;
}

// Phase O of chunk `warp`: positions in order, V bytes of group g+1 (kGroup<HT> positions, only the
// used ones) loaded before group g is consumed. kStd: a full tile of 8 batches with every head
// using every position (all masks constant).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT, bool kStd>
TQF_HD void phase_o(const Ctx<Ops, F, kHdim, HT>& c, float (&o)[HT][kHdim / kWarpSize],
                    const RTile& t, const uint32_t (&use)[kMaxHT]) {
  const uint32_t n = kStd ? kRound : t.n;
  const uint32_t smask = kStd ? 0x11111111u : t.smask;
  VRaw buf[2][kGroup<HT>];
  auto load_group = [&](uint32_t g, VRaw (&b)[kGroup<HT>]) {
TQF_UNROLL
    for (uint32_t k = 0; k < kGroup<HT>; ++k) {
      const uint32_t j = g * kGroup<HT> + k;
      b[k] = VRaw{0, 0, 0};
      if (j < n && (kStd || use_of<HT>(use, j) != 0)) load_v_pos(c, j, b[k]);
    }
  };
  auto run_group = [&](uint32_t g, const VRaw (&b)[kGroup<HT>]) {
TQF_UNROLL
    for (uint32_t k = 0; k < kGroup<HT>; ++k) {
      const uint32_t j = g * kGroup<HT> + k;
      if (j < n)
        o_pos<Ops, F, kHdim, HT, kStd>(c, o, j, (smask >> j) & 1u, kStd ? 0u : use_of<HT>(use, j),
                                       b[k]);
    }
  };
  constexpr uint32_t kGroups = kRound / kGroup<HT>;
  static_assert(kGroups % 2 == 0, "groups are processed in pairs (two buffers)");
  const uint32_t groups = (n + kGroup<HT> - 1) / kGroup<HT>;
  if (groups > 0) load_group(0, buf[0]);
  for (uint32_t g = 0; g < groups; g += 2) {
    if (g + 1 < groups) load_group(g + 1, buf[1]);
    run_group(g, buf[0]);
    if (g + 1 < groups) {
      if (g + 2 < groups) load_group(g + 2, buf[0]);
      run_group(g + 1, buf[1]);
    }
  }
}

// The merge of docs/spec.md section 5 for all HT heads at once (warp w absorbs w + stride for
// each head, stride 4, 2, 1), then warp 0 writes bf16(o * 1/l). m, l: lane h's max and l of
// head h in chunk `warp`.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void merge_and_store(const Ctx<Ops, F, kHdim, HT>& c, const float (&o)[HT][kHdim / kWarpSize],
                            float m, float l) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  const Args& a = c.a;
  typename Shared<kHdim>::MergeBufs& mg = c.sm.mg;
  const uint32_t warp = c.warp, lane = c.lane;
  c.ops.sync_cta();  // every warp is past its last round: the merge buffers overlap the rounds'
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h)
    if (lane == h) {
      mg.m[h][warp] = m;
      mg.l[h][warp] = l;
    }
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h)
TQF_UNROLL
    for (uint32_t i = 0; i < VEC; ++i) mg.o[h][warp][lane * VEC + i] = o[h][i];
  c.ops.sync_cta();
  for (uint32_t step = 0; step < 3; ++step) {
    const uint32_t stride = (kChunks / 2) >> step;  // 4, 2, 1
    if (warp < stride) {
      const uint32_t other = warp + stride;
TQF_UNROLL
      for (uint32_t h = 0; h < HT; ++h) {
        const float lo = mg.l[h][other];
        if (lo > 0.0f) {  // a NaN or empty chunk state is not merged
          const float mh = mg.m[h][warp], lh = mg.l[h][warp], mo = mg.m[h][other];
          const float mn = Ops::fmax(mh, mo);
          const float af = c.ops.expf(Ops::sub(mh, mn));
          const float cf = c.ops.expf(Ops::sub(mo, mn));
          const float ln = Ops::add(Ops::mul(lh, af), Ops::mul(lo, cf));
TQF_UNROLL
          for (uint32_t i = 0; i < VEC; ++i) {
            float& ow = mg.o[h][warp][lane * VEC + i];
            ow = Ops::add(Ops::mul(ow, af), Ops::mul(mg.o[h][other][lane * VEC + i], cf));
          }
          c.ops.sync_warp();  // every lane has read m and l before lane 0 replaces them
          if (lane == 0) {
            mg.m[h][warp] = mn;
            mg.l[h][warp] = ln;
          }
        }
      }
    }
    c.ops.sync_cta();
  }
  if (warp != 0) return;
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h) {
    const float lh = mg.l[h][0];
    const float inv = lh > 0.0f ? Ops::div(1.0f, lh) : 0.0f;  // correctly rounded; NaN -> 0
    const uint64_t row =
        (static_cast<uint64_t>(c.seq) * a.num_q_heads + c.qh0 + h) * a.head_dim + lane * VEC;
TQF_UNROLL
    for (uint32_t i = 0; i < VEC; ++i) {
      const float y = Ops::mul(mg.o[h][0][lane * VEC + i], inv);
      Ops::store_u16(a.output + row + i, Ops::to_bf16(y));
      if (a.out_f32 != nullptr) a.out_f32[row + i] = y;
    }
  }
}

// CTA setup: tables (fp8 values, the dequantisation table) and q of the HT heads as f32.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void setup_shared(const Ctx<Ops, F, kHdim, HT>& c, uint32_t tid) {
  using T = VTab<F>;
  constexpr uint32_t kMask = (1u << T::kBits) - 1u;
  Shared<kHdim>& sm = c.sm;
  const Args& a = c.a;
  sm.fp8[tid] = Ops::fp8(tid);  // 256 threads: every scale byte's value (exact)
  for (uint32_t e = tid; e < T::kEntries * T::P; e += kChunks * kWarpSize) {
    const uint32_t entry = e / T::P, i = e % T::P;
    sm.vtab[e] = Ops::template codebook16<F>((entry >> (i * T::kBits)) & kMask);
  }
  for (uint32_t e = tid; e < kHdim * HT; e += kChunks * kWarpSize) {
    const uint32_t d4 = e / (4 * HT), h = (e / 4) % HT, d = 4 * d4 + e % 4;
    sm.r.q[e] = Ops::bf16(Ops::load_u16(a.q + static_cast<uint64_t>(c.seq) * a.q_stride +
                                        static_cast<uint64_t>(c.qh0 + h) * a.head_dim + d));
  }
}

// The warp's next tile from its walk in shared memory (every lane reads the walk and computes
// the same tile; lane 0 writes the advanced walk back after every lane has read it).
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD RTile next_tile(const Ctx<Ops, F, kHdim, HT>& c) {
  RWalker w = c.sm.walk[c.warp];
  const RTile t = next_rtile(w, c.B);
  c.ops.sync_warp();
  if (c.lane == 0) c.sm.walk[c.warp] = w;
  return t;
}

// One CTA: HT heads qh0 .. qh0+HT-1 of sequence `seq`, thread `tid` (0..255). Every thread
// calls this; control flow around syncs, shuffles and ballots is uniform per warp (a warp's
// tiles are the same in all its lanes; the l lanes diverge only between two __syncwarp).
// Warp c runs chunk c's rounds alone; the CTA meets again only for the merge.
template <class Ops, Format F, uint32_t kHdim, uint32_t HT>
TQF_HD void decode_cta(const Args& a, uint32_t qh0, uint32_t seq, uint32_t tid, Shared<kHdim>& sm,
                       Ops& ops) {
  constexpr uint32_t VEC = kHdim / kWarpSize;
  static_assert(HT == 1 || HT == 2 || HT == 4, "HT is 1, 2 or 4");
  const uint32_t warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int32_t L = Ops::load_i32(a.seq_lens + seq);
  if (L == 0) return;  // nothing is written (uniform across the CTA)
  const uint32_t kvh = qh0 / (a.num_q_heads / a.num_kv_heads);
  const Ctx<Ops, F, kHdim, HT> c{a, sm, ops, warp, lane, seq, qh0, kvh,
                                 a.block_tables + static_cast<uint64_t>(seq) * a.max_blocks_per_seq,
                                 Ops::aligned16(a.k_cache), a.block_size,
                                 fastdec::v_place<Ops, F, VEC>(a, kvh, lane)};
  setup_shared(c, tid);

  uint32_t cb, ce;
  fastdec::chunk_range(a, L, warp, cb, ce);
  if (lane == 0) rwalker_init(sm.walk[warp], cb, ce, c.B);
  ops.sync_warp();
  RTile cur = next_tile(c);
  int32_t phys_cur = lane < cur.n ? Ops::load_i32(c.table + (cur.t0 + lane) / c.B) : 0;
  float m = -1e30f, l = 0.0f;  // chunk `warp`'s chain of head `lane` (lanes < HT)
  float o[HT][VEC];
TQF_UNROLL
  for (uint32_t h = 0; h < HT; ++h)
TQF_UNROLL
    for (uint32_t i = 0; i < VEC; ++i) o[h][i] = 0.0f;
  ops.sync_cta();  // q and the tables are in place

  while (cur.n > 0) {  // the chunk's tiles (the same in every lane of the warp)
    float sc[HT];
    phase_scores(c, cur, phys_cur, sc);
    const RTile nxt = next_tile(c);
    const int32_t phys_nxt = lane < nxt.n ? Ops::load_i32(c.table + (nxt.t0 + lane) / c.B) : 0;
    if (lane < nxt.n) {  // the next round's K row into L2 while this round's o phase runs
      const uint16_t* np = a.k_cache + ((static_cast<uint64_t>(static_cast<int64_t>(phys_nxt)) *
                                          c.B + (nxt.t0 + lane) % c.B) * a.num_kv_heads + kvh) *
                                         a.head_dim;
TQF_UNROLL
      for (uint32_t b = 0; b < kHdim * 2; b += 128) Ops::prefetch_l2(np + b / 2);
    }
    uint32_t use[kMaxHT] = {};
    phase_softmax(c, cur, sc, m, use);
    ops.sync_warp();  // the factor rows and V offsets of the tile are written
    const bool std_tile = cur.n == kRound && cur.smask == 0x11111111u && cur.bmask == 0x11111111u;
    if (lane < HT) {
      if (std_tile) phase_l<Ops, F, kHdim, HT, true>(c, cur, l);
      else phase_l<Ops, F, kHdim, HT, false>(c, cur, l);
    }
    bool all = std_tile;
TQF_UNROLL
    for (uint32_t h = 0; h < HT; ++h) all = all && use[h] == 0xFFFFFFFFu;
    if (all) phase_o<Ops, F, kHdim, HT, true>(c, o, cur, use);
    else phase_o<Ops, F, kHdim, HT, false>(c, o, cur, use);
    ops.sync_warp();  // this warp's rows are rewritten by the next round
    cur = nxt;
    phys_cur = phys_nxt;
  }
  merge_and_store(c, o, m, l);
}

}  // namespace tqref::floordec
