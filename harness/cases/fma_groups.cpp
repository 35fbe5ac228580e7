#include "cases/fma_groups.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "cases/step_groups.h"
#include "cases/values.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

namespace tqref::cases {

namespace {

// Scale byte of steps 6-7 from nsq and rn (docs/spec.md section 4; rn > 1e-10 for every codebook).
uint8_t scale_byte_of(float nsq, float rn) {
  float s = std::sqrt(nsq) / rn;
  if (s > 448.0f) s = 448.0f;
  return f32_to_fp8e4m3_satfinite(s);
}

// rsq of docs/spec.md section 4 step 5, plain (two roundings per term) or fused (one).
float rsq_of(const FormatTraits& t, const uint8_t (&codes)[kGroupSize], bool fused) {
  float rsq = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    const float c = t.codebook[codes[i]];
    if (fused) {
      rsq = std::fmaf(c, c, rsq);
    } else {
      const float sq = c * c;
      rsq = rsq + sq;
    }
  }
  return rsq;
}

float bump(float x, int ulps) { return f32_from_bits(uint32_t(int64_t(f32_bits(x)) + ulps)); }

// Targets for nsq in (lo, hi]: values N whose scale byte differs under rn_s and rn_f. sqrt(N)
// is rounded first, so the search runs over its result r near M*rn for each fp8 rounding
// midpoint M in range, then over the N with sqrtf(N) == r.
std::vector<float> flip_targets(float lo, float hi, float rn_s, float rn_f) {
  std::vector<float> out;
  const float s_lo = std::sqrt(lo) / std::fmax(rn_s, rn_f), s_hi = std::sqrt(hi) / std::fmin(rn_s, rn_f);
  for (uint32_t b = 0x08; b < 0x7E; ++b) {  // fp8 normal codes b and b+1 and their midpoint
    const float m = (fp8e4m3_to_f32(uint8_t(b)) + fp8e4m3_to_f32(uint8_t(b + 1))) * 0.5f;
    if (!(m > s_lo && m < s_hi)) continue;
    const float r0 = m * std::fmin(rn_s, rn_f), r1 = m * std::fmax(rn_s, rn_f);
    for (float r = bump(r0, -4); r <= bump(r1, 4); r = bump(r, 1)) {
      if (f32_to_fp8e4m3_satfinite(r / rn_s) == f32_to_fp8e4m3_satfinite(r / rn_f)) continue;
      for (int k = -4; k <= 4; ++k) {
        const float n = bump(r * r, k);
        if (n > lo && n <= hi && std::sqrt(n) == r &&
            scale_byte_of(n, rn_s) != scale_byte_of(n, rn_f))
          out.push_back(n);
      }
    }
  }
  return out;
}

// Largest positive bf16 <= v (v >= 0): truncation of the binary32 pattern.
uint16_t bf16_floor(float v) { return uint16_t(f32_bits(v) >> 16); }

// Small elements x[13..15] >= 0 with x <= limit, added to nsq = p in order, so that the final nsq
// equals n exactly: the first two take most of the remainder (floor of sqrt(0.99 * rest)), the
// last is searched among the bf16 values around sqrt(rest). False when n is not hit.
bool solve_tail(float p, float n, float limit, uint16_t (&x)[kGroupSize]) {
  for (uint32_t i = 13; i < 15; ++i) {
    const float rest = n - p;  // exact: p and n are close
    if (!(rest > 0.0f)) return false;
    const float v = bf16_to_f32(bf16_floor(std::fmin(std::sqrt(0.99f * rest), limit)));
    x[i] = f32_to_bf16(v);
    const float sq = v * v;
    p = p + sq;
  }
  const float rest = n - p;
  if (rest < 0.0f) return false;
  const uint16_t c = bf16_floor(std::sqrt(rest));
  for (int d = -16; d <= 16; ++d) {
    const int32_t cand = int32_t(c) + d;
    if (cand < 0 || cand >= 0x7F80) continue;
    const float v = bf16_to_f32(uint16_t(cand));
    const float sq = v * v;
    if (v <= limit && p + sq == n) {
      x[15] = uint16_t(cand);
      return true;
    }
  }
  return false;
}

}  // namespace

