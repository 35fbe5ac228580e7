#include "cases/tiny_rescale.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "tqref/contract.h"
#include "tqref/numeric.h"

namespace tqref::golden {

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

uint16_t tiny_rescale_low_k0(uint32_t seq, uint32_t head_dim, float inv_sqrt_d) {
  static constexpr double kDelta[4] = {88.5, 90.5, 92.5, 94.5};
  const uint16_t k0 = f32_to_bf16(float(-kDelta[seq % 4] * std::sqrt(double(head_dim))));
  const float x = bf16_to_f32(k0) * inv_sqrt_d;      // the kernel's score (q = 1 on dim 0)
  const float y = x * f32_from_bits(0x3FB8AA3Bu);    // EXPF's first step
  if (!(y >= -149.0f && y < -126.0f))
    throw std::logic_error("tiny_rescale: low score " + std::to_string(x) + " gives y = " +
                           std::to_string(y) + ", outside EXPF's split range [-149, -126)");
  return k0;
}

}  // namespace tqref::golden
