// Host simulation of the floor decode kernels (kernels/fast/floor_decode_core.h): the very
// source the GPU runs, executed by 256 host threads per CTA (tests/cta_sim.h), every output
// element compared bit for bit (bf16 output and the f32 value before its rounding) with the CPU
// model (model/decode.cpp), which the reference-order kernels equal on the H200. Every valid
// heads-per-CTA (1, 2, 4) of a case is simulated.
// Bugs this catches before any GPU run: a wrong round tile (a batch split between rounds, a
// batch taken where the reference order takes singles, a block boundary missed inside a tile),
// a butterfly tree evaluated in another association order or over the wrong lane groups, a max
// scan that reads the wrong lanes (another step's end, a lane past the tile) or whose zero sign
// reaches a factor, an l recurrence out of order, a rescale applied at the wrong position, a
// skip decision shared across heads, V offsets of the wrong position, a merge mixing heads or
// chunks, a race (a missing __syncwarp, or a warp entering the merge while another still uses
// the round buffers, changes values under the simulation's thread interleaving), and V bytes
// read for a position that every head of the CTA skips.
#define BOOST_TEST_MODULE floor_decode_sim
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../kernels/fast/floor_decode_core.h"
#include "cta_sim.h"
#include "decode_case.h"
#include "decode_sim_check.h"
#include "tqref/contract.h"
#include "tqref/numeric.h"

using namespace tqref;
using namespace tqref::test;

