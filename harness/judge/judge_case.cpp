#include "judge/judge_case.h"

#include <chrono>

#include "judge/ex2_expectation.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

const Ex2Profile* level_t_model_ex2(const Ex2Source& src, const Ex2Profile* file_ex2) {
  return !src.same_as_file && src.profile ? src.profile : file_ex2;
}

JudgedCase run_and_judge(GoldenCase& c, Backend& run_on, const Ex2Source& src,
                         const Ex2Profile* file_ex2, bool level_t, const LevelTOptions& topt,
                         OutOfContractLevel ooc, ExplainFn explain) {
  JudgedCase j;
  const bool against_fp64 = out_of_contract(c) && ooc == OutOfContractLevel::T;
  const bool tolerance = (level_t && c.kind == CaseKind::decode) || against_fp64;
  LevelTOptions t = topt;
  t.against_reference = against_fp64;
  // Exact judging needs the expectation for the backend's EX2 unit (ex2_expectation.h).
  const std::string inexact = tolerance ? "" : align_decode_expectation(c, src);
  const auto t0 = std::chrono::steady_clock::now();
  const CaseResult r = run_on.run(c);
  if (tolerance) {
    j.tolerance = judge_level_t(c, r, level_t_model_ex2(src, file_ex2), t);
    j.verdict = level_t_case_verdict(*j.tolerance);
  } else {
    j.verdict = compare_case(c, r);
    if (!inexact.empty() && j.verdict.error.empty()) {
      j.verdict.pass = false;
      j.verdict.error = "not judged bit for bit: " + inexact;
    }
  }
  j.verdict.note = out_of_contract_note(c, ooc);
  j.verdict.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The anatomy compares with c's expectation: exact cases were aligned to the backend's unit
  // above; at level T the stored one is the model's only when the model runs with the file's unit.
  const Ex2Profile* model_ex2 = level_t_model_ex2(src, file_ex2);
  if (explain && !j.verdict.pass && (!tolerance || model_ex2 == file_ex2)) explain(c, r, j.verdict, model_ex2);
  return j;
}

}  // namespace tqref::judge
