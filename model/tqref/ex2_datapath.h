// The fraction map of the GPU's EX2 unit as a datapath: a piecewise-quadratic interpolator with a
// truncated squarer (docs/ex2.md, "The datapath"). It computes F[k] = EX2(-k * 2^-23) for
// k = 0 .. 2^23 from 64 coefficient rows instead of a 2^23 + 1 entry table; the rest of the unit
// (integer part, ftz, NaN, the -126 cut-off) is the structure in tqref/ex2.h.
//
// Family "quadratic-interpolator-truncated-squarer-v1", for k in [1, 2^23 - 1]:
//   1. jp  = ~k & 0x7FFFFF            one's complement of the 23-bit fraction (x' = jp * 2^-23)
//   2. seg = jp >> 17                  top 6 bits: the segment (64 rows of coefficients)
//      X   = jp & 0x1FFFF              low 17 bits: the operand, units 2^-23
//   3. S   = sum of the partial-product bits of X^2 in columns >= cut, shifted right by cut
//            (folded array: X_i at column 2i, X_i*X_j for i < j at column i + j + 1)
//   4. C1*X (16 x 17 bits) and C2*S (10 x 15 bits) at full precision
//   5. Y   = C0 * 2^13 + bias + C1*X + C2*S        units 2^-38
//   6. M   = Y >> 15                   23-bit fraction of G = 1 + M * 2^-23 in [1, 2)
//      F[k] = G / 2                    bits 0x3F000000 | M
// and F[0] = 1.0, F[2^23] = 0.5 exactly (fraction zero is a power of two).
// Coefficient units: C0 * 2^-25 (25 bits), C1 * 2^-15 (16 bits), C2 * 2^-11 (10 bits); the
// family's parameters are `cut` (19 on sm_90) and `bias` (6114 on sm_90, units 2^-38).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tqref {

inline constexpr const char* kEx2DatapathFamily = "quadratic-interpolator-truncated-squarer-v1";
inline constexpr uint32_t kEx2SegmentBits = 6;                 // top bits of jp: the segment
inline constexpr uint32_t kEx2Segments = 1u << kEx2SegmentBits;
inline constexpr uint32_t kEx2OperandBits = 23 - kEx2SegmentBits;  // X: 17 bits
inline constexpr uint32_t kEx2C0Bits = 25, kEx2C1Bits = 16, kEx2C2Bits = 10;
inline constexpr uint32_t kEx2SumFractionBits = 38;            // Y in units of 2^-38
inline constexpr uint32_t kEx2C0Shift = kEx2SumFractionBits - kEx2C0Bits;  // 13
inline constexpr uint32_t kEx2FinalShift = kEx2SumFractionBits - 23;       // 15
// Squarer cuts the family admits: the range in which the branch-free evaluation's 32-bit split
// (model/ex2_eval.h) is exact. Below 14, C2 * S can exceed 2^30; above 26 the dropped part can
// exceed 2^32. (A cut moves S's weight, so C2's value is C2 * 2^(8 - cut); 2^-11 at 19.)
inline constexpr uint32_t kEx2MinCut = 14, kEx2MaxCut = 26;

struct Ex2Segment {
  uint32_t c0 = 0;  // [0, 2^25): constant term, value C0 * 2^-25
  uint32_t c1 = 0;  // [0, 2^16): linear term, value C1 * 2^-15
  uint32_t c2 = 0;  // [0, 2^10): quadratic term, value C2 * 2^-11 (at cut 19)
  bool operator==(const Ex2Segment&) const = default;
};

struct Ex2Datapath {
  uint32_t cut = 19;   // squarer: partial-product columns below `cut` are dropped
  uint32_t bias = 0;   // [0, 2^13): added to every sum, units 2^-38
  std::array<Ex2Segment, kEx2Segments> seg{};
  bool operator==(const Ex2Datapath&) const = default;
};

// Empty when every parameter is inside the widths above, else what is out of range.
std::string ex2_datapath_problem(const Ex2Datapath& d);

// Step 3 as the hardware builds it: the bits of the folded partial-product array of X^2 in
// columns >= cut, summed and shifted right by cut (X < 2^17).
uint32_t ex2_truncated_square(uint32_t X, uint32_t cut);

// F[k] bit pattern by the datapath's steps as listed above: the readable generator, k in
// [0, 2^23].
uint32_t ex2_fraction_by_datapath_steps(const Ex2Datapath& d, uint32_t k);

// All 2^23 + 1 entries F[0 .. 2^23] by the SIMD evaluation the model calls (model/ex2_eval.h,
// on the SIMD lanes of tqref/model_path.h's instruction set, OpenMP across chunks), for
// parameters that pass ex2_datapath_problem.
std::vector<uint32_t> ex2_datapath_table(const Ex2Datapath& d);

}  // namespace tqref
