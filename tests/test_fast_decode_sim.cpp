// Host simulation of the GQA decode kernels (kernels/fast/fast_decode_core.h): the very
// source the GPU runs, executed by 256 host threads per CTA (one per GPU thread) with barriers
// standing in for __syncwarp/__syncthreads and an exchange array for the shuffles, EXPF from
// the measured sm_90 EX2 profile. Every output row is compared bit for bit with the CPU model
// (model/decode.cpp), which the reference-order kernels equal on the H200.
// Bugs this catches before any GPU run: a wrong tile/step split (batches crossing a block or a
// tile, a batch taken where the reference order takes singles), a wrong combination index
// after the transposed butterfly, a head reading another head's score/factor, a skip decision
// shared across heads, a missed rescale, a merge that mixes heads, wrong q/output addressing per
// head.
#define BOOST_TEST_MODULE fast_decode_sim
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "../kernels/fast/fast_decode_core.h"
#include "cta_sim.h"
#include "decode_case.h"
#include "decode_sim_check.h"
#include "tqref/numeric.h"

using namespace tqref;
using namespace tqref::test;

namespace {

template <Format F, uint32_t kHdim, uint32_t HT>
void run_cta(const fastdec::Args& a, uint32_t qh0, uint32_t seq) {
  CtaSim sim;
  fastdec::Shared<kHdim> sm{};
  std::vector<std::thread> th;
  for (uint32_t tid = 0; tid < 256; ++tid)
    th.emplace_back([&, tid] {
      t_cta = &sim;
      t_tid = tid;
      HostOps ops;
      if (a.stats != nullptr)
        fastdec::decode_cta<HostOps, F, kHdim, HT, true>(a, qh0, seq, tid, sm, ops);
      else
        fastdec::decode_cta<HostOps, F, kHdim, HT, false>(a, qh0, seq, tid, sm, ops);
    });
  for (auto& t : th) t.join();
}

template <Format F, uint32_t kHdim>
void run_grid(const fastdec::Args& a, uint32_t ht, uint32_t num_seqs) {
  for (uint32_t s = 0; s < num_seqs; ++s)
    for (uint32_t x = 0; x < a.num_q_heads / ht; ++x) {
      if (ht == 4) run_cta<F, kHdim, 4>(a, x * 4, s);
      else if (ht == 2) run_cta<F, kHdim, 2>(a, x * 2, s);
      else run_cta<F, kHdim, 1>(a, x, s);
    }
}

struct SimResult {
  std::vector<uint16_t> out;
  std::vector<float> out_f32;  // before the bf16 rounding: differences the rounding would hide
  unsigned long long stats[3] = {0, 0, 0};
};

SimResult run_sim(const DecodeCase& dc, uint32_t ht, bool stats = true) {
  SimResult r;
  r.out.assign(uint64_t(dc.p.num_seqs) * dc.p.num_q_heads * dc.p.head_dim, kPoison);
  r.out_f32.assign(r.out.size(), 0.0f);
  fastdec::Args a{dc.q.data(),
                  reinterpret_cast<const uint16_t*>(dc.k_cache.data()),
                  dc.v_cache.data(),
                  r.out.data(),
                  dc.tables.data(),
                  dc.lens.data(),
                  dc.p.max_blocks_per_seq,
                  dc.p.num_q_heads,
                  dc.p.num_kv_heads,
                  dc.p.head_dim,
                  dc.p.block_size,
                  dc.p.inv_sqrt_d,
                  dc.p.q_stride,
                  dc.p.v_block_stride_bytes,
                  dc.p.v_data_section_bytes,
                  dc.p.sliding_window,
                  stats ? r.stats : nullptr,
                  r.out_f32.data()};
  g_k_lo = dc.k_cache.data();
  g_k_hi = dc.k_cache.data() + dc.k_cache.size();
  BOOST_REQUIRE_EQUAL(fastdec::heads_per_cta(dc.p.num_q_heads, dc.p.num_kv_heads,
                                             dc.p.num_q_heads / ht), ht);
  const uint32_t S = dc.p.num_seqs;
  auto go = [&](auto hd) {
    constexpr uint32_t H = decltype(hd)::value;
    switch (dc.format) {
      case Format::turbo2v: run_grid<Format::turbo2v, H>(a, ht, S); break;
      case Format::turbo3v: run_grid<Format::turbo3v, H>(a, ht, S); break;
      case Format::turbo4v: run_grid<Format::turbo4v, H>(a, ht, S); break;
    }
  };
  if (dc.p.hdim == 128) go(std::integral_constant<uint32_t, 128>{});
  else go(std::integral_constant<uint32_t, 256>{});
  return r;
}

std::string name_of(const CaseSpec& c, uint32_t ht) {
  return std::string(traits(c.format).name) + " hdim=" + std::to_string(c.hdim) +
         " B=" + std::to_string(c.block_size) + " nq=" + std::to_string(c.num_q_heads) +
         " nkv=" + std::to_string(c.num_kv_heads) + " HT=" + std::to_string(ht) +
         " W=" + std::to_string(c.window) + " qsigma=" + std::to_string(c.q_sigma) +
         " seed=" + std::to_string(c.seed);
}

// Runs the model and the simulation; requires equal bits everywhere (L == 0 rows keep the
// poison in both), a non-trivial output, and statistics that match the model's skip counts.
void check_case(const CaseSpec& c, uint32_t ht, bool expect_skips) {
  BOOST_TEST_CONTEXT(name_of(c, ht)) {
    const DecodeCase dc = make_case(c);
    DecodeDiagnostics diag;
    const std::vector<uint16_t> want = run_model(dc, ex2(), &diag);
    const SimResult got = run_sim(dc, ht);
    expect_model_bits(dc, diag, want, got.out, got.out_f32);
    unsigned long long pairs = 0, skipped = 0;
    for (const auto& h : diag.heads) {
      pairs += h.skipped.size();
      skipped += h.skip_count;
    }
    BOOST_TEST(got.stats[0] == pairs);
    BOOST_TEST(got.stats[1] == skipped);
    if (expect_skips) BOOST_TEST(skipped > 0u);
  }
}

}  // namespace

