// The quantisation-error studies (analysis/study/): the double-precision Lloyd-Max solver and
// distortion integrals, the Hadamard rotations, the study's re-implementation of the writer
// against the bit-exact model, Monte Carlo against theory, and a --quick end-to-end run whose
// CSV files are read back and checked for plausibility.
#define BOOST_TEST_MODULE test_study
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/study/decode_study.h"
#include "analysis/study/group_quant.h"
#include "analysis/study/hadamard.h"
#include "analysis/study/lloyd_max.h"
#include "analysis/study/rng.h"
#include "analysis/study/sources.h"
#include "analysis/study/study.h"
#include "analysis/study/vq_measure.h"
#include "io/ex2_profile_io.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

using namespace tqref;
using namespace tqref::study;
namespace fs = std::filesystem;

// Catches a wrong quadrature rule or panel width: two independent evaluations (Gauss-Legendre
// and the pdf/cdf closed form) must agree, for matched and mismatched scales.
BOOST_AUTO_TEST_CASE(distortion_integral_matches_closed_form) {
  for (int n : {2, 4, 8, 16}) {
    ScalarQuantizer q = lloyd_max_gaussian(n);
    for (double sigma : {0.4, 1.0, 1.7}) {
      double a = gaussian_distortion(q, sigma), b = gaussian_distortion_closed_form(q, sigma);
      BOOST_TEST(std::fabs(a - b) <= 1e-12 * b, "levels " << n << " sigma " << sigma << ": " << a << " vs " << b);
    }
  }
}

// Catches a solver that stops early or iterates the wrong conditions: the result must satisfy
// both Lloyd-Max conditions and reproduce the published distortions (Max 1960, as SPEC quotes
// them to six digits), including 2 levels (0.3634), which the formats do not use.
BOOST_AUTO_TEST_CASE(lloyd_max_conditions_and_published_values) {
  const std::map<int, double> published = {{2, 0.363380}, {4, 0.117482}, {8, 0.034548}, {16, 0.009501}};
  for (auto [n, d] : published) {
    ScalarQuantizer q = lloyd_max_gaussian(n);
    BOOST_TEST(std::fabs(gaussian_distortion(q) - d) < 1e-6, "levels " << n);
    for (int i = 0; i + 1 < n; ++i)
      BOOST_TEST(std::fabs(q.bounds[i] - 0.5 * (q.levels[i] + q.levels[i + 1])) < 1e-15);
    for (int i = 0; i < n; ++i) {  // centroid: E[x | cell] by the closed form
      double a = i ? q.bounds[i - 1] : -INFINITY, b = i + 1 < n ? q.bounds[i] : INFINITY;
      double pa = std::isinf(a) ? 0 : normal_pdf(a), pb = std::isinf(b) ? 0 : normal_pdf(b);
      double m = normal_cdf(b) - normal_cdf(a);
      BOOST_TEST(std::fabs((pa - pb) / m - q.levels[i]) < 1e-12, "levels " << n << " cell " << i);
    }
  }
  // turbo2v and turbo4v levels are the exact solution correctly rounded to four decimals
  // (|error| <= 5e-5 plus the fp32 literal's rounding). turbo3v's are not: +-1.3440 and +-2.1520
  // are Max's three-decimal values (exact 1.343909, 2.151946), 9.1e-5 and 5.4e-5 away; the study
  // reports this (docs/studies.md), so the test pins it rather than hiding it.
  for (const auto& t : kFormats) {
    ScalarQuantizer q = lloyd_max_gaussian(int(t.levels));
    double tol = t.levels == 8 ? 1e-4 : 5.0e-5 + 1e-7;
    for (uint32_t i = 0; i < t.levels; ++i)
      BOOST_TEST(std::fabs(q.levels[i] - t.codebook[i]) < tol, t.name << " level " << i);
  }
}

