#include "tqref/ex2_datapath.h"

#include <algorithm>

#include "ex2_eval.h"
#include "simd_kernels.h"

namespace tqref {

std::string ex2_datapath_problem(const Ex2Datapath& d) {
  if (d.cut < kEx2MinCut || d.cut > kEx2MaxCut)
    return "datapath squarer cut " + std::to_string(d.cut) + " is outside [" +
           std::to_string(kEx2MinCut) + ", " + std::to_string(kEx2MaxCut) + "]";
  if (d.bias >= (1u << kEx2C0Shift))
    return "datapath bias " + std::to_string(d.bias) + " is outside [0, 2^13)";
  for (uint32_t s = 0; s < kEx2Segments; ++s) {
    const Ex2Segment& c = d.seg[s];
    if (c.c0 >= (1u << kEx2C0Bits) || c.c1 >= (1u << kEx2C1Bits) || c.c2 >= (1u << kEx2C2Bits))
      return "datapath segment " + std::to_string(s) + " coefficients (" + std::to_string(c.c0) +
             ", " + std::to_string(c.c1) + ", " + std::to_string(c.c2) +
             ") exceed the widths C0 < 2^25, C1 < 2^16, C2 < 2^10";
  }
  return "";
}

uint32_t ex2_truncated_square(uint32_t X, uint32_t cut) {
  // X_i at column 2i; X_i*X_j (i < j) once at column i + j + 1, standing for X_i*X_j + X_j*X_i.
  // Columns below the cut are not built.
  uint64_t kept = 0;
  for (uint32_t i = 0; i < kEx2OperandBits; ++i) {
    const uint64_t xi = (X >> i) & 1u;
    if (2 * i >= cut) kept += xi << (2 * i);
    for (uint32_t j = i + 1; j < kEx2OperandBits; ++j)
      if (i + j + 1 >= cut) kept += (xi & ((X >> j) & 1u)) << (i + j + 1);
  }
  return uint32_t(kept >> cut);  // every kept bit has weight >= 2^cut: nothing is lost here
}

uint32_t ex2_fraction_by_datapath_steps(const Ex2Datapath& d, uint32_t k) {
  if (k == 0) return 0x3F800000u;          // fraction zero: 2^0 = 1.0 exactly
  if (k == 1u << 23) return 0x3F000000u;   // -1: 2^-1 = 0.5 exactly
  // 1. The one's complement of the 23-bit fraction (not its negation): x' = jp * 2^-23.
  const uint32_t jp = ~k & 0x7FFFFFu;
  // 2. The top 6 bits select the segment, the low 17 bits are the operand.
  const uint32_t seg = jp >> kEx2OperandBits;
  const uint32_t X = jp & ((1u << kEx2OperandBits) - 1u);
  // 3. The truncated squarer.
  const uint64_t S = ex2_truncated_square(X, d.cut);
  // 4-5. Full-precision products and the sum, in units of 2^-38.
  const Ex2Segment& c = d.seg[seg];
  const uint64_t Y = (uint64_t(c.c0) << kEx2C0Shift) + d.bias + uint64_t(c.c1) * X +
                     uint64_t(c.c2) * S;
  // 6. Truncation to the 23-bit fraction of G in [1, 2); the result is G / 2.
  const uint64_t M = Y >> kEx2FinalShift;
  return 0x3F000000u | uint32_t(M);
}

std::vector<uint32_t> ex2_datapath_table(const Ex2Datapath& d) {
  const Ex2EvalData e = ex2_eval::prepare(d);
  const simd::SimdKernels& fk = simd::kernels();
  std::vector<uint32_t> f(kEx2FractionEntries);
  constexpr uint32_t kChunk = 1u << 16;
#pragma omp parallel for schedule(static)
  for (uint32_t k0 = 0; k0 < kEx2FractionEntries; k0 += kChunk)
    fk.fractions(e, k0, std::min(kChunk, kEx2FractionEntries - k0), f.data() + k0);
  return f;
}

}  // namespace tqref
