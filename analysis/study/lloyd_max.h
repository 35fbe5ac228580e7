// Scalar quantisers of a unit Gaussian, in double: the exact Lloyd-Max solution and the
// distortion of any codebook + decision bounds, by numerical integration.
#pragma once
#include <vector>

namespace tqref::study {

struct ScalarQuantizer {
  std::vector<double> levels;  // ascending reconstruction values, size N
  std::vector<double> bounds;  // ascending decision bounds, size N-1 (cell i = [b[i-1], b[i]))
};

// Exact Gaussian Lloyd-Max quantiser with N levels: iterates the centroid condition
// (level = E[x | cell], closed form with the normal pdf/cdf) and the midpoint condition
// (bound = mean of neighbouring levels) until no level moves by more than 1e-15.
// `iterations` (optional) receives the number of sweeps used.
ScalarQuantizer lloyd_max_gaussian(int levels, int* iterations = nullptr);

// Distortion E[(x - Q(x))^2] for x ~ N(0, sigma^2), by composite Gauss-Legendre integration of
// (x - level)^2 phi over each cell, tails truncated at +-14 sigma (mass < 1e-44). Divides by
// sigma^2, so it is the distortion per unit variance of a quantiser used at a mismatched scale:
// input x ~ N(0, sigma^2) against levels/bounds designed for N(0, 1).
double gaussian_distortion(const ScalarQuantizer& q, double sigma = 1.0);

// The same quantity in closed form (cell integrals of x^2 phi, x phi and phi), used by the
// tests as an independent check of the numerical integration.
double gaussian_distortion_closed_form(const ScalarQuantizer& q, double sigma = 1.0);

double normal_pdf(double x);
double normal_cdf(double x);  // via erfc, accurate in both tails

}  // namespace tqref::study