// Catches a non-orthogonal construction (wrong Paley character, wrong Kronecker indexing) and a
// rotation whose inverse is not its transpose.
BOOST_AUTO_TEST_CASE(hadamard_orders_and_rotation_round_trip) {
  for (uint32_t n : {1u, 2u, 12u, 16u, 24u, 48u, 96u, 128u, 256u}) {
    BOOST_REQUIRE(hadamard_order_supported(n));
    auto h = hadamard_matrix(n);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < n; ++j) {
        int dot = 0;
        for (uint32_t k = 0; k < n; ++k) dot += h[i * n + k] * h[j * n + k];
        BOOST_TEST(dot == (i == j ? int(n) : 0), "order " << n << " rows " << i << "," << j);
      }
  }
  for (uint32_t n : {3u, 6u, 20u, 40u}) BOOST_TEST(!hadamard_order_supported(n));
  BOOST_CHECK_THROW(hadamard_matrix(20), std::invalid_argument);
  RandomRotation r(48, 7);
  Rng g(7, 1);
  std::vector<double> x(48), y(48), z(48);
  for (auto& v : x) v = g.normal();
  r.apply(x.data(), y.data());
  r.inverse(y.data(), z.data());
  double nx = 0, ny = 0, moved = 0;
  for (int i = 0; i < 48; ++i) {
    nx += x[i] * x[i];
    ny += y[i] * y[i];
    BOOST_TEST(std::fabs(z[i] - x[i]) < 1e-12);
    moved += std::fabs(y[i] - x[i]);
  }
  BOOST_TEST(std::fabs(nx - ny) < 1e-12 * nx);
  BOOST_TEST(moved > 1.0);  // it is not the identity
}

// Catches a study re-implementation that drifts from the writer (order of operations, the
// zero-group fallback, clamping, fp16 decode table): it must equal quantize_group +
// dequantize_code bit for bit, on ordinary, tiny, huge, all-zero and one-spike groups.
BOOST_AUTO_TEST_CASE(study_quantizer_reproduces_writer_model) {
  Rng g(11, 2);
  for (const auto& t : kFormats) {
    GroupCodebook cb = make_group_codebook(t, CodebookKind::spec);
    for (int trial = 0; trial < 4000; ++trial) {
      double mag = std::pow(10.0, -6.0 + 10.0 * g.uniform());
      uint16_t xb[kGroupSize];
      float x[kGroupSize], y[kGroupSize];
      for (uint32_t i = 0; i < kGroupSize; ++i) {
        double v = trial % 7 == 0 ? 0.0 : g.normal() * mag;
        if (trial % 11 == 0 && i == 3) v = 1e4 * mag;
        xb[i] = f32_to_bf16(float(v));
        x[i] = bf16_to_f32(xb[i]);
      }
      QuantizedGroup q = quantize_group(t, xb);
      quantize_dequantize_group(cb, ScaleRule::matched, ScaleEnc::fp8, 1.0, x, y);
      for (uint32_t i = 0; i < kGroupSize; ++i) {
        float ref = dequantize_code(t, q.codes[i], q.scale_byte);
        BOOST_TEST(f32_bits(y[i]) == f32_bits(ref), t.name << " trial " << trial << " elem " << i);
      }
    }
  }
}

// Catches a wrong variance normalisation of a source (the nmse of every study divides by it).
BOOST_AUTO_TEST_CASE(sources_have_unit_variance) {
  for (Dist d : kAllDists) {
    auto v = make_source(d, 2.0, 2048, 2, 128, 5, 1);
    double s = 0, s2 = 0;
    for (uint16_t b : v) {
      double x = bf16_to_f32(b);
      s += x;
      s2 += x * x;
    }
    double n = double(v.size()), var = s2 / n - (s / n) * (s / n);
    // student_t3 has infinite fourth moment: its sample variance converges slowly.
    double tol = d == Dist::student_t3 ? 0.15 : 0.02;
    BOOST_TEST(std::fabs(var / 4.0 - 1.0) < tol, dist_name(d) << " variance " << var / 4.0);
  }
}

