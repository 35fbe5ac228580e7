// The two halves of the failure anatomy (anatomy.h), one per kernel kind, and the small text
// helpers they share. Internal to harness/judge.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/report_doc.h"
#include "anatomy/anatomy.h"

namespace tqref::anatomy {

// What one kind's anatomy found, before the hypotheses.
struct AnatomyFacts {
  std::string what;      // the pattern, without the suspect: "dims 8-255 wrong in every row ..."
  std::string suspect;   // the likeliest cause from the pattern alone
  std::string pattern;   // "single-bit", "lowest-bit" or "scale-one-code" when every differing
                         // value element shows it; "" otherwise
  bool values_wrong = false;  // any output element / K, code or scale byte of a written row
  bool pools_differ = false;  // writer: any pool byte differs (values or outside the rows)
  report::Json json;     // the facts as a JSON object
};

AnatomyFacts decode_anatomy(const golden::GoldenCase& c, const judge::CaseResult& r,
                            const ExplainOptions& o);
AnatomyFacts writer_anatomy(const golden::GoldenCase& c, const judge::CaseResult& r);

// "0-7, 16-23, 40" for a sorted list of distinct values (at most `max_ranges` ranges, then ", ...").
std::string ranges_text(const std::vector<uint32_t>& sorted, size_t max_ranges = 6);
// "a, b and c"
std::string join_and(const std::vector<std::string>& parts);
// "1 scale byte", "3 scale bytes"
std::string count_of(uint64_t n, const std::string& noun);
// "group 3" / "groups 0-7" for a sorted list of distinct values
std::string named_ranges(const std::string& noun, const std::vector<uint32_t>& sorted);

}  // namespace tqref::anatomy
