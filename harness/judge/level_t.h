// Level T (docs/spec.md section 6): for decoders that follow the format but not the operation order.
// Instead of failing at the first differing bit, a decode case's output is measured against the
// kernel-order model and against the fp64 references stored in the file, reported as
// distributions, and judged by a documented tolerance (docs/gpu-harness.md):
//   - exact at every level: guards, inputs, rows of L == 0 sequences, every non-empty row
//     written (compare_case's categories other than output-value / skipped-v-read);
//   - NaN where the model has NaN and nowhere else, equal infinities;
//   - every other element: |got - model| <= tol_ulps * ulp_bf16(max(|got|, |model|))
//                                          + tol_row * row_scale + flip_allowance(row)
//     row_scale = max_d |ref_dequantised| of the row (the fp64 softmax over the stored V);
//     flip_allowance = sum over the row's flip candidates p of thr_hi * max_d |v_p| / l_row,
//     the most a flipped skip decision of p can move an output (its factor <= thr_hi relative
//     to a running maximum, l_row >= 1 the model's softmax denominator).
// Against the fp64 reference (against_reference: launches outside the contract, head_dim != HDIM,
// docs/spec.md section 5.1, where the model cannot say what bits a kernel "should" give): the
// comparand is reference_dequantised_v over the case's head_dim dims and flip_allowance becomes
// the row's stored skip bound (tqref::reference_skip_bound: all the weight the sparse-V skip of
// any decoder can drop); the NaN rule compares with the reference.
// Flip candidates: positions whose factor lies in (THRESH*(1-margin), THRESH*(1+margin)],
// found exactly by running the model at both ends (the factors do not depend on V, so the skip
// mask at threshold t is {factor <= t}). A row whose output is NaN while the model's is not, and
// which has a candidate with poisoned V (the golden files poison V the model skips), is reported
// as "flip onto poisoned V": not judged, since a kernel whose factor lands one rounding above
// THRESH legitimately reads it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "judge/backend.h"
#include "io/report_doc.h"
#include "judge/compare.h"
#include "tqref/ex2.h"

namespace tqref::judge {

struct LevelTOptions {
  double margin = 1e-3;       // relative margin around THRESH for flip candidates
  double tol_ulps = 2;        // bf16 ulps of max(|got|, |model|)
  double tol_row = 0x1p-10;   // times the row scale
  bool against_reference = false;  // compare with the fp64 reference instead of the model
};

// Quantiles of one error measure over the judged elements.
struct ErrorDist {
  uint64_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct FlipCandidate {
  uint32_t seq = 0, qhead = 0, pos = 0;
  bool skipped_by_model = false;  // factor <= THRESH in the model
  bool v_poisoned = false;        // its V (head kvh) dequantises to NaN in the file's pool
  double max_abs_v = 0;
};

struct LevelTVerdict {
  std::string name, kernel;
  bool pass = false;
  std::string error;                            // launch failed, or no model to compare with
  std::string note;                             // which EX2 profile the model ran with
  std::map<std::string, uint64_t> structural;   // exact-level categories that fail at T too
  uint64_t elements = 0;                        // output elements judged (rows with L > 0)
  uint64_t over_tolerance = 0, nan_mismatch = 0;
  uint64_t rows_flip_poisoned = 0;              // rows not judged (see above)
  std::string worst;                            // the element with the largest error / tolerance
  bool against_reference = false;               // judged against fp64 (LevelTOptions)
  uint64_t differing_from_model = 0;            // elements whose bits differ from the model's
  // Distributions: "ulp" in bf16 ulps of the comparand, "row" relative to the row scale.
  ErrorDist ulp_vs_model, row_vs_model, row_vs_ref_dequantised, row_vs_ref_unquantised;
  ErrorDist model_row_vs_ref_dequantised;       // baseline: the kernel-order model's own error
  uint64_t flip_candidates = 0;
  std::vector<FlipCandidate> first_flips;       // at most kMaxListed
};

// `model_ex2`: the profile the model runs with (the GPU's, or the file's when the GPU has none;
// null only for files without decode cases). `c` must be read with diagnostics.
LevelTVerdict judge_level_t(const golden::GoldenCase& c, const CaseResult& r,
                            const Ex2Profile* model_ex2, const LevelTOptions& o);

// The verdict as a CaseVerdict (pass, error text, categories) for the JUnit/JSON summaries.
CaseVerdict level_t_case_verdict(const LevelTVerdict& t);
// Terminal lines: one summary line per case and, if it fails, why.
std::string level_t_text(const LevelTVerdict& t);
// {"level":"T","options":{...},"cases":[...]} with every distribution.
report::Json level_t_json(const std::vector<LevelTVerdict>& ts, const LevelTOptions& o);

}  // namespace tqref::judge
