#include "tqref/quantize.h"

#include <cmath>

#include "rules.h"
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

// Steps 1-7 of docs/spec.md section 4 for `count` consecutive groups (t.bits == Bits), every
// rounded operation through the rules policy R (rules.h). Each group's arithmetic is exactly the
// spec's, in its order; only the interleaving of independent groups differs: every step runs
// over all groups before the next step, so that the long serial sums (nsq, rsq) of several
// groups are in flight together (about 1.3x faster than group by group).
template <uint32_t Bits, class R>
void quantize_groups_fixed(const FormatTraits& t, const uint16_t* x_bf16, uint32_t count,
                           QuantizedGroup* out, const R& r) {
  constexpr uint32_t kLevels = 1u << Bits;
  for (uint32_t k = 0; k < count; ++k) {
    const uint16_t* xb = x_bf16 + k * kGroupSize;
    QuantizedGroup& g = out[k];
    // 1. squared norm, sequential: f32(nsq + f32(x*x))
    float nsq = 0.0f;
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      const float x = bf16_to_f32(xb[i]);
      nsq = r.mul_add(Fusion::w_nsq, Step::w_nsq_square, Step::w_nsq_add, x, x, nsq);
    }
    // 2. absolute maximum with CUDA's fmaxf, which returns the other operand when one is NaN.
    // amax starts at 0 and only ever takes non-NaN values, so fmaxf(amax, a) is exactly
    // `a > amax ? a : amax` (a NaN a fails the compare); no -0.0 arises since fabs clears signs.
    float amax = 0.0f;
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      const float a = r.abs(bf16_to_f32(xb[i]));
      amax = a > amax ? a : amax;
    }
    g.nsq = nsq;
    g.amax = amax;
    // 3. inverse scale onto the codebook's range
    g.inv = amax > 1e-12f ? r.div(Step::w_inv_div, t.max, amax) : 1.0f;
  }
  // 4. codes of the scaled values
  for (uint32_t k = 0; k < count; ++k) {
    const uint16_t* xb = x_bf16 + k * kGroupSize;
    QuantizedGroup& g = out[k];
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      const float y = r.mul(Step::w_scaled_mul, bf16_to_f32(xb[i]), g.inv);
      g.codes[i] = static_cast<uint8_t>(count_bounds_le<kLevels>(t.bounds, y));
    }
  }
  // 5. squared norm of the chosen fp32 codebook entries: f32(rsq + f32(c*c))
  for (uint32_t k = 0; k < count; ++k) {
    QuantizedGroup& g = out[k];
    float rsq = 0.0f;
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      const float c = t.codebook[g.codes[i]];
      rsq = r.mul_add(Fusion::w_rsq, Step::w_rsq_square, Step::w_rsq_add, c, c, rsq);
    }
    g.rsq = rsq;
  }
  // 6. matched-norm scale, clamped to the fp8 maximum (a NaN s stays NaN: NaN > 448 is false).
  // rn is at least 4 * the smallest |CB| for every format, so the amax/MAX branch never fires
  // for these codebooks; it is kept because the kernels have it. 7. fp8 scale byte.
  for (uint32_t k = 0; k < count; ++k) {
    QuantizedGroup& g = out[k];
    g.rn = r.sqrt(Step::w_rn_sqrt, g.rsq);
    float s = g.rn > 1e-10f ? r.div(Step::w_scale_div, r.sqrt(Step::w_nsq_sqrt, g.nsq), g.rn)
                            : r.div(Step::w_fallback_div, g.amax, t.max);
    if (s > 448.0f) s = 448.0f;
    g.scale = s;
    g.scale_byte = r.scale_byte(s);
  }
}

template <class R>
void quantize_groups_with(const FormatTraits& t, const uint16_t* x_bf16, uint32_t count,
                          QuantizedGroup* out, const R& r) {
  switch (t.bits) {
    case 2: return quantize_groups_fixed<2>(t, x_bf16, count, out, r);
    case 3: return quantize_groups_fixed<3>(t, x_bf16, count, out, r);
    default: return quantize_groups_fixed<4>(t, x_bf16, count, out, r);
  }
}

}  // namespace

uint32_t code_index(const FormatTraits& t, float y) {
  switch (t.bits) {
    case 2: return count_bounds_le<4>(t.bounds, y);
    case 3: return count_bounds_le<8>(t.bounds, y);
    default: return count_bounds_le<16>(t.bounds, y);
  }
}

void quantize_groups(const FormatTraits& t, const uint16_t* x_bf16, uint32_t count,
                     QuantizedGroup* out) {
  quantize_groups_with(t, x_bf16, count, out, rules::ContractRules{});
}

void quantize_groups(const FormatTraits& t, const uint16_t* x_bf16, uint32_t count,
                     QuantizedGroup* out, const Variant& v) {
  quantize_groups_with(t, x_bf16, count, out, rules::VariantRules(v));
}

QuantizedGroup quantize_group(const FormatTraits& t, const uint16_t (&x_bf16)[kGroupSize]) {
  QuantizedGroup g;
  quantize_groups(t, x_bf16, 1, &g);
  return g;
}

float dequantize_code(const FormatTraits& t, uint32_t code, uint8_t scale_byte) {
  float cb = f16_to_f32(f32_to_f16(t.codebook[code]));  // the decoder's fp16 codebook
  float gs = fp8e4m3_to_f32(scale_byte);
  return cb * gs;
}

}  // namespace tqref
