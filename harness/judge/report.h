// Reports of a check run: JSON (machine-readable, every category count and the first mismatches
// of each case) and JUnit XML (one testcase per golden case, for CI dashboards).
#pragma once
#include <string>
#include <vector>

#include "judge/compare.h"

namespace tqref::golden {

struct RunInfo {
  std::string file, backend, inject, git_commit, ex2_profile_id;
};

std::string report_json(const RunInfo& run, const std::vector<CaseVerdict>& verdicts);
std::string report_junit(const RunInfo& run, const std::vector<CaseVerdict>& verdicts);
// Lines for the terminal: one per failing case with its categories, first mismatches and the
// failure anatomy.
std::string report_text(const CaseVerdict& v, size_t max_lines);
// The anatomy lines of report_text ("    anatomy: ...", "    hypotheses: ..."); "" when empty.
std::string explanation_text(const Explanation& e);

// A JSON string literal (quotes included), and XML attribute/text escaping, as the reports above
// write them (for other reports built around these, e.g. `tqref conform`).
std::string json_quote(const std::string& s);
std::string xml_escape(const std::string& s);

}  // namespace tqref::golden
