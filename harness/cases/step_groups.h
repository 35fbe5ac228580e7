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

namespace tqref::golden {

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

}  // namespace tqref::golden