namespace {

// The V pool of the case being simulated, with a read flag per byte (set by VReadOps).
const uint8_t* g_v_lo = nullptr;
const uint8_t* g_v_hi = nullptr;
std::unique_ptr<std::atomic<uint8_t>[]> g_v_read;

// HostOps that records every V pool byte a load touches.
struct VReadOps : HostOps {
  static void mark(const uint8_t* p, uint32_t n) {
    if (p >= g_v_lo && p + n <= g_v_hi)
      for (uint32_t i = 0; i < n; ++i) g_v_read[p - g_v_lo + i].store(1, std::memory_order_relaxed);
  }
  static uint8_t load_u8(const uint8_t* p) {
    mark(p, 1);
    return HostOps::load_u8(p);
  }
  static uint32_t load_u32(const uint8_t* p) {
    mark(p, 4);
    return HostOps::load_u32(p);
  }
};

template <Format F, uint32_t kHdim, uint32_t HT>
void run_cta(const fastdec::Args& a, uint32_t qh0, uint32_t seq) {
  CtaSim sim;
  auto sm = std::make_unique<floordec::Shared<kHdim>>();
  std::vector<std::thread> th;
  for (uint32_t tid = 0; tid < 256; ++tid)
    th.emplace_back([&, tid] {
      t_cta = &sim;
      t_tid = tid;
      VReadOps ops;
      floordec::decode_cta<VReadOps, F, kHdim, HT>(a, qh0, seq, tid, *sm, ops);
    });
  for (auto& t : th) t.join();
}

// The V code and scale bytes of kv head kvh at position p of sequence s read by one CTA (heads
// qh0 .. qh0+ht-1), against the model: some read iff some head of the CTA uses the position.
// Clears the read flags for the next CTA.
uint64_t cta_v_read_errors(const DecodeCase& dc, const DecodeDiagnostics& diag, uint32_t s,
                           uint32_t qh0, uint32_t ht) {
  const DecodeParams& p = dc.p;
  const int32_t L = dc.lens[s];
  uint64_t errors = 0;
  if (L > 0) {
    const uint32_t B = p.block_size, G = p.num_q_heads / p.num_kv_heads;
    const uint32_t bits = traits(dc.format).bits, n = p.num_kv_heads * p.head_dim;
    const uint64_t row = uint64_t(n) * bits / 8, srow = n / kGroupSize;
    const uint32_t start = window_start(uint32_t(L), p.sliding_window);
    const uint64_t e0 = uint64_t(qh0 / G) * p.head_dim;
    for (uint32_t pos = start; pos < uint32_t(L); ++pos) {
      bool used = false;
      for (uint32_t h = 0; h < ht; ++h)
        used |= diag.heads[s * p.num_q_heads + qh0 + h].skipped[pos - start] == 0;
      const uint64_t blk = uint64_t(dc.tables[s * p.max_blocks_per_seq + pos / B]);
      const uint64_t base = blk * p.v_block_stride_bytes;
      const uint64_t code0 = base + (pos % B) * row + e0 * bits / 8;
      const uint64_t scale0 = base + p.v_data_section_bytes + (pos % B) * srow + e0 / kGroupSize;
      bool read = false;
      for (uint64_t b = 0; b < p.head_dim * bits / 8; ++b) read |= g_v_read[code0 + b].load() != 0;
      for (uint64_t b = 0; b < p.head_dim / kGroupSize; ++b) read |= g_v_read[scale0 + b].load() != 0;
      if (read != used && errors++ < 3)
        BOOST_ERROR("seq " << s << " heads " << qh0 << ".." << qh0 + ht - 1 << " position " << pos
                           << ": V " << (read ? "read" : "not read") << ", model "
                           << (used ? "uses it" : "skips it for every head"));
    }
  }
  for (size_t i = 0; i < dc.v_cache.size(); ++i) g_v_read[i].store(0);
  return errors;
}

template <Format F, uint32_t kHdim>
uint64_t run_grid(const fastdec::Args& a, uint32_t ht, const DecodeCase& dc,
                  const DecodeDiagnostics& diag) {
  uint64_t v_errors = 0;
  for (uint32_t s = 0; s < dc.p.num_seqs; ++s)
    for (uint32_t x = 0; x < a.num_q_heads / ht; ++x) {
      if (ht == 4) run_cta<F, kHdim, 4>(a, x * 4, s);
      else if (ht == 2) run_cta<F, kHdim, 2>(a, x * 2, s);
      else run_cta<F, kHdim, 1>(a, x, s);
      v_errors += cta_v_read_errors(dc, diag, s, x * ht, ht);
    }
  return v_errors;
}

struct SimResult {
  std::vector<uint16_t> out;
  std::vector<float> out_f32;
  uint64_t v_errors = 0;  // CTAs' V reads that disagree with the model's skip decisions
};

SimResult run_sim(const DecodeCase& dc, uint32_t ht, const DecodeDiagnostics& diag) {
  SimResult r;
  r.out.assign(uint64_t(dc.p.num_seqs) * dc.p.num_q_heads * dc.p.head_dim, kPoison);
  r.out_f32.assign(r.out.size(), 0.0f);
  const fastdec::Args a{dc.q.data(), reinterpret_cast<const uint16_t*>(dc.k_cache.data()),
                        dc.v_cache.data(), r.out.data(), dc.tables.data(), dc.lens.data(),
                        dc.p.max_blocks_per_seq, dc.p.num_q_heads, dc.p.num_kv_heads,
                        dc.p.head_dim, dc.p.block_size, dc.p.inv_sqrt_d, dc.p.q_stride,
                        dc.p.v_block_stride_bytes, dc.p.v_data_section_bytes,
                        dc.p.sliding_window, nullptr, r.out_f32.data()};
  g_k_lo = dc.k_cache.data();
  g_k_hi = dc.k_cache.data() + dc.k_cache.size();
  g_v_lo = dc.v_cache.data();
  g_v_hi = dc.v_cache.data() + dc.v_cache.size();
  g_v_read = std::make_unique<std::atomic<uint8_t>[]>(dc.v_cache.size());
  g_thresh = dc.p.threshold;
  BOOST_REQUIRE_EQUAL(floordec::heads_per_cta(dc.p.num_q_heads, dc.p.num_kv_heads,
                                             dc.p.num_q_heads / ht), ht);
  auto go = [&](auto hd) {
    constexpr uint32_t H = decltype(hd)::value;
    switch (dc.format) {
      case Format::turbo2v: r.v_errors = run_grid<Format::turbo2v, H>(a, ht, dc, diag); break;
      case Format::turbo3v: r.v_errors = run_grid<Format::turbo3v, H>(a, ht, dc, diag); break;
      case Format::turbo4v: r.v_errors = run_grid<Format::turbo4v, H>(a, ht, dc, diag); break;
    }
  };
  if (dc.p.hdim == 128) go(std::integral_constant<uint32_t, 128>{});
  else go(std::integral_constant<uint32_t, 256>{});
  g_thresh = kSparseVThreshold;
  return r;
}

std::string name_of(const CaseSpec& c, uint32_t ht, float thresh) {
  return std::string(traits(c.format).name) + " hdim=" + std::to_string(c.hdim) +
         " B=" + std::to_string(c.block_size) + " nq=" + std::to_string(c.num_q_heads) +
         " nkv=" + std::to_string(c.num_kv_heads) + " HT=" + std::to_string(ht) +
         " W=" + std::to_string(c.window) + " qsigma=" + std::to_string(c.q_sigma) +
         " thresh=" + std::to_string(thresh) + " seed=" + std::to_string(c.seed);
}

// Every valid HT of the case (a copy of the case with `edit` applied to it after make_case):
// equal bits, V read exactly where some head of the CTA uses a position.
void check_case(const CaseSpec& c, bool expect_skips, float thresh = kSparseVThreshold,
                bool require_nonzero = true,
                const std::function<void(DecodeCase&)>& edit = nullptr) {
  DecodeCase dc = make_case(c);
  dc.p.threshold = thresh;
  if (edit) edit(dc);
  DecodeDiagnostics diag;
  const std::vector<uint16_t> want = run_model(dc, ex2(), &diag);

  uint64_t skipped = 0;
  for (const auto& h : diag.heads) skipped += h.skip_count;
  if (expect_skips) BOOST_TEST(skipped > 0u);
  bool any_ht = false;
  for (uint32_t ht : {1u, 2u, 4u}) {
    if (floordec::heads_per_cta(c.num_q_heads, c.num_kv_heads, c.num_q_heads / ht) != ht) continue;
    any_ht = true;
    BOOST_TEST_CONTEXT(name_of(c, ht, thresh)) {
      const SimResult got = run_sim(dc, ht, diag);
      expect_model_bits(dc, diag, want, got.out, got.out_f32, require_nonzero);
      BOOST_TEST(got.v_errors == 0u);
    }
  }
  BOOST_TEST(any_ht);
}

// K and V of one position (n elements each, Gaussian, sigma 1) from a generator seeded by
// (seed, s, pos); returns the generator for the caller's further draws.
std::mt19937_64 gauss_position(uint64_t seed, uint32_t s, uint32_t pos, uint32_t n, uint16_t* k,
                               uint16_t* v) {
  std::mt19937_64 rng(seed * 1000 + s * 131 + pos);
  for (uint32_t e = 0; e < n; ++e) {
    k[e] = bf16_gauss(rng, 1.0f);
    v[e] = bf16_gauss(rng, 1.0f);
  }
  return rng;
}

std::vector<int32_t> range_lens(int32_t lo, int32_t hi) {
  std::vector<int32_t> v;
  for (int32_t L = lo; L <= hi; ++L) v.push_back(L);
  return v;
}

}  // namespace

