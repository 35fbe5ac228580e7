#include "judge/level_t.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "tqref/contract.h"
#include "tqref/decode.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

// bf16 spacing at |x|: 2^(e-8) for x in [2^(e-1), 2^e) (8 significant bits), 2^-133 at the bottom.
double ulp_bf16(double x) {
  x = std::fabs(x);
  if (!(x > 0) || !std::isfinite(x)) return 0x1p-133;
  int e = 0;
  std::frexp(x, &e);
  return std::max(std::ldexp(1.0, e - 8), 0x1p-133);
}

ErrorDist make_dist(std::vector<double>& v) {
  ErrorDist d;
  d.n = v.size();
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  auto q = [&](double f) { return v[std::min(v.size() - 1, size_t(f * double(v.size() - 1) + 0.5))]; };
  d.p50 = q(0.5);
  d.p90 = q(0.9);
  d.p99 = q(0.99);
  d.max = v.back();
  return d;
}

struct ModelRun {
  std::vector<uint16_t> out;
  DecodeDiagnostics diag;
};

ModelRun run_model(const GoldenCase& c, float threshold, const Ex2Profile& ex2) {
  const DecodeCase& d = c.d;
  ModelRun m;
  m.out = d.out_init;
  DecodeParams p = d.p;
  p.threshold = threshold;
  paged_decode_model(c.format, d.q, d.k_init, d.v_init, m.out, d.block_tables, d.seq_lens, p, ex2,
                     &m.diag);
  return m;
}

// Largest |v| over the head_dim values of position `pos` of sequence s for kv head kvh, as the
// decoder dequantises them; *poisoned when any is NaN (a poisoned scale byte).
double max_abs_v(const GoldenCase& c, uint32_t s, uint32_t pos, uint32_t kvh, bool* poisoned) {
  const DecodeCase& d = c.d;
  const FormatTraits& t = traits(c.format);
  const DecodeParams& p = d.p;
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, d.num_blocks,
                        p.v_block_stride_bytes, p.v_data_section_bytes};
  const int64_t blk = d.block_tables[uint64_t(s) * p.max_blocks_per_seq + pos / p.block_size];
  const int64_t slot = blk * p.block_size + pos % p.block_size;
  const uint8_t* codes = d.v_init.data() + g.v_code_row_offset(slot, t.bits);
  const uint8_t* scales = d.v_init.data() + g.v_scale_row_offset(slot);
  double mx = 0;
  *poisoned = false;
  for (uint32_t dim = 0; dim < p.head_dim; ++dim) {
    const uint32_t e = kvh * p.head_dim + dim, grp = e / kGroupSize;
    const uint32_t code = unpack_group_code(t.bits, codes + uint64_t(grp) * t.group_code_bytes, e % kGroupSize);
    const float v = dequantize_code(t, code, scales[grp]);
    if (std::isnan(v)) *poisoned = true;
    else mx = std::max(mx, std::fabs(double(v)));
  }
  return mx;
}

report::Json num(double x) { return report::json_number(x, "%.6g"); }

report::Json dist_json(const ErrorDist& d) {
  return {{"n", d.n}, {"p50", num(d.p50)}, {"p90", num(d.p90)}, {"p99", num(d.p99)}, {"max", num(d.max)}};
}

}  // namespace

