// Reports of a check run: JSON (machine-readable, every category count and the first mismatches
// of each case) and JUnit XML (one testcase per golden case, for CI dashboards).
#pragma once
#include <string>
#include <vector>

#include "io/report_doc.h"
#include "judge/compare.h"

namespace tqref::judge {

struct RunInfo {
  std::string file, backend, inject, git_commit, ex2_profile_id;
};

// Written as text by report::json_text / report::junit_text (io/report_doc.h), or nested in a
// larger report (`tqref conform`, `--level T/I`).
report::Json report_json(const RunInfo& run, const std::vector<CaseVerdict>& verdicts);
report::JunitSuite report_junit(const RunInfo& run, const std::vector<CaseVerdict>& verdicts);
// Lines for the terminal: one per failing case with its categories, first mismatches and the
// failure anatomy.
std::string report_text(const CaseVerdict& v, size_t max_lines);
// The anatomy lines of report_text ("    anatomy: ...", "    hypotheses: ..."); "" when empty.
std::string explanation_text(const Explanation& e);

}  // namespace tqref::judge