// Every length 0..40 (tiles shorter than a round, one and two rounds per chunk, chunks left
// empty) for the three formats at GQA 4, block size 16, frequent skips.
BOOST_AUTO_TEST_CASE(floor_lengths_0_to_40_hdim128) {
  uint64_t seed = 1;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v}) {
    CaseSpec c;
    c.format = f;
    c.hdim = 128;
    c.num_q_heads = 4;
    c.num_kv_heads = 1;
    c.block_size = 16;
    c.lens = range_lens(0, 40);
    c.q_sigma = 4.0f;
    c.seed = seed++;
    check_case(c, true);
  }
}

// HDIM 256 (VEC 8: two q vectors per lane group, other table-entry counts), odd block size.
BOOST_AUTO_TEST_CASE(floor_hdim256) {
  uint64_t seed = 21;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v}) {
    CaseSpec c;
    c.format = f;
    c.hdim = 256;
    c.num_q_heads = 8;
    c.num_kv_heads = 2;
    c.block_size = 7;
    c.lens = {0, 1, 3, 4, 5, 9, 31, 33, 40, 300};
    c.q_sigma = 3.0f;
    c.seed = seed++;
    check_case(c, true);
  }
}

// GQA 1, 2, 7, 8 and MQA, block sizes 1 (a block per position: tiles of many segments), 13, 32,
// a long sequence (1009: several rounds per chunk, chunks not aligned to blocks).
BOOST_AUTO_TEST_CASE(floor_gqa_ratios_and_long) {
  struct G {
    uint32_t nq, nkv, B;
    Format f;
  };
  const G gs[] = {{2, 2, 13, Format::turbo4v},  {4, 2, 32, Format::turbo2v},
                  {7, 1, 16, Format::turbo3v},  {16, 2, 1, Format::turbo3v},
                  {8, 1, 16, Format::turbo4v},  {32, 1, 5, Format::turbo2v}};
  uint64_t seed = 41;
  for (const G& g : gs) {
    CaseSpec c;
    c.format = g.f;
    c.num_q_heads = g.nq;
    c.num_kv_heads = g.nkv;
    c.block_size = g.B;
    c.lens = g.nq >= 16 ? std::vector<int32_t>{1009, 17} : std::vector<int32_t>{1009, 2, 260};
    c.q_sigma = 2.0f;
    c.seed = seed++;
    check_case(c, false);
  }
}

