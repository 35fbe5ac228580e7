#include "analysis/study/lloyd_max.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tqref::study {

double normal_pdf(double x) { return 0.3989422804014326779399461 * std::exp(-0.5 * x * x); }
double normal_cdf(double x) { return 0.5 * std::erfc(-x / 1.4142135623730950488016887); }

namespace {

// Probability mass and first moment of N(0,1) on [a, b] (infinite ends allowed).
double cell_mass(double a, double b) {
  // Use the upper tail for positive cells so that far-tail masses keep their precision.
  if (a >= 0) return normal_cdf(-a) - normal_cdf(-b);
  return normal_cdf(b) - normal_cdf(a);
}
double pdf_or_zero(double x) { return std::isinf(x) ? 0.0 : normal_pdf(x); }

}  // namespace

ScalarQuantizer lloyd_max_gaussian(int n, int* iterations) {
  if (n < 2) throw std::invalid_argument("lloyd_max_gaussian: levels must be >= 2");
  ScalarQuantizer q;
  q.levels.resize(n);
  q.bounds.resize(n - 1);
  for (int i = 0; i < n; ++i) q.levels[i] = -3.0 + 6.0 * (i + 0.5) / n;  // uniform start
  int it = 0;
  for (; it < 100000; ++it) {
    for (int i = 0; i + 1 < n; ++i) q.bounds[i] = 0.5 * (q.levels[i] + q.levels[i + 1]);
    double moved = 0;
    for (int i = 0; i < n; ++i) {
      double a = i == 0 ? -INFINITY : q.bounds[i - 1];
      double b = i + 1 == n ? INFINITY : q.bounds[i];
      // E[x | a < x < b] = (phi(a) - phi(b)) / (Phi(b) - Phi(a))
      double c = (pdf_or_zero(a) - pdf_or_zero(b)) / cell_mass(a, b);
      moved = std::max(moved, std::fabs(c - q.levels[i]));
      q.levels[i] = c;
    }
    if (moved < 1e-15) break;
  }
  for (int i = 0; i + 1 < n; ++i) q.bounds[i] = 0.5 * (q.levels[i] + q.levels[i + 1]);
  if (iterations) *iterations = it + 1;
  return q;
}

double gaussian_distortion(const ScalarQuantizer& q, double sigma) {
  // 10-point Gauss-Legendre nodes/weights on [-1, 1].
  static const double xg[5] = {0.1488743389816312, 0.4333953941292472, 0.6794095682990244,
                               0.8650633666889845, 0.9739065285171717};
  static const double wg[5] = {0.2955242247147529, 0.2692667193099963, 0.2190863625159820,
                               0.1494513491505806, 0.0666713443086881};
  const double lo = -14.0 * sigma, hi = 14.0 * sigma;
  const int n = int(q.levels.size());
  double total = 0;
  for (int i = 0; i < n; ++i) {
    double a = i == 0 ? lo : std::max(lo, q.bounds[i - 1]);
    double b = i + 1 == n ? hi : std::min(hi, q.bounds[i]);
    if (b <= a) continue;
    const double c = q.levels[i];
    // Composite rule: panels of at most sigma/64 keep the error far below 1e-15.
    int panels = std::max(1, int(std::ceil((b - a) / (sigma / 64.0))));
    double h = (b - a) / panels;
    for (int p = 0; p < panels; ++p) {
      double mid = a + (p + 0.5) * h, half = 0.5 * h;
      for (int k = 0; k < 5; ++k) {
        for (int s = -1; s <= 1; s += 2) {
          double x = mid + s * half * xg[k];
          total += wg[k] * half * (x - c) * (x - c) * normal_pdf(x / sigma) / sigma;
        }
      }
    }
  }
  return total / (sigma * sigma);
}

double gaussian_distortion_closed_form(const ScalarQuantizer& q, double sigma) {
  // With u = x / sigma and cell [a, b] in u: int (sigma u - c)^2 phi(u) du
  //   = sigma^2 [M + a phi(a) - b phi(b)] - 2 sigma c [phi(a) - phi(b)] + c^2 M,  M = mass.
  const int n = int(q.levels.size());
  double total = 0;
  for (int i = 0; i < n; ++i) {
    double a = i == 0 ? -INFINITY : q.bounds[i - 1] / sigma;
    double b = i + 1 == n ? INFINITY : q.bounds[i] / sigma;
    double m = cell_mass(a, b), pa = pdf_or_zero(a), pb = pdf_or_zero(b);
    double apa = std::isinf(a) ? 0.0 : a * pa, bpb = std::isinf(b) ? 0.0 : b * pb;
    double c = q.levels[i];
    total += sigma * sigma * (m + apa - bpb) - 2.0 * sigma * c * (pa - pb) + c * c * m;
  }
  return total / (sigma * sigma);
}

}  // namespace tqref::study
