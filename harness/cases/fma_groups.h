// Mutant 13's writer (docs/mutants.md): built with --fmad=true, nvcc contracts the two squared
// norms of docs/spec.md section 4, nsq = nsq + x*x and rsq = rsq + cb*cb, into fused multiply-adds (one
// rounding each). For bf16 inputs x*x is exact (at most 16 significant bits), so only a
// subnormal product changes nsq; rsq changes whenever some fp32 CB[c]^2 is inexact, but the
// scale byte moves only when sqrt(nsq)/rn sits within about one ulp of an fp8 rounding
// midpoint: roughly 1 in 10^6 random groups. The groups built here sit there by construction.
#pragma once
#include <cstdint>

#include <span>

#include "cases/case_spec.h"
#include "cases/rng.h"
#include "tqref/format.h"

namespace tqref::cases {

// The scale byte of the FMA-contracted writer: docs/spec.md section 4 steps 1-7 with
// nsq = fmaf(x[i], x[i], nsq) and rsq = fmaf(CB[c[i]], CB[c[i]], rsq) (codes are unchanged:
// neither sum feeds them).
uint8_t scale_byte_fma_contracted(const FormatTraits& t, const uint16_t (&x)[kGroupSize]);

// A V group (out[0..15], bf16) whose scale byte differs between the spec writer and the
// FMA-contracted one, drawn from rng (deterministic). Elements 0..12 are N(0, 1); elements
// 13..15 are small (below the first positive bound after scaling, so their codes are the
// smallest-magnitude ones whatever their exact value) and chosen so that nsq lands where the
// scale rounds across an fp8 midpoint under one rsq and not under the other. Costs about 20 us
// (turbo2v) to 0.7 ms (turbo4v) per group; throws std::logic_error if 10^5 attempts fail.
void fma_sensitive_group(const FormatTraits& t, Rng& rng, uint16_t* out);

// Build-flag mutants 25 and 26 (docs/mutants.md): with -prec-div=false or -prec-sqrt=false the
// writer's scale s = f32(sqrt(nsq) / rn) comes from an approximate division or square root,
// which may be off by an ulp or two; the scale byte moves only when s sits within about an ulp
// of an fp8 rounding midpoint (again about 1 random group in 10^6). ScaleOp names the operation
// and scale_byte_perturbed gives the scale byte when its result is `ulps` binary32 steps away
// from the correctly rounded one (the CPU model of such a build, for one group).
enum class ScaleOp { sqrt_nsq, sqrt_rsq, quotient };
uint8_t scale_byte_perturbed(const FormatTraits& t, const uint16_t (&x)[kGroupSize], ScaleOp op, int ulps);

// A V group (out[0..15], bf16) whose scale byte changes when the quotient s and sqrt(nsq) are
// one ulp larger (dir = +1) or smaller (dir = -1) than IEEE gives them: s lies next to an fp8
// rounding midpoint on the side `dir` points to. Built as fma_sensitive_group (elements 13..15
// solve nsq); throws std::logic_error if 10^5 attempts fail.
void rounding_sensitive_group(const FormatTraits& t, Rng& rng, int dir, uint16_t* out);

// A V row of a crafted distribution: every group of `row` replaced by an fma_sensitive group or
// a rounding_sensitive one (direction +1 for even groups, -1 for odd); other dists: unchanged.
void craft_v_row(Dist d, const FormatTraits& t, Rng& rng, std::span<uint16_t> row);

}  // namespace tqref::cases
