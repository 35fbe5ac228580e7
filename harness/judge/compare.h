// Backend-independent judging of one case: every byte of every output buffer against the stored
// expectation, guard bands against guard_byte(), and each differing byte decoded into a place in
// the cache or output (pool, block, slot, head, group or dim) with a category naming the likely
// fault.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/golden_case.h"
#include "io/report_doc.h"
#include "judge/backend.h"

namespace tqref::judge {

// Categories (stable strings, used in JSON/JUnit reports and by the fault-injection tests):
//   guard               a guard band byte changed: write outside the buffer
//   untouched-modified  a byte the launch must not change (other slots, padding, block tails,
//                       rows of L == 0 sequences) changed
//   row-not-written     a byte that should have been written still holds its initial value
//   k-value             a written K element differs
//   v-code              a written V code byte differs
//   v-scale             a written V scale byte differs
//   skipped-v-read      decode output is NaN where the model's is not, in a row whose skipped V
//                       groups are poisoned: the kernel read V that the skip rule excludes
//   output-value        a written decode output element differs otherwise
//   input-modified      an input buffer (key, value, slot_mapping, q, the decoder's K/V pools,
//                       block_tables, seq_lens) changed: the kernel wrote where it may only read
struct Mismatch {
  std::string buffer;      // "k_cache", "v_cache", "output"
  int64_t offset = 0;      // byte offset in the buffer; guards: negative before, >= size after
  std::string category;
  std::string where;       // "block 3 slot 5 head 1 dim 17" / "seq 2 qhead 5 dim 40" / ...
  uint32_t expected = 0, got = 0, initial = 0;  // the element's bits (bf16: 16 bits, else 8)
  int width = 1;           // bytes per element shown (2 for bf16, 1 for packed bytes)
};

// Failure anatomy of a failing case (anatomy.h, level_i.h): what is wrong as a pattern, and
// which concrete hypothesis explains it. Empty for passing cases and for failures not explained.
struct Explanation {
  std::string sentence;   // one sentence: what is wrong, what is exact, the suspect
  std::string verdict;    // the hypothesis verdict: "reproduced bit for bit by ..." or the closest
  // Stable id for tests and CI: "hypothesis:<id>", "pattern:<single-bit|lowest-bit|
  // scale-one-code>", "structural:<category>", "closest:<id>", "invariance:<property>",
  // "unexplained".
  std::string diagnosis;
  report::Json json;      // the facts and every hypothesis score, a JSON object (null = none)
};

struct CaseVerdict {
  std::string name, kernel, kind;
  bool pass = false;
  std::string error;                        // backend error (launch failed)
  std::string note;                         // e.g. a launch outside the contract (dispatch.h)
  uint64_t bytes_compared = 0, bytes_differing = 0;
  std::map<std::string, uint64_t> categories;  // category -> differing elements
  std::vector<Mismatch> first;              // the first kMaxListed mismatches
  Explanation explanation;                  // failing cases: the anatomy (anatomy.h)
  double seconds = 0;
};

inline constexpr size_t kMaxListed = 64;

CaseVerdict compare_case(const golden::GoldenCase& c, const CaseResult& r);

// bf16 bit patterns: NaN, and the distance in representable values (sign-magnitude mapped to a
// line; +0 and -0 coincide).
inline bool bf16_is_nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F); }
inline uint32_t bf16_ulp_distance(uint16_t a, uint16_t b) {
  auto ord = [](uint16_t x) { return (x & 0x8000) ? -int32_t(x & 0x7FFF) : int32_t(x); };
  const int32_t d = ord(a) - ord(b);
  return uint32_t(d < 0 ? -d : d);
}

// "0x7fc0" style hex of `width` bytes.
std::string hex(uint32_t v, int width);

}  // namespace tqref::judge
