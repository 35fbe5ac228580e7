// Exact software model of the GPU's approximate reciprocal, square root and division: the PTX
// instructions nvcc emits for `1.0f / x`, `sqrtf(x)` and `a / b` when a build leaves the contract's
// flags (-prec-div=false: div.full.f32, rcp.approx.f32; -prec-sqrt=false: sqrt.approx.f32;
// --use_fast_math: div.approx.ftz.f32, rcp.approx.ftz.f32, sqrt.approx.ftz.f32). The variants
// `prec-div`, `prec-sqrt` and `fast-math` (tqref/variant.h) run on it. Structure measured on an
// H200 against every input of each unary instruction (docs/approx-units.md):
//   rcp(x):   NaN -> 0x7FFFFFFF; +-0 -> +-Inf; +-Inf -> +-0;
//             normal x = +-1.m * 2^E -> +-R[m] * 2^-E, rounded once into the subnormals;
//             subnormal x -> rcp(x * 2^24) * 2^24.
//   sqrt(x):  NaN, x < 0 (but -0), -Inf -> 0x7FFFFFFF; +-0 -> +-0; +Inf -> +Inf;
//             normal x = f * 4^k, f in [1, 4) -> S[f] * 2^k; subnormal x -> sqrt(x * 2^24) * 2^-12.
//   .ftz:     subnormal inputs read as zero of their sign, subnormal results flush to zero.
//   div(a, b): a' * rcp.ftz(b') in one rounding (the .ftz form flushes a' and the product), where
//             (a', b') = (a, b) * s, each product rounded: s = 1/4 for div.full when |b| > 2^126;
//             s = 2^24 without .ftz when |b| < 2^-126 (both divisions); else s = 1. So
//             div.approx of |b| > 2^126 is a signed zero (or NaN).
// R[m] (m < 2^23, x in [1, 2)) and S[i] (i < 2^24, x in [1, 4)) are the measured fraction tables,
// stored as each entry's difference from the correctly rounded result.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tqref {

inline constexpr uint32_t kRcpEntries = 1u << 23;   // x = 1 + m * 2^-23
inline constexpr uint32_t kSqrtEntries = 1u << 24;  // x = bits 0x3F800000 + i, in [1, 4)

// The quotient instructions a build can emit for `a / b` (and `1.0f / x`).
enum class Division : uint8_t { rn, full, approx };

class ApproxUnits {
 public:
  // From the measured deltas: R_bits[m] = bits(1.0f / x) + rcp_delta[m], S_bits[i] =
  // bits(sqrtf(x)) + sqrt_delta[i]. Throws std::invalid_argument on a wrong size or an entry
  // outside the structure (R in (0.5, 1], S in [1, 2)).
  static ApproxUnits from_deltas(std::string arch, const std::vector<int8_t>& rcp_delta,
                                 const std::vector<int8_t>& sqrt_delta);

  float rcp(float x, bool ftz) const;                     // rcp.approx[.ftz].f32
  float sqrt(float x, bool ftz) const;                    // sqrt.approx[.ftz].f32
  float div(Division d, float a, float b, bool ftz) const;  // div.{rn,full,approx}[.ftz].f32
  const std::string& arch() const { return arch_; }

 private:
  std::string arch_;
  std::vector<uint32_t> rcp_, sqrt_;  // R and S as bit patterns
};

// The units the variant models use (one per process, like the model path). The harness installs
// a source that loads them on first use (harness/io/approx_units_io.h); approx_units() throws
// std::runtime_error when none is installed or the source fails, naming what is missing.
using ApproxUnitsSource = std::shared_ptr<const ApproxUnits> (*)();
void set_approx_units_source(ApproxUnitsSource source);
const ApproxUnits& approx_units();

}  // namespace tqref
