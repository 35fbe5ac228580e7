// Exact software model of the GPU's approximate base-2 exponential unit (SASS MUFU.EX2, PTX
// ex2.approx.ftz.f32) on every non-positive input and NaN, and of the kernels' EXPF built on it.
// Structure measured exhaustively on an H200 (docs/ex2.md):
//   x NaN                    -> 0x7FFFFFFF
//   x = -0.0, x subnormal    -> 1.0 (ftz: subnormal inputs read as zero)
//   x in [-1, 0)             -> F[trunc(-x * 2^23)]   (result depends on 23 fraction bits only)
//   x in [-126, -1)          -> 2^ceil(x) * F[-(x - ceil(x)) * 2^23]   (exact scaling)
//   x < -126, -Inf           -> +0
// F is the profile's fraction table: F[k] = EX2(-k * 2^-23), k = 0 .. 2^23.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tqref {

class Ex2Profile {
 public:
  // Builds a profile from a measured fraction table (kEx2FractionEntries result bit patterns,
  // F[k] = EX2(-k * 2^-23)); throws std::invalid_argument on a wrong size. File I/O lives in
  // harness/io/ex2_profile_io.h.
  static Ex2Profile from_table(std::string id, std::string arch, std::vector<uint32_t> frac_bits);

  float ex2(float x) const;    // the unit; x must be <= 0 or NaN (positive x: std::domain_error)
  float expf(float x) const;   // EXPF of docs/spec.md section 5, for x <= 0 or NaN
  const std::string& id() const { return id_; }
  const std::string& arch() const { return arch_; }
  const std::vector<uint32_t>& fraction_table() const { return frac_; }

 private:
  std::string id_, arch_;
  std::vector<uint32_t> frac_;
};

inline constexpr uint32_t kEx2FractionEntries = (1u << 23) + 1;

}  // namespace tqref
