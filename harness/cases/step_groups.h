// V groups that make every writer entry of the coverage (cases/observe.h: each rounding step of
// docs/spec.md section 4 one step off either way, fma:rsq, nvcc-fmad, ftz) change a code or the
// scale byte, found by search against the variants themselves (tqref/variant.h), as the
// fma_sensitive groups were: the `step_sensitive` distribution of the `flags` suite.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tqref/format.h"

namespace tqref::cases {

struct SensitiveGroup {
  std::array<uint16_t, kGroupSize> x;  // bf16
  std::string entry;                   // the coverage entry it was chosen for
};

// One group per writer coverage entry that some candidate sees (entries no candidate sees are
// left out: `tqref coverage` lists them as blind). Deterministic; computed once per format.
// Candidates: values next to a decision bound after scaling (all bf16 pairs of amax and x whose
// scaled value is a bound or the binary32 just below it), a zero element (the 0.0 bound),
// groups of negative subnormals, the fma_sensitive and rounding_sensitive groups, Gaussian groups.
const std::vector<SensitiveGroup>& step_sensitive_groups(const FormatTraits& t);

// Every pair (amax, x) of bf16 values, as groups {amax, x, 0, ...}, for which the inverse scale
// MAX/amax one binary32 step up or down changes x's code, found by exhausting the pairs that can:
// near a nonzero bound, x/amax over every pair of bf16 significands and every binade down to
// below the smallest positive bound (the scaled value depends on the ratio only while it and
// MAX/amax are normal), every x against every amax of the top binade (MAX/amax subnormal there),
// and near the 0.0 bound every amax with the x that scale to about 2^-150. Empty for the three
// formats (tests/test_variants.cpp): why ulp+-:w-inv-div is excluded from coverage.
std::vector<std::array<uint16_t, kGroupSize>> inverse_scale_sensitive_groups(const FormatTraits& t);

}  // namespace tqref::cases

namespace tqref::cases {

// A V group (out[0..15], bf16) that the writer quantises to scale byte sb with code c in dims
// 1..15 (dim 0 holds the extreme code, which fixes the scaling); false if no such group of this
// construction exists for (c, sb).
bool craft_group(const FormatTraits& t, uint32_t c, uint8_t sb, uint16_t* out);

// A V group (out[0..15], bf16) whose dequantised values (fp16(CB[c]) * gs, as the decoder reads
// them) are, in at least 15 of its 16 dims, exact bf16 rounding midpoints: an output that
// averages such a value over positions lands on the midpoint up to the roundings of o, l and 1/l,
// so one ulp of any of them decides the output's rounding (rising_scores). False when the
// format has no code and scale byte whose value is a midpoint (turbo2v).
bool midpoint_group(const FormatTraits& t, uint64_t pick, uint16_t* out);

}  // namespace tqref::cases
