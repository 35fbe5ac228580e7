// `tqref conform` on the device, after the CLI's pre-check (modules scanned, --hdim and --suites
// parsed, suite files found, a usable GPU): checks --device, creates --out, names the GPU, runs
// --calibrate (calibrate_ex2.h), takes this GPU's EX2 profile, generates the suites that have no
// file yet, runs every module (conform_run.h), adds the suites' coverage and writes conform.md,
// conform.json and conform.junit.xml into --out. Defined by conform_session.cpp in CUDA builds and
// by no_gpu.cpp in CPU-only builds (CMake links one: harness/gpu/CMakeLists.txt).
#pragma once
#include <chrono>

#include "conform/result.h"
#include "gpu/conform_run.h"

namespace tqref::conform {

struct SessionOptions {
  GpuRunOptions run;       // device, suites (path "" = generated into <out_dir>/golden), out_dir, ...;
                           // device_ex2 is this GPU's profile, set by the session
  bool calibrate = false;  // --calibrate: measure this GPU's EX2 unit first
  bool coverage = true;    // what the suites could have seen (judge/coverage.h); false: --no-coverage
  std::chrono::steady_clock::time_point started;  // res.seconds counts from here
};

// Fills `res` (its modules, options and provenance already set by the caller) and returns the exit
// code: exit_code(res) (conform/result.h) after the reports are written; else kExitUsage (a
// --device that does not exist), kExitBadInput (--out cannot be made), kExitInternal (a suite
// cannot be generated or a report written) or what --calibrate could not get past, each after its
// message on stderr. Progress goes to stdout. CPU-only builds return kExitNoDevice (their caller's
// GPU check, gpu/availability.h, has refused already).
int run_conform_session(ConformResult& res, SessionOptions o);

}  // namespace tqref::conform
