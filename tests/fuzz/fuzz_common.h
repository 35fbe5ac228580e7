// Shared by the libFuzzer targets: the readers under test take a path, so each input is written
// to one scratch file per process (in $TMPDIR, /dev/shm when present: no disk traffic).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/hdf5_validate.h"
#include "tqref/model_path.h"

// The HDF5 targets run the validating pass over each input in the fuzzer's own process
// (h5::set_validation_in_process), so that libFuzzer sees its coverage and its crashes and runs
// at full speed; a libhdf5 crash found this way is contained by the isolated pass in tqref
// (docs/reliability.md). libFuzzer calls LLVMFuzzerInitialize once; test_reliability, which
// replays the findings through the same entry points with the isolation on, renames it.
// TQREF_FUZZ_ISOLATE=1 keeps the isolation on (scripts/fuzz.sh replays each finding so: a
// finding the isolated pass refuses because libhdf5 failed in its child is a contained libhdf5
// failure).
//
// Under libFuzzer the model (the golden target's oracle; the EX2 loader's table expansion) runs
// its avx2 build where the CPU has it: under clang, the avx512 build's run-time lane permutes are
// lane loops (model/vec_ops.h), and expanding the 2^23-entry EX2 table at the start of every
// fork-mode job took 2.1 s with them against 0.9 s. The builds are bit-identical
// (test_simd_paths), and none of them is the code under test here.
// TQREF_FUZZ_IDLE_S (scripts/fuzz.sh's replays): the isolated child's idle deadline.
#define TQREF_FUZZ_VALIDATE_IN_PROCESS                                            \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                            \
    tqref::h5::set_validation_in_process(!tqref::fuzz::replaying_isolated());     \
    if (const char* s = std::getenv("TQREF_FUZZ_IDLE_S"))                         \
      tqref::h5::set_validation_idle_timeout(std::atof(s));                       \
    for (const std::string& isa : tqref::simd_isas())                             \
      if (isa == "avx2") tqref::set_simd_isa(isa);                                \
    return 0;                                                                     \
  }

namespace tqref::fuzz {

// TQREF_FUZZ_ISOLATE=1: scripts/fuzz.sh replays a saved input with the isolation on.
inline bool replaying_isolated() {
  static const bool on = [] {
    const char* v = std::getenv("TQREF_FUZZ_ISOLATE");
    return v && *v == '1';
  }();
  return on;
}

// A refusal of the input (the expected outcome for most of them). Printed only in an isolated
// replay, where scripts/fuzz.sh counts a saved input as a contained libhdf5 failure only when the
// refusal says that libhdf5 failed in the validating child.
inline void refused(const std::string& why) {
  if (replaying_isolated()) std::fprintf(stderr, "fuzz: input refused: %s\n", why.c_str());
}

inline const std::string& scratch_path(const char* suffix) {
  static const std::string path = [suffix] {
    const char* dir = std::getenv("TQREF_FUZZ_TMPDIR");
    if (!dir) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/tqref-fuzz-" + std::to_string(getpid()) + suffix;
  }();
  static const bool cleanup = [] {
    std::atexit([] { std::remove(path.c_str()); });  // a normal exit leaves no scratch file
    return true;
  }();
  (void)cleanup;
  return path;
}

// Writes the input to the scratch file; false when it cannot (the run then aborts loudly).
inline bool write_input(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

}  // namespace tqref::fuzz