// Monte Carlo against theory: with the known scale (oracle rule) a Gaussian source must give the
// integrated distortion of the same codebook within 4 standard errors. Catches a biased RNG,
// a wrong normalisation or a broken error accumulation in measure_vq.
BOOST_AUTO_TEST_CASE(oracle_gaussian_mse_matches_integral) {
  auto v = make_source(Dist::gaussian, 1.0, 2048, 2, 128, 3, 9);
  for (const auto& t : kFormats) {
    GroupCodebook cb = make_group_codebook(t, CodebookKind::spec);
    ScalarQuantizer q;
    q.levels = cb.cb_exact;
    q.bounds = cb.bounds_exact;
    double theory = gaussian_distortion(q);
    VqResult r = measure_vq(t, cb, {CodebookKind::spec, ScaleRule::oracle, ScaleEnc::fp32, false},
                            v, 2, 128, 1.0, nullptr);
    // The source's own power is not exactly 1: compare the per-variance-normalised error.
    BOOST_TEST(std::fabs(r.mse() - theory) < 4 * r.mse_se(),
               t.name << ": mse " << r.mse() << " +- " << r.mse_se() << " vs " << theory);
  }
}

namespace {

using Csv = std::vector<std::map<std::string, std::string>>;

Csv read_csv(const fs::path& p) {
  std::ifstream f(p);
  BOOST_REQUIRE_MESSAGE(f, "missing " << p);
  std::string line;
  std::getline(f, line);
  std::vector<std::string> cols;
  for (std::stringstream ss(line); std::getline(ss, line, ',');) cols.push_back(line);
  Csv rows;
  while (std::getline(f, line)) {
    std::map<std::string, std::string> r;
    std::stringstream ss(line);
    for (const auto& c : cols) std::getline(ss, r[c], ',');
    rows.push_back(std::move(r));
  }
  return rows;
}

double nmse_of(const Csv& rows, const std::string& src, const std::string& fmt,
               const std::string& variant, const std::string& rot = "none") {
  for (const auto& r : rows)
    if (r.at("source") == src && r.at("format") == fmt && r.at("variant") == variant &&
        r.at("rotation") == rot)
      return std::stod(r.at("nmse"));
  BOOST_FAIL("no row " << src << " " << fmt << " " << variant << " " << rot);
  return NAN;
}

}  // namespace

// End-to-end --quick run (what `tqref study --quick` does, minus the CLI parsing): every table is
// written, non-empty and finite; more bits give less error; the Gaussian writer error stays
// within a sane factor of Lloyd-Max; the fp8 sweep sees underflow at 1e-4 and none at 1.
// Catches a study that silently writes empty or NaN tables, or mixes up formats or variants.
BOOST_AUTO_TEST_CASE(quick_study_writes_sane_tables) {
  StudyOptions o;
  o.quick = true;
  o.progress = false;
  std::vector<Table> tables;
  run_theory(o, tables);
  run_vquant_synthetic(o, tables);
  fs::path dir = fs::temp_directory_path() / "tqref_test_study_csv";
  fs::remove_all(dir);
  write_csv_dir(dir.string(), tables);
  for (const auto& t : tables) {
    Csv rows = read_csv(dir / (t.name + ".csv"));
    BOOST_TEST(!rows.empty(), t.name);
    BOOST_TEST(rows.size() == t.rows.size(), t.name);
    for (const auto& r : rows)
      for (const auto& [k, v] : r)
        BOOST_TEST((v != "nan" && v != "inf" && v != "-inf" && !v.empty()), t.name << "." << k);
  }
  Csv vq = read_csv(dir / "vq_mse.csv");
  const double lm[3] = {0.117482, 0.034548, 0.009501};
  for (const char* src : {"gaussian", "laplace", "student_t5"}) {
    double n2 = nmse_of(vq, src, "turbo2v", "writer"), n3 = nmse_of(vq, src, "turbo3v", "writer"),
           n4 = nmse_of(vq, src, "turbo4v", "writer");
    BOOST_TEST(n4 < n3, src);
    BOOST_TEST(n3 < n2, src);
  }
  for (int f = 0; f < 3; ++f) {
    double w = nmse_of(vq, "gaussian", kFormats[f].name, "writer");
    BOOST_TEST(w > 0.4 * lm[f], kFormats[f].name << " writer nmse " << w);
    BOOST_TEST(w < 1.5 * lm[f], kFormats[f].name << " writer nmse " << w);
  }
  Csv mag = read_csv(dir / "vq_magnitude.csv");
  for (const auto& r : mag) {
    if (r.at("variant") != "writer" || r.at("source") != "gaussian") continue;
    double s = std::stod(r.at("sigma")), u = std::stod(r.at("scale_underflow_rate"));
    if (s == 1e-4) BOOST_TEST(u > 0.99);
    if (s == 1.0) BOOST_TEST(u == 0.0);
  }
  fs::remove_all(dir);
}

