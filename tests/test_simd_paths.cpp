// The SIMD paths (model/simd_kernels.h) against the scalar model, on every instruction set
// this CPU can run (so an AVX-512 machine also proves the AVX2 and portable paths): decode
// outputs and every diagnostic bit for bit on randomized cases of every format, HDIM, GQA ratio,
// awkward length, block size and window, on non-finite inputs and thresholds;
// writer pools byte for byte on every format and awkward head counts and values; the EX2 batch
// calls and the datapath table; and the committed golden files through the CLI with each model.
#define BOOST_TEST_MODULE test_simd_paths
#include <boost/test/unit_test.hpp>
#include <omp.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "decode_case.h"
#include "sm90_ex2.h"
#include "tqref/model_path.h"

namespace fs = std::filesystem;
using namespace tqref;
using namespace tqref::test;

namespace {

const Ex2Profile& sm90() { return sm90_profile(); }

// Restores the default model path and instruction set when a test ends, whatever it set.
struct PathGuard {
  const std::string isa = simd_isa();
  ~PathGuard() {
    set_simd_isa(isa);
    set_model_path(ModelPath::simd);
  }
};

std::string hex(uint32_t b) { return hex32(b); }

// Outputs and diagnostics of the SIMD path (every instruction set) equal the scalar model's.
// Returns the number of (head, position) pairs compared, so callers can check they did work.
uint64_t expect_decode_equal(const DecodeCase& dc, const Ex2Profile& ex2, const std::string& what) {
  PathGuard guard;
  set_model_path(ModelPath::scalar);
  DecodeDiagnostics dref;
  const std::vector<uint16_t> ref = run_model(dc, ex2, &dref);
  uint64_t pairs = 0;
  for (const auto& h : dref.heads) pairs += h.skipped.size();
  for (const std::string& isa : simd_isas()) {
    set_simd_isa(isa);
    set_model_path(ModelPath::simd);
    DecodeDiagnostics d;
    const std::vector<uint16_t> out = run_model(dc, ex2, &d);
    BOOST_TEST_CONTEXT(what << ", SIMD path " << isa) {
      size_t bad = 0;
      for (size_t i = 0; i < out.size(); ++i)
        if (out[i] != ref[i] && ++bad <= 3)
          BOOST_ERROR("output[" << i << "] = " << hex(out[i]) << ", scalar " << hex(ref[i]));
      BOOST_CHECK_EQUAL(bad, 0u);
      BOOST_REQUIRE_EQUAL(d.heads.size(), dref.heads.size());
      for (size_t h = 0; h < d.heads.size(); ++h) {
        const DecodeHeadDiag &a = d.heads[h], &b = dref.heads[h];
        BOOST_CHECK_MESSAGE(a.skipped == b.skipped, "head " << h << ": skipped[] differs");
        BOOST_CHECK_EQUAL(a.skip_count, b.skip_count);
        BOOST_CHECK_EQUAL(hex(f32_bits(a.m)), hex(f32_bits(b.m)));
        BOOST_CHECK_EQUAL(hex(f32_bits(a.l)), hex(f32_bits(b.l)));
        BOOST_REQUIRE_EQUAL(a.out_f32.size(), b.out_f32.size());
        for (size_t e = 0; e < a.out_f32.size(); ++e)
          if (f32_bits(a.out_f32[e]) != f32_bits(b.out_f32[e])) {
            BOOST_ERROR("head " << h << " out_f32[" << e << "] = " << hex(f32_bits(a.out_f32[e]))
                                << ", scalar " << hex(f32_bits(b.out_f32[e])));
            break;
          }
      }
    }
  }
  return pairs;
}

// (q heads, kv heads): GQA ratios 1, 2, 3, 4, 6, 7, 8 and MQA with 12 q heads.
constexpr std::pair<uint32_t, uint32_t> kGqa[] = {{2, 2}, {4, 2}, {6, 2}, {8, 2}, {6, 1},
                                                  {7, 1}, {16, 2}, {12, 1}};
constexpr uint32_t kBlockSizes[] = {1, 7, 16, 32};
constexpr uint32_t kWindows[] = {0, 1, 333, 2000};

}  // namespace

