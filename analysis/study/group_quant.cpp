#include "analysis/study/group_quant.h"

#include <cmath>

#include "analysis/study/lloyd_max.h"
#include "tqref/numeric.h"

namespace tqref::study {

const char* codebook_name(CodebookKind k) { return k == CodebookKind::spec ? "spec" : "exact"; }
const char* scale_rule_name(ScaleRule r) {
  switch (r) {
    case ScaleRule::matched: return "matched";
    case ScaleRule::absmax: return "absmax";
    case ScaleRule::lsq: return "lsq";
    case ScaleRule::oracle: return "oracle";
  }
  return "?";
}
const char* scale_enc_name(ScaleEnc e) { return e == ScaleEnc::fp8 ? "fp8" : "fp32"; }

GroupCodebook make_group_codebook(const FormatTraits& t, CodebookKind kind) {
  GroupCodebook g;
  g.levels = t.levels;
  if (kind == CodebookKind::spec) {
    g.cb.assign(t.codebook, t.codebook + t.levels);
    g.bounds.assign(t.bounds, t.bounds + t.levels - 1);
    for (float c : g.cb) g.cb_exact.push_back(c);
    for (float b : g.bounds) g.bounds_exact.push_back(b);
  } else {
    ScalarQuantizer q = lloyd_max_gaussian(int(t.levels));
    g.cb_exact = q.levels;
    g.bounds_exact = q.bounds;
    for (double c : q.levels) g.cb.push_back(float(c));
    for (double b : q.bounds) g.bounds.push_back(float(b));
  }
  g.max = g.cb.back();
  for (float c : g.cb) g.cb_dec.push_back(f16_to_f32(f32_to_f16(c)));
  return g;
}

namespace {

float fmaxf_cuda(float a, float b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return a > b ? a : b;
}

uint32_t index_of(const std::vector<float>& bounds, float y) {
  uint32_t n = 0;
  for (float b : bounds) n += (b <= y) ? 1u : 0u;
  return n;
}

}  // namespace

GroupOutcome quantize_dequantize_group(const GroupCodebook& cb, ScaleRule rule, ScaleEnc enc,
                                       double sigma, const float (&x)[kGroupSize],
                                       float (&y)[kGroupSize]) {
  GroupOutcome out;
  if (rule == ScaleRule::oracle) {
    // Theory case: a fixed, known scale; no per-group statistics, no scale storage.
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      double u = double(x[i]) / sigma;
      uint32_t c = 0;
      for (double b : cb.bounds_exact) c += (b <= u) ? 1u : 0u;
      y[i] = float(cb.cb_exact[c] * sigma);
    }
    return out;
  }
  // Steps 1-4 of docs/spec.md section 4 in the writer's order (one rounding per operation).
  float nsq = 0.0f, amax = 0.0f;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float sq = x[i] * x[i];
    nsq = nsq + sq;
  }
  for (uint32_t i = 0; i < kGroupSize; ++i) amax = fmaxf_cuda(amax, std::fabs(x[i]));
  float inv = amax > 1e-12f ? cb.max / amax : 1.0f;
  uint32_t c[kGroupSize];
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    float v = x[i] * inv;
    c[i] = index_of(cb.bounds, v);
  }
  float s = 0.0f;
  if (rule == ScaleRule::matched) {
    float rsq = 0.0f;
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      float q = cb.cb[c[i]];
      float sq = q * q;
      rsq = rsq + sq;
    }
    float rn = std::sqrt(rsq);
    s = rn > 1e-10f ? std::sqrt(nsq) / rn : amax / cb.max;
  } else if (rule == ScaleRule::absmax) {
    s = amax / cb.max;
  } else {  // lsq, in double: the optimum is a study reference, not a kernel candidate
    double xc = 0, cc = 0;
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      xc += double(x[i]) * cb.cb[c[i]];
      cc += double(cb.cb[c[i]]) * cb.cb[c[i]];
    }
    s = cc > 0 ? float(xc / cc) : amax / cb.max;
  }
  float gs = s;
  if (enc == ScaleEnc::fp8) {
    out.scale_saturated = s > 448.0f;
    if (s > 448.0f) s = 448.0f;
    uint8_t sb = f32_to_fp8e4m3_satfinite(s);
    gs = fp8e4m3_to_f32(sb);
    out.scale_underflow = amax > 0.0f && gs == 0.0f;
    out.scale_subnormal = gs != 0.0f && std::fabs(gs) < 0.015625f;
  }
  for (uint32_t i = 0; i < kGroupSize; ++i) y[i] = cb.cb_dec[c[i]] * gs;
  return out;
}

}  // namespace tqref::study
