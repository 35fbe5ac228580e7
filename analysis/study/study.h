// The quantisation-error studies behind `tqref study` (docs/studies.md): each function appends
// tidy tables (one row per measurement) and reports progress on stderr.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/study/table.h"

namespace tqref::study {

struct StudyOptions {
  bool quick = false;      // seconds-long smoke run (ctest): fewer tokens, lengths, magnitudes
  uint64_t seed = 20240607;
  std::string traces_dir;  // data/traces: real V/K/Q traces (*.h5); empty = skip real traces
  std::string ex2_arch = "sm_90";  // EX2 profile used by the decode model
  bool progress = true;    // progress lines on stderr
};

// 1. Theory: exact Gaussian Lloyd-Max quantisers against the SPEC's four-decimal tables, the
//    TurboQuant bounds, and the distortion of a codebook used at a mismatched scale.
void run_theory(const StudyOptions& o, std::vector<Table>& out);

// 1 + 2. V quantisation MSE of synthetic sources per format and quantiser variant, with and
//    without a random-sign Hadamard rotation, and the fp8 scale statistics versus magnitude.
void run_vquant_synthetic(const StudyOptions& o, std::vector<Table>& out);

}  // namespace tqref::study
namespace tqref { class Ex2Profile; }
namespace tqref::study {

// Studies 1-3 on every real trace in o.traces_dir: tables "vq_trace" and (when ex2 is given)
// "decode_trace". Does nothing, with a progress line, when the directory has no *.h5.
void run_traces(const StudyOptions& o, const Ex2Profile* ex2, std::vector<Table>& out);

// Progress line on stderr ("[study] ..."), when enabled.
void progress(const StudyOptions& o, const char* fmt, ...);

}  // namespace tqref::study
