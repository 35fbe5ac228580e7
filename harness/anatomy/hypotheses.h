// The fixed list of concrete hypotheses of the failure anatomy (anatomy.h): each is the model
// (or the expectation) with one change a real kernel bug would make, and is scored by how many
// output elements (decoder) or pool bytes (writer) differ from what the kernel produced.
//   decoder: thresh-ge (5), expf-no-split (14), skip-disabled (15), neighbour-scale (6),
//            neighbour-group-v (dims of group g^1), neighbour-lane-v (dims of lane l^1),
//            k-other-head, v-other-head, gqa-modulo (kv head qh % H), window-plus1 (12),
//            window-minus1, tight-block-stride (8), tight-data-section (7), q-tight-stride,
//            ex2:<profile id> for every other EX2 unit known;
//   writer:  slot-plus1 (1), bound-strict (2), scale-fp8-rz (9), pad-slot0 (11), writer-fma (13),
//            writer-tight-data-section (17), key-tight-stride, value-tight-stride.
// A hypothesis that does not apply to a case (no padding to ignore, a single kv head, ...) is
// listed as not tested, with why.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "anatomy/anatomy.h"

namespace tqref::anatomy {

struct HypothesisResult {
  std::string id, what;
  bool tested = false;
  std::string why_not;    // when not tested
  uint64_t differing = 0; // from the kernel's bytes (elements for a decoder, bytes for a writer)
  uint64_t effect = 0;    // from the spec's expectation: 0 means the change does nothing here,
                          // so the hypothesis can neither reproduce nor approach the kernel
};

struct HypothesisReport {
  std::string unit;                     // "output element" or "pool byte"
  uint64_t compared = 0, spec_differing = 0;
  std::string scope;                    // "" = the whole case; else which sequences were used
  std::vector<HypothesisResult> results;
  std::vector<std::string> reproduced;  // ids with differing == 0 and effect > 0, the smallest
                                        // effect (the narrowest change) first, then list order
  std::string closest;                  // fewest differing (effect > 0), when at most half of
                                        // spec_differing
};

// Decoder hypotheses need o.ex2 (else the report is empty with scope saying why).
HypothesisReport test_hypotheses(const golden::GoldenCase& c, const judge::CaseResult& r,
                                 const ExplainOptions& o);

}  // namespace tqref::anatomy
