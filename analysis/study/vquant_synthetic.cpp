// Studies 1 and 2 on synthetic sources: V quantisation MSE per format and quantiser variant,
// the random-sign Hadamard rotation, and the fp8 scale statistics versus magnitude.
#include <cmath>
#include <string>

#include "analysis/study/sources.h"
#include "analysis/study/study.h"
#include "analysis/study/vq_measure.h"

namespace tqref::study {

namespace {

// Layout of the synthetic cache rows: the kernel's HDIM 128, two KV heads.
constexpr uint32_t kHeads = 2, kHeadDim = 128;

// The full grid: both codebooks x {matched, absmax, lsq} x {fp8, fp32}, plus the oracle scale;
// (spec, matched, fp8) is the writer itself and is measured with the bit-exact model.
std::vector<Variant> all_variants() {
  std::vector<Variant> vs;
  for (CodebookKind cb : {CodebookKind::spec, CodebookKind::exact}) {
    for (ScaleRule r : {ScaleRule::matched, ScaleRule::absmax, ScaleRule::lsq})
      for (ScaleEnc e : {ScaleEnc::fp8, ScaleEnc::fp32})
        vs.push_back({cb, r, e, cb == CodebookKind::spec && r == ScaleRule::matched && e == ScaleEnc::fp8});
    vs.push_back({cb, ScaleRule::oracle, ScaleEnc::fp32, false});
  }
  return vs;
}

}  // namespace

std::string variant_label(const Variant& v) {
  if (v.writer_model) return "writer";
  if (v.rule == ScaleRule::oracle) return std::string(codebook_name(v.codebook)) + "/oracle";
  return std::string(codebook_name(v.codebook)) + "/" + scale_rule_name(v.rule) + "/" +
         scale_enc_name(v.enc);
}

std::vector<std::string> vq_columns() {
  return {"source", "kind", "layer", "sigma", "format", "bits", "variant", "codebook", "scale",
          "scale_enc", "rotation", "values", "mean_sq", "variance", "kurtosis", "mse", "nmse", "nmse_se",
          "scale_underflow_rate", "scale_subnormal_rate", "scale_saturation_rate"};
}

void add_vq_row(Table& t, const std::string& source, const std::string& kind, int64_t layer,
                double sigma, const FormatTraits& f, const Variant& v, bool rotated,
                const VqResult& r) {
  const double g = double(r.groups);
  t.add({source, kind, layer, sigma, std::string(f.name), int64_t(f.bits), variant_label(v),
         std::string(codebook_name(v.codebook)), std::string(scale_rule_name(v.rule)),
         std::string(v.rule == ScaleRule::oracle ? "none" : scale_enc_name(v.enc)),
         std::string(rotated ? "hadamard" : "none"), int64_t(r.values), r.mean_sq(), r.variance(), r.kurtosis(),
         r.mse(), r.mse() / r.mean_sq(), r.mse_se() / r.mean_sq(), double(r.underflow) / g,
         double(r.subnormal) / g, double(r.saturated) / g});
}

void run_vquant_synthetic(const StudyOptions& o, std::vector<Table>& out) {
  Table mse{"vq_mse", vq_columns(), {}};
  Table mag{"vq_magnitude", vq_columns(), {}};
  const uint32_t tokens = o.quick ? 128 : 4096;
  const uint32_t sweep_tokens = o.quick ? 32 : 512;
  const auto variants = all_variants();
  const RandomRotation rot(kHeadDim, o.seed);
  GroupCodebook cbs[2][kNumFormats];
  for (int f = 0; f < kNumFormats; ++f) {
    cbs[0][f] = make_group_codebook(kFormats[f], CodebookKind::spec);
    cbs[1][f] = make_group_codebook(kFormats[f], CodebookKind::exact);
  }
  uint64_t stream = 1;
  for (Dist d : kAllDists) {
    progress(o, "vq_mse: %s, %u tokens x %u values", dist_name(d), tokens, kHeads * kHeadDim);
    auto src = make_source(d, 1.0, tokens, kHeads, kHeadDim, o.seed, stream++);
    for (int f = 0; f < kNumFormats; ++f) {
      for (const Variant& v : variants) {
        const GroupCodebook& cb = cbs[v.codebook == CodebookKind::exact][f];
        add_vq_row(mse, dist_name(d), "synthetic", -1, 1.0, kFormats[f], v, false,
                   measure_vq(kFormats[f], cb, v, src, kHeads, kHeadDim, 1.0, nullptr));
        // Study 2: the rotation, for the writer and the plain absmax alternative.
        if (v.writer_model || (v.codebook == CodebookKind::spec && v.rule == ScaleRule::absmax &&
                               v.enc == ScaleEnc::fp8))
          add_vq_row(mse, dist_name(d), "synthetic", -1, 1.0, kFormats[f], v, true,
                     measure_vq(kFormats[f], cb, v, src, kHeads, kHeadDim, 1.0, &rot));
      }
    }
  }
  // fp8 scale statistics versus magnitude: sigma = 10^(k/4), k = -20 .. 16 (1e-5 .. 1e4).
  std::vector<double> sigmas;
  if (o.quick) sigmas = {1e-4, 1.0, 1e3};
  else
    for (int k = -20; k <= 16; ++k) sigmas.push_back(std::pow(10.0, k / 4.0));
  const Variant sweep[] = {{CodebookKind::spec, ScaleRule::matched, ScaleEnc::fp8, true},
                           {CodebookKind::spec, ScaleRule::absmax, ScaleEnc::fp8, false},
                           {CodebookKind::spec, ScaleRule::matched, ScaleEnc::fp32, false}};
  for (Dist d : kAllDists) {
    progress(o, "vq_magnitude: %s, %zu magnitudes", dist_name(d), sigmas.size());
    for (double s : sigmas) {
      auto src = make_source(d, s, sweep_tokens, kHeads, kHeadDim, o.seed, stream++);
      for (int f = 0; f < kNumFormats; ++f)
        for (const Variant& v : sweep)
          add_vq_row(mag, dist_name(d), "synthetic", -1, s, kFormats[f], v, false,
                     measure_vq(kFormats[f], cbs[0][f], v, src, kHeads, kHeadDim, s, nullptr));
    }
  }
  out.push_back(std::move(mse));
  out.push_back(std::move(mag));
}

}  // namespace tqref::study
