// Level I, invariance (docs/spec.md section 6): judged without a model and without an EX2 profile.
// From one golden case the host derives variant launches that must not change the kernel's bits,
// runs each on the same Backend (model, GPU, fault-injecting) and compares the kernel's output
// with its own output for the unchanged case (the baseline):
//   decoder, per sequence (all its q-head rows):
//     placement      the sequence alone, the batch reversed, a large batch of repeated sequences
//                    (at least LevelIOptions::large_batch = 33, more than any committed suite's
//                    batch: 18 sequences at most, in the real suite)
//     blocks         physical blocks permuted at random; relocated into a larger pool
//     strides        q_stride padded; V data section and V block stride padded
//     repeat         the same launch twice more (determinism)
//     other-lengths  the other sequences shortened (even-indexed ones, then odd-indexed ones)
//   writer, the whole K and V pools:
//     token-order    tokens reversed, shuffled, two interior tokens swapped
//     padding-tokens slot -1 tokens removed; slot -1 tokens added at the start, middle, end
//     strides        key/value strides padded; V data section and V block stride padded
//     split-launch   the first half of the tokens, then the rest into the resulting pools
//     repeat         the same launch again
// Rows of L == 0 sequences must keep their initial bytes and every guard band must be intact in
// every variant. Padding and relocated blocks are filled with NaN poison, so a kernel that reads
// them shows it. What level I cannot see: a kernel that is wrong in the same way everywhere (that
// is what W/D/T judge).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "judge/backend.h"
#include "io/report_doc.h"
#include "judge/compare.h"

namespace tqref::judge {

struct LevelIOptions {
  uint64_t seed = 0x1E7E1;      // block permutation and token shuffle
  uint32_t large_batch = 33;    // sequences in the large-batch variant (at least; also >= 2S+1)
};

// One variant launch, compared with the baseline.
struct InvarianceCheck {
  std::string property;   // "placement", "blocks", ... (header comment)
  std::string variant;    // "seq 2 alone", "batch of 33", ...
  bool pass = false;
  std::string error;      // the launch failed
  uint64_t compared = 0, differing = 0;  // elements (decoder) or bytes (writer)
  std::string detail;     // where the bits changed, e.g. "seq 2 (L 5): 512 of 512 elements ..."
};

struct LevelIVerdict {
  std::string name, kernel, kind;
  bool pass = false;
  std::string error;                     // the baseline launch failed
  std::vector<InvarianceCheck> checks;
  std::vector<std::string> broken;       // properties with a failing check, in check order
  std::string sentence;                  // failure anatomy: what changes the bits, what does not
  std::string diagnosis;                 // "invariance:<first broken property>" or ""
  double seconds = 0;
};

// Runs the baseline and every variant of c on `b`. c needs no expectation and no diagnostics.
LevelIVerdict judge_level_i(const golden::GoldenCase& c, Backend& b, const LevelIOptions& o);

// The verdict as a CaseVerdict for the JSON/JUnit summaries (category "invariance" per failing
// variant, the sentence as its explanation).
CaseVerdict level_i_case_verdict(const LevelIVerdict& v);
// Terminal lines: one per case, and per failing variant its detail.
std::string level_i_text(const LevelIVerdict& v);
// {"level":"I","cases":[{name, pass, checks:[...], sentence, diagnosis}]}
report::Json level_i_json(const std::vector<LevelIVerdict>& vs);

}  // namespace tqref::judge