namespace {

// The per-element measures of one case, collected row by row.
struct Samples {
  std::vector<double> ulp_m, row_m, row_rd, row_ru, base_rd;
  double worst_ratio = -1;
};

// The model runs level T needs: at THRESH (the comparand, or with fp64 the bits the extension of
// docs/spec.md section 5.1 defines) and at THRESH*(1 -+ margin) (flip candidates).
struct ModelRuns {
  ModelRun exact, lo, hi;
  float thr_hi = 0;
};

// Row r = s*QH + qh of sequence s (L > 0): flip candidates, then every element against the
// comparand (the model, or the fp64 reference plus the row's skip bound).
void judge_row(const GoldenCase& c, const uint8_t* got, const ModelRuns& m, const LevelTOptions& o,
               uint32_t s, uint32_t qh, LevelTVerdict& t, Samples& x) {
  const DecodeCase& d = c.d;
  const DecodeParams& p = d.p;
  const uint32_t D = p.head_dim, QH = p.num_q_heads, q_per_kv = QH / p.num_kv_heads;
  const int32_t L = d.seq_lens[s];
  const uint32_t start = window_start(uint32_t(L), p.sliding_window);
  const uint64_t row = uint64_t(s) * QH + qh, base = row * D;
  // flip candidates of this row and what a flip could move
  double allowance = 0;
  bool poisoned_candidate = false;
  const double l_row = m.exact.diag.heads[row].l > 0 ? m.exact.diag.heads[row].l : 1.0;
  for (uint32_t i = 0; i < uint32_t(L) - start; ++i) {
    if (m.lo.diag.heads[row].skipped[i] == m.hi.diag.heads[row].skipped[i]) continue;
    FlipCandidate f{s, qh, start + i, m.exact.diag.heads[row].skipped[i] != 0, false, 0};
    f.max_abs_v = max_abs_v(c, s, start + i, qh / q_per_kv, &f.v_poisoned);
    poisoned_candidate |= f.v_poisoned;
    allowance += double(m.thr_hi) * f.max_abs_v / l_row;
    ++t.flip_candidates;
    if (t.first_flips.size() < kMaxListed) t.first_flips.push_back(f);
  }
  auto got_bits = [&](uint32_t i) { return uint16_t(got[2 * (base + i)] | got[2 * (base + i) + 1] << 8); };
  bool new_nan = false;
  for (uint32_t i = 0; i < D; ++i)
    new_nan |= std::isnan(bf16_to_f32(got_bits(i))) && !std::isnan(bf16_to_f32(m.exact.out[base + i]));
  if (new_nan && poisoned_candidate) {
    ++t.rows_flip_poisoned;
    return;
  }
  const bool have_deq = d.diag.ref_dequantised.size() == d.out_init.size();
  const bool have_unq = d.diag.ref_unquantised.size() == d.out_init.size();
  double scale = 0, scale_u = 0;
  for (uint32_t i = 0; i < D; ++i) {
    if (have_deq && std::isfinite(d.diag.ref_dequantised[base + i]))
      scale = std::max(scale, std::fabs(d.diag.ref_dequantised[base + i]));
    if (have_unq && std::isfinite(d.diag.ref_unquantised[base + i]))
      scale_u = std::max(scale_u, std::fabs(d.diag.ref_unquantised[base + i]));
  }
  // Against fp64 every skip is an error of at most the row's skip bound; against the model only
  // a flipped decision is.
  const double skip_room = o.against_reference ? d.diag.ref_skip_bound[row] : allowance;
  for (uint32_t i = 0; i < D; ++i) {
    const uint16_t gb = got_bits(i), mb = m.exact.out[base + i];
    const double g = bf16_to_f32(gb), mm = bf16_to_f32(mb);
    const double cmp = o.against_reference ? d.diag.ref_dequantised[base + i] : mm;
    ++t.elements;
    t.differing_from_model += gb != mb;
    if (std::isnan(g) || std::isnan(cmp) || std::isinf(g) || std::isinf(cmp)) {
      const bool same = (std::isnan(g) && std::isnan(cmp)) || g == cmp;
      if (!same) ++t.nan_mismatch;
      continue;
    }
    const double err = std::fabs(g - cmp);
    const double tol = o.tol_ulps * ulp_bf16(std::max(std::fabs(g), std::fabs(cmp))) + o.tol_row * scale + skip_room;
    if (err > tol) ++t.over_tolerance;
    const double ratio = err / tol;
    if (ratio > x.worst_ratio) {
      x.worst_ratio = ratio;
      char b[256];
      std::snprintf(b, sizeof b, "seq %u qhead %u dim %u (L %d): got %.9g %s %.9g, |err| %.3g, tolerance %.3g",
                    s, qh, i, L, g, o.against_reference ? "fp64" : "model", cmp, err, tol);
      t.worst = b;
    }
    if (std::isfinite(mm)) x.ulp_m.push_back(bf16_ulp_distance(gb, mb));
    if (scale > 0 && std::isfinite(mm)) {
      x.row_m.push_back(std::fabs(g - mm) / scale);
      const double ref = d.diag.ref_dequantised[base + i];
      x.row_rd.push_back(std::fabs(g - ref) / scale);
      x.base_rd.push_back(std::fabs(mm - ref) / scale);
    }
    if (scale_u > 0) x.row_ru.push_back(std::fabs(g - d.diag.ref_unquantised[base + i]) / scale_u);
  }
}

}  // namespace

