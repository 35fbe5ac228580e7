// Failure anatomy: for a failing exact-level case, where the kernel's bytes differ from the
// expectation, summarised as a pattern in one sentence, then tested against a fixed list of
// concrete hypotheses (hypotheses.h) by re-running the model with one change each.
//   decoder: which rows (sequence, q head), dims (with the lane l = dim / VEC and the VEC slot
//            dim % VEC it belongs to, VEC = HDIM / 32), sequence lengths, skip states and block
//            positions are wrong, and how (ulps, NaN, single bits, left unwritten);
//   writer:  which fields (K, codes, scales), groups (of a token's row) and slots are wrong,
//            and what was written outside the rows the launch may write.
// The verdict names the first hypothesis that reproduces the kernel's bytes exactly; else a
// pattern that explains every differing element (single-bit flips, scale bytes one fp8 code
// away), a structural fault (guard, untouched bytes, unwritten rows) or the closest hypothesis.
#pragma once
#include <string>
#include <vector>

#include "judge/backend.h"
#include "judge/compare.h"
#include "tqref/ex2.h"

namespace tqref::anatomy {

struct ExplainOptions {
  bool enabled = true;
  // The model's EX2 unit (decode hypotheses and skip states; null: decode anatomy without
  // them) and other units to try as the "another EX2 profile" hypotheses.
  const Ex2Profile* ex2 = nullptr;
  std::vector<const Ex2Profile*> other_ex2;
  // Decoder hypotheses run on at most this many (position x q head) pairs: a larger case is
  // cut down to its shortest wrong sequences (the verdict says which).
  uint64_t budget = uint64_t(1) << 20;
};

// Fills v.explanation for a failing verdict of case c with result r (no-op when v passed or has
// an error). c's expectation must be the one v was judged against.
void explain_failure(const golden::GoldenCase& c, const judge::CaseResult& r,
                     judge::CaseVerdict& v, const ExplainOptions& o);

// explain_failure with the model's unit `model_ex2` and every EX2 unit of known_ex2_units()
// (judge/ex2_for_file.h) as the "another EX2 profile" hypotheses: what `tqref check` and
// `tqref conform` pass to run_and_judge (judge/judge_case.h).
void explain_with_known_units(const golden::GoldenCase& c, const judge::CaseResult& r,
                              judge::CaseVerdict& v, const Ex2Profile* model_ex2);

}  // namespace tqref::anatomy
