// Random-sign Hadamard rotations of one head's V vector (TurboQuant / QuaRot style), used to
// study what rotating V before quantisation changes.
#pragma once
#include <cstdint>
#include <vector>

namespace tqref::study {

// A +-1 Hadamard matrix of order n (H H^T = n I), row-major [n][n]. Supported orders: powers of
// two (Sylvester: the Walsh-Hadamard matrix) and 12 * 2^k (Sylvester (x) Paley's order-12
// matrix), which covers head_dim 48 of the real traces. Throws std::invalid_argument otherwise.
std::vector<int8_t> hadamard_matrix(uint32_t n);
bool hadamard_order_supported(uint32_t n);

// R = H diag(signs) / sqrt(n): orthonormal, so it preserves L2 norms and the total squared error.
class RandomRotation {
 public:
  RandomRotation(uint32_t n, uint64_t seed);
  uint32_t size() const { return n_; }
  void apply(const double* x, double* y) const;    // y = R x
  void inverse(const double* y, double* x) const;  // x = R^T y
 private:
  uint32_t n_;
  std::vector<int8_t> h_;
  std::vector<double> signs_;
};

}  // namespace tqref::study
