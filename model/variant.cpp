#include "tqref/variant.h"

#include <stdexcept>

#include "rules.h"
#include "tqref/model_path.h"

namespace tqref {

namespace {

constexpr const char* kStepNames[kNumSteps] = {
    "w-nsq-square", "w-nsq-add",    "w-inv-div",     "w-scaled-mul",  "w-rsq-square",
    "w-rsq-add",    "w-rn-sqrt",    "w-nsq-sqrt",    "w-scale-div",   "w-fallback-div",
    "w-scale-fp8",  "d-qk-mul",     "d-pair-add",    "d-part-add",    "d-butterfly-add",
    "d-score-mul",  "d-max-sub",    "d-expf-mul",    "d-ex2",         "d-expf-half",
    "d-expf-square", "d-l-mul",     "d-l-add",       "d-o-mul",       "d-ev-mul",
    "d-o-add",      "d-merge-mul",  "d-merge-add",   "d-inv-div",     "d-out-mul",
    "d-out-bf16",   "d-codebook-fp16", "d-dequant-mul"};

constexpr const char* kFusionNames[kNumFusions] = {
    "nsq",       "rsq",          "pair-ab",       "pair-cd",      "batch-l",
    "batch-o-ab", "batch-o-cd",  "batch-ev",      "single-l",     "single-o-ab",
    "single-o-cd", "merge-l-ab", "merge-l-cd",    "merge-o-ab",   "merge-o-cd"};

uint32_t bit(Fusion f) { return 1u << static_cast<int>(f); }

constexpr uint32_t kWriterFusions = (1u << int(Fusion::w_nsq)) | (1u << int(Fusion::w_rsq));

// nvcc's contraction of the plain-operator source (docs/nvcc-fmad.md, read off the PTX and SASS
// of the HDIM 128 and 256 builds for sm_90 and sm_121 with nvcc 13.0; the same sites in every
// format): where both products of a*b + c*d sit in one stretch of code the left one is fused;
// the batch's o*eo is computed before the sparse-V branches, so ef0*v0 is fused there.
uint32_t nvcc_fmad_fusions() {
  return bit(Fusion::w_nsq) | bit(Fusion::w_rsq) | bit(Fusion::d_pair_ab) |
         bit(Fusion::d_batch_l) | bit(Fusion::d_batch_o_cd) | bit(Fusion::d_batch_ev) |
         bit(Fusion::d_single_l) | bit(Fusion::d_single_o_ab) | bit(Fusion::d_merge_l_ab) |
         bit(Fusion::d_merge_o_ab);
}

// Mutant 13 (kernels/testing/mutants/mutant_rules.cuh, `fmad`): its explicit fmaf calls, which
// fuse other products than nvcc does (the single update's en*v) and leave l and the merge alone.
uint32_t mutant13_fusions() {
  return bit(Fusion::w_nsq) | bit(Fusion::w_rsq) | bit(Fusion::d_pair_ab) |
         bit(Fusion::d_batch_o_cd) | bit(Fusion::d_batch_ev) | bit(Fusion::d_single_o_cd);
}

std::vector<VariantInfo> make_named() {
  std::vector<VariantInfo> v;
  auto add = [&](Variant x, VariantKernel k, bool build, std::string what) {
    v.push_back(VariantInfo{std::move(x), k, build, std::move(what)});
  };
  add(Variant{}, VariantKernel::both, true, "the contract (docs/spec.md)");
  for (int i = 0; i < kNumFusions; ++i) {
    Variant x;
    x.name = std::string("fma:") + kFusionNames[i];
    x.fused = 1u << i;
    add(x, (x.fused & kWriterFusions) ? VariantKernel::writer : VariantKernel::decoder, false,
        "one a*b + c site contracted into an FMA");
  }
  auto fused = [&](const char* name, uint32_t sites, const char* what) {
    Variant x;
    x.name = name;
    x.fused = sites;
    add(x, VariantKernel::both, true, what);
  };
  fused("nvcc-fmad", nvcc_fmad_fusions(),
        "the sites nvcc contracts in the plain-operator source (nvcc's default --fmad=true)");
  fused("fmad-mutant13", mutant13_fusions(),
        "mutant 13's explicit fmaf: norms, score pair, ef*v of every o update (not l, not the merge)");
  Variant ftz;
  ftz.name = "ftz";
  ftz.ftz = true;
  ftz.expf_unsplit = true;
  add(ftz, VariantKernel::both, true,
      "-ftz=true: every f32 operation flushes subnormal inputs and results; EXPF unsplit");
  // The decoder's structural variants, one switch each (the mutant each models).
  auto decoder_switch = [&](const char* name, bool Variant::*on, const char* what) {
    Variant x;
    x.name = name;
    x.*on = true;
    add(x, VariantKernel::decoder, true, what);
  };
  decoder_switch("expf-no-split", &Variant::expf_unsplit,
                 "EXPF calls EX2 directly below -126 (mutant 14)");
  decoder_switch("no-batch", &Variant::no_batches, "every position a single (mutant 3)");
  decoder_switch("merge-sequential", &Variant::merge_sequential,
                 "warp 0 absorbs warps 1..7 in turn (mutant 4)");
  decoder_switch("butterfly-ascending", &Variant::butterfly_ascending,
                 "butterfly offsets 1, 2, 4, 8, 16 (mutant 10)");
  decoder_switch("fp32-codebook", &Variant::fp32_codebook,
                 "dequant with the fp32 codebook (mutant 16)");
  decoder_switch("lane-layout", &Variant::other_lane_layout,
                 "the other HDIM's lane layout for the score's partial sums (8 dims per lane at "
                 "HDIM 128, 4 at HDIM 256)");
  // Builds without the contract's -prec-div / -prec-sqrt (mutants 25, 26 and 23).
  Variant prec_div;
  prec_div.name = "prec-div";
  prec_div.division = Division::full;
  add(prec_div, VariantKernel::both, true,
      "-prec-div=false: the writer's quotients div.full.f32, the decoder's 1/l rcp.approx.f32");
  Variant prec_sqrt;
  prec_sqrt.name = "prec-sqrt";
  prec_sqrt.sqrt_approx = true;
  add(prec_sqrt, VariantKernel::writer, true, "-prec-sqrt=false: the writer's sqrt.approx.f32");
  Variant fast_math;
  fast_math.name = "fast-math";
  fast_math.fused = nvcc_fmad_fusions();
  fast_math.ftz = fast_math.expf_unsplit = fast_math.sqrt_approx = true;
  fast_math.division = Division::approx;
  add(fast_math, VariantKernel::both, true,
      "--use_fast_math: nvcc-fmad and ftz with div.approx.ftz (1/l too) and sqrt.approx.ftz");
  return v;
}

Variant merge(Variant a, const Variant& b) {
  a.fused |= b.fused;
  if (b.perturbed != Step::none) {
    if (a.perturbed != Step::none)
      throw std::invalid_argument("variant '" + a.name + "+" + b.name +
                                  "': at most one perturbed step (ulp+:/ulp-:) per variant");
    a.perturbed = b.perturbed;
    a.ulps = b.ulps;
  }
  a.ftz |= b.ftz;
  a.expf_unsplit |= b.expf_unsplit;
  a.no_batches |= b.no_batches;
  a.merge_sequential |= b.merge_sequential;
  a.butterfly_ascending |= b.butterfly_ascending;
  a.fp32_codebook |= b.fp32_codebook;
  a.other_lane_layout |= b.other_lane_layout;
  if (b.division != Division::rn) {
    if (a.division != Division::rn && a.division != b.division)
      throw std::invalid_argument("variant '" + a.name + "+" + b.name +
                                  "': two different divisions (prec-div and fast-math)");
    a.division = b.division;
  }
  a.sqrt_approx |= b.sqrt_approx;
  return a;
}

Variant parse_one(const std::string& name) {
  for (const VariantInfo& i : named_variants())
    if (i.v.name == name) return i.v;
  for (const char* sign : {"ulp+:", "ulp-:"}) {
    const std::string prefix(sign);
    if (name.rfind(prefix, 0) != 0) continue;
    for (int s = 0; s < kNumSteps; ++s)
      if (name.substr(prefix.size()) == kStepNames[s]) {
        Variant v;
        v.name = name;
        v.perturbed = Step(s);
        v.ulps = prefix[3] == '+' ? 1 : -1;
        return v;
      }
  }
  std::string allowed;
  for (const VariantInfo& i : named_variants()) allowed += (allowed.empty() ? "" : ", ") + i.v.name;
  throw std::invalid_argument("unknown model variant '" + name + "'; allowed: " + allowed +
                              ", ulp+:<step> and ulp-:<step> for a step of docs/spec.md's "
                              "rounding steps (e.g. ulp+:d-inv-div), or names joined by '+'");
}

}  // namespace

const char* step_name(Step s) { return s == Step::none ? "none" : kStepNames[int(s)]; }
bool step_is_writer(Step s) { return s <= Step::w_scale_fp8; }
const char* fusion_name(Fusion f) { return kFusionNames[int(f)]; }

bool Variant::is_contract() const {
  return fused == 0 && perturbed == Step::none && !ftz && !expf_unsplit && !no_batches &&
         !merge_sequential && !butterfly_ascending && !fp32_codebook && !other_lane_layout &&
         !needs_approx_units(*this);
}

bool needs_approx_units(const Variant& v) { return v.division != Division::rn || v.sqrt_approx; }

bool changes_writer(const Variant& v) {
  return (v.fused & kWriterFusions) || v.ftz || needs_approx_units(v) ||
         (v.perturbed != Step::none && step_is_writer(v.perturbed));
}

bool changes_decoder(const Variant& v) {
  return (v.fused & ~kWriterFusions) || v.ftz || v.expf_unsplit || v.no_batches ||
         v.division != Division::rn ||
         v.merge_sequential || v.butterfly_ascending || v.fp32_codebook || v.other_lane_layout ||
         (v.perturbed != Step::none && !step_is_writer(v.perturbed));
}

namespace {
Variant g_model_variant;  // set before models run, like the model path (tqref/model_path.h)
}  // namespace

void set_model_variant(const Variant& v) {
  if (needs_approx_units(v)) approx_units();  // a missing or bad table fails here, not in a worker
  g_model_variant = v;
}
const Variant& model_variant() { return g_model_variant; }

const std::vector<VariantInfo>& named_variants() {
  static const std::vector<VariantInfo> v = make_named();
  return v;
}

Variant parse_variant(const std::string& name) {
  Variant v;
  // split on '+' that is not part of "ulp+:"
  std::vector<std::string> parts;
  std::string cur;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '+' && !(i + 1 < name.size() && name[i + 1] == ':')) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += name[i];
    }
  }
  parts.push_back(cur);
  for (const std::string& p : parts) v = merge(v, parse_one(p));
  v.name = name;
  return v;
}

