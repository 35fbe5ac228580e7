// The l_tie decode distribution (case_spec.h): makes the decoder's l * eo, the product whose
// rounding only an FMA of the batch's first l update (`fma:batch-l`) or one ulp down
// (`ulp-:d-l-mul`) changes, decide an output bit by construction rather than by chance. It is
// what sees those entries in a format with no V value on a bf16 midpoint (turbo2v).
//
// q is one-hot (1.0 on dims 0..2 of every head) and inv_sqrt_d = 1, so a position's score is
// K[0] + K[1] + K[2] exactly (split3). Each sequence has 64 positions, 8 per warp (docs/spec.md
// section 5), and two roles: the "previous" positions P..P+3 and the row's maximum T. Every other
// position scores kLowScore with V = 0.
//   P, P+1, P+2: score 0, V row `u`; P+3: score `first_low`, V = 0; then l = f32(3 + ef3), o = 3u.
//   T: score `top`, V row `v`. The update that meets it is l = f32(f32(l * eo) + 1) with
//   eo = EXPF(-top), and l * eo rounds to 1 + j * 2^-23 with j odd: the sum is a tie that the
//   contract rounds up to even, while the unrounded product (an FMA) lies below it and one ulp
//   down lands on the lower neighbour: both give the lower one.
// Where that update happens, by sequence s % 3:
//   0: P = 56, T = 60, warp 7's second batch (blocks of 4k positions: `fma:batch-l`,
//      `ulp-:d-l-mul`) or its fifth single (blocks of 1 to 3: `fma:single-l`);
//   1: P = 24, T = 56, the merge where warp 3 absorbs warp 7: a.l * fa (`fma:merge-l-ab`);
//   2: P = 56, T = 24, the same merge: o.l * fo (`fma:merge-l-cd`).
// Low positions add factors below half an ulp of l, and the merge scales the other warps'
// (l, o = 0) by factors below 2^-90, so every row's l is the same and o = f32(f32(3u * eo) + v).
// u and v are chosen (codes and scale bytes, cases/step_groups.h craft_group) so that o * (1/l)
// rounds to different bf16 values for the two l: dims 1..15 of every group change.
#pragma once
#include <array>
#include <cstdint>

#include "tqref/ex2.h"
#include "tqref/format.h"

namespace tqref::cases {

inline constexpr uint32_t kLTieLength = 64;
inline constexpr float kLowScore = -64.0f;

struct LTiePlan {
  float first_low = 0, top = 0;  // scores of positions 59 and 60
  float l = 0, l_variant = 0;     // the row's l: the contract's, and with l * eo fused or ulp-
  std::array<uint16_t, kGroupSize> u{}, v{};  // bf16 V groups (every group of the row)
};

// Deterministic for a format and EX2 profile. Throws std::logic_error if the search finds none.
LTiePlan l_tie_plan(const FormatTraits& t, const Ex2Profile& ex2);

// K[0..2] (the score, other dims 0) and the V row of position pos (of kLTieLength) of sequence
// seq, for every kv head of the n = H * D values of a token row.
void l_tie_row(const LTiePlan& plan, uint32_t seq, uint32_t pos, uint32_t head_dim,
               uint16_t* k_row, uint16_t* v_row, uint32_t n);

}  // namespace tqref::cases