uint8_t scale_byte_fma_contracted(const FormatTraits& t, const uint16_t (&x)[kGroupSize]) {
  const QuantizedGroup g = quantize_group(t, x);
  float nsq = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    const float v = bf16_to_f32(x[i]);
    nsq = std::fmaf(v, v, nsq);
  }
  const float rn = std::sqrt(rsq_of(t, g.codes, true));
  float s = rn > 1e-10f ? std::sqrt(nsq) / rn : g.amax / t.max;
  if (s > 448.0f) s = 448.0f;
  return f32_to_fp8e4m3_satfinite(s);
}

namespace {

// The first positive bound: values in [0, bound) get the smallest positive code.
float first_positive_bound(const FormatTraits& t) {
  for (uint32_t j = 0; j + 1 < t.levels; ++j)
    if (t.bounds[j] > 0.0f) return t.bounds[j];
  return 0.0f;
}

// Elements 0..12 of a candidate group, N(0, 1), with x[13..15] = +0, and what the tail may add:
// `limit` (0.9 of the largest value whose scaled y stays below the first positive bound, so the
// tail's codes are the smallest-magnitude ones whatever its values), `p` (nsq after elements
// 0..12 as the writer sums it) and `room` (what three elements <= limit add, with margin).
struct GroupHead {
  uint16_t x[kGroupSize] = {};
  QuantizedGroup base;
  float limit = 0, p = 0, room = 0;
};
bool draw_head(const FormatTraits& t, Rng& rng, GroupHead& h) {
  for (uint32_t i = 0; i < 13; ++i) h.x[i] = to_bf16(rng.gaussian());
  for (uint32_t i = 13; i < kGroupSize; ++i) h.x[i] = 0;
  h.base = quantize_group(t, h.x);
  if (!(h.base.amax > 0.0f) || !std::isfinite(h.base.nsq)) return false;
  const float bound = first_positive_bound(t);
  h.limit = bf16_to_f32(bf16_floor(0.9f * bound / h.base.inv));
  while (h.limit > 0.0f && !(h.limit * h.base.inv < bound))
    h.limit = bf16_to_f32(uint16_t(f32_bits(h.limit) >> 16) - 1);
  h.p = 0.0f;
  for (uint32_t i = 0; i < 13; ++i) {
    const float v = bf16_to_f32(h.x[i]);
    const float sq = v * v;
    h.p = h.p + sq;
  }
  h.room = 2.5f * h.limit * h.limit;
  return true;
}

// Solves the tail of h for nsq = n with random signs (every square and code magnitude stays):
// false when n is not hit.
bool finish_group(const GroupHead& h, float n, Rng& rng, uint16_t (&y)[kGroupSize]) {
  std::copy(h.x, h.x + kGroupSize, y);
  if (!solve_tail(h.p, n, h.limit, y)) return false;
  for (uint32_t i = 13; i < kGroupSize; ++i)
    if (rng.below(2)) y[i] ^= 0x8000;
  return true;
}

// Targets for nsq in (lo, hi] whose s = f32(sqrt(nsq)/rn) rounds to another fp8 byte when s
// moves one ulp towards dir, as does s from sqrt(nsq) moved one ulp towards dir.
std::vector<float> rounding_targets(float lo, float hi, float rn, int dir) {
  std::vector<float> out;
  const float s_lo = std::sqrt(lo) / rn, s_hi = std::sqrt(hi) / rn;
  for (uint32_t b = 0x08; b < 0x7E; ++b) {
    const float m = (fp8e4m3_to_f32(uint8_t(b)) + fp8e4m3_to_f32(uint8_t(b + 1))) * 0.5f;
    if (!(m > s_lo && m < s_hi)) continue;
    for (float r = bump(m * rn, -4); r <= bump(m * rn, 4); r = bump(r, 1)) {
      const float s = r / rn;
      if (f32_to_fp8e4m3_satfinite(s) == f32_to_fp8e4m3_satfinite(bump(s, dir))) continue;
      if (f32_to_fp8e4m3_satfinite(s) == f32_to_fp8e4m3_satfinite(bump(r, dir) / rn)) continue;
      for (int k = -4; k <= 4; ++k) {
        const float n = bump(r * r, k);
        if (n > lo && n <= hi && std::sqrt(n) == r) out.push_back(n);
      }
    }
  }
  return out;
}

}  // namespace

