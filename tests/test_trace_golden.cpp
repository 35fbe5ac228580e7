// Golden cases built from a trace (harness/cases/trace_golden.cpp): slot coverage, query prefixes,
// zero padding of head_dim to the kernel's HDIM, and an fp64 check of the padded decode case
// against attention computed here on the unpadded trace values.
#define BOOST_TEST_MODULE test_trace_golden
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "cases/trace_golden.h"
#include "io/case_io.h"
#include "io/ex2_profile_io.h"
#include "io/trace_file.h"
#include "tqref/numeric.h"

using namespace tqref;
using namespace tqref::trace;
using namespace tqref::cases;

namespace {

const Ex2Profile& ex2() {
  static const Ex2Profile p = load_ex2_profile_for_arch("sm_90");
  return p;
}

// GQA trace: 4 q heads over 2 kv heads, head_dim 40 (not a multiple of 16: the last real V
// group is half padding), 2 layers, sequences of T = 21 and 3. Values: a fixed LCG (seed 99),
// q and k scaled so that scores spread over several units and some positions are skipped.
Trace gqa_trace() {
  Trace t;
  t.meta = {"synthetic", "test_trace_golden", 2, 4, 2, 40, 1.0 / std::sqrt(40.0), {}};
  uint32_t s = 99;
  auto draw = [&](double scale) {
    s = s * 1664525u + 1013904223u;
    return f32_to_bf16(float(scale * (double(int32_t(s >> 8) - (1 << 23)) / double(1 << 23))));
  };
  for (int T : {21, 3}) {
    TraceSequence q;
    q.name = "s" + std::to_string(T);
    q.num_tokens = T;
    for (int l = 0; l < 2; ++l) {
      std::vector<uint16_t> qq(size_t(T) * 4 * 40), kk(size_t(T) * 2 * 40), vv(kk.size());
      for (auto& x : qq) x = draw(2.0);
      for (auto& x : kk) x = draw(2.0);
      for (auto& x : vv) x = draw(1.0);
      q.q.push_back(qq);
      q.k.push_back(kk);
      q.v.push_back(vv);
    }
    t.sequences.push_back(q);
  }
  return t;
}

}  // namespace

// Structure of one writer/decode pair: every position written exactly once through the slot
// mapping; each query's seq_len is its position + 1; q rows are the trace's rows with zeros in
// the padded dims; the inverse scale is the model's 1/sqrt(40), not 1/sqrt(128). Catches off-by-one
// prefixes, lost positions, padding that is not zero and the HDIM scale.
BOOST_AUTO_TEST_CASE(pair_structure) {
  Trace t = gqa_trace();
  TraceGoldenOptions opt;
  opt.sequences = {"s21"};
  opt.layers = {1};
  opt.query_positions = {0, 4, 16, -1};
  std::vector<golden::GoldenCase> cases = build_trace_cases(t, "gqa.h5", opt, ex2());
  BOOST_REQUIRE(cases.size() == 2u);
  const golden::GoldenCase& w = cases[0];
  const golden::GoldenCase& d = cases[1];
  BOOST_TEST(d.linked_case == w.name);
  BOOST_TEST(d.name.find("_pad40") != std::string::npos);
  std::set<int64_t> slots;
  for (int64_t s : w.w.slot_mapping)
    if (s >= 0) slots.insert(s);
  BOOST_TEST(slots.size() == 21u);
  BOOST_TEST(w.w.slot_mapping.size() == 21u + opt.padding_tokens);
  BOOST_TEST(d.d.seq_lens == (std::vector<int32_t>{1, 5, 17, 21}), boost::test_tools::per_element());
  BOOST_TEST(d.d.p.head_dim == 128u);
  BOOST_TEST(d.d.p.inv_sqrt_d == float(1.0 / std::sqrt(40.0)));
  const auto& tq = t.sequences[0].q[1];
  for (uint32_t s = 0; s < 4; ++s) {
    const int pos = d.d.seq_lens[s] - 1;
    for (uint32_t h = 0; h < 4; ++h)
      for (uint32_t e = 0; e < 128; ++e) {
        const uint16_t got = d.d.q[(s * 4 + h) * 128 + e];
        const uint16_t want = e < 40 ? tq[(size_t(pos) * 4 + h) * 40 + e] : 0;
        BOOST_TEST_REQUIRE(got == want);
      }
  }
}