BOOST_AUTO_TEST_SUITE(decode)

// Every format x HDIM x GQA ratio, each case holding sequences of lengths 0, 1, 2, 3, 5, 7, the
// prime 1009 and multiples of the block size; block size and window rotate through 1, 7, 16, 32
// and 0, 1, 333, 2000 so every pair of them occurs. Catches any lane, pair-order, butterfly,
// batch/single, block-boundary, window, GQA mapping or tail difference of the SIMD path.
BOOST_AUTO_TEST_CASE(randomized_every_format_hdim_gqa_length) {
  uint64_t pairs = 0, seed = 100, combo = 0;
  for (const FormatTraits& t : kFormats)
    for (uint32_t hdim : {128u, 256u})
      for (const auto& [nq, nkv] : kGqa) {
        CaseSpec c;
        c.format = t.format;
        c.hdim = hdim;
        c.num_q_heads = nq;
        c.num_kv_heads = nkv;
        c.block_size = kBlockSizes[combo % 4];
        c.window = kWindows[(combo / 4 + combo) % 4];
        const int32_t B = int32_t(c.block_size);
        c.lens = {0, 1, 2, 3, 5, 7, 1009, B, 2 * B, 4 * B + 4};
        c.q_sigma = combo % 3 == 0 ? 4.0f : 1.0f;  // peaked scores: many skips
        c.seed = ++seed;
        ++combo;
        pairs += expect_decode_equal(make_case(c), sm90(),
                                     std::string(t.name) + " hdim=" + std::to_string(hdim) +
                                         " q/kv=" + std::to_string(nq) + "/" + std::to_string(nkv) +
                                         " B=" + std::to_string(c.block_size) +
                                         " window=" + std::to_string(c.window));
      }
  BOOST_CHECK_GT(pairs, 200000u);
}

// NaN and Inf in q and K (NaN and infinite scores, Inf - Inf arguments), groups with NaN scales,
// score ties, thresholds 0 (nothing skipped) and 1 (everything), and mutant 14's unsplit EXPF:
// catches a SIMD path that handles fmaxf's NaN rule, the ef * 0 of a skipped position, NaN
// factors or the EXPF split differently.
BOOST_AUTO_TEST_CASE(non_finite_values_thresholds_and_mutant_expf) {
  for (const FormatTraits& t : kFormats)
    for (uint32_t hdim : {128u, 256u}) {
      CaseSpec c;
      c.format = t.format;
      c.hdim = hdim;
      c.num_q_heads = 4;
      c.num_kv_heads = 2;
      c.block_size = 16;
      c.lens = {19, 64, 200};
      c.q_sigma = 3.0f;
      c.seed = 7 + hdim;
      c.kv_gen = [&](uint32_t s, uint32_t pos, uint16_t* k, uint16_t* v) {
        std::mt19937_64 rng(s * 10007 + pos);
        const uint32_t n = c.num_kv_heads * c.hdim;
        for (uint32_t e = 0; e < n; ++e) k[e] = bf16_gauss(rng, 1.0f), v[e] = bf16_gauss(rng, 1.0f);
        if (pos % 17 == 3) k[pos % n] = 0x7FC0;                    // NaN score
        if (pos % 23 == 5) k[(pos * 7) % n] = 0x7F80;              // +Inf score
        if (pos % 29 == 6) k[(pos * 3) % n] = 0xFF80;              // -Inf score
        if (pos % 13 == 2) v[(pos * 5) % n] = 0x7FC1;              // NaN in a V group
        if (pos % 11 == 1) std::copy_n(k, n, k + 0);               // (tie with itself: no-op)
        if (pos % 31 == 7 && pos > 0) v[0] = 0x7F80;               // Inf V: scale saturates
      };
      DecodeCase dc = make_case(c);
      const std::string name = std::string(t.name) + " hdim=" + std::to_string(hdim);
      expect_decode_equal(dc, sm90(), name);
      dc.p.threshold = 0.0f;
      expect_decode_equal(dc, sm90(), name + " threshold=0");
      dc.p.threshold = 1.0f;
      expect_decode_equal(dc, sm90(), name + " threshold=1");
    }
}

