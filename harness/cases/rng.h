// Portable, documented random numbers for golden data: the same seed gives the same bits on every
// host, compiler and C library. Nothing here calls libm or <random> distributions (whose output
// differs between standard libraries): only integer operations and IEEE +, -, *, / and sqrt, which
// are correctly rounded everywhere (the build forbids contraction into fma).
#pragma once
#include <cstdint>
#include <cmath>
#include <cstring>

namespace tqref::cases {

// SplitMix64 (Steele, Lea, Flood 2014): seeds xoshiro and derives per-case seeds.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Seed of case `index` of a suite generated with `seed`: independent of the thread count and of
// which shard generates the case.
inline uint64_t case_seed(uint64_t seed, uint64_t index) {
  uint64_t s = seed ^ (index * 0xD1B54A32D192ED03ull);
  splitmix64(s);
  return splitmix64(s);
}

// Natural logarithm for x > 0 from exact bit operations and a fixed series, so it rounds the same
// on every host (libm's log may differ in the last bit between C libraries). Accuracy ~1e-15
// relative, far more than the Gaussian sampler needs; what matters is that it is deterministic.
inline double det_log(double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  int e = int((b >> 52) & 0x7FF) - 1023;
  b = (b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;  // mantissa m in [1, 2)
  double m;
  std::memcpy(&m, &b, 8);
  if (m > 1.4142135623730951) {  // keep m in [sqrt(1/2), sqrt(2)) so the series converges fast
    m = m * 0.5;
    e += 1;
  }
  // ln m = 2 atanh(t), t = (m-1)/(m+1), |t| < 0.172: 2 (t + t^3/3 + t^5/5 + ...), 20 terms
  const double t = (m - 1.0) / (m + 1.0), t2 = t * t;
  double sum = 0.0, p = t;
  for (int k = 0; k < 20; ++k) {
    sum = sum + p / double(2 * k + 1);
    p = p * t2;
  }
  return double(e) * 0.6931471805599453 + 2.0 * sum;
}

// xoshiro256** 1.0 (Blackman, Vigna 2018), seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t r = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
  }
  // Uniform integer in [0, n), n > 0 (multiply-shift; the tiny bias is irrelevant here).
  uint64_t below(uint64_t n) { return uint64_t((unsigned __int128)next() * n >> 64); }
  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Standard normal: Marsaglia's polar method with det_log (one value per call; the second
  // value of each pair is dropped to keep the sequence simple).
  double gaussian() {
    for (;;) {
      const double u = 2.0 * uniform() - 1.0, v = 2.0 * uniform() - 1.0;
      const double s = u * u + v * v;
      if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * det_log(s) / s);
    }
  }
  // Student-t with `nu` (integer) degrees of freedom: z / sqrt(chi2_nu / nu).
  double student_t(int nu) {
    const double z = gaussian();
    double chi2 = 0.0;
    for (int i = 0; i < nu; ++i) {
      const double g = gaussian();
      chi2 = chi2 + g * g;
    }
    return z / std::sqrt(chi2 / double(nu));
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace tqref::cases