// Sliding windows (start inside a block, windows shorter than the chunk count, longer than L).
BOOST_AUTO_TEST_CASE(floor_windows) {
  uint64_t seed = 61;
  for (uint32_t window : {1u, 5u, 50u, 1000u, 5000u}) {
    CaseSpec c;
    c.format = Format::turbo3v;
    c.num_q_heads = 8;
    c.num_kv_heads = 2;
    c.block_size = 16;
    c.lens = {1009, 3, 77};
    c.window = window;
    c.q_sigma = 3.0f;
    c.seed = seed++;
    check_case(c, false);
  }
}

// Other thresholds (the model's threshold and the simulated THRESH together): skip everything
// (1.0: no factor exceeds it, every V row unread, outputs 0), skip nothing (-1.0), and 2^-10,
// a factor EX2 can produce exactly (ties at the threshold are skipped).
BOOST_AUTO_TEST_CASE(floor_thresholds) {
  uint64_t seed = 81;
  for (float thr : {1.0f, -1.0f, 0x1p-10f}) {
    CaseSpec c;
    c.format = Format::turbo4v;
    c.num_q_heads = 8;
    c.num_kv_heads = 2;
    c.block_size = 16;
    c.lens = {0, 1, 33, 200};
    c.q_sigma = 3.0f;
    c.seed = seed++;
    check_case(c, thr > 0.0f, thr, thr != 1.0f);
  }
}

// Non-finite inputs: +-Inf and NaN in q, K elements of +-Inf and NaN (scores +-Inf or NaN: NaN
// factors, which are skipped and still poison o through ef * 0), V groups with a NaN (scale byte
// 0x7F), and huge finite K (overflowing products).
BOOST_AUTO_TEST_CASE(floor_non_finite) {
  uint64_t seed = 101;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v}) {
    CaseSpec c;
    c.format = f;
    c.num_q_heads = 8;
    c.num_kv_heads = 2;
    c.block_size = 16;
    c.lens = {40, 9, 70};
    c.q_sigma = 2.0f;
    c.seed = seed++;
    const uint32_t n = c.num_kv_heads * c.hdim;
    c.kv_gen = [n, seed](uint32_t s, uint32_t pos, uint16_t* k, uint16_t* v) {
      gauss_position(seed, s, pos, n, k, v);
      if (s == 0 && pos % 7 == 3) k[(pos * 5) % n] = 0x7F80;         // +Inf
      if (s == 0 && pos % 11 == 5) k[(pos * 3) % n] = 0xFF80;        // -Inf
      if (s == 1 && pos == 4) k[17] = 0x7FC1;                         // NaN
      if (s == 2 && pos % 9 == 0) v[(pos * 7) % n] = 0x7FC0;          // NaN group
      if (s == 2 && pos % 13 == 6) k[pos % n] = 0x7F00;              // 2^127: products overflow
    };
    check_case(c, false, kSparseVThreshold, false, [](DecodeCase& dc) {
      dc.q[5] = 0x7F80;                        // +Inf in sequence 0, head 0
      dc.q[dc.p.q_stride + 130] = 0xFFC0;      // NaN in sequence 1, head 1
      dc.q[2 * dc.p.q_stride + 3 * 128] = 0xFF80;  // -Inf in sequence 2, head 3
    });
  }
}

// V rows that are not 4-byte aligned (odd block stride: the byte-by-byte code path; odd data
// section: scale addressing) for every format and HDIM.
BOOST_AUTO_TEST_CASE(floor_unaligned_v) {
  uint64_t seed = 121;
  for (Format f : {Format::turbo2v, Format::turbo3v, Format::turbo4v})
    for (uint32_t hdim : {128u, 256u}) {
      CaseSpec c;
      c.format = f;
      c.hdim = hdim;
      c.num_q_heads = 4;
      c.num_kv_heads = 2;
      c.block_size = 16;
      c.lens = {45, 20};
      c.v_block_pad = 3;
      c.v_section_pad = 5;
      c.q_pad = 3;
      c.q_sigma = 3.0f;
      c.seed = seed++;
      check_case(c, true);
    }
}

