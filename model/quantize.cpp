#include "tqref/quantize.h"

#include <cmath>

#include "tqref/numeric.h"

namespace tqref {

uint32_t code_index(const FormatTraits& t, float y) {
  uint32_t n = 0;
  for (uint32_t j = 0; j + 1 < t.levels; ++j) n += (t.bounds[j] <= y) ? 1u : 0u;  // NaN: all false
  return n;
}

// fmaxf as CUDA defines it: the other operand when one is NaN.
static float fmaxf_cuda(float a, float b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return a > b ? a : b;
}

QuantizedGroup quantize_group(const FormatTraits& t, const uint16_t (&x_bf16)[kGroupSize]) {
  QuantizedGroup g;
  float x[kGroupSize];
  for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = bf16_to_f32(x_bf16[i]);
  // 1. squared norm, sequential, a rounded product then a rounded sum (--fmad=false)
  float nsq = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float sq = x[i] * x[i];
    nsq = nsq + sq;
  }
  // 2. absolute maximum; NaN elements are passed over by fmaxf
  float amax = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) amax = fmaxf_cuda(amax, std::fabs(x[i]));
  // 3. inverse scale onto the codebook's range
  float inv = amax > 1e-12f ? t.max / amax : 1.0f;
  // 4. codes of the scaled values
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float y = x[i] * inv;
    g.codes[i] = static_cast<uint8_t>(code_index(t, y));
  }
  // 5. squared norm of the chosen fp32 codebook entries
  float rsq = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float c = t.codebook[g.codes[i]];
    float sq = c * c;
    rsq = rsq + sq;
  }
  // 6. matched-norm scale, clamped to the fp8 maximum (a NaN s stays NaN: NaN > 448 is false)
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

float dequantize_code(const FormatTraits& t, uint32_t code, uint8_t scale_byte) {
  float cb = f16_to_f32(f32_to_f16(t.codebook[code]));  // the decoder's fp16 codebook
  float gs = fp8e4m3_to_f32(scale_byte);
  return cb * gs;
}

}  // namespace tqref