// Decode study, --quick: the skip can never drop a position whose final weight exceeds THRESH
// (the running-max factor bounds the weight from above), THRESH = 0 skips nothing on these
// inputs, the model stays within the bf16 floor of the dequantised-V reference at THRESH = 0, and
// the quantisation-only output error is the V error sqrt(nmse) for Gaussian V (loose factor 2:
// two sequences only). Catches swapped references, a skip mask read at the wrong offset, or
// weights from the wrong head.
BOOST_AUTO_TEST_CASE(quick_decode_study_is_consistent) {
  StudyOptions o;
  o.quick = true;
  o.progress = false;
  const Ex2Profile ex2 = load_ex2_profile_for_arch("sm_90");
  std::vector<Table> tables;
  run_decode_synthetic(o, ex2, tables);
  BOOST_REQUIRE_EQUAL(tables.size(), 1u);
  const Table& t = tables[0];
  BOOST_REQUIRE(!t.rows.empty());
  auto col = [&](const char* name) {
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i] == name) return i;
    BOOST_FAIL("no column " << name);
    return size_t(0);
  };
  const size_t c_thr = col("threshold"), c_fmt = col("format"), c_fs = col("false_skips"),
               c_skip = col("skip_rate"), c_deq = col("rel_l2_vs_deq"), c_q = col("rel_l2_quant_only"),
               c_cos = col("cosine");
  // The V error of the writer on Gaussian values, measured by the other path (measure_vq).
  double writer_nmse[3];
  auto src = make_source(Dist::gaussian, 1.0, 256, 2, 128, 17, 3);
  for (int k = 0; k < 3; ++k) {
    GroupCodebook cb = make_group_codebook(kFormats[k], CodebookKind::spec);
    VqResult r = measure_vq(kFormats[k], cb, {CodebookKind::spec, ScaleRule::matched, ScaleEnc::fp8, true},
                            src, 2, 128, 1.0, nullptr);
    writer_nmse[k] = r.mse() / r.mean_sq();
  }
  for (const auto& r : t.rows) {
    const double th = std::get<double>(r[c_thr]);
    const std::string f = std::get<std::string>(r[c_fmt]);
    BOOST_TEST(std::get<int64_t>(r[c_fs]) == 0);
    BOOST_TEST(std::isfinite(std::get<double>(r[c_cos])));
    if (th == 0.0) {
      BOOST_TEST(std::get<double>(r[c_skip]) == 0.0);
      BOOST_TEST(std::get<double>(r[c_deq]) < 0.01, f << " rel_l2_vs_deq " << std::get<double>(r[c_deq]));
    }
    for (int k = 0; k < 3; ++k) {
      if (f != kFormats[k].name) continue;
      double q = std::get<double>(r[c_q]), s = std::sqrt(writer_nmse[k]);
      BOOST_TEST((q > s / 2 && q < s * 2), f << " quant-only rel L2 " << q << " vs sqrt(nmse) " << s);
    }
  }
}