// The padded decode case against attention computed here in fp64 on the unpadded bf16 values
// of the trace (exact softmax, unquantised V): the case's own unquantised reference must agree to
// fp64 rounding, and the model's bf16 output to within the Turbo V error. Output dims in V groups
// that are all padding (48..127 here) must be exactly +0: such groups quantise to scale 0. Dims
// 40..47 share group 2 with real values; their zeros take nonzero codes (no codebook has a zero
// level), so they are not checked: why head_dim should be a multiple of 16 (docs/traces.md).
// Catches wrong head/GQA mapping, wrong prefix, wrong scale and padding that leaks into results.
BOOST_AUTO_TEST_CASE(padded_decode_matches_unpadded_attention) {
  Trace t = gqa_trace();
  TraceGoldenOptions opt;
  opt.sequences = {"s21"};
  opt.layers = {0};
  opt.formats = "all";
  std::vector<golden::GoldenCase> cases = build_trace_cases(t, "gqa.h5", opt, ex2());
  BOOST_REQUIRE(cases.size() == 6u);
  const TraceSequence& sq = t.sequences[0];
  for (size_t ci = 1; ci < cases.size(); ci += 2) {
    const golden::DecodeCase& d = cases[ci].d;
    BOOST_TEST_CONTEXT(cases[ci].name) {
      for (size_t s = 0; s < d.seq_lens.size(); ++s) {
        const int L = d.seq_lens[s];
        for (int qh = 0; qh < 4; ++qh) {
          const int kvh = qh / 2;
          std::vector<double> sc(static_cast<size_t>(L));
          double mx = -1e300;
          for (int p = 0; p < L; ++p) {
            double dot = 0;
            for (int e = 0; e < 40; ++e)
              dot += double(bf16_to_f32(sq.q[0][(size_t(L - 1) * 4 + qh) * 40 + e])) *
                     double(bf16_to_f32(sq.k[0][(size_t(p) * 2 + kvh) * 40 + e]));
            sc[size_t(p)] = dot * double(float(1.0 / std::sqrt(40.0)));  // the fp32 kernel scale
            mx = std::max(mx, sc[size_t(p)]);
          }
          double sum = 0;
          for (double& x : sc) sum += (x = std::exp(x - mx));
          const size_t row = s * 4 + size_t(qh);
          for (int e = 0; e < 128; ++e) {
            double want = 0;
            if (e < 40)
              for (int p = 0; p < L; ++p)
                want += sc[size_t(p)] / sum * double(bf16_to_f32(sq.v[0][(size_t(p) * 2 + kvh) * 40 + e]));
            const double ref = d.diag.ref_unquantised[row * 128 + size_t(e)];
            BOOST_TEST_REQUIRE(std::abs(ref - want) <= 1e-12 * (1 + std::abs(want)));
            const uint16_t out = d.out_expected[row * 128 + size_t(e)];
            if (e >= 48) {  // all-zero V groups: scale 0, exact +0
              BOOST_TEST_REQUIRE(out == 0);
            } else if (e < 40) {
              BOOST_TEST_REQUIRE(std::isfinite(bf16_to_f32(out)));
              // Turbo V error bound: |v| < 1, 2-bit codes err by well under 1 per element.
              BOOST_TEST_REQUIRE(std::abs(double(bf16_to_f32(out)) - want) < 1.0);
            }
          }
        }
      }
    }
  }
  // Writer: the padded V groups of every written slot have scale byte 0x00 (fp8 +0).
  const golden::WriterCase& w = cases[0].w;
  const CacheGeometry g{w.p.num_kv_heads, w.p.head_dim, w.p.block_size, w.num_blocks,
                        w.p.v_block_stride_bytes, w.p.v_data_section_bytes};
  for (int64_t s : w.slot_mapping) {
    if (s < 0) continue;
    const uint8_t* scales = w.v_expected.data() + g.v_scale_row_offset(s);
    for (uint32_t h = 0; h < 2; ++h)
      for (uint32_t grp = 3; grp < 8; ++grp)  // dims 48..127 of each head: all padding
        BOOST_TEST_REQUIRE(scales[h * 8 + grp] == 0);
  }
}

// Options outside what the trace allows are rejected with the option's name.
BOOST_AUTO_TEST_CASE(bad_options) {
  Trace t = gqa_trace();
  auto message = [&](TraceGoldenOptions opt) -> std::string {
    try {
      build_trace_cases(t, "gqa.h5", opt, ex2());
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  TraceGoldenOptions o;
  o.layers = {2};
  BOOST_TEST(message(o).find("--trace-layers") != std::string::npos);
  o = {};
  o.sequences = {"nope"};
  BOOST_TEST(message(o).find("no sequence 'nope'") != std::string::npos);
  o = {};
  o.formats = "some";
  BOOST_TEST(message(o).find("--trace-formats") != std::string::npos);
  t.meta.head_dim = 300;
  BOOST_TEST(message({}).find("head_dim = 300; allowed: 1 .. 256") != std::string::npos);
}

// The committed real suite was built from the committed trace: its provenance names it by hash,
// and every case carries the trace's head_dim (48, padded to 128).
BOOST_AUTO_TEST_CASE(committed_real_suite_provenance) {
  const std::string path = std::string(TQREF_SOURCE_DIR) + "/data/golden/real.h5";
  h5::Node f = h5::Node::open_file(path);
  BOOST_TEST(golden::read_provenance(f).suite == "real");
  BOOST_TEST(f.attr_string("trace_file") == "stories15M.h5");
  BOOST_TEST(f.attr_string("trace_checkpoint_sha256") ==
             "cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a");
  h5::Node cases = f.group("cases");
  size_t n = 0;
  for (const std::string& c : cases.children()) {
    BOOST_TEST(cases.attr_int("trace_head_dim", c) == 48);
    ++n;
  }
  BOOST_TEST(n >= 12u);
}
