// Everything one `tqref conform` run found, as plain data: filled by the GPU run
// (gpu/conform_run.h), turned into Markdown/JSON/JUnit by report.h and into the exit code here.
// Reports and the exit code depend on nothing else, so both are tested from synthetic results.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "conform/module_file.h"
#include "judge/backend.h"
#include "judge/compare.h"
#include "judge/dispatch.h"
#include "judge/level_i.h"
#include "judge/level_t.h"
#include "judge/levels.h"

namespace tqref::conform {

// One golden suite on one module.
struct SuiteRun {
  std::string suite;  // "smoke", "standard", "real" or the path given
  std::string file;   // the golden file read
  std::vector<judge::CaseVerdict> verdicts;      // every case judged (exact or level T)
  std::vector<judge::LevelTVerdict> tolerance;   // level T details, one per level-T verdict
  std::vector<judge::LevelIVerdict> invariance; // level I, one per case judged (when run)
  std::map<std::string, uint64_t> skipped;       // reason -> cases not launched for it
  std::map<std::string, uint64_t> skipped_per_kernel;  // kernel -> cases not launched
  std::map<std::string, std::string> reproducers;  // failing case -> reproducer file
};

struct ModuleResult {
  ModuleFile file;
  std::string tag;       // unique short name in this run: "m02-writers.sm_90.cubin"
  std::string sha256;    // of the file's bytes
  uint64_t bytes = 0;
  ModuleInspection inspection;  // static pre-check (module_file.h)
  std::string load_error;       // the driver's error when it could not load the module
  std::string load_explanation; // "built for sm_121 (...), this GPU is sm_90", when known
  std::set<std::string> found;  // contract kernels cuModuleGetFunction found
  uint32_t hdim = 0;            // decoders' HDIM (0: the module has no decoder)
  bool hdim_exact = true;       // HDIM decided (stated, or by the probe's writes or values);
                                // false: decoders judged at level T
  std::string hdim_evidence;    // "stated", "writes", "values" or "none" (hdim_probe.h)
  std::string hdim_why;         // "--hdim", or the probe's sentence (hdim_probe.h)
  judge::Level decoder_level = judge::Level::D;  // D or T
  std::string decoder_level_why;
  std::vector<SuiteRun> suites;
  std::string fault;            // "<suite>/<case>" whose launch faulted the GPU ("" = none)
  std::string error;            // any other reason the module was not (fully) checked
  std::string builtin;          // "decode_hdim128" etc. when the bytes are tqref's own build
  std::string pin;              // what the module does differently, across its cases
                                // (module_pin.h); "" = no failing case
  judge::LaunchTimes launch_times;  // its launches' upload, kernel and download seconds
};

// Coverage of the run's suites (judge/coverage.h): entries observable of the total, and the blind
// ones ("<kernel>: <entry>"); total 0 = not computed (--no-coverage).
struct RunCoverage {
  uint64_t observable = 0, total = 0;
  std::vector<std::string> blind;
};

struct ConformResult {
  std::string command_line, started_utc, tqref_version, git_commit;
  std::string device;           // describe_device()
  std::string arch;             // "sm_90"
  std::string ex2_profile_id, ex2_profile_path, ex2_note;  // id "" = no profile: decoders at T
  float threshold = 0;
  judge::LevelTOptions topt;   // level T options the run used
  bool invariance = true;      // level I was run on every case (--no-invariance: not)
  judge::DispatchRule dispatch = judge::DispatchRule::published;              // --dispatch
  judge::OutOfContractLevel out_of_contract = judge::OutOfContractLevel::T;    // --out-of-contract
  double seconds = 0;
  std::vector<std::pair<std::string, std::string>> suites;  // name -> file
  std::vector<ModuleResult> modules;
  RunCoverage coverage;
};

// A module's facts known without a GPU: tag "m<index>-<file name>", size, sha256, pre-check.
ModuleResult new_module_result(const ModuleFile& f, size_t index);

// Per-kernel totals over every suite of one module.
struct KernelTotals {
  judge::Level level = judge::Level::W;
  uint64_t cases = 0, passed = 0, failed = 0, skipped = 0;
  uint64_t guard_violations = 0;  // elements in "guard" and "input-modified" categories
  uint64_t i_cases = 0, i_passed = 0, i_failed = 0;  // level I (invariance) of the same cases
};
std::map<std::string, KernelTotals> kernel_totals(const ModuleResult& m);

// False only when the pre-check read every image of the file and found none of the six kernels.
bool may_hold_contract_kernels(const ModuleInspection& i);

// Exit code of the run (harness/io/exit_code.h, docs/cli.md), first match wins:
//   6 kExitGpuFault   a launch faulted the GPU
//   1 kExitMismatch   a case failed (any level, level I included)
//   3 kExitBadInput   a module that may hold contract kernels could not be loaded, a kernel found
//                     was given no case (nothing to claim), or no module holds any of the six
//                     (modules without contract kernels, e.g. the engine's other kernels in the
//                     same directory, are listed in the report and otherwise ignored)
//   0 kExitOk         every kernel found passed every case it was given
int exit_code(const ConformResult& r);
// One line: "PASS: ..." / "FAIL: ...", with the reason for a non-zero code.
std::string verdict_line(const ConformResult& r);

}  // namespace tqref::conform
