// Study 1, theory half: everything here is computed in double from the normal pdf/cdf.
#include <cmath>

#include "analysis/study/group_quant.h"
#include "analysis/study/lloyd_max.h"
#include "analysis/study/study.h"
#include "tqref/format.h"
#include "tqref/numeric.h"

namespace tqref::study {

namespace {

ScalarQuantizer spec_quantizer(const FormatTraits& t, bool fp16_levels, bool exact_midpoints) {
  ScalarQuantizer q;
  for (uint32_t i = 0; i < t.levels; ++i)
    q.levels.push_back(fp16_levels ? double(f16_to_f32(f32_to_f16(t.codebook[i])))
                                   : double(t.codebook[i]));
  for (uint32_t i = 0; i + 1 < t.levels; ++i)
    q.bounds.push_back(exact_midpoints ? 0.5 * (q.levels[i] + q.levels[i + 1]) : double(t.bounds[i]));
  return q;
}

// E[max_{i<16} |x_i|] for x ~ N(0,1): int_0^inf 1 - (2 Phi(t) - 1)^16 dt, trapezoid in steps of
// 1e-4 up to t = 12 (the integrand is below 1e-30 there).
double expected_group_absmax() {
  const double h = 1e-4;
  double sum = 0;
  for (int i = 0; i <= 120000; ++i) {
    double t = i * h;
    double f = 1.0 - std::pow(2.0 * normal_cdf(t) - 1.0, double(kGroupSize));
    sum += (i == 0 || i == 120000) ? 0.5 * f : f;
  }
  return sum * h;
}

}  // namespace

void run_theory(const StudyOptions& o, std::vector<Table>& out) {
  progress(o, "theory: exact Lloyd-Max quantisers and distortion integrals");
  Table th{"theory", {"format", "bits", "levels", "quantity", "value"}, {}};
  Table lv{"lloyd_max_levels", {"format", "levels", "kind", "index", "exact", "spec"}, {}};
  Table mm{"scale_mismatch", {"format", "codebook", "sigma_ratio", "nmse"}, {}};
  // The values docs/spec.md section 2 quotes for the exact solution, kept to show they agree.
  const double quoted[3] = {0.117482, 0.034548, 0.009501};
  const double e_amax = expected_group_absmax();
  for (int f = 0; f < kNumFormats; ++f) {
    const FormatTraits& t = kFormats[f];
    int iters = 0;
    ScalarQuantizer exact = lloyd_max_gaussian(int(t.levels), &iters);
    ScalarQuantizer spec = spec_quantizer(t, false, false);
    auto add = [&](const char* q, double v) {
      th.add({t.name, int64_t(t.bits), int64_t(t.levels), std::string(q), v});
    };
    const double b = t.bits;
    add("exact_lloyd_max", gaussian_distortion(exact));
    add("exact_lloyd_max_closed_form", gaussian_distortion_closed_form(exact));
    add("spec_quoted_lloyd_max", quoted[f]);
    add("spec_codebook_spec_bounds", gaussian_distortion(spec));
    add("spec_codebook_exact_midpoints", gaussian_distortion(spec_quantizer(t, false, true)));
    add("spec_fp16_codebook_spec_bounds", gaussian_distortion(spec_quantizer(t, true, false)));
    add("turboquant_upper", std::sqrt(3.0) * M_PI / 2.0 * std::pow(4.0, -b));
    add("turboquant_lower", std::pow(4.0, -b));
    add("lloyd_iterations", double(iters));
    add("max_level_exact", exact.levels.back());
    // Absmax normalisation maps a Gaussian group onto the codebook range with gain MAX/amax;
    // with E[amax] for 16 values this is the typical scale the codebook is used at.
    add("expected_group_absmax", e_amax);
    add("absmax_sigma_ratio", t.max / e_amax);
    add("distortion_at_absmax_ratio", gaussian_distortion(spec, t.max / e_amax));
    for (uint32_t i = 0; i < t.levels; ++i)
      lv.add({t.name, int64_t(t.levels), std::string("level"), int64_t(i), exact.levels[i],
              double(t.codebook[i])});
    for (uint32_t i = 0; i + 1 < t.levels; ++i)
      lv.add({t.name, int64_t(t.levels), std::string("bound"), int64_t(i), exact.bounds[i],
              double(t.bounds[i])});
    for (int k = 0; k <= 60; ++k) {
      double r = std::pow(10.0, -0.5 + k / 60.0);  // 0.316 .. 3.16
      mm.add({t.name, std::string("spec"), r, gaussian_distortion(spec, r)});
      mm.add({t.name, std::string("exact"), r, gaussian_distortion(exact, r)});
    }
  }
  out.push_back(std::move(th));
  out.push_back(std::move(lv));
  out.push_back(std::move(mm));
}

}  // namespace tqref::study
