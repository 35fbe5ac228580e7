#include "cases/tiny_rescale.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "tqref/contract.h"
#include "tqref/numeric.h"

namespace tqref::cases {

bool tiny_rescale_high(uint32_t seq, uint32_t L, uint32_t window, uint32_t pos) {
  const uint32_t start = window_start(L, window);
  if (pos < start || pos >= L) return false;
  const uint32_t chunk = (L - start + 7) / 8;  // SPEC 5 partition over 8 warps
  const uint32_t w = (pos - start) / chunk;
  switch (seq % 3) {
    case 0: return pos + 1 == std::min(start + (w + 1) * chunk, L);  // last of the warp's range
    case 1: return w >= 4;
    default: return w < 4;
  }
}

namespace {

// bf16 K[0] = -delta * sqrt(D): the kernel's score x = K[0] * inv_sqrt_d (q = 1 on dim 0) and
// EXPF's first step y = f32(x * log2(e)), which must lie in [lo, hi).
uint16_t low_k0(const char* dist, double delta, uint32_t head_dim, float inv_sqrt_d, float lo, float hi) {
  const uint16_t k0 = f32_to_bf16(float(-delta * std::sqrt(double(head_dim))));
  const float x = bf16_to_f32(k0) * inv_sqrt_d;
  const float y = x * f32_from_bits(0x3FB8AA3Bu);
  if (!(y >= lo && y < hi))
    throw std::logic_error(std::string(dist) + ": low score " + std::to_string(x) + " gives y = " +
                           std::to_string(y) + ", outside [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + ")");
  return k0;
}

}  // namespace

uint16_t tiny_rescale_low_k0(uint32_t seq, uint32_t head_dim, float inv_sqrt_d) {
  static constexpr double kDelta[4] = {88.5, 90.5, 92.5, 94.5};
  return low_k0("tiny_rescale (EXPF's split range)", kDelta[seq % 4], head_dim, inv_sqrt_d, -149.0f, -126.0f);
}

uint16_t subnormal_rescale_low_k0(uint32_t seq, uint32_t head_dim, float inv_sqrt_d) {
  static constexpr double kDelta[2] = {83.0, 84.5};
  return low_k0("subnormal_rescale", kDelta[seq % 2], head_dim, inv_sqrt_d, -126.0f, -117.0f);
}

}  // namespace tqref::cases
