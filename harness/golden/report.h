// Reports of a check run: JSON (machine-readable, every category count and the first mismatches
// of each case) and JUnit XML (one testcase per golden case, for CI dashboards).
#pragma once
#include <string>
#include <vector>

#include "golden/compare.h"

namespace tqref::golden {

struct RunInfo {
  std::string file, backend, inject, git_commit, ex2_profile_id;
};

std::string report_json(const RunInfo& run, const std::vector<CaseVerdict>& verdicts);
std::string report_junit(const RunInfo& run, const std::vector<CaseVerdict>& verdicts);
// Lines for the terminal: one per failing case with its categories and first mismatches.
std::string report_text(const CaseVerdict& v, size_t max_lines);

}  // namespace tqref::golden
