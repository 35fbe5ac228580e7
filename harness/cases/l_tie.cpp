#include "cases/l_tie.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "cases/step_groups.h"
#include "cases/values.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

namespace tqref::cases {

namespace {

// The first "previous" position and the maximum's position of sequence seq (l_tie.h).
constexpr uint32_t kPrevious[3] = {56, 24, 56}, kTop[3] = {60, 56, 24};

bool sum_of_three_bf16(float x) {
  uint16_t parts[3];
  try {
    split3(x, parts);
  } catch (const std::logic_error&) {
    return false;
  }
  return true;
}

// The factors of warp 7's walk and the merge, each as the model computes it (EXPF of a
// difference that is exact here).
struct Factors {
  float first_eo;  // EXPF(-1e30 - 0): the first batch rescales the initial state by 0
  float one;       // EXPF(0)
  float ef3;       // EXPF(first_low)
  float eo;        // EXPF(-top)
  float low;       // EXPF(kLowScore - top): the second batch's other positions, the merge's other side
};

// o of dim d after the walk and the merge, for V values u (positions P..P+2) and v (T): the
// contract's operations in the kernel's order (docs/spec.md section 5) for role 0, V = +0
// elsewhere; roles 1 and 2 give the same bits (the merge adds the same two products).
float row_o(const Factors& f, float u, float v) {
  float o = 0.0f * f.first_eo + f.one * u;
  o = o + f.one * u;
  o = o + f.one * u;
  o = o + f.ef3 * 0.0f;
  o = o * f.eo + f.one * v;
  for (int b = 1; b < 4; ++b) o = o + f.low * 0.0f;
  for (int merge = 0; merge < 3; ++merge) o = 0.0f * f.low + o * f.one;  // warp 7's side scales by 1
  return o;
}

struct Crafted {
  std::array<uint16_t, kGroupSize> x;
  float value;  // the decoder's value of dims 1..15
};

// Every (code, scale byte) group craft_group can make.
std::vector<Crafted> crafted_groups(const FormatTraits& t) {
  std::vector<Crafted> all;
  for (uint32_t c = 0; c < t.levels; ++c)
    for (uint32_t sb = 1; sb < 0x7F; ++sb) {
      Crafted g;
      if (craft_group(t, c, uint8_t(sb), g.x.data())) {
        g.value = dequantize_code(t, c, uint8_t(sb));
        all.push_back(g);
      }
    }
  return all;
}

// u and v whose output differs between the two l; false if no pair does.
bool choose_v(const std::vector<Crafted>& groups, const Factors& f, LTiePlan& plan) {
  const float inv = 1.0f / plan.l, inv_variant = 1.0f / plan.l_variant;
  for (const Crafted& u : groups)
    for (const Crafted& v : groups) {
      const float o = row_o(f, u.value, v.value);
      if (f32_to_bf16(o * inv) != f32_to_bf16(o * inv_variant)) {
        plan.u = u.x;
        plan.v = v.x;
        return true;
      }
    }
  return false;
}

// top for l_prev = f32(3 + ef3): f32(l_prev * eo) = 1 + j * 2^-23 with j odd and the exact
// product below it, so that f32(that + 1) is a tie the contract rounds up.
bool choose_top(const Ex2Profile& ex2, float l_prev, LTiePlan& plan, Factors& f) {
  const double target = (1.0 + 3.0 * std::ldexp(1.0, -23)) / double(l_prev);
  float top = float(-std::log(target));
  for (int k = 0; k < 64; ++k, top = std::nextafter(top, 0.0f)) {
    if (!sum_of_three_bf16(top)) continue;
    const float eo = ex2.expf(0.0f - top);
    const float rounded = l_prev * eo;
    const float contract = rounded + 1.0f;
    const float fused = std::fma(l_prev, eo, 1.0f);
    const float ulp_down = std::nextafter(rounded, -INFINITY) + 1.0f;
    if (fused == contract || ulp_down != fused) continue;
    plan.top = top;
    plan.l = contract;
    plan.l_variant = fused;
    f.eo = eo;
    f.low = ex2.expf(kLowScore - top);
    return true;
  }
  return false;
}

}  // namespace

LTiePlan l_tie_plan(const FormatTraits& t, const Ex2Profile& ex2) {
  const std::vector<Crafted> groups = crafted_groups(t);
  Factors f;
  f.first_eo = ex2.expf(-1e30f);
  f.one = ex2.expf(0.0f);
  for (uint32_t k = 0; k < 4096; ++k) {
    LTiePlan plan;
    plan.first_low = -1.5f - float(k) * 0x1p-19f;
    if (!sum_of_three_bf16(plan.first_low)) continue;
    f.ef3 = ex2.expf(plan.first_low);
    const float l_prev = ((f.one + f.one) + f.one) + f.ef3;
    if (choose_top(ex2, l_prev, plan, f) && choose_v(groups, f, plan)) return plan;
  }
  throw std::logic_error(std::string("l_tie: no scores and V groups found for ") + t.name);
}

void l_tie_row(const LTiePlan& plan, uint32_t seq, uint32_t pos, uint32_t head_dim,
               uint16_t* k_row, uint16_t* v_row, uint32_t n) {
  const uint32_t prev = kPrevious[seq % 3], top = kTop[seq % 3];
  const bool u = pos >= prev && pos < prev + 3;
  const float score = u ? 0.0f : pos == prev + 3 ? plan.first_low : pos == top ? plan.top : kLowScore;
  uint16_t parts[3];
  split3(score, parts);
  for (uint32_t e = 0; e < n; ++e) {
    const uint32_t d = e % head_dim;
    k_row[e] = d < 3 ? parts[d] : 0;
    v_row[e] = u ? plan.u[d % kGroupSize] : pos == top ? plan.v[d % kGroupSize] : 0;
  }
}

}  // namespace tqref::cases
