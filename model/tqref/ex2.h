// Exact software model of the GPU's approximate base-2 exponential unit (SASS MUFU.EX2, PTX
// ex2.approx.ftz.f32) on every non-positive input and NaN, and of the kernels' EXPF built on it.
// Structure measured exhaustively on an H200 (docs/ex2.md):
//   x NaN                    -> 0x7FFFFFFF
//   x = -0.0, x subnormal    -> 1.0 (ftz: subnormal inputs read as zero)
//   x in [-1, 0)             -> F[trunc(-x * 2^23)]   (result depends on 23 fraction bits only)
//   x in [-126, -1)          -> 2^ceil(x) * F[-(x - ceil(x)) * 2^23]   (exact scaling)
//   x < -126, -Inf           -> +0
// F is the fraction map, F[k] = EX2(-k * 2^-23), k = 0 .. 2^23: either the unit's datapath with
// its coefficients (tqref/ex2_datapath.h; sm_90) or, for a unit outside that family, the
// measured table of 2^23 + 1 entries.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tqref/ex2_datapath.h"

namespace tqref {

inline constexpr uint32_t kEx2FractionEntries = (1u << 23) + 1;

// What the branch-free evaluations read (model/ex2_eval.h): the datapath's coefficients prepared for
// 32-bit arithmetic, or the measured table.
struct Ex2EvalData {
  const uint32_t* table = nullptr;  // F[0 .. 2^23] of a table profile; null for a datapath
  uint32_t cut = 0;                 // datapath: squarer cut
  std::array<uint32_t, kEx2Segments> hi{}, lo{}, c1{}, c2{};  // per segment, see ex2_eval.h
};

class Ex2Profile {
 public:
  // From a measured fraction table (kEx2FractionEntries result bit patterns); throws
  // std::invalid_argument on a wrong size or a table outside the structure's invariants.
  static Ex2Profile from_table(std::string id, std::string arch, std::vector<uint32_t> frac_bits);
  // From the datapath; throws std::invalid_argument when a parameter is out of range or the
  // table it generates breaks the invariants. File I/O lives in harness/io/ex2_profile_io.h.
  static Ex2Profile from_datapath(std::string id, std::string arch, const Ex2Datapath& d);

  float ex2(float x) const;    // the unit; x must be <= 0 or NaN (positive x: std::domain_error)
  float expf(float x) const;   // EXPF of docs/spec.md section 5, for x <= 0 or NaN
  // ex2 / expf of x[0 .. n) into y (y may be x): the branch-free evaluation on the SIMD
  // path's instruction set (tqref/model_path.h), equal to ex2() / expf() bit for bit; a positive
  // x throws std::domain_error before anything is written.
  void ex2_many(const float* x, float* y, size_t n) const;
  void expf_many(const float* x, float* y, size_t n) const;
  uint32_t fraction(uint32_t k) const;             // F[k], k in [0, 2^23]
  std::vector<uint32_t> fraction_table() const;    // all of F (generated for a datapath)
  const std::optional<Ex2Datapath>& datapath() const { return datapath_; }  // empty: a table
  Ex2EvalData eval_data() const;                   // valid while this profile lives
  const std::string& id() const { return id_; }
  const std::string& arch() const { return arch_; }

 private:
  std::string id_, arch_;
  std::vector<uint32_t> frac_;           // a table profile's F; empty for a datapath
  std::optional<Ex2Datapath> datapath_;
  Ex2EvalData eval_;                     // datapath prepared (table pointer left null)
};

}  // namespace tqref
