// The tiny_rescale decode distribution (case_spec.h): catches an EXPF without the halve-and-square
// path below y = -126 (mutant 14), which turns factors in [2^-149, 2^-126) into +0.
//
// q is one-hot (1.0 on dim 0 of every head), so score = f32(K[0] * inv_sqrt_d) exactly. "High"
// positions have K[0] = 0 (score 0) and an all-zero V row (scale byte 0, so v = +-0); "low"
// positions have K[0] = bf16(-delta * sqrt(D)) (score about -delta) and V x1000. A high position
// after lows rescales their nonzero o by EXPF(low - 0), which lies in the split range; later lows
// are skipped and highs add +-0, so the tiny o reaches the output (bf16 keeps subnormals down to
// 2^-133). Roles by sequence s, over the window's positions and the warp partition of SPEC 5:
//   s % 3 == 0: the last position of every warp's range is high (in-warp rescale eo);
//   s % 3 == 1: warps 4..7 are high (merge: warp w absorbs w + 4 with factor a in range);
//   s % 3 == 2: warps 0..3 are high (merge factor c in range).
// delta cycles through 88.5, 90.5, 92.5, 94.5 with s % 4 (y = -127.7 .. -136.3). Warps with a
// single position (L - start <= 8) have no earlier lows, so short sequences add nothing.
#pragma once
#include <cstdint>

#include "tqref/ex2.h"

namespace tqref::cases {

bool tiny_rescale_high(uint32_t seq, uint32_t L, uint32_t window, uint32_t pos);

// K[0] (bf16 bits) of sequence seq's low positions. Throws std::logic_error unless the low score
// x gives y = f32(x * log2(e)) in [-149, -126), the range where the split matters.
uint16_t tiny_rescale_low_k0(uint32_t seq, uint32_t head_dim, float inv_sqrt_d);

// The subnormal_rescale distribution (case_spec.h) takes the same roles with other lows: K[0] of
// sequence seq's lows gives y in [-126, -117) (delta 83 or 84.5 with seq % 2): factors above the
// split range, where EXPF with and without the split agree, but small enough that the lows' o
// (V x 2^-8, about 2^-8) times the factor is subnormal, the product flush-to-zero turns into 0.
// Throws std::logic_error outside that range.
uint16_t subnormal_rescale_low_k0(uint32_t seq, uint32_t head_dim, float inv_sqrt_d);
inline constexpr float kSubnormalRescaleV = 0.00390625f;  // 2^-8, the lows' V scale

}  // namespace tqref::cases