LevelTVerdict judge_level_t(const GoldenCase& c, const CaseResult& r, const Ex2Profile* model_ex2,
                            const LevelTOptions& o) {
  LevelTVerdict t;
  t.name = c.name;
  t.kernel = kernel_name(c.kind, c.format);
  t.against_reference = o.against_reference;
  if (c.kind != CaseKind::decode) throw std::logic_error("judge_level_t: " + c.name + " is a writer case");
  // Exact-level checks that hold at level T too.
  const CaseVerdict exact = compare_case(c, r);
  if (!exact.error.empty()) {
    t.error = exact.error;
    return t;
  }
  for (const auto& [cat, n] : exact.categories)
    if (cat != "output-value" && cat != "skipped-v-read") t.structural[cat] = n;
  if (!model_ex2) {
    t.error = "no EX2 profile to run the model with";
    return t;
  }
  const DecodeCase& d = c.d;
  if (o.against_reference && (d.diag.ref_skip_bound.size() != uint64_t(d.p.num_seqs) * d.p.num_q_heads ||
                              d.diag.ref_dequantised.size() != d.out_init.size())) {
    t.error = "level T against fp64 needs diagnostics/reference_skip_bound and reference_dequantised_v, "
              "which this file does not store for the case (docs/golden-schema.md)";
    return t;
  }
  t.note = "model run with EX2 profile " + model_ex2->id();
  ModelRuns m;
  m.thr_hi = float(double(c.threshold) * (1 + o.margin));
  try {
    m.exact = run_model(c, c.threshold, *model_ex2);
    m.lo = run_model(c, float(double(c.threshold) * (1 - o.margin)), *model_ex2);
    m.hi = run_model(c, m.thr_hi, *model_ex2);
  } catch (const std::invalid_argument& e) {
    t.error = std::string("model: ") + e.what();
    return t;
  }
  const uint8_t* got = r.buffers.at("output").data();
  Samples x;
  for (uint32_t s = 0; s < d.p.num_seqs; ++s)
    if (d.seq_lens[s] > 0)
      for (uint32_t qh = 0; qh < d.p.num_q_heads; ++qh) judge_row(c, got, m, o, s, qh, t, x);
  t.ulp_vs_model = make_dist(x.ulp_m);
  t.row_vs_model = make_dist(x.row_m);
  t.row_vs_ref_dequantised = make_dist(x.row_rd);
  t.row_vs_ref_unquantised = make_dist(x.row_ru);
  t.model_row_vs_ref_dequantised = make_dist(x.base_rd);
  t.pass = t.structural.empty() && t.over_tolerance == 0 && t.nan_mismatch == 0;
  return t;
}

