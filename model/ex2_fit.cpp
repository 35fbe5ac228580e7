#include "tqref/ex2_fit.h"

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "tqref/ex2.h"

namespace tqref {

namespace {

constexpr uint32_t kPoints = 1u << kEx2OperandBits;  // X values per segment
constexpr int64_t kUlp = int64_t(1) << kEx2FinalShift;  // one unit of M in Y (2^15)
constexpr uint32_t kResidues = 1u << kEx2C0Shift;     // Ybase mod 2^13: the bias
constexpr uint32_t kSubsample = 64;                   // stride of the first, cheap feasibility pass

// One segment's points: the bounds on Y = Ybase + C1*X + C2*S that its entries impose.
struct SegmentPoints {
  std::vector<uint32_t> X, S;
  std::vector<int64_t> lo, hi;  // M * 2^15 and M * 2^15 + 2^15 - 1
  std::string problem;          // an entry outside [0.5, 1): no member can produce it
};

SegmentPoints segment_points(const std::vector<uint32_t>& table, uint32_t seg,
                             const std::vector<uint32_t>& square) {
  SegmentPoints p;
  for (uint32_t X = 0; X < kPoints; ++X) {
    const uint32_t jp = (seg << kEx2OperandBits) | X;
    const uint32_t k = 0x7FFFFFu - jp;  // jp = ~k & 0x7FFFFF
    if (k == 0) continue;               // F[0] = 1.0 is exact, outside the datapath
    const uint32_t f = table[k];
    if (f < 0x3F000000u || f >= 0x3F800000u) {
      p.problem = "F[" + std::to_string(k) + "] is outside [0.5, 1)";
      return p;
    }
    const int64_t m = int64_t(f - 0x3F000000u);
    p.X.push_back(X);
    p.S.push_back(square[X]);
    p.lo.push_back(m * kUlp);
    p.hi.push_back(m * kUlp + kUlp - 1);
  }
  return p;
}

// Least-squares (C1, C2) for the interval midpoints over the features (1, X, S), in double with
// centred, scaled features (the normal equations stay well conditioned).
void least_squares(const SegmentPoints& p, double* c1, double* c2) {
  const double n = double(p.X.size());
  double mx = 0, ms = 0, my = 0;
  for (size_t i = 0; i < p.X.size(); ++i) {
    mx += p.X[i];
    ms += p.S[i];
    my += double(p.lo[i]) + double(kUlp) / 2;
  }
  mx /= n, ms /= n, my /= n;
  double sxx = 0, sxs = 0, sss = 0, sxy = 0, ssy = 0;
  for (size_t i = 0; i < p.X.size(); ++i) {
    const double x = (p.X[i] - mx) / kPoints, s = (p.S[i] - ms) / kPoints;
    const double y = (double(p.lo[i]) + double(kUlp) / 2 - my) / kPoints;
    sxx += x * x, sxs += x * s, sss += s * s, sxy += x * y, ssy += s * y;
  }
  const double det = sxx * sss - sxs * sxs;
  *c1 = (sxy * sss - ssy * sxs) / det;
  *c2 = (ssy * sxx - sxy * sxs) / det;
}

// The feasible Ybase range for (C1, C2) over every `step`-th point (lo > hi: infeasible).
void ybase_range(const SegmentPoints& p, int64_t c1, int64_t c2, size_t step, int64_t* lo,
                 int64_t* hi) {
  int64_t a = std::numeric_limits<int64_t>::min(), b = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < p.X.size(); i += step) {
    const int64_t t = c1 * p.X[i] + c2 * p.S[i];
    a = std::max(a, p.lo[i] - t);
    b = std::min(b, p.hi[i] - t);
  }
  if (step > 1) {  // the last point always counts: it bounds the segment's far end
    const size_t i = p.X.size() - 1;
    const int64_t t = c1 * p.X[i] + c2 * p.S[i];
    a = std::max(a, p.lo[i] - t);
    b = std::min(b, p.hi[i] - t);
  }
  *lo = a, *hi = b;
}

struct Candidate {
  uint32_t c1, c2;
  int64_t lo, hi;  // feasible Ybase
};

struct SegmentSearch {
  std::vector<Candidate> feasible;
  std::string problem;  // why none is feasible
};

SegmentSearch search_segment(const std::vector<uint32_t>& table, uint32_t seg,
                             const std::vector<uint32_t>& square) {
  SegmentSearch r;
  const SegmentPoints p = segment_points(table, seg, square);
  if (!p.problem.empty()) {
    r.problem = p.problem;
    return r;
  }
  double c1e, c2e;
  least_squares(p, &c1e, &c2e);
  const int64_t c1c = std::llround(c1e), c2c = std::llround(c2e);
  for (int64_t c2 = c2c - kEx2FitC2Window; c2 <= c2c + kEx2FitC2Window; ++c2)
    for (int64_t c1 = c1c - kEx2FitC1Window; c1 <= c1c + kEx2FitC1Window; ++c1) {
      if (c1 < 0 || c2 < 0 || c1 >= (1 << kEx2C1Bits) || c2 >= (1 << kEx2C2Bits)) continue;
      int64_t lo, hi;
      ybase_range(p, c1, c2, kSubsample, &lo, &hi);  // necessary condition, 1/64 of the cost
      if (lo > hi) continue;
      ybase_range(p, c1, c2, 1, &lo, &hi);
      if (lo <= hi) r.feasible.push_back({uint32_t(c1), uint32_t(c2), lo, hi});
    }
  if (r.feasible.empty())
    r.problem = "no (C1, C2) within +-" + std::to_string(kEx2FitC1Window) + ", +-" +
                std::to_string(kEx2FitC2Window) + " of the least-squares (" +
                std::to_string(c1e) + ", " + std::to_string(c2e) + ") admits a C0";
  return r;
}

// Residues r = Ybase mod 2^13 reachable within [lo, hi].
std::bitset<kResidues> residues(int64_t lo, int64_t hi) {
  std::bitset<kResidues> b;
  if (hi - lo + 1 >= int64_t(kResidues)) return b.set();
  for (int64_t y = lo; y <= hi; ++y) b.set(size_t(((y % kResidues) + kResidues) % kResidues));
  return b;
}

// Smallest C0 with C0 * 2^13 + bias in [lo, hi], or -1.
int64_t first_c0(int64_t lo, int64_t hi, uint32_t bias) {
  const int64_t num = lo - int64_t(bias);
  const int64_t c0 = num <= 0 ? 0 : (num + kResidues - 1) / kResidues;
  return c0 * kResidues + bias <= hi ? c0 : -1;
}

// The whole fit at one cut; "" and *out set, or why it fails.
std::string fit_at_cut(const std::vector<uint32_t>& table, uint32_t cut, Ex2FitResult* out) {
  std::vector<uint32_t> square(kPoints);
  for (uint32_t X = 0; X < kPoints; ++X) square[X] = ex2_truncated_square(X, cut);
  std::vector<SegmentSearch> found(kEx2Segments);
#pragma omp parallel for schedule(dynamic, 1)
  for (int s = 0; s < int(kEx2Segments); ++s) found[size_t(s)] = search_segment(table, uint32_t(s), square);
  std::bitset<kResidues> common;
  common.set();
  for (uint32_t s = 0; s < kEx2Segments; ++s) {
    if (!found[s].problem.empty()) return "segment " + std::to_string(s) + ": " + found[s].problem;
    std::bitset<kResidues> any;
    for (const Candidate& c : found[s].feasible) any |= residues(c.lo, c.hi);
    common &= any;
  }
  if (common.none()) return "every segment fits, but no bias in [0, 2^13) serves all 64";
  uint32_t bias = 0;
  while (!common.test(bias)) ++bias;
  Ex2Datapath d;
  d.cut = cut;
  d.bias = bias;
  out->segments.assign(kEx2Segments, {});
  for (uint32_t s = 0; s < kEx2Segments; ++s) {
    out->segments[s].feasible_pairs = uint32_t(found[s].feasible.size());
    for (const Candidate& c : found[s].feasible) {  // the first pair (smallest C2, C1) that serves
      const int64_t c0 = first_c0(c.lo, c.hi, bias);
      if (c0 < 0) continue;
      if (c0 >= (int64_t(1) << kEx2C0Bits)) return "segment " + std::to_string(s) + ": C0 exceeds 25 bits";
      d.seg[s] = {uint32_t(c0), c.c1, c.c2};
      out->segments[s].ybase_lo = c.lo;
      out->segments[s].ybase_hi = c.hi;
      break;
    }
  }
  out->bias_choices = uint32_t(common.count());
  out->datapath = d;
  return "";
}

}  // namespace