// A q row of NaN, one of +Inf and one of zeros (all scores equal): whole-row NaN, Inf - Inf
// arguments and ties at the running maximum.
BOOST_AUTO_TEST_CASE(degenerate_q_rows) {
  CaseSpec c;
  c.num_q_heads = 8;
  c.num_kv_heads = 2;
  c.lens = {77, 130, 5};
  DecodeCase dc = make_case(c);
  std::fill_n(dc.q.begin(), dc.p.head_dim, uint16_t(0x7FC0));
  std::fill_n(dc.q.begin() + dc.p.q_stride, dc.p.head_dim, uint16_t(0x7F80));
  std::fill_n(dc.q.begin() + 2 * dc.p.q_stride + dc.p.head_dim, dc.p.head_dim, uint16_t(0));
  expect_decode_equal(dc, sm90(), "degenerate q rows");
}

// The measured table as the EX2 profile (the vector EXPF's table path) and a synthetic one.
BOOST_AUTO_TEST_CASE(table_profiles) {
  CaseSpec c;
  c.lens = {300, 41};
  c.q_sigma = 2.0f;
  const DecodeCase dc = make_case(c);
  expect_decode_equal(dc, sm90_measured(), "measured table");
  expect_decode_equal(dc, synthetic_ex2(), "synthetic table");
}

// Same bits on 1, 2 and 3 threads (work items are warps: catches a race between them).
BOOST_AUTO_TEST_CASE(thread_counts) {
  PathGuard guard;
  CaseSpec c;
  c.num_q_heads = 12;
  c.num_kv_heads = 1;
  c.lens = {1009, 0, 64, 3};
  const DecodeCase dc = make_case(c);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  DecodeDiagnostics d1;
  const auto one = run_model(dc, sm90(), &d1);
  for (int threads : {2, 3}) {
    omp_set_num_threads(threads);
    DecodeDiagnostics d;
    BOOST_CHECK(run_model(dc, sm90(), &d) == one);
    for (size_t h = 0; h < d.heads.size(); ++h) BOOST_CHECK(d.heads[h].skipped == d1.heads[h].skipped);
  }
  omp_set_num_threads(saved);
}

