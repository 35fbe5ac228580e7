// The rules policies of the kernel-order models (quantize.cpp, decode.cpp), as kernels/ has
// ContractRules: every rounded operation of the contract is one call naming its Step
// (tqref/variant.h), every `a*b + c` an FMA may contract names its Fusion site, and every
// structural choice (batches, merge tree, butterfly, lane layout, codebook) is one member.
// ContractRules is the contract, written plainly (the build has -ffp-contract=off, so `a*b + c`
// is two roundings, as the kernels' --fmad=false); VariantRules applies one Variant.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "tqref/approx.h"
#include "tqref/ex2.h"
#include "tqref/format.h"
#include "tqref/numeric.h"
#include "tqref/variant.h"

namespace tqref::rules {

inline constexpr uint32_t kLog2eBits = 0x3FB8AA3Bu;  // log2(e) as the kernel's literal

struct ContractRules {
  float mul(Step, float a, float b) const { return a * b; }
  float add(Step, float a, float b) const { return a + b; }
  float sub(Step, float a, float b) const { return a - b; }
  float div(Step, float a, float b) const { return a / b; }
  float sqrt(Step, float a) const { return std::sqrt(a); }
  float abs(float a) const { return std::fabs(a); }
  // a*b + c: a rounded product, then a rounded sum.
  float mul_add(Fusion, Step mul_step, Step add_step, float a, float b, float c) const {
    return add(add_step, mul(mul_step, a, b), c);
  }
  // a*b + c*d: two rounded products, then a rounded sum.
  float sum_products(Fusion, Fusion, Step mul_ab, Step mul_cd, Step add_step, float a, float b,
                     float c, float d) const {
    return add(add_step, mul(mul_ab, a, b), mul(mul_cd, c, d));
  }
  uint8_t scale_byte(float s) const { return f32_to_fp8e4m3_satfinite(s); }
  uint16_t output_bf16(float y) const { return f32_to_bf16(y); }
  float decoder_codebook(float cb) const { return f16_to_f32(f32_to_f16(cb)); }
  float expf(const Ex2Profile& ex2, float x) const { return ex2.expf(x); }
  bool takes_batches() const { return true; }
  // Butterfly offset of step i = 0..4: 16, 8, 4, 2, 1.
  uint32_t butterfly_offset(uint32_t i) const { return 16u >> i; }
  // Merge tree: in step 0, 1, 2 (stride 4, 2, 1) warp w < stride absorbs warp w + stride.
  uint32_t merge_steps() const { return 3; }
  bool merge_partner(uint32_t step, uint32_t warp, uint32_t& other) const {
    const uint32_t stride = 4u >> step;
    other = warp + stride;
    return warp < stride;
  }
  // Lane partial sums of the score: lane l adds its pairs l*P .. l*P+P-1 in order (P = HDIM/64),
  // pair[HDIM/2] -> part[32] (part starts at 0).
  template <uint32_t HDIM>
  void lane_partials(const float* pair, float* part) const {
    constexpr uint32_t kPairs = HDIM / 64;
    for (uint32_t i = 0; i < kPairs; ++i)
      for (uint32_t lane = 0; lane < 32; ++lane)
        part[lane] = add(Step::d_part_add, part[lane], pair[lane * kPairs + i]);
  }
};

// f32(a * b + c) with one rounding (model/fused.cpp: out of line, so that no other object of
// the model holds a fused instruction).
float fused_multiply_add(float a, float b, float c);

// f moved by `steps` representable values of a sign-magnitude format whose sign is bit
// `sign_bit` (bf16, fp16: 15; fp8: 7), toward +Inf for steps > 0; NaN stays.
uint32_t step_sign_magnitude(uint32_t bits, int steps, uint32_t sign_bit);

// One Variant applied: the policy the variant models run with (scalar path only).
class VariantRules {
 public:
  // Variants on the approximate units take them now (loaded on first use; the entry points load
  // them before any parallel region, so a missing file is an error there, not in a worker).
  explicit VariantRules(const Variant& v)
      : v_(v), approx_(needs_approx_units(v) ? &approx_units() : nullptr) {}