// Every HT on GQA 4, the three formats, odd and power-of-two block sizes, lengths around tile
// and batch boundaries, windows, and a q scale that makes the sparse-V skip frequent.
BOOST_AUTO_TEST_CASE(gqa_matches_model_hdim128) {
  uint64_t seed = 11;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v})
    for (uint32_t ht : {1u, 2u, 4u}) {
      CaseSpec c;
      c.format = f;
      c.hdim = 128;
      c.num_q_heads = ht == 4 ? 8 : 4;  // GQA 4: two CTAs per sequence at HT 4
      c.num_kv_heads = ht == 4 ? 2 : 1;
      c.block_size = ht == 1 ? 1 : (ht == 2 ? 13 : 16);
      c.lens = {0, 1, 5, 37, 83};
      c.window = 0;
      c.q_sigma = 4.0f;
      c.seed = seed++;
      check_case(c, ht, true);
    }
}

BOOST_AUTO_TEST_CASE(gqa_matches_model_windows_and_hdim256) {
  uint64_t seed = 101;
  for (uint32_t hdim : {128u, 256u})
    for (uint32_t window : {1u, 50u}) {
      CaseSpec c;
      c.format = Format::turbo3v;
      c.hdim = hdim;
      c.num_q_heads = 8;
      c.num_kv_heads = 2;
      c.block_size = 7;
      c.lens = {3, 71, 200};
      c.window = window;
      c.q_sigma = 1.0f;
      c.seed = seed++;
      check_case(c, 4, false);
    }
}

// MQA (8 q heads on one kv head, two CTAs of 4) and MHA (HT = 1 only), block size 32, the
// unaligned K path (q_pad odd keeps q odd-aligned as well).
BOOST_AUTO_TEST_CASE(gqa_matches_model_mqa_mha) {
  {
    CaseSpec c;
    c.format = Format::turbo4v;
    c.num_q_heads = 8;
    c.num_kv_heads = 1;
    c.block_size = 32;
    c.lens = {97, 4, 33};
    c.q_pad = 3;
    c.q_sigma = 3.0f;
    c.seed = 7;
    check_case(c, 4, true);
  }
  {
    CaseSpec c;
    c.format = Format::turbo2v;
    c.num_q_heads = 2;
    c.num_kv_heads = 2;
    c.block_size = 16;
    c.lens = {64, 8, 100};
    c.seed = 8;
    check_case(c, 1, false);
  }
}

// V rows that are not 4-byte aligned (odd block stride: the byte-by-byte code path instead of
// aligned words; odd data section: scale addressing) and the entry points without statistics
// (kStats = false compiles the counting out; the output must not change).
BOOST_AUTO_TEST_CASE(gqa_unaligned_v_and_no_stats) {
  uint64_t seed = 201;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v})
    for (uint32_t hdim : {128u, 256u}) {
      CaseSpec c;
      c.format = f;
      c.hdim = hdim;
      c.num_q_heads = 8;
      c.num_kv_heads = 2;
      c.block_size = 16;
      c.lens = {45, 20};
      c.v_block_pad = 3;
      c.v_section_pad = 5;
      c.q_sigma = 3.0f;
      c.seed = seed++;
      check_case(c, 4, true);
      BOOST_TEST_CONTEXT(name_of(c, 4) << " without statistics") {
        const DecodeCase dc = make_case(c);
        const SimResult with = run_sim(dc, 4, true), without = run_sim(dc, 4, false);
        BOOST_TEST(with.out == without.out);
      }
    }
}

// Geometry rule of the launcher and the kernel.
BOOST_AUTO_TEST_CASE(heads_per_cta_rule) {
  BOOST_TEST(fastdec::heads_per_cta(32, 8, 8) == 4u);
  BOOST_TEST(fastdec::heads_per_cta(32, 8, 16) == 2u);
  BOOST_TEST(fastdec::heads_per_cta(32, 8, 32) == 1u);
  BOOST_TEST(fastdec::heads_per_cta(32, 8, 4) == 0u);   // 8 heads per CTA: not supported
  BOOST_TEST(fastdec::heads_per_cta(12, 4, 4) == 0u);   // HT 3
  BOOST_TEST(fastdec::heads_per_cta(12, 2, 3) == 0u);   // G 6: HT 4 does not divide 6
  BOOST_TEST(fastdec::heads_per_cta(12, 2, 6) == 2u);
  BOOST_TEST(fastdec::heads_per_cta(10, 4, 10) == 0u);  // q heads not a multiple of kv heads
}
