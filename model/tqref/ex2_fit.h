// Fits the EX2 datapath family (tqref/ex2_datapath.h) to a measured fraction table, then checks
// the fitted datapath against every entry (docs/ex2.md, "Fitting a measured table").
//
// Per segment, every point X gives M * 2^15 <= Ybase + C1*X + C2*S(X) <= M * 2^15 + 2^15 - 1
// (M the entry's 23-bit fraction, Ybase = C0 * 2^13 + bias): for fixed (C1, C2) the points bound
// Ybase from both sides, so a pair is feasible when the intersection [lo, hi] is not empty. The
// pairs searched lie around a least-squares fit of (1, X, S) to the segment. One bias must then
// serve all 64 segments: the residues of [lo, hi] modulo 2^13 are intersected. Squarer cuts are
// tried in the order of kEx2FitCuts (sm_90's 19 first).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tqref/ex2_datapath.h"

namespace tqref {

struct Ex2SegmentFit {
  uint32_t feasible_pairs = 0;  // (C1, C2) pairs admitting some Ybase, at the chosen cut
  int64_t ybase_lo = 0, ybase_hi = 0;  // feasible Ybase range of the chosen pair
};

struct Ex2FitResult {
  std::optional<Ex2Datapath> datapath;  // empty: no member of the family reproduces the table
  std::vector<Ex2SegmentFit> segments;  // [64] for the fitted cut
  uint32_t bias_choices = 0;            // biases in [0, 2^13) that fit every segment
  uint64_t mismatches = 0;              // entries the fitted datapath gets wrong (0 when fitted)
  std::string summary;                  // one line per cut tried: fitted, or why not
  double seconds = 0;
};

// Cuts in the order they are tried.
inline constexpr uint32_t kEx2FitCuts[] = {19, 18, 20, 17, 21, 16, 22, 15, 14};
// Half-widths of the (C1, C2) window around the least-squares estimate.
inline constexpr int32_t kEx2FitC1Window = 8, kEx2FitC2Window = 8;

// `table`: F[0 .. 2^23] bit patterns (kEx2FractionEntries). Never throws for a table of the
// right size; a wrong size is std::invalid_argument.
Ex2FitResult fit_ex2_datapath(const std::vector<uint32_t>& table);

}  // namespace tqref
