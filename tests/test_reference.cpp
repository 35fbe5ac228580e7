// Tests of the fp64 reference attention (model/reference.cpp): closed forms (one position,
// uniform weights, two positions), window and GQA mapping, layout invariance, and the
// quantisation gap between unquantised and dequantised V.
#define BOOST_TEST_MODULE reference
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "decode_case.h"
#include "tqref/quantize.h"
#include "tqref/reference.h"

using namespace tqref;
using namespace tqref::test;

namespace {

std::vector<double> ref(const DecodeCase& dc, ReferenceV which) {
  return reference_attention(dc.format, dc.q, dc.k_cache, dc.v_cache, dc.v_values, dc.tables,
                             dc.lens, dc.p, which);
}

// Dequantised V element (pos, kv head h, dim d) of sequence s, read by hand from the pool.
double dequant_at(const DecodeCase& dc, uint32_t s, uint32_t pos, uint32_t h, uint32_t d) {
  const FormatTraits& t = traits(dc.format);
  const uint32_t B = dc.p.block_size, n = dc.p.num_kv_heads * dc.p.head_dim;
  const int64_t blk = dc.tables[uint64_t(s) * dc.p.max_blocks_per_seq + pos / B];
  const uint8_t* base = dc.v_cache.data() + uint64_t(blk) * dc.p.v_block_stride_bytes;
  const uint32_t e = h * dc.p.head_dim + d, row = pos % B;
  const uint8_t* codes = base + uint64_t(row) * n * t.bits / 8 + (e / 16) * t.group_code_bytes;
  const uint8_t sb = base[dc.p.v_data_section_bytes + uint64_t(row) * (n / 16) + e / 16];
  return dequantize_code(t, unpack_group_code(t.bits, codes, e % 16), sb);
}

// Deterministic per-position K and V so that two cases can hold the same logical content.
void kv_by_position(uint32_t pos, uint16_t* k, uint16_t* v, uint32_t n) {
  std::mt19937_64 rng(500 + pos);
  for (uint32_t e = 0; e < n; ++e) k[e] = bf16_gauss(rng, 1.0f);
  for (uint32_t e = 0; e < n; ++e) v[e] = bf16_gauss(rng, 1.0f);
}

}  // namespace

// One position: softmax weight 1, output = V exactly, for both V sources; L = 0 gives zeros.
// Catches a wrong V location (slot, head, group) or a normalisation error.
BOOST_AUTO_TEST_CASE(one_position_returns_v_and_empty_gives_zero) {
  CaseSpec c;
  c.format = Format::turbo2v;
  c.lens = {1, 0};
  c.block_size = 5;
  const DecodeCase dc = make_case(c);
  const std::vector<double> u = ref(dc, ReferenceV::unquantised);
  const std::vector<double> q = ref(dc, ReferenceV::dequantised);
  const int64_t slot = int64_t(dc.tables[0]) * 5;
  for (uint32_t qh = 0; qh < 4; ++qh)
    for (uint32_t d = 0; d < 128; ++d) {
      const uint32_t h = qh / 2;
      const double v = bf16_to_f32(dc.v_values[uint64_t(slot) * 256 + h * 128 + d]);
      BOOST_REQUIRE_EQUAL(u[qh * 128 + d], v);
      BOOST_REQUIRE_EQUAL(q[qh * 128 + d], dequant_at(dc, 0, 0, h, d));
      BOOST_REQUIRE_EQUAL(u[(4 + qh) * 128 + d], 0.0);
    }
}

// q = 0 makes every score 0: the output is the plain mean of V. Two positions with q = e_0
// and k0 = a, b give weights of a logistic: w0 = 1 / (1 + exp((b - a) * inv_sqrt_d)).
// Catches a wrong softmax (missing max shift is harmless here, a missing normalisation is not).
BOOST_AUTO_TEST_CASE(closed_forms_uniform_and_two_positions) {
  CaseSpec c;
  c.lens = {23};
  c.num_q_heads = 2;
  c.num_kv_heads = 1;
  c.block_size = 4;
  DecodeCase dc = make_case(c);
  std::fill(dc.q.begin(), dc.q.end(), 0);
  const std::vector<double> u = ref(dc, ReferenceV::dequantised);
  for (uint32_t d = 0; d < 128; ++d) {
    double mean = 0;
    for (uint32_t pos = 0; pos < 23; ++pos) mean += dequant_at(dc, 0, pos, 0, d);
    mean /= 23;
    BOOST_TEST(std::fabs(u[d] - mean) <= 1e-12 * (1 + std::fabs(mean)));
  }

  CaseSpec t;
  t.lens = {2};
  t.num_q_heads = 1;
  t.num_kv_heads = 1;
  t.kv_gen = [](uint32_t, uint32_t pos, uint16_t* k, uint16_t* v) {
    for (uint32_t e = 0; e < 128; ++e) {
      k[e] = 0;
      v[e] = f32_to_bf16(pos == 0 ? 1.0f : -3.0f);
    }
    k[0] = f32_to_bf16(pos == 0 ? 2.5f : -1.0f);
  };
  DecodeCase two = make_case(t);
  std::fill(two.q.begin(), two.q.end(), 0);
  two.q[0] = f32_to_bf16(1.0f);
  const std::vector<double> o = ref(two, ReferenceV::unquantised);
  const double w0 = 1.0 / (1.0 + std::exp((-1.0 - 2.5) * double(two.p.inv_sqrt_d)));
  BOOST_TEST(std::fabs(o[5] - (w0 * 1.0 + (1 - w0) * -3.0)) < 1e-14);
}

