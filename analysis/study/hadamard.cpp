#include "analysis/study/hadamard.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "analysis/study/rng.h"

namespace tqref::study {

namespace {

// Paley construction I for q = 11 (q = 3 mod 4): H = I + S with S = [[0, 1^T], [-1, Q]] and
// Q[i][j] = chi(j - i), chi the quadratic character mod 11. H H^T = 12 I.
std::vector<int8_t> paley12() {
  const int q = 11, n = 12;
  auto chi = [&](int a) {
    a = ((a % q) + q) % q;
    if (a == 0) return 0;
    for (int x = 1; x < q; ++x)
      if ((x * x) % q == a) return 1;
    return -1;
  };
  std::vector<int8_t> h(n * n, 0);
  for (int j = 1; j < n; ++j) h[0 * n + j] = 1;
  for (int i = 1; i < n; ++i) h[i * n + 0] = -1;
  for (int i = 1; i < n; ++i)
    for (int j = 1; j < n; ++j) h[i * n + j] = int8_t(chi(j - i));
  for (int i = 0; i < n; ++i) h[i * n + i] = int8_t(h[i * n + i] + 1);
  return h;
}

std::vector<int8_t> kron(const std::vector<int8_t>& a, uint32_t na, const std::vector<int8_t>& b,
                         uint32_t nb) {
  uint32_t n = na * nb;
  std::vector<int8_t> h(uint64_t(n) * n);
  for (uint32_t i = 0; i < na; ++i)
    for (uint32_t j = 0; j < na; ++j)
      for (uint32_t k = 0; k < nb; ++k)
        for (uint32_t l = 0; l < nb; ++l)
          h[uint64_t(i * nb + k) * n + j * nb + l] = int8_t(a[i * na + j] * b[k * nb + l]);
  return h;
}

}  // namespace

bool hadamard_order_supported(uint32_t n) {
  if (n == 0) return false;
  uint32_t pow2 = 1;
  while (n % 2 == 0) { n /= 2; pow2 *= 2; }
  return n == 1 || (n == 3 && pow2 >= 4);  // 2^k, or 12 * 2^k = 3 * 2^(k+2)
}

std::vector<int8_t> hadamard_matrix(uint32_t n) {
  uint32_t odd = n, pow2 = 1;
  while (odd > 0 && odd % 2 == 0) { odd /= 2; pow2 *= 2; }
  std::vector<int8_t> base{1};
  uint32_t nb = 1;
  if (odd == 3 && pow2 >= 4) {
    base = paley12();
    nb = 12;
    pow2 /= 4;
  } else if (odd != 1) {
    throw std::invalid_argument("hadamard_matrix: order " + std::to_string(n) +
                                " unsupported (allowed: 2^k or 12*2^k)");
  }
  const std::vector<int8_t> h2{1, 1, 1, -1};
  std::vector<int8_t> h = base;
  for (uint32_t m = nb; pow2 > 1; pow2 /= 2, m *= 2) h = kron(h2, 2, h, m);
  return h;
}

RandomRotation::RandomRotation(uint32_t n, uint64_t seed) : n_(n), h_(hadamard_matrix(n)), signs_(n) {
  Rng r(seed, 0x5167u);
  for (auto& s : signs_) s = r.coin() ? -1.0 : 1.0;
}

void RandomRotation::apply(const double* x, double* y) const {
  const double norm = 1.0 / std::sqrt(double(n_));
  for (uint32_t i = 0; i < n_; ++i) {
    double acc = 0;
    for (uint32_t j = 0; j < n_; ++j) acc += h_[uint64_t(i) * n_ + j] * signs_[j] * x[j];
    y[i] = acc * norm;
  }
}

void RandomRotation::inverse(const double* y, double* x) const {
  const double norm = 1.0 / std::sqrt(double(n_));
  for (uint32_t j = 0; j < n_; ++j) {
    double acc = 0;
    for (uint32_t i = 0; i < n_; ++i) acc += h_[uint64_t(i) * n_ + j] * y[i];
    x[j] = acc * signs_[j] * norm;
  }
}

}  // namespace tqref::study
