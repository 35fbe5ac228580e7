// One golden case launched on a backend and judged, the way `tqref check` and `tqref conform`
// both do it: exact (level W for writers, D for decoders, with the decode expectation aligned to
// the backend's EX2 unit, ex2_expectation.h) or, for decode cases at level T, against the
// kernel-order model and the fp64 references (level_t.h).
#pragma once
#include <optional>

#include "judge/backend.h"
#include "judge/compare.h"
#include "judge/dispatch.h"
#include "judge/level_t.h"

namespace tqref::judge {

struct JudgedCase {
  CaseVerdict verdict;                    // pass/fail, categories, first mismatches, seconds
  std::optional<LevelTVerdict> tolerance; // set when the case was judged at level T
};

// The profile level T's model runs with: the backend's own unit when it differs from the file's
// and is known, else the file's.
const Ex2Profile* level_t_model_ex2(const Ex2Source& src, const Ex2Profile* file_ex2);

// Runs c once on `backend` and judges it. `level_t`: decode cases at level T (c must then be read
// with diagnostics); writer cases are always exact. An exact decode case whose expectation cannot
// be aligned to the backend's EX2 unit fails with "not judged bit for bit: <why>". `run_on` is
// the backend that launches (possibly a fault-injecting decorator); `src` is what the undecorated
// backend reported from decode_ex2(). A decode case outside the contract (dispatch.h) is judged
// at level T against fp64 (`ooc` T; c must then be read with diagnostics) or like any other case
// against the extension of docs/spec.md section 5.1 (`ooc` D); its verdict carries the note.
// `explain` (non-null): called for a failing case whose expectation the model reproduces with
// `model_ex2`, to fill its explanation: the failure anatomy (anatomy/anatomy.h
// explain_with_known_units) sits above this layer and is passed in by the caller.
using ExplainFn = void (*)(const golden::GoldenCase& c, const CaseResult& r, CaseVerdict& v,
                           const Ex2Profile* model_ex2);
JudgedCase run_and_judge(golden::GoldenCase& c, Backend& run_on, const Ex2Source& src,
                         const Ex2Profile* file_ex2, bool level_t, const LevelTOptions& topt,
                         OutOfContractLevel ooc = OutOfContractLevel::T, ExplainFn explain = nullptr);

}  // namespace tqref::judge
