#include "tqref/quantize.h"

#include <cmath>

#include "tqref/numeric.h"

namespace tqref {

namespace {

// code_index for a table of Levels-1 = 2^b - 1 ascending bounds, as a b-step binary search:
// after the step of width w, n counts the bounds <= y among bounds[0 .. n+w-1]. NaN fails every
// compare (n = 0) and -0.0 <= 0.0 holds, so this equals the counting definition; it is the only
// index function, used by code_index and by the writer (where it is 2-4x faster than counting).
template <uint32_t Levels>
uint32_t count_bounds_le(const float* bounds, float y) {
  uint32_t n = 0;
  for (uint32_t w = Levels / 2; w > 0; w /= 2) n += (bounds[n + w - 1] <= y) ? w : 0u;
  return n;
}

// Steps 1-7 of SPEC section 4 for a format of Bits bits per code (t.bits == Bits).
template <uint32_t Bits>
QuantizedGroup quantize_group_fixed(const FormatTraits& t, const uint16_t (&x_bf16)[kGroupSize]) {
  constexpr uint32_t kLevels = 1u << Bits;
  QuantizedGroup g;
  float x[kGroupSize];
  for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = bf16_to_f32(x_bf16[i]);
  // 1. squared norm, sequential, a rounded product then a rounded sum (--fmad=false)
  float nsq = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float sq = x[i] * x[i];
    nsq = nsq + sq;
  }
  // 2. absolute maximum with CUDA's fmaxf, which returns the other operand when one is NaN.
  // amax starts at 0 and only ever takes non-NaN values, so fmaxf(amax, a) is exactly
  // `a > amax ? a : amax` (a NaN a fails the compare); no -0.0 arises since fabs clears signs.
  float amax = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float a = std::fabs(x[i]);
    amax = a > amax ? a : amax;
  }
  // 3. inverse scale onto the codebook's range
  float inv = amax > 1e-12f ? t.max / amax : 1.0f;
  // 4. codes of the scaled values
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float y = x[i] * inv;
    g.codes[i] = static_cast<uint8_t>(count_bounds_le<kLevels>(t.bounds, y));
  }
  // 5. squared norm of the chosen fp32 codebook entries
  float rsq = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float c = t.codebook[g.codes[i]];
    float sq = c * c;
    rsq = rsq + sq;
  }
  // 6. matched-norm scale, clamped to the fp8 maximum (a NaN s stays NaN: NaN > 448 is false).
  // rn is at least 4 * the smallest |CB| for every format, so the amax/MAX branch never fires
  // for these codebooks; it is kept because the kernels have it.
  float rn = std::sqrt(rsq);
  float s = rn > 1e-10f ? std::sqrt(nsq) / rn : amax / t.max;
  if (s > 448.0f) s = 448.0f;
  g.nsq = nsq;
  g.amax = amax;
  g.inv = inv;
  g.rsq = rsq;
  g.rn = rn;
  g.scale = s;
  // 7. fp8 scale byte
  g.scale_byte = f32_to_fp8e4m3_satfinite(s);
  return g;
}

}  // namespace

uint32_t code_index(const FormatTraits& t, float y) {
  switch (t.bits) {
    case 2: return count_bounds_le<4>(t.bounds, y);
    case 3: return count_bounds_le<8>(t.bounds, y);
    default: return count_bounds_le<16>(t.bounds, y);
  }
}

QuantizedGroup quantize_group(const FormatTraits& t, const uint16_t (&x_bf16)[kGroupSize]) {
  switch (t.bits) {
    case 2: return quantize_group_fixed<2>(t, x_bf16);
    case 3: return quantize_group_fixed<3>(t, x_bf16);
    default: return quantize_group_fixed<4>(t, x_bf16);
  }
}

float dequantize_code(const FormatTraits& t, uint32_t code, uint8_t scale_byte) {
  float cb = f16_to_f32(f32_to_f16(t.codebook[code]));  // the decoder's fp16 codebook
  float gs = fp8e4m3_to_f32(scale_byte);
  return cb * gs;
}

}  // namespace tqref
