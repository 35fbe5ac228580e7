#include "analysis/study/vq_measure.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tqref/numeric.h"
#include "tqref/quantize.h"

namespace tqref::study {

double VqResult::mse_se() const {
  if (groups < 2) return NAN;
  double mean_g = sum_err2 / groups;
  double var_g = (group_err2_sq / groups - mean_g * mean_g) * groups / (groups - 1.0);
  return std::sqrt(std::max(0.0, var_g) / groups) / kGroupSize;
}

namespace {

// One group through the chosen quantiser: x (float, from bf16) -> y.
GroupOutcome run_group(const FormatTraits& t, const GroupCodebook& cb, const Variant& var,
                       double sigma, const float (&x)[kGroupSize], float (&y)[kGroupSize]) {
  if (!var.writer_model) return quantize_dequantize_group(cb, var.rule, var.enc, sigma, x, y);
  uint16_t xb[kGroupSize];
  for (uint32_t i = 0; i < kGroupSize; ++i) xb[i] = f32_to_bf16(x[i]);  // exact: x is bf16
  QuantizedGroup g = quantize_group(t, xb);
  GroupOutcome o;
  float gs = fp8e4m3_to_f32(g.scale_byte);
  // Recompute the scale before the clamp, in the writer's order (step 6).
  float s_pre = g.rn > 1e-10f ? std::sqrt(g.nsq) / g.rn : g.amax / t.max;
  o.scale_saturated = s_pre > 448.0f;
  o.scale_underflow = g.amax > 0.0f && gs == 0.0f;
  o.scale_subnormal = gs != 0.0f && std::fabs(gs) < 0.015625f;
  for (uint32_t i = 0; i < kGroupSize; ++i) y[i] = dequantize_code(t, g.codes[i], g.scale_byte);
  return o;
}

}  // namespace

VqResult measure_vq(const FormatTraits& t, const GroupCodebook& cb, const Variant& var,
                    const std::vector<uint16_t>& v, uint32_t heads, uint32_t head_dim,
                    double sigma, const RandomRotation* rot) {
  const uint64_t n = uint64_t(heads) * head_dim;
  if (n == 0 || n % kGroupSize != 0 || v.size() % n != 0)
    throw std::invalid_argument("measure_vq: heads*head_dim must be a non-zero multiple of 16 "
                                "dividing the source size");
  if (rot && (rot->size() != head_dim || head_dim % kGroupSize != 0))
    throw std::invalid_argument("measure_vq: rotation size must equal head_dim (multiple of 16)");
  const uint64_t tokens = v.size() / n;
  constexpr uint64_t kChunk = 32;
  const int64_t chunks = int64_t((tokens + kChunk - 1) / kChunk);
  std::vector<VqResult> part(chunks);
#pragma omp parallel for schedule(dynamic)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    VqResult& r = part[ch];
    std::vector<double> xd(n), xr(n), back(head_dim);
    std::vector<float> xin(n), yout(n);
    for (uint64_t tok = uint64_t(ch) * kChunk; tok < std::min(tokens, uint64_t(ch + 1) * kChunk); ++tok) {
      for (uint64_t e = 0; e < n; ++e) xd[e] = bf16_to_f32(v[tok * n + e]);
      if (rot) {
        for (uint32_t h = 0; h < heads; ++h) rot->apply(&xd[h * head_dim], &xr[h * head_dim]);
        for (uint64_t e = 0; e < n; ++e) xin[e] = bf16_to_f32(f32_to_bf16(float(xr[e])));
      } else {
        for (uint64_t e = 0; e < n; ++e) xin[e] = float(xd[e]);
      }
      for (uint64_t g = 0; g < n / kGroupSize; ++g) {
        float x[kGroupSize], y[kGroupSize];
        bool nonzero = false;
        for (uint32_t i = 0; i < kGroupSize; ++i) {
          x[i] = xin[g * kGroupSize + i];
          nonzero |= x[i] != 0.0f;
        }
        GroupOutcome o = run_group(t, cb, var, sigma, x, y);
        for (uint32_t i = 0; i < kGroupSize; ++i) yout[g * kGroupSize + i] = y[i];
        r.underflow += o.scale_underflow;
        r.subnormal += o.scale_subnormal;
        r.saturated += o.scale_saturated;
        r.nonzero_groups += nonzero;
      }
      std::vector<double> yd(yout.begin(), yout.end());
      if (rot) {
        for (uint32_t h = 0; h < heads; ++h) {
          rot->inverse(&yd[h * head_dim], back.data());
          std::copy(back.begin(), back.end(), yd.begin() + h * head_dim);
        }
      }
      for (uint64_t g = 0; g < n / kGroupSize; ++g) {
        double ge = 0;
        for (uint32_t i = 0; i < kGroupSize; ++i) {
          uint64_t e = g * kGroupSize + i;
          double d = xd[e] - yd[e];
          ge += d * d;
          r.sum_sq += xd[e] * xd[e];
          r.sum_4 += xd[e] * xd[e] * xd[e] * xd[e];
          r.sum += xd[e];
        }
        r.sum_err2 += ge;
        r.group_err2_sq += ge * ge;
        r.groups += 1;
        r.values += kGroupSize;
      }
    }
  }
  VqResult tot;
  for (const auto& r : part) {  // fixed order: deterministic for any thread count
    tot.values += r.values; tot.groups += r.groups;
    tot.sum_sq += r.sum_sq; tot.sum += r.sum; tot.sum_4 += r.sum_4; tot.sum_err2 += r.sum_err2;
    tot.group_err2_sq += r.group_err2_sq;
    tot.underflow += r.underflow; tot.subnormal += r.subnormal; tot.saturated += r.saturated;
    tot.nonzero_groups += r.nonzero_groups;
  }
  return tot;
}

}  // namespace tqref::study