// A window over positions [L - W, L) equals the reference over a sequence holding only those
// positions (built with the same per-position content, at a start that is not a multiple of B),
// and permuting the physical blocks changes nothing. Catches a window at the wrong end and
// logical-instead-of-physical block indexing.
BOOST_AUTO_TEST_CASE(window_and_layout_invariance) {
  CaseSpec c;
  c.block_size = 7;
  c.lens = {50};
  c.window = 19;
  c.num_q_heads = 2;
  c.num_kv_heads = 2;
  c.kv_gen = [](uint32_t, uint32_t pos, uint16_t* k, uint16_t* v) { kv_by_position(pos, k, v, 256); };
  const DecodeCase win = make_case(c);
  CaseSpec t = c;
  t.window = 0;
  t.lens = {19};
  t.seed = 9;  // a different block shuffle
  t.kv_gen = [](uint32_t, uint32_t pos, uint16_t* k, uint16_t* v) {
    kv_by_position(pos + 31, k, v, 256);
  };
  DecodeCase trunc = make_case(t);
  trunc.q = win.q;
  for (ReferenceV which : {ReferenceV::unquantised, ReferenceV::dequantised}) {
    const std::vector<double> a = ref(win, which), b = ref(trunc, which);
    BOOST_TEST(a == b);  // same values in the same order: the same fp64 operations
  }
}

// V of kv head h is the constant 2^h: q head qh must give exactly 2^(qh / ratio) on the
// unquantised path, for GQA ratios 1, 2, 4, 8 and MQA. Catches a wrong kv-head mapping.
BOOST_AUTO_TEST_CASE(gqa_mapping) {
  for (auto [nq, nkv] : std::vector<std::pair<uint32_t, uint32_t>>{{2, 2}, {4, 2}, {8, 2}, {8, 1}}) {
    CaseSpec c;
    c.num_q_heads = nq;
    c.num_kv_heads = nkv;
    c.lens = {13};
    c.kv_gen = [nkv](uint32_t, uint32_t pos, uint16_t* k, uint16_t* v) {
      std::mt19937_64 rng(pos);
      for (uint32_t e = 0; e < nkv * 128; ++e) {
        k[e] = bf16_gauss(rng, 1.0f);
        v[e] = f32_to_bf16(std::ldexp(1.0f, int(e / 128)));
      }
    };
    const DecodeCase dc = make_case(c);
    const std::vector<double> o = ref(dc, ReferenceV::unquantised);
    for (uint32_t qh = 0; qh < nq; ++qh)
      BOOST_TEST(std::fabs(o[qh * 128 + 7] - std::ldexp(1.0, int(qh / (nq / nkv)))) < 1e-12);
  }
}

// The gap between the two V sources is the quantisation error, which must shrink with more
// bits: rms(turbo2v) > rms(turbo3v) > rms(turbo4v) > 0, each well below the V scale (1).
// Catches a reference that ignores the pool (gap 0) or misreads codes (gap ~ 1).
BOOST_AUTO_TEST_CASE(quantisation_gap_shrinks_with_bits) {
  double prev = 1e9;
  for (const FormatTraits& t : kFormats) {
    CaseSpec c;
    c.format = t.format;
    c.lens = {64, 9};
    c.q_sigma = 2.0f;
    const DecodeCase dc = make_case(c);
    const std::vector<double> u = ref(dc, ReferenceV::unquantised);
    const std::vector<double> q = ref(dc, ReferenceV::dequantised);
    double se = 0, sv = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      se += (u[i] - q[i]) * (u[i] - q[i]);
      sv += u[i] * u[i];
    }
    const double rel = std::sqrt(se / sv);
    BOOST_TEST_MESSAGE(t.name << ": relative rms gap " << rel);
    BOOST_TEST(rel > 0.0);
    BOOST_TEST(rel < 0.5);
    BOOST_TEST(rel < prev);
    prev = rel;
  }
}

// Bad parameters throw std::invalid_argument naming the parameter; a head_dim that differs from
// the build's HDIM is accepted (the reference judges mismatched launches at level T). Catches a
// reference that reads outside the pools or silently refuses the HDIM-mismatch study.
BOOST_AUTO_TEST_CASE(parameter_validation) {
  CaseSpec c;
  c.lens = {20, 3};
  const DecodeCase good = make_case(c);
  auto expect = [&](const char* what, auto mutate) {
    DecodeCase dc = good;
    mutate(dc);
    try {
      ref(dc, ReferenceV::dequantised);
      BOOST_ERROR("no exception for " << what);
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  expect("block_tables[0][1]", [](DecodeCase& d) { d.tables[1] = int32_t(d.num_blocks); });
  expect("q_stride", [](DecodeCase& d) { d.p.q_stride = 10; });
  expect("num_q_heads", [](DecodeCase& d) { d.p.num_q_heads = 3; });
  expect("seq_lens[0]", [](DecodeCase& d) { d.lens[0] = -2; });
  DecodeCase mismatch = good;
  mismatch.p.hdim = 256;  // head_dim stays 128
  BOOST_CHECK_NO_THROW(ref(mismatch, ReferenceV::unquantised));
}
