#include "analysis/study/sources.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "analysis/study/rng.h"
#include "tqref/numeric.h"

namespace tqref::study {

const char* dist_name(Dist d) {
  switch (d) {
    case Dist::gaussian: return "gaussian";
    case Dist::student_t3: return "student_t3";
    case Dist::student_t5: return "student_t5";
    case Dist::laplace: return "laplace";
    case Dist::outlier_channels: return "outlier_channels";
  }
  return "?";
}

namespace {

// Student-t with integer nu: Z / sqrt(chi2_nu / nu), chi2 as a sum of nu squared normals;
// scaled to unit variance (variance of t_nu is nu / (nu - 2)).
double student_t(Rng& r, int nu) {
  double z = r.normal(), chi2 = 0;
  for (int i = 0; i < nu; ++i) {
    double g = r.normal();
    chi2 += g * g;
  }
  return z / std::sqrt(chi2 / nu) * std::sqrt((nu - 2.0) / nu);
}

// Laplace with scale b = 1/sqrt(2) (variance 2 b^2 = 1), by inverting the CDF.
double laplace(Rng& r) {
  double u = r.uniform() - 0.5;
  double b = 1.0 / std::sqrt(2.0);
  return u < 0 ? b * std::log(1.0 + 2.0 * u) : -b * std::log(1.0 - 2.0 * u);
}

bool is_outlier_channel(uint32_t d) { return d % 32 == 7; }

}  // namespace

std::vector<uint16_t> make_source(Dist d, double sigma, uint32_t tokens, uint32_t heads,
                                  uint32_t head_dim, uint64_t seed, uint64_t stream) {
  if (head_dim == 0 || heads == 0) throw std::invalid_argument("make_source: heads and head_dim must be > 0");
  const uint64_t n = uint64_t(heads) * head_dim;
  std::vector<uint16_t> out(uint64_t(tokens) * n);
  // Outlier renormalisation: mean channel variance (k*G^2 + (D-k)) / D must become 1.
  uint32_t n_out = 0;
  for (uint32_t c = 0; c < head_dim; ++c) n_out += is_outlier_channel(c) ? 1u : 0u;
  const double base = 1.0 / std::sqrt((n_out * kOutlierGain * kOutlierGain + (head_dim - n_out)) /
                                      double(head_dim));
  constexpr uint32_t kChunk = 64;  // tokens per RNG stream
  const int64_t chunks = (tokens + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    Rng r(seed, stream * 1000003ull + uint64_t(ch));
    uint32_t t1 = std::min<uint32_t>(tokens, uint32_t(ch + 1) * kChunk);
    for (uint32_t t = uint32_t(ch) * kChunk; t < t1; ++t) {
      for (uint64_t e = 0; e < n; ++e) {
        double v = 0;
        switch (d) {
          case Dist::gaussian: v = r.normal(); break;
          case Dist::student_t3: v = student_t(r, 3); break;
          case Dist::student_t5: v = student_t(r, 5); break;
          case Dist::laplace: v = laplace(r); break;
          case Dist::outlier_channels:
            v = r.normal() * base * (is_outlier_channel(uint32_t(e % head_dim)) ? kOutlierGain : 1.0);
            break;
        }
        out[uint64_t(t) * n + e] = f32_to_bf16(float(v * sigma));
      }
    }
  }
  return out;
}

}  // namespace tqref::study