// Launches outside the contract (docs/spec.md section 5.1): head_dim below the build's HDIM
// (q and K zero-padded) and above it (rows of bf16 NaN), every format, with the SIMD path
// selected: catches a SIMD path that takes such a launch and reads head_dim-strided rows as
// HDIM-strided ones (they run on the scalar model today, model/decode.cpp).
BOOST_AUTO_TEST_CASE(head_dim_outside_the_contract) {
  for (const FormatTraits& t : kFormats)
    for (const auto [head_dim, hdim] : {std::pair{64u, 128u}, std::pair{192u, 256u}, std::pair{256u, 128u}}) {
      CaseSpec c;
      c.format = t.format;
      c.hdim = head_dim;  // head_dim dims per head in q, K, V and the output
      c.num_q_heads = 6;
      c.num_kv_heads = 2;
      c.lens = {0, 1, 37, 83};
      c.seed = head_dim + hdim;
      DecodeCase dc = make_case(c);
      dc.p.hdim = hdim;  // the build launched
      expect_decode_equal(dc, sm90(), std::string(t.name) + " head_dim=" + std::to_string(head_dim) +
                                          " hdim=" + std::to_string(hdim));
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(writer)

// Pools written by each SIMD path equal the scalar model's byte for byte, for every format,
// head counts and dims whose groups per token are not a multiple of any lane count (tails),
// padded strides and blocks, slot -1 tokens, and groups that are all zero, hold NaN or Inf, one
// huge element, or values whose scales underflow or saturate fp8. Catches a lane, tail,
// packing, code-count or scale difference of the vectorised quantiser.
BOOST_AUTO_TEST_CASE(every_format_and_awkward_groups) {
  PathGuard guard;
  std::mt19937_64 rng(31);
  uint64_t groups = 0;
  for (const FormatTraits& t : kFormats)
    for (const auto& [H, D] : {std::pair<uint32_t, uint32_t>{1, 16}, {3, 16}, {2, 96}, {8, 128}, {1, 256}, {5, 64}}) {
      const uint32_t n = H * D, B = 7, tokens = 61, blocks = 12;
      WriterParams p{H, D, B, n + 4, n + 3, 0, 0, 0};
      p.v_data_section_bytes = uint64_t(B) * n * t.bits / 8 + 5;
      p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(B) * n / 16 + 9;
      std::vector<uint16_t> key(uint64_t(tokens) * p.key_stride), value(uint64_t(tokens) * p.value_stride);
      std::normal_distribution<float> g(0.0f, 1.0f);
      for (auto& x : key) x = f32_to_bf16(g(rng));
      for (uint32_t tok = 0; tok < tokens; ++tok)
        for (uint32_t e = 0; e < n; ++e) {
          const uint32_t grp = (tok * 7 + e / 16) % 9;  // a kind of group per (token, group)
          float x = g(rng);
          if (grp == 0) x = 0.0f;
          if (grp == 1 && e % 16 == 3) x = std::numeric_limits<float>::quiet_NaN();
          if (grp == 2 && e % 16 == 9) x = -std::numeric_limits<float>::infinity();
          if (grp == 3 && e % 16 == 0) x = 3e38f;
          if (grp == 4) x *= 1e-30f;   // scale underflows fp8
          if (grp == 5) x *= 1e6f;     // scale saturates at 448
          if (grp == 6) x = -0.0f;
          value[uint64_t(tok) * p.value_stride + e] = f32_to_bf16(x);
        }
      std::vector<int64_t> slots(tokens);
      for (uint32_t i = 0; i < tokens; ++i) slots[i] = i % 10 == 4 ? -1 : int64_t((i * 37) % (blocks * B));
      std::vector<uint8_t> kref(uint64_t(blocks) * B * n * 2, 0x5A), vref(uint64_t(blocks) * p.v_block_stride_bytes, 0xC3);
      const auto k0 = kref, v0 = vref;
      set_model_path(ModelPath::scalar);
      reshape_and_cache_model(t.format, key, value, kref, vref, slots, p);
      for (const std::string& isa : simd_isas()) {
        set_simd_isa(isa);
        set_model_path(ModelPath::simd);
        auto k = k0, v = v0;
        reshape_and_cache_model(t.format, key, value, k, v, slots, p);
        BOOST_TEST_CONTEXT(t.name << " H=" << H << " D=" << D << " SIMD path " << isa) {
          BOOST_CHECK(k == kref);
          size_t first = v.size();
          for (size_t i = 0; i < v.size() && first == v.size(); ++i) first = v[i] != vref[i] ? i : first;
          BOOST_CHECK_MESSAGE(first == v.size(), "V pool differs first at byte " << first);
        }
      }
      groups += uint64_t(tokens) * n / 16;
      BOOST_CHECK(vref != v0);  // the writer wrote something
    }
  BOOST_CHECK_GT(groups, 10000u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(ex2)

// ex2_many / expf_many on every instruction set equal ex2() / expf() on a stride through every
// non-positive float and NaN (with odd lengths: partial lane blocks) plus every class edge.
// Catches a branch-free structure rule (ftz, NaN, cut-off, scaling) or EXPF split that differs
// from the readable one. The long test (test_ex2_long) covers every input.
BOOST_AUTO_TEST_CASE(batch_equals_scalar) {
  PathGuard guard;
  std::vector<float> x;
  for (uint64_t b = 0x80000000ull; b <= 0xFFFFFFFFull; b += 4099) x.push_back(f32_from_bits(uint32_t(b)));
  for (uint32_t b : {0x00000000u, 0x80000000u, 0x80000001u, 0x807FFFFFu, 0x80800000u, 0xBF800000u,
                     0xBF7FFFFFu, 0xC2FC0000u, 0xC2FC0001u, 0xC2FBFFFFu, 0xFF800000u, 0xFF800001u,
                     0xFFFFFFFFu, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0xB4000000u, 0xB3FFFFFFu})
    x.push_back(f32_from_bits(b));
  x.push_back(-0.0f);  // odd total length
  for (const std::string& isa : simd_isas()) {
    set_simd_isa(isa);
    std::vector<float> y(x.size()), z(x.size());
    sm90().ex2_many(x.data(), y.data(), x.size());
    sm90().expf_many(x.data(), z.data(), x.size());
    uint64_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const uint32_t want = f32_bits(sm90().ex2(x[i])), wante = f32_bits(sm90().expf(x[i]));
      if ((f32_bits(y[i]) != want || f32_bits(z[i]) != wante) && ++bad <= 4)
        BOOST_ERROR(isa << ": x " << hex(f32_bits(x[i])) << " ex2 " << hex(f32_bits(y[i])) << "/"
                        << hex(want) << " expf " << hex(f32_bits(z[i])) << "/" << hex(wante));
    }
    BOOST_CHECK_EQUAL(bad, 0u);
    std::vector<float> inplace = x;
    sm90().expf_many(inplace.data(), inplace.data(), inplace.size());
    BOOST_CHECK(std::memcmp(inplace.data(), z.data(), z.size() * 4) == 0);
  }
  BOOST_CHECK_GT(x.size(), 500000u);
  float pos = 1.0f, out = 0;
  BOOST_CHECK_THROW(sm90().expf_many(&pos, &out, 1), std::domain_error);
}

// The datapath table built on each instruction set equals the scalar evaluation on all 2^23 + 1
// entries (the scalar form is itself checked against the measured table in test_ex2).
BOOST_AUTO_TEST_CASE(datapath_table_every_isa) {
  PathGuard guard;
  std::vector<uint32_t> want(kEx2FractionEntries);
  for (uint32_t k = 0; k < kEx2FractionEntries; ++k) want[k] = sm90().fraction(k);
  for (const std::string& isa : simd_isas()) {
    set_simd_isa(isa);
    BOOST_CHECK_MESSAGE(sm90().fraction_table() == want, isa << ": datapath table differs");
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(names)

// parse_model_path takes what model_path_name gives, and "fast", the SIMD path's former name.
BOOST_AUTO_TEST_CASE(simd_scalar_and_the_former_name_fast) {
  for (ModelPath p : {ModelPath::simd, ModelPath::scalar})
    BOOST_CHECK(parse_model_path(model_path_name(p)) == p);
  BOOST_CHECK_EQUAL(std::string(model_path_name(ModelPath::simd)), "simd");
  BOOST_CHECK(parse_model_path("fast") == ModelPath::simd);
  BOOST_CHECK_THROW(parse_model_path("SIMD"), std::invalid_argument);
  BOOST_CHECK_THROW(parse_model_path(""), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(golden)

// Every committed golden file (made by the scalar model) checks exactly with the scalar model
// and with every SIMD path through the CLI's --model: catches a SIMD path that differs on the
// cases the suites were designed for (docs/spec.md section 7). "fast" is the SIMD path's former
// name, which --model still accepts.
BOOST_AUTO_TEST_CASE(committed_files_with_every_model) {
  std::vector<std::string> models = {"scalar", "simd", "fast"};
  for (const std::string& isa : simd_isas()) models.push_back(isa);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(std::string(TQREF_SOURCE_DIR) + "/data/golden")) {
    if (e.path().extension() != ".h5") continue;
    ++files;
    for (const std::string& m : models) {
      const std::string cmd = std::string(TQREF_CLI) + " check '" + e.path().string() +
                              "' --backend model --model " + m + " > /dev/null";
      BOOST_CHECK_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
    }
  }
  BOOST_CHECK_GE(files, 2u);
}

BOOST_AUTO_TEST_SUITE_END()