  float mul(Step s, float a, float b) const { return out(s, in(a) * in(b)); }
  float add(Step s, float a, float b) const { return out(s, in(a) + in(b)); }
  float sub(Step s, float a, float b) const { return out(s, in(a) - in(b)); }
  // A build's approximate division and square root read the measured units (tqref/approx.h),
  // which apply .ftz themselves; `1.0f / l` is rcp.approx, equal to div.full(1, l).
  float div(Step s, float a, float b) const {
    if (v_.division != Division::rn) return out(s, approx_->div(v_.division, a, b, v_.ftz));
    return out(s, in(a) / in(b));
  }
  float sqrt(Step s, float a) const {
    if (v_.sqrt_approx) return out(s, approx_->sqrt(a, v_.ftz));
    return out(s, std::sqrt(in(a)));
  }
  float abs(float a) const { return std::fabs(in(a)); }
  // A fused site rounds once, at its add step.
  float mul_add(Fusion f, Step mul_step, Step add_step, float a, float b, float c) const {
    if (v_.fuses(f)) return out(add_step, fused_multiply_add(in(a), in(b), in(c)));
    return add(add_step, mul(mul_step, a, b), c);
  }
  float sum_products(Fusion ab, Fusion cd, Step mul_ab, Step mul_cd, Step add_step, float a,
                     float b, float c, float d) const {
    if (v_.fuses(ab)) return out(add_step, fused_multiply_add(in(a), in(b), mul(mul_cd, c, d)));
    if (v_.fuses(cd)) return out(add_step, fused_multiply_add(in(c), in(d), mul(mul_ab, a, b)));
    return add(add_step, mul(mul_ab, a, b), mul(mul_cd, c, d));
  }
  uint8_t scale_byte(float s) const;
  uint16_t output_bf16(float y) const;
  float decoder_codebook(float cb) const;
  float expf(const Ex2Profile& ex2, float x) const;
  bool takes_batches() const { return !v_.no_batches; }
  uint32_t butterfly_offset(uint32_t i) const {
    return v_.butterfly_ascending ? 1u << i : 16u >> i;
  }
  uint32_t merge_steps() const { return v_.merge_sequential ? 7 : 3; }
  bool merge_partner(uint32_t step, uint32_t warp, uint32_t& other) const {
    if (v_.merge_sequential) {
      other = step + 1;
      return warp == 0;
    }
    return ContractRules{}.merge_partner(step, warp, other);
  }
  template <uint32_t HDIM>
  void lane_partials(const float* pair, float* part) const {
    // The other HDIM's layout: P' pairs per lane per round (4 for an HDIM-128 launch laid out as
    // 256: lanes 16..31 idle; 2 for HDIM 256 laid out as 128: two rounds of 32 lanes).
    const uint32_t per = v_.other_lane_layout ? (HDIM == 128 ? 4u : 2u) : HDIM / 64;
    constexpr uint32_t kPairsTotal = HDIM / 2;
    for (uint32_t base = 0; base < kPairsTotal; base += 32 * per)
      for (uint32_t i = 0; i < per; ++i)
        for (uint32_t lane = 0; lane < 32; ++lane) {
          const uint32_t j = base + lane * per + i;
          if (j < kPairsTotal) part[lane] = add(Step::d_part_add, part[lane], pair[j]);
        }
  }

 private:
  static float flush(float x) {
    return std::fabs(x) < std::numeric_limits<float>::min() ? std::copysign(0.0f, x) : x;
  }
  float in(float x) const { return v_.ftz ? flush(x) : x; }
  float out(Step s, float y) const {
    if (v_.ftz) y = flush(y);
    if (s != v_.perturbed || v_.ulps == 0 || y != y) return y;
    for (int k = 0; k < std::abs(v_.ulps); ++k)
      y = std::nextafter(y, v_.ulps > 0 ? std::numeric_limits<float>::infinity()
                                        : -std::numeric_limits<float>::infinity());
    return y;
  }
  float ex2_unit(const Ex2Profile& ex2, float y) const;

  const Variant& v_;
  const ApproxUnits* approx_;
};

}  // namespace tqref::rules
