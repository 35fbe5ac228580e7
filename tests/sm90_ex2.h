// The committed sm_90 EX2 profiles, loaded once per test binary: the datapath (format 2, what
// every run loads) and the measured table it was fitted to (format 2 stored as a table, the ground truth).
#pragma once
#include <cinttypes>
#include <cstdio>
#include <string>

#include "io/ex2_profile_io.h"

namespace tqref::test {

inline const std::string kSm90Profile = std::string(TQREF_SOURCE_DIR) + "/data/hw/sm_90/ex2.h5";
inline const std::string kSm90Measured =
    std::string(TQREF_SOURCE_DIR) + "/data/hw/sm_90/ex2_measured_table.h5";

inline const Ex2Profile& sm90_profile() {
  static const Ex2Profile p = load_ex2_profile(kSm90Profile);
  return p;
}

inline const Ex2Profile& sm90_measured() {
  static const Ex2Profile p = load_ex2_profile(kSm90Measured);
  return p;
}

inline std::string hex32(uint32_t b) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08" PRIX32, b);
  return s;
}

}  // namespace tqref::test
