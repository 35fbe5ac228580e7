// Host simulation of the GQA decode kernels (kernels/gqa/gqa_decode_core.h): the very
// source the GPU runs, executed by 256 host threads per CTA (one per GPU thread) with barriers
// standing in for __syncwarp/__syncthreads and an exchange array for the shuffles, EXPF from
// the measured sm_90 EX2 profile. Every output row is compared bit for bit with the CPU model
// (model/decode.cpp), which the reference-order kernels equal on the H200.
// Every HT 1..8 is simulated (the head groups 4+4, 4+2+1, 4+2, 4+1, 2+1 as well as the single
// groups 1, 2, 4), including splits of groups larger than 8 over several CTAs.
// Bugs this catches before any GPU run: a wrong tile/step split (batches crossing a block or a
// tile, a batch taken where the reference order takes singles), a wrong combination index
// after the transposed butterfly or a score stored to another head's slot by a head group, a
// head reading another head's score/factor, a skip decision shared across heads or lost above
// bit 31 of the use mask (HT > 4), a V row read for no head or not read for a head that uses it
// (the V-row counter), a missed rescale, a merge that mixes heads, wrong q/output addressing per
// head or per CTA of a split group, a launcher HT that the kernel would refuse.
#define BOOST_TEST_MODULE gqa_decode_sim
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../kernels/gqa/gqa_decode_core.h"
#include "cases/model_table.h"
#include "cta_sim.h"
#include "decode_case.h"
#include "decode_sim_check.h"
#include "tqref/numeric.h"

using namespace tqref;
using namespace tqref::test;