CaseVerdict level_t_case_verdict(const LevelTVerdict& t) {
  CaseVerdict v;
  v.name = t.name;
  v.kernel = t.kernel;
  v.kind = "decode";
  v.pass = t.pass;
  v.error = t.error;
  v.categories = t.structural;
  if (t.over_tolerance) v.categories["over-tolerance"] = t.over_tolerance;
  if (t.nan_mismatch) v.categories["nonfinite-mismatch"] = t.nan_mismatch;
  if (!t.pass && v.error.empty()) {
    v.error = "level T: " + std::to_string(t.over_tolerance) + " elements over tolerance, " +
              std::to_string(t.nan_mismatch) + " non-finite mismatches, " +
              std::to_string(t.structural.size()) + " structural categories; worst " + t.worst;
  }
  v.bytes_compared = t.elements * 2;
  return v;
}

std::string level_t_text(const LevelTVerdict& t) {
  char b[512];
  std::string r = std::string(t.pass ? "PASS" : "FAIL") + (t.against_reference ? "(T vs fp64) " : "(T) ") + t.name;
  if (!t.error.empty()) return r + ": " + t.error + "\n";
  std::snprintf(b, sizeof b,
                ": %llu elements (%llu differ from the model's bits), ulp vs model p50 %g p99 %g max %g; "
                "|err|/row vs model max %.3g, vs fp64(dequantised V) max %.3g (model itself %.3g); "
                "%llu flip candidates, %llu rows flip-onto-poisoned-V\n",
                (unsigned long long)t.elements, (unsigned long long)t.differing_from_model,
                t.ulp_vs_model.p50, t.ulp_vs_model.p99,
                t.ulp_vs_model.max, t.row_vs_model.max, t.row_vs_ref_dequantised.max,
                t.model_row_vs_ref_dequantised.max, (unsigned long long)t.flip_candidates,
                (unsigned long long)t.rows_flip_poisoned);
  r += b;
  if (!t.pass) {
    r += "    " + std::to_string(t.over_tolerance) + " over tolerance, " +
         std::to_string(t.nan_mismatch) + " non-finite mismatches; worst: " + t.worst + "\n";
    for (const auto& [cat, n] : t.structural) r += "    " + cat + " x" + std::to_string(n) + "\n";
  }
  return r;
}

report::Json level_t_json(const std::vector<LevelTVerdict>& ts, const LevelTOptions& o) {
  report::Json cases = report::Json::array();
  for (const LevelTVerdict& t : ts) {
    report::Json flips = report::Json::array();
    for (const FlipCandidate& f : t.first_flips)
      flips.push_back({{"seq", f.seq},
                       {"qhead", f.qhead},
                       {"pos", f.pos},
                       {"skipped_by_model", f.skipped_by_model},
                       {"v_poisoned", f.v_poisoned},
                       {"max_abs_v", num(f.max_abs_v)}});
    cases.push_back({{"name", t.name},
                     {"kernel", t.kernel},
                     {"pass", t.pass},
                     {"error", t.error},
                     {"note", t.note},
                     {"elements", t.elements},
                     {"over_tolerance", t.over_tolerance},
                     {"nonfinite_mismatch", t.nan_mismatch},
                     {"rows_flip_onto_poisoned_v", t.rows_flip_poisoned},
                     {"against_reference", t.against_reference},
                     {"differing_from_model", t.differing_from_model},
                     {"worst", t.worst},
                     {"structural", t.structural},
                     {"ulp_vs_model", dist_json(t.ulp_vs_model)},
                     {"row_rel_vs_model", dist_json(t.row_vs_model)},
                     {"row_rel_vs_ref_dequantised", dist_json(t.row_vs_ref_dequantised)},
                     {"row_rel_vs_ref_unquantised", dist_json(t.row_vs_ref_unquantised)},
                     {"model_row_rel_vs_ref_dequantised", dist_json(t.model_row_vs_ref_dequantised)},
                     {"flip_candidates", t.flip_candidates},
                     {"first_flips", std::move(flips)}});
  }
  return {{"level", "T"},
          {"options", {{"margin", num(o.margin)}, {"tol_ulps", num(o.tol_ulps)}, {"tol_row", num(o.tol_row)}}},
          {"cases", std::move(cases)}};
}

}  // namespace tqref::judge
