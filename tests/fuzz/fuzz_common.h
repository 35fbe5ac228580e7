// Shared by the libFuzzer targets: the readers under test take a path, so each input is written
// to one scratch file per process (in $TMPDIR, /dev/shm when present: no disk traffic).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/hdf5_validate.h"

// The HDF5 targets run the validating pass over each input in the fuzzer's own process
// (h5::set_validation_in_process), so that libFuzzer sees its coverage and its crashes and runs
// at full speed; a libhdf5 crash found this way is contained by the isolated pass in tqref
// (docs/reliability.md). libFuzzer calls LLVMFuzzerInitialize once; test_reliability, which
// replays the findings through the same entry points with the isolation on, renames it.
// TQREF_FUZZ_ISOLATE=1 keeps the isolation on (scripts/fuzz.sh replays each finding so: a
// finding the isolated pass refuses cleanly is a contained libhdf5 failure).
#define TQREF_FUZZ_VALIDATE_IN_PROCESS                                   \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                   \
    const char* isolate = std::getenv("TQREF_FUZZ_ISOLATE");             \
    tqref::h5::set_validation_in_process(!(isolate && *isolate == '1')); \
    return 0;                                                            \
  }

namespace tqref::fuzz {

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