namespace rules {

uint32_t step_sign_magnitude(uint32_t bits, int steps, uint32_t sign_bit) {
  const uint32_t sign = 1u << sign_bit;
  for (int k = 0; k < std::abs(steps); ++k) {
    const bool negative = bits & sign, up = steps > 0;
    const uint32_t mag = bits & (sign - 1);
    if (mag == 0 && negative == up) bits = (up ? 0u : sign) | 1u;  // -0 up / +0 down: smallest
    else if (negative == up) bits -= 1;                            // toward zero
    else bits += 1;                                                // away from zero
  }
  return bits;
}

uint8_t VariantRules::scale_byte(float s) const {
  const uint8_t b = f32_to_fp8e4m3_satfinite(in(s));
  if (v_.perturbed != Step::w_scale_fp8 || b == 0x7F) return b;
  uint32_t r = step_sign_magnitude(b, v_.ulps, 7);
  if ((r & 0x7F) > 0x7E) r = (r & 0x80) | 0x7E;  // satfinite: never the NaN code
  return static_cast<uint8_t>(r);
}

uint16_t VariantRules::output_bf16(float y) const {
  const uint16_t b = f32_to_bf16(y);
  if (v_.perturbed != Step::d_out_bf16 || b == 0x7FFF) return b;
  const bool inf = (b & 0x7FFFu) == 0x7F80u;
  if (inf && ((b & 0x8000u) != 0) == (v_.ulps < 0)) return b;  // past +-Inf: no value, stays
  return static_cast<uint16_t>(step_sign_magnitude(b, v_.ulps, 15));
}

float VariantRules::decoder_codebook(float cb) const {
  if (v_.fp32_codebook) return cb;
  uint16_t h = f32_to_f16(cb);
  if (v_.perturbed == Step::d_codebook_fp16) h = static_cast<uint16_t>(step_sign_magnitude(h, v_.ulps, 15));
  return f16_to_f32(h);
}

// The unit reads subnormal inputs as zero (ftz); a perturbed step can hand it +2^-149, which the
// model's unit refuses as positive, so it is read as +0 here, as the hardware does.
float VariantRules::ex2_unit(const Ex2Profile& ex2, float y) const {
  if (y > 0.0f && y < std::numeric_limits<float>::min()) y = 0.0f;
  const float r = ex2.ex2(y);
  if (v_.perturbed != Step::d_ex2 || r != r) return r;
  float x = r;
  for (int k = 0; k < std::abs(v_.ulps); ++k)
    x = std::nextafter(x, v_.ulps > 0 ? std::numeric_limits<float>::infinity() : 0.0f);
  return x;
}

// EXPF of docs/spec.md section 5 with this variant's operations.
float VariantRules::expf(const Ex2Profile& ex2, float x) const {
  const float y = mul(Step::d_expf_mul, x, f32_from_bits(kLog2eBits));
  if (v_.expf_unsplit || y >= -126.0f || y != y) return ex2_unit(ex2, y);
  const float r = ex2_unit(ex2, mul(Step::d_expf_half, y, 0.5f));
  return mul(Step::d_expf_square, r, r);
}

}  // namespace rules

}  // namespace tqref