namespace {

template <Format F, uint32_t kHdim, uint32_t HT>
void run_cta(const gqa::Args& a, uint32_t qh0, uint32_t seq) {
  CtaSim sim;
  gqa::Shared<kHdim> sm{};
  std::vector<std::thread> th;
  for (uint32_t tid = 0; tid < 256; ++tid)
    th.emplace_back([&, tid] {
      t_cta = &sim;
      t_tid = tid;
      HostOps ops;
      if (a.stats != nullptr)
        gqa::decode_cta<HostOps, F, kHdim, HT, true>(a, qh0, seq, tid, sm, ops);
      else
        gqa::decode_cta<HostOps, F, kHdim, HT, false>(a, qh0, seq, tid, sm, ops);
    });
  for (auto& t : th) t.join();
}

// CTA x of sequence s with the HT the launch gives (the GPU entry point's switch).
template <Format F, uint32_t kHdim, uint32_t HT = gqa::kMaxHT>
void run_cta_ht(const gqa::Args& a, uint32_t ht, uint32_t x, uint32_t s) {
  if (ht == HT) run_cta<F, kHdim, HT>(a, x * HT, s);
  else if constexpr (HT > 1) run_cta_ht<F, kHdim, HT - 1>(a, ht, x, s);
}

template <Format F, uint32_t kHdim>
void run_grid(const gqa::Args& a, uint32_t ht, uint32_t num_seqs) {
  for (uint32_t s = 0; s < num_seqs; ++s)
    for (uint32_t x = 0; x < a.num_q_heads / ht; ++x) run_cta_ht<F, kHdim>(a, ht, x, s);
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
  gqa::Args a{dc.q.data(),
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
  BOOST_REQUIRE_EQUAL(gqa::heads_per_cta(dc.p.num_q_heads, dc.p.num_kv_heads,
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

// V rows the CTAs of an HT launch must read, from the model's skip decisions: per sequence,
// CTA and position, one row when some head of the CTA uses the position.
unsigned long long model_v_rows(const DecodeCase& dc, const DecodeDiagnostics& diag, uint32_t ht) {
  const uint32_t Hq = dc.p.num_q_heads;
  unsigned long long rows = 0;
  for (uint32_t s = 0; s < dc.p.num_seqs; ++s)
    for (uint32_t qh0 = 0; qh0 < Hq; qh0 += ht) {
      const size_t n = diag.heads[s * Hq + qh0].skipped.size();
      for (size_t p = 0; p < n; ++p) {
        bool used = false;
        for (uint32_t h = 0; h < ht; ++h) used |= diag.heads[s * Hq + qh0 + h].skipped[p] == 0;
        rows += used;
      }
    }
  return rows;
}

// Runs the model and the simulation; requires equal bits everywhere (L == 0 rows keep the
// poison in both), a non-trivial output, and statistics that match the model's skip counts and
// the V rows its skip decisions need. `edit` changes the built case (e.g. q per head).
void check_case(const CaseSpec& c, uint32_t ht, bool expect_skips,
                const std::function<void(DecodeCase&)>& edit = nullptr) {
  BOOST_TEST_CONTEXT(name_of(c, ht)) {
    DecodeCase dc = make_case(c);
    if (edit) edit(dc);
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
    BOOST_TEST(got.stats[2] == model_v_rows(dc, diag, ht));
    if (expect_skips) BOOST_TEST(skipped > 0u);
  }
}

constexpr Format kFormatsCycle[3] = {Format::turbo2v, Format::turbo3v, Format::turbo4v};

// q of head qh of every sequence scaled by 2^e (exact in bf16 while no value leaves its range),
// or zeroed for e == kZeroQ (every score 0: every factor EXPF(0) = 1, no position skipped).
constexpr int kZeroQ = 99;
void scale_q_head(DecodeCase& dc, uint32_t qh, int e) {
  for (uint32_t s = 0; s < dc.p.num_seqs; ++s)
    for (uint32_t d = 0; d < dc.p.head_dim; ++d) {
      uint16_t& x = dc.q[uint64_t(s) * dc.p.q_stride + uint64_t(qh) * dc.p.head_dim + d];
      x = e == kZeroQ ? uint16_t(0) : f32_to_bf16(std::ldexp(bf16_to_f32(x), e));
    }
}

}  // namespace

// Every HT 1..8 (one CTA per kv head, G = HT), the three formats, odd and power-of-two block
// sizes, lengths 0, 1, primes and lengths around tile and batch boundaries, and a q scale that
// makes the sparse-V skip frequent. Catches a head group that reduces or stores the wrong
// combinations, a tile split that differs from the reference order, an L == 0 row written.
BOOST_AUTO_TEST_CASE(every_ht_matches_model_hdim128) {
  const uint32_t blocks[5] = {1, 7, 13, 16, 32};
  uint64_t seed = 11;
  for (uint32_t ht = 1; ht <= gqa::kMaxHT; ++ht)
    for (Format f : kFormatsCycle) {
      CaseSpec c;
      c.format = f;
      c.hdim = 128;
      c.num_q_heads = 2 * ht;
      c.num_kv_heads = 2;
      c.block_size = blocks[seed % 5];
      c.lens = {0, 1, 5, 37, 83};
      c.q_sigma = 4.0f;
      c.seed = seed++;
      check_case(c, ht, true);
    }
}

// Every HT at HDIM 128 and 256 under sliding windows of 1, 50 and one longer than every
// sequence (the partition then starts at 0), with sequences shorter than, near and far past the
// window. Catches a window start or chunk partition that depends on HT, and head-group indexing
// that only holds at VEC 4 (HDIM 256 has VEC 8).
BOOST_AUTO_TEST_CASE(every_ht_windows_both_hdims) {
  uint64_t seed = 101;
  for (uint32_t ht = 1; ht <= gqa::kMaxHT; ++ht)
    for (uint32_t hdim : {128u, 256u})
      for (uint32_t window : {1u, 50u, 1000u}) {
        CaseSpec c;
        c.format = kFormatsCycle[seed % 3];
        c.hdim = hdim;
        c.num_q_heads = 2 * ht;
        c.num_kv_heads = 2;
        c.block_size = 7;
        c.lens = {3, 71, 200};
        c.window = window;
        c.q_sigma = 1.0f;
        c.seed = seed++;
        check_case(c, ht, false);
      }
}

// Groups split over several CTAs (qh0 and the kv head of a CTA that is not the first of its
// group): MQA with 16 q heads at HT 8, 4, 2; GQA 16 at HT 8; GQA 12 at HT 6, 4, 3; GQA 7 at
// Qwen2.5-7B's 28/4; GQA 5; MQA at HDIM 256 (gemma-2b-it's 8/1). q_pad 3 keeps q and the K rows
// of the MQA case off 16-byte alignment (the 2-byte K path). Catches a CTA of a split group that
// reads another CTA's q heads or writes their output rows, or maps to the wrong kv head.
BOOST_AUTO_TEST_CASE(split_groups_and_odd_groups) {
  struct Geo {
    uint32_t nq, nkv, hdim, ht, q_pad;
  };
  const Geo geos[] = {{16, 1, 128, 8, 3}, {16, 1, 128, 4, 3}, {16, 1, 128, 2, 3},
                      {32, 2, 128, 8, 8}, {12, 1, 128, 6, 8}, {12, 1, 128, 4, 8},
                      {12, 1, 128, 3, 8}, {28, 4, 128, 7, 8}, {10, 2, 128, 5, 8},
                      {8, 1, 256, 8, 8}};
  uint64_t seed = 301;
  for (const Geo& g : geos) {
    CaseSpec c;
    c.format = kFormatsCycle[seed % 3];
    c.hdim = g.hdim;
    c.num_q_heads = g.nq;
    c.num_kv_heads = g.nkv;
    c.block_size = 16;
    c.lens = {97, 4, 33};
    c.q_pad = g.q_pad;
    c.q_sigma = 3.0f;
    c.seed = seed++;
    check_case(c, g.ht, true);
  }
}

// Heads of one CTA that disagree about which positions they use, for every HT with more than
// one head group and HT 4: (a) even heads use every position (q = 0), odd heads skip most (q
// scaled by 8); (b) only the last head of each CTA uses positions (the use mask's top bits,
// j*HT + HT-1, up to bit 63 at HT 8); (c) only the first head does; (d) every head uses every
// position (the all-used mask, 64 bits wide at HT 8). Full tiles (block size 16) go through
// the per-head tests with constant tile masks, the lengths add partial tiles. Catches a use mask
// that loses bits above 31 (HT > 4), a V row skipped although one head uses it or read although
// none does (the V-row counter), a skip decision taken for the wrong head.
BOOST_AUTO_TEST_CASE(per_head_skip_patterns) {
  uint64_t seed = 401;
  for (uint32_t ht : {3u, 4u, 5u, 6u, 7u, 8u})
    for (char pattern : {'a', 'b', 'c', 'd'}) {
      CaseSpec c;
      c.format = kFormatsCycle[seed % 3];
      c.num_q_heads = 2 * ht;
      c.num_kv_heads = 2;
      c.block_size = 16;
      c.lens = {83, 200};
      c.q_sigma = 2.0f;
      c.seed = seed++;
      auto edit = [ht, pattern](DecodeCase& dc) {
        for (uint32_t qh = 0; qh < dc.p.num_q_heads; ++qh) {
          const uint32_t h = qh % ht;
          const bool uses_all = pattern == 'a'   ? h % 2 == 0
                                : pattern == 'b' ? h == ht - 1
                                : pattern == 'c' ? h == 0
                                                 : true;
          scale_q_head(dc, qh, uses_all ? kZeroQ : 3);
        }
      };
      BOOST_TEST_CONTEXT("pattern " << pattern) check_case(c, ht, pattern != 'd', edit);
    }
}

// V rows that are not 4-byte aligned (odd block stride: the byte-by-byte code path instead of
// aligned words; odd data section: scale addressing) and the entry points without statistics
// (kStats = false compiles the counting out; the output must not change), at HT 3, 4 and 8.
// Catches V addressing or code extraction that differs between head groups or HTs.
BOOST_AUTO_TEST_CASE(gqa_unaligned_v_and_no_stats) {
  uint64_t seed = 201;
  for (Format f : kFormatsCycle)
    for (uint32_t hdim : {128u, 256u})
      for (uint32_t ht : {3u, 4u, 8u}) {
        CaseSpec c;
        c.format = f;
        c.hdim = hdim;
        c.num_q_heads = 2 * ht;
        c.num_kv_heads = 2;
        c.block_size = 16;
        c.lens = {45, 20};
        c.v_block_pad = 3;
        c.v_section_pad = 5;
        c.q_sigma = 3.0f;
        c.seed = seed++;
        check_case(c, ht, true);
        BOOST_TEST_CONTEXT(name_of(c, ht) << " without statistics") {
          const DecodeCase dc = make_case(c);
          const SimResult with = run_sim(dc, ht, true), without = run_sim(dc, ht, false);
          BOOST_TEST(with.out == without.out);
        }
      }
}

// Geometry rule of the launcher and the kernel, on the models table's ratios and on the edges
// (HT above 8, HT not dividing G, a q-head count that is not a multiple of the kv heads, zeros).
// Catches a rule that admits a CTA straddling two kv heads or refuses a valid grid.
BOOST_AUTO_TEST_CASE(heads_per_cta_rule) {
  BOOST_TEST(gqa::heads_per_cta(32, 8, 8) == 4u);
  BOOST_TEST(gqa::heads_per_cta(32, 8, 16) == 2u);
  BOOST_TEST(gqa::heads_per_cta(32, 8, 32) == 1u);
  BOOST_TEST(gqa::heads_per_cta(32, 8, 4) == 0u);   // HT 8 does not divide G 4
  BOOST_TEST(gqa::heads_per_cta(64, 8, 8) == 8u);   // gpt-oss-20b: G 8
  BOOST_TEST(gqa::heads_per_cta(24, 8, 8) == 3u);   // Llama-3.2-3B: G 3
  BOOST_TEST(gqa::heads_per_cta(28, 4, 4) == 7u);   // Qwen2.5-7B: G 7
  BOOST_TEST(gqa::heads_per_cta(12, 2, 2) == 6u);   // Qwen2.5-1.5B: G 6
  BOOST_TEST(gqa::heads_per_cta(12, 2, 3) == 0u);   // G 6: HT 4 does not divide 6
  BOOST_TEST(gqa::heads_per_cta(10, 2, 2) == 5u);
  BOOST_TEST(gqa::heads_per_cta(16, 1, 1) == 0u);   // HT 16: more than kMaxHT
  BOOST_TEST(gqa::heads_per_cta(16, 1, 2) == 8u);   // MQA 16 split over 2 CTAs
  BOOST_TEST(gqa::heads_per_cta(32, 1, 4) == 8u);
  BOOST_TEST(gqa::heads_per_cta(9, 1, 1) == 0u);    // HT 9
  BOOST_TEST(gqa::heads_per_cta(9, 1, 3) == 3u);
  BOOST_TEST(gqa::heads_per_cta(10, 4, 10) == 0u);  // q heads not a multiple of kv heads
  BOOST_TEST(gqa::heads_per_cta(12, 4, 0) == 0u);
  BOOST_TEST(gqa::heads_per_cta(12, 0, 12) == 0u);
  // The launcher's choice: the whole group up to 8 heads, else the largest divisor up to 8.
  BOOST_TEST(gqa::widest_heads_per_cta(28, 4) == 7u);
  BOOST_TEST(gqa::widest_heads_per_cta(32, 32) == 1u);
  BOOST_TEST(gqa::widest_heads_per_cta(32, 2) == 8u);   // G 16
  BOOST_TEST(gqa::widest_heads_per_cta(12, 1) == 6u);   // G 12
  BOOST_TEST(gqa::widest_heads_per_cta(11, 1) == 1u);   // G 11: prime, above 8
  BOOST_TEST(gqa::widest_heads_per_cta(10, 4) == 0u);
}

// Every geometry of the models table (data/models/attention.yaml) gets a legal HT, its whole GQA
// group when that is at most 8 (today: every model); those with a contract HDIM (head_dim 128 or
// 256; the GQA decoders do not implement docs/spec.md section 5.1) are simulated at that HT,
// whole (every q and kv head), under the model's first sliding window if it has one, against
// the model. Catches a model geometry left without a legal HT or launched at one the kernel
// computes wrongly.
BOOST_AUTO_TEST_CASE(models_table_geometries) {
  uint64_t seed = 501;
  for (const cases::ModelGeometry& m : cases::builtin_model_table()) {
    const uint32_t ht = gqa::widest_heads_per_cta(m.num_q_heads, m.num_kv_heads);
    BOOST_TEST_CONTEXT(m.name) {
      BOOST_TEST(ht >= 1u);
      BOOST_TEST(m.gqa_ratio() % ht == 0u);
      if (m.gqa_ratio() <= gqa::kMaxHT) BOOST_TEST(ht == m.gqa_ratio());  // the whole group
    }
    if (m.head_dim != 128 && m.head_dim != 256) continue;
    CaseSpec c;
    c.format = kFormatsCycle[seed % 3];
    c.hdim = m.head_dim;
    c.num_q_heads = m.num_q_heads;
    c.num_kv_heads = m.num_kv_heads;
    c.block_size = 16;
    c.lens = {1, 45};
    c.window = m.sliding_windows.empty() ? 0u : m.sliding_windows.front();
    c.q_sigma = 2.0f;
    c.seed = seed++;
    BOOST_TEST_CONTEXT(m.name) check_case(c, ht, false);
  }
}
