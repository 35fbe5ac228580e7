// The three reports of a `tqref conform` run, all from one ConformResult (result.h):
//   conform.md         for people and pull requests: verdict, device and module facts (hashes),
//                      a table per kernel, the first mismatches of each failing case decoded, how
//                      to replay each failure
//   conform.json       for CI: every module, kernel, suite and case (`tqref check`'s report_json
//                      per module and suite, level T distributions where used)
//   conform.junit.xml  JUnit: one testsuite for the modules themselves (load, kernels, HDIM) and
//                      one per module and suite with a testcase per golden case
#pragma once
#include <string>

#include "conform/result.h"

namespace tqref::conform {

// The command that replays one failing case alone (reproducer file) on the GPU.
std::string replay_command(const ConformResult& r, const ModuleResult& m, const std::string& reproducer,
                           judge::Level level);

std::string report_markdown(const ConformResult& r, size_t mismatches_per_case);
std::string report_json(const ConformResult& r);
std::string report_junit(const ConformResult& r);

}  // namespace tqref::conform
