// Decode outputs depend on the GPU's EX2 unit (docs/spec.md section 5), so a decode case is judged bit for
// bit only against the model run with the profile of the GPU that ran it. The file stores the
// expectation for the profile it was generated with (provenance ex2_profile_id); this decides
// whether that expectation applies, recomputes it when the backend's unit has another known
// profile, or says why the case cannot be judged exactly.
#pragma once
#include <string>

#include "judge/backend.h"

namespace tqref::judge {

// For a decode case: "" when c.d.out_expected (recomputed in place with src.profile when
// src.same_as_file is false) is the exact expectation for the backend; otherwise the reason it
// cannot be judged exactly (no profile for the backend's EX2 unit). Writer cases: always "".
std::string align_decode_expectation(golden::GoldenCase& c, const Ex2Source& src);

}  // namespace tqref::judge