// The round tiles against a direct walk of the reference order: every position once, in order,
// batches exactly where the reference-order kernel takes them, tiles of whole steps, at most
// kRound positions, full tiles where a batch fits no more.
BOOST_AUTO_TEST_CASE(floor_round_tiles) {
  for (uint32_t B : {1u, 3u, 4u, 5u, 16u, 31u, 32u, 33u, 100u})
    for (uint32_t begin : {0u, 1u, 2u, 3u, 17u, 250u})
      for (uint32_t len : {0u, 1u, 3u, 4u, 7u, 31u, 32u, 33u, 64u, 100u, 513u}) {
        BOOST_TEST_CONTEXT("B=" << B << " begin=" << begin << " len=" << len) {
          const uint32_t end = begin + len;
          // Reference order: for each position, is it a step start, a batch start.
          std::vector<uint8_t> step(len, 0), batch(len, 0);
          for (uint32_t p = begin; p < end;) {
            const uint32_t blk_end = (p / B + 1) * B, seg_end = std::min(blk_end, end);
            step[p - begin] = 1;
            if (p + 4 <= seg_end) {
              batch[p - begin] = 1;
              p += 4;
            } else {
              p += 1;
            }
          }
          floordec::RWalker w;
          floordec::rwalker_init(w, begin, end, B);
          uint32_t next = begin, tiles = 0;
          for (;;) {
            const floordec::RTile t = floordec::next_rtile(w, B);
            if (t.n == 0) break;
            ++tiles;
            BOOST_TEST(t.t0 == next);
            BOOST_TEST(t.n <= floordec::kRound);
            for (uint32_t j = 0; j < t.n; ++j) {
              BOOST_TEST(((t.smask >> j) & 1u) == step[next - begin + j]);
              BOOST_TEST(((t.bmask >> j) & 1u) == batch[next - begin + j]);
            }
            BOOST_TEST((t.bmask & ~t.smask) == 0u);
            // whole steps: the position after the tile starts a step (or the range ends)
            if (next + t.n < end) {
              BOOST_TEST(step[next + t.n - begin] == 1);
              // greedy: the next step would not have fitted
              const uint32_t step_len = batch[next + t.n - begin] ? 4u : 1u;
              BOOST_TEST(t.n + step_len > floordec::kRound);
            }
            next += t.n;
            if (tiles > len + 1) break;  // no progress: reported below
          }
          BOOST_TEST(next == end);
        }
      }
}

// Design 2 (warp-local rounds) computes the running max by a warp scan of fmaxf, an association
// other than the reference order's left fold; phase_softmax argues that only the sign of a zero
// maximum can differ and that no use of the max sees that sign. This checks the argument's
// premise, EXPF(+0) == EXPF(-0) bit for bit (a profile where they differed would make a scan
// with another zero sign give other factors).
BOOST_AUTO_TEST_CASE(floor_expf_of_signed_zeros) {
  BOOST_TEST(f32_bits(ex2().expf(0.0f)) == f32_bits(ex2().expf(-0.0f)));
  BOOST_TEST(f32_bits(ex2().expf(0.0f)) == 0x3F800000u);
}

// Signed-zero maxima: q is 2^-75 in dim 0 and 0 elsewhere, K's dim 0 is +-2^-74 or 0 by
// position, so every score is f32(+-2^-149 * inv_sqrt_d) = -0 or +0 in a pseudo-random pattern
// (the other dims' products are zeros, and 0 + -0 = +0 keeps those partials +0). Every running
// max is then a zero whose sign depends on the association of fmaxf; a use of the max that saw
// the sign (s - mn with s = -0 gives -0 or +0) would change a factor if EXPF distinguished the
// zeros, and the skip bits, o or l would differ from the model's.
BOOST_AUTO_TEST_CASE(floor_signed_zero_maxima) {
  uint64_t seed = 141;
  for (Format f : {Format::turbo3v, Format::turbo4v}) {
    CaseSpec c;
    c.format = f;
    c.num_q_heads = 8;
    c.num_kv_heads = 2;
    c.block_size = 16;
    c.lens = {1, 7, 40, 263};
    c.seed = seed++;
    const uint32_t n = c.num_kv_heads * c.hdim, hd = c.hdim;
    c.kv_gen = [n, hd, seed](uint32_t s, uint32_t pos, uint16_t* k, uint16_t* v) {
      std::mt19937_64 rng = gauss_position(seed, s, pos, n, k, v);
      for (uint32_t e = 0; e < n; e += hd) {
        const uint32_t r = uint32_t(rng() % 3);
        k[e] = r == 0 ? 0x9A80 : r == 1 ? 0x1A80 : 0x0000;  // -2^-74, +2^-74, +0
      }
    };
    check_case(c, false, kSparseVThreshold, true, [](DecodeCase& dc) {
      for (uint32_t s = 0; s < dc.p.num_seqs; ++s)
        for (uint32_t h = 0; h < dc.p.num_q_heads; ++h)
          for (uint32_t d = 0; d < dc.p.head_dim; ++d)
            dc.q[s * dc.p.q_stride + h * dc.p.head_dim + d] = d == 0 ? 0x1A00 : 0x0000;
    });
  }
}

