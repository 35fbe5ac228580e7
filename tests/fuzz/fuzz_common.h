// Shared by the libFuzzer targets: the readers under test take a path, so each input is written
// to one scratch file per process (in $TMPDIR, /dev/shm when present: no disk traffic).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

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