void fma_sensitive_group(const FormatTraits& t, Rng& rng, uint16_t* out) {
  for (int attempt = 0; attempt < 100000; ++attempt) {
    GroupHead h;
    if (!draw_head(t, rng, h)) continue;
    const float rn_s = std::sqrt(rsq_of(t, h.base.codes, false));
    const float rn_f = std::sqrt(rsq_of(t, h.base.codes, true));
    if (rn_s == rn_f) continue;
    for (float n : flip_targets(h.p, h.p + h.room, rn_s, rn_f)) {
      uint16_t y[kGroupSize];
      if (!finish_group(h, n, rng, y)) continue;
      if (quantize_group(t, y).scale_byte == scale_byte_fma_contracted(t, y)) continue;
      std::copy(y, y + kGroupSize, out);
      return;
    }
  }
  throw std::logic_error(std::string("fma_sensitive_group: no ") + t.name + " group found in 10^5 attempts");
}

uint8_t scale_byte_perturbed(const FormatTraits& t, const uint16_t (&x)[kGroupSize], ScaleOp op, int ulps) {
  const QuantizedGroup g = quantize_group(t, x);
  float r = std::sqrt(g.nsq), rn = g.rn;
  if (op == ScaleOp::sqrt_nsq) r = bump(r, ulps);
  if (op == ScaleOp::sqrt_rsq) rn = bump(rn, ulps);
  float s = rn > 1e-10f ? r / rn : g.amax / t.max;
  if (op == ScaleOp::quotient) s = bump(s, ulps);
  if (s > 448.0f) s = 448.0f;
  return f32_to_fp8e4m3_satfinite(s);
}

void craft_v_row(Dist d, const FormatTraits& t, Rng& rng, std::span<uint16_t> row) {
  if (d == Dist::step_sensitive) {  // the searched groups, cycled from a random start per row
    const std::vector<SensitiveGroup>& s = step_sensitive_groups(t);
    const uint64_t start = rng.below(s.size());
    for (size_t g = 0; g < row.size() / kGroupSize; ++g)
      std::copy_n(s[(start + g) % s.size()].x.data(), kGroupSize, row.data() + g * kGroupSize);
    return;
  }
  for (size_t g = 0; g < row.size() / kGroupSize; ++g) {
    if (d == Dist::fma_sensitive) fma_sensitive_group(t, rng, row.data() + g * kGroupSize);
    if (d == Dist::rounding_sensitive) rounding_sensitive_group(t, rng, g % 2 ? -1 : 1, row.data() + g * kGroupSize);
  }
}

void rounding_sensitive_group(const FormatTraits& t, Rng& rng, int dir, uint16_t* out) {
  for (int attempt = 0; attempt < 100000; ++attempt) {
    GroupHead h;
    if (!draw_head(t, rng, h) || !(h.base.rn > 1e-10f)) continue;
    for (float n : rounding_targets(h.p, h.p + h.room, h.base.rn, dir)) {
      uint16_t y[kGroupSize];
      if (!finish_group(h, n, rng, y)) continue;
      const uint8_t sb = quantize_group(t, y).scale_byte;
      if (sb == scale_byte_perturbed(t, y, ScaleOp::quotient, dir) ||
          sb == scale_byte_perturbed(t, y, ScaleOp::sqrt_nsq, dir))
        continue;
      std::copy(y, y + kGroupSize, out);
      return;
    }
  }
  throw std::logic_error(std::string("rounding_sensitive_group: no ") + t.name + " group found in 10^5 attempts");
}

}  // namespace tqref::cases