// Non-finite scores placed where the scan and the per-lane factors could get them wrong (dim 0
// of K is +-Inf or NaN, q's dim 0 is 1, so the score is +-Inf or NaN): sequence 0, runs of -Inf
// scores longer than a tile (a step whose max is the max before it, factors 0, every head
// skipping); sequence 1, one +Inf score (mn = +Inf: NaN factors from inf - inf for the rest of
// the chunk, NaN l); sequence 2, runs of NaN scores (fmaxf ignores them: the max stays that of
// the scores before, NaN factors that are skipped but still poison o through ef * 0); sequence
// 3, NaN at the first position of every chunk (the scan's first operand NaN, the max before the
// tile the initial -1e30). A +Inf factor cannot occur (s - mn <= 0 and mb - mn <= 0 or NaN).
BOOST_AUTO_TEST_CASE(floor_non_finite_scores) {
  uint64_t seed = 161;
  for (Format f : {Format::turbo2v, Format::turbo3v}) {
    CaseSpec c;
    c.format = f;
    c.num_q_heads = 4;
    c.num_kv_heads = 1;
    c.block_size = 16;
    c.lens = {300, 300, 300, 300};
    c.seed = seed++;
    const uint32_t n = c.num_kv_heads * c.hdim;
    c.kv_gen = [n, seed](uint32_t s, uint32_t pos, uint16_t* k, uint16_t* v) {
      gauss_position(seed, s, pos, n, k, v);
      uint16_t k0 = k[0];
      if (s == 0 && ((pos >= 40 && pos < 90) || pos % 38 == 3)) k0 = 0xFF80;  // -Inf
      if (s == 1 && pos == 120) k0 = 0x7F80;                                 // +Inf
      if (s == 2 && ((pos >= 200 && pos < 237) || pos % 17 == 0)) k0 = 0x7FC0;  // NaN
      if (s == 3 && pos % 38 == 0) k0 = 0x7FC0;  // chunks of 300 / 8 = 38 positions (rounded up)
      k[0] = k0;
    };
    check_case(c, false, kSparseVThreshold, false, [](DecodeCase& dc) {
      for (uint32_t s = 0; s < dc.p.num_seqs; ++s)
        for (uint32_t h = 0; h < dc.p.num_q_heads; ++h)
          dc.q[s * dc.p.q_stride + h * dc.p.head_dim] = 0x3F80;  // 1.0
    });
  }
}

// Block sizes 1..64 with odd lengths (tiles that end mid-round at a block boundary or where a
// batch no longer fits, chunks of unequal length so that some warps finish their rounds before
// others and wait only at the merge, a last tile shorter than a round, steps spanning lanes
// whose step_last differs) and frequent skips (q_sigma 6: tiles where every head skips every
// position, ballots of 0 next to full ones).
BOOST_AUTO_TEST_CASE(floor_block_sizes_1_to_64) {
  const Format fs[] = {Format::turbo2v, Format::turbo3v, Format::turbo4v};
  for (uint32_t B = 1; B <= 64; ++B) {
    CaseSpec c;
    c.format = fs[B % 3];
    c.num_q_heads = 4;
    c.num_kv_heads = 1;
    c.block_size = B;
    c.lens = {int32_t(257 + 2 * (B % 5)), int32_t(B % 2 ? 35 : 69)};
    c.q_sigma = 6.0f;
    c.seed = 200 + B;
    check_case(c, true);
  }
}
