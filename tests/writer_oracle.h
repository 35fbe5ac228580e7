// A second, independent reading of docs/spec.md sections 2 and 4 for tests: the group quantizer written
// straight from the numbered steps, with the search fp8 encoder of fp_oracles.h and C's fmax,
// and a bit-at-a-time packer. Shares no code with model/ except the format tables.
#pragma once
#include <cmath>
#include <cstdint>

#include "fp_oracles.h"
#include "tqref/format.h"

namespace tqref::test {

struct OracleGroup {
  uint8_t codes[kGroupSize];
  uint8_t scale_byte;
  float scale;  // s after the clamp
};

inline float oracle_bf16_to_f32(uint16_t h) { return float_of(uint32_t(h) << 16); }

// docs/spec.md section 2: the number of bounds BD[j] with BD[j] <= y.
inline uint32_t oracle_index(const FormatTraits& t, float y) {
  uint32_t n = 0;
  for (uint32_t j = 0; j < t.levels - 1; ++j)
    if (t.bounds[j] <= y) ++n;
  return n;
}

// docs/spec.md section 4, steps 1-7, each `f32(...)` a separate float expression statement.
inline OracleGroup oracle_quantize_group(const FormatTraits& t, const uint16_t* x_bf16) {
  OracleGroup r{};
  float x[kGroupSize];
  for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = oracle_bf16_to_f32(x_bf16[i]);
  float nsq = 0.0f;
  for (float v : x) {
    float p = v * v;
    nsq = nsq + p;
  }
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));  // C fmax: NaN operand ignored
  float inv = 1.0f;
  if (amax > 1e-12f) inv = t.max / amax;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float y = x[i] * inv;
    r.codes[i] = uint8_t(oracle_index(t, y));
  }
  float rsq = 0.0f;
  for (uint8_t c : r.codes) {
    float p = t.codebook[c] * t.codebook[c];
    rsq = rsq + p;
  }
  float rn = std::sqrt(rsq);
  float s;
  if (rn > 1e-10f) {
    float num = std::sqrt(nsq);
    s = num / rn;
  } else {
    s = amax / t.max;
  }
  if (s > 448.0f) s = 448.0f;
  r.scale = s;
  r.scale_byte = search_f32_to_fp8(s);
  return r;
}

// Packs 16 codes of `bits` bits as one LSB-first bit stream: bit j of code k goes to stream bit
// k*bits + j, stream bit i is bit i%8 of byte i/8. For 2 and 4 bits this is exactly the nibble /
// crumb layout docs/spec.md section 2 describes. Writes bits*2 bytes.
inline void oracle_pack(uint32_t bits, const uint8_t* codes, uint8_t* out) {
  for (uint32_t i = 0; i < bits * 2; ++i) out[i] = 0;
  for (uint32_t k = 0; k < kGroupSize; ++k)
    for (uint32_t j = 0; j < bits; ++j)
      if ((codes[k] >> j) & 1u) {
        uint32_t i = k * bits + j;
        out[i / 8] = uint8_t(out[i / 8] | (1u << (i % 8)));
      }
}

}  // namespace tqref::test