Ex2FitResult fit_ex2_datapath(const std::vector<uint32_t>& table) {
  if (table.size() != kEx2FractionEntries)
    throw std::invalid_argument("fit_ex2_datapath: table has " + std::to_string(table.size()) +
                                " entries; expected 2^23 + 1");
  const auto t0 = std::chrono::steady_clock::now();
  Ex2FitResult r;
  if (table.front() != 0x3F800000u || table.back() != 0x3F000000u) {
    r.summary = "F[0] is not 1.0 or F[2^23] is not 0.5: outside the family";
  } else {
    for (uint32_t cut : kEx2FitCuts) {
      Ex2FitResult attempt;
      const std::string why = fit_at_cut(table, cut, &attempt);
      if (!why.empty()) {
        r.summary += "cut " + std::to_string(cut) + ": " + why + "\n";
        continue;
      }
      // Every entry, through the evaluation the model uses, not only the points searched.
      const std::vector<uint32_t> got = ex2_datapath_table(*attempt.datapath);
      for (size_t k = 0; k < got.size(); ++k) attempt.mismatches += got[k] != table[k];
      if (attempt.mismatches != 0) {
        r.summary += "cut " + std::to_string(cut) + ": fitted, but " +
                     std::to_string(attempt.mismatches) + " entries differ\n";
        continue;
      }
      attempt.summary = r.summary + "cut " + std::to_string(cut) + ": fitted, bias " +
                        std::to_string(attempt.datapath->bias) + " (" +
                        std::to_string(attempt.bias_choices) +
                        " possible), all 2^23 + 1 entries equal\n";
      r = std::move(attempt);
      break;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tqref
