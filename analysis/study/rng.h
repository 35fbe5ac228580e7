// Small, portable random number generation for the studies: xoshiro256** seeded by splitmix64,
// with the transforms written here (not <random>'s distributions, whose output differs between
// standard libraries), so a seed gives the same numbers on every host.
#pragma once
#include <cmath>
#include <cstdint>

namespace tqref::study {

inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A stream is identified by (seed, stream id): independent work items (chunks, sources) each take
// their own stream, so results do not depend on the thread count or the order of work.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream) {
    uint64_t s = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (auto& w : s_) w = splitmix64(s);
  }
  uint64_t next() {
    uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0]; s_[3] ^= s_[1]; s_[1] ^= s_[2]; s_[0] ^= s_[3]; s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
  }
  // Uniform in (0, 1): 53 random bits, offset by half a step so 0 and 1 never occur.
  double uniform() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal by Box-Muller; the second value of each pair is kept for the next call.
  double normal() {
    if (have_spare_) { have_spare_ = false; return spare_; }
    double u = uniform(), v = uniform();
    double r = std::sqrt(-2.0 * std::log(u)), a = 6.283185307179586476925 * v;
    spare_ = r * std::sin(a);
    have_spare_ = true;
    return r * std::cos(a);
  }
  bool coin() { return (next() >> 63) != 0; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0;
  bool have_spare_ = false;
};

}  // namespace tqref::study
