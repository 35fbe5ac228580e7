// Decode test cases built through the writer model: random bf16 K and V for every position of
// every sequence, written into shuffled physical blocks of padded pools, plus the bf16 V in
// K-pool layout for the unquantised fp64 reference. Shared by test_decode and test_reference.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "tqref/decode.h"
#include "tqref/ex2.h"
#include "tqref/numeric.h"
#include "tqref/writer.h"

namespace tqref::test {

struct CaseSpec {
  Format format = Format::turbo4v;
  uint32_t hdim = 128;
  uint32_t num_q_heads = 4;
  uint32_t num_kv_heads = 2;
  uint32_t block_size = 16;
  uint32_t window = 0;
  std::vector<int32_t> lens = {37};
  uint32_t extra_blocks = 3;     // unused physical blocks in the pools
  uint32_t extra_table = 2;      // unused table entries per sequence (hold out-of-range values)
  uint32_t q_pad = 8;            // q_stride = num_q_heads*head_dim + q_pad
  uint32_t v_section_pad = 16;   // v_data_section_bytes beyond the engine value
  uint32_t v_block_pad = 24;     // v_block_stride_bytes beyond data section + scales
  float q_sigma = 1.0f;          // std dev of q; sets the spread of scores
  float kv_sigma = 1.0f;         // std dev of K and V
  uint64_t seed = 1;
  // Optional generator of one position's K and V (bf16 bits, [H*D] each); default: Gaussian.
  std::function<void(uint32_t s, uint32_t pos, uint16_t* k, uint16_t* v)> kv_gen;
};

struct DecodeCase {
  Format format{};
  DecodeParams p;
  std::vector<uint16_t> q;         // [num_seqs][q_stride] bf16
  std::vector<uint8_t> k_cache;    // [num_blocks, B, H, D] bf16
  std::vector<uint8_t> v_cache;    // num_blocks * v_block_stride_bytes
  std::vector<uint16_t> v_values;  // [num_blocks, B, H, D] bf16: the V the writer consumed
  std::vector<int32_t> tables;     // [num_seqs][max_blocks_per_seq]
  std::vector<int32_t> lens;
  uint32_t num_blocks = 0;
};

inline uint16_t bf16_gauss(std::mt19937_64& rng, float sigma) {
  std::normal_distribution<float> n(0.0f, sigma);
  return f32_to_bf16(n(rng));
}

inline DecodeCase make_case(const CaseSpec& c) {
  DecodeCase dc;
  dc.format = c.format;
  const uint32_t D = c.hdim, H = c.num_kv_heads, B = c.block_size, n = H * D;
  const uint32_t bits = traits(c.format).bits;
  const uint32_t S = uint32_t(c.lens.size());
  uint32_t used = 0, max_blocks = 0;
  for (int32_t L : c.lens) {
    const uint32_t nb = (uint32_t(L) + B - 1) / B;
    used += nb;
    max_blocks = std::max(max_blocks, nb);
  }
  DecodeParams& p = dc.p;
  p.max_blocks_per_seq = max_blocks + c.extra_table;
  p.num_q_heads = c.num_q_heads;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.block_size = B;
  p.inv_sqrt_d = 1.0f / std::sqrt(float(D));
  p.q_stride = c.num_q_heads * D + c.q_pad;
  p.v_data_section_bytes = uint64_t(B) * n * bits / 8 + c.v_section_pad;
  p.v_block_stride_bytes = p.v_data_section_bytes + uint64_t(B) * n / 16 + c.v_block_pad;
  p.sliding_window = c.window;
  p.num_seqs = S;
  p.hdim = c.hdim;
  dc.num_blocks = used + c.extra_blocks;
  dc.lens = c.lens;

  std::mt19937_64 rng(c.seed);
  // Shuffled physical blocks; the unused ones stay in the pool with their poison bytes.
  std::vector<int32_t> phys(dc.num_blocks);
  std::iota(phys.begin(), phys.end(), 0);
  std::shuffle(phys.begin(), phys.end(), rng);
  dc.tables.assign(uint64_t(S) * p.max_blocks_per_seq, 0);
  uint32_t next = 0;
  for (uint32_t s = 0; s < S; ++s)
    for (uint32_t j = 0; j < p.max_blocks_per_seq; ++j) {
      const bool in_use = j * uint64_t(B) < uint64_t(c.lens[s]);
      // unused entries hold values the kernel must never dereference
      dc.tables[s * p.max_blocks_per_seq + j] =
          in_use ? phys[next++] : (j % 2 ? -7 : int32_t(dc.num_blocks + 1000));
    }

  dc.q.resize(uint64_t(S) * p.q_stride);
  for (auto& x : dc.q) x = bf16_gauss(rng, c.q_sigma);
  dc.k_cache.assign(uint64_t(dc.num_blocks) * B * n * 2, 0xA5);
  dc.v_cache.assign(uint64_t(dc.num_blocks) * p.v_block_stride_bytes, 0x7F);  // NaN scales
  dc.v_values.assign(uint64_t(dc.num_blocks) * B * n, 0x7FC0);

  // One token per used position, written by the writer model.
  std::vector<uint16_t> key, value;
  std::vector<int64_t> slots;
  for (uint32_t s = 0; s < S; ++s)
    for (uint32_t pos = 0; pos < uint32_t(c.lens[s]); ++pos) {
      const int64_t slot = int64_t(dc.tables[s * p.max_blocks_per_seq + pos / B]) * B + pos % B;
      const size_t at = key.size();
      key.resize(at + n);
      value.resize(at + n);
      if (c.kv_gen) {
        c.kv_gen(s, pos, key.data() + at, value.data() + at);
      } else {
        for (uint32_t e = 0; e < n; ++e) key[at + e] = bf16_gauss(rng, c.kv_sigma);
        for (uint32_t e = 0; e < n; ++e) value[at + e] = bf16_gauss(rng, c.kv_sigma);
      }
      std::copy(value.begin() + at, value.begin() + at + n, dc.v_values.begin() + slot * n);
      slots.push_back(slot);
    }
  WriterParams wp{H, D, B, n, n, 0, p.v_block_stride_bytes, p.v_data_section_bytes};
  reshape_and_cache_model(c.format, key, value, dc.k_cache, dc.v_cache, slots, wp);
  return dc;
}

// Output rows start poisoned so unwritten rows show (docs/spec.md section 6, level D).
inline constexpr uint16_t kPoison = 0xDEAD;

inline std::vector<uint16_t> run_model(const DecodeCase& dc, const Ex2Profile& ex2,
                                       DecodeDiagnostics* diag = nullptr) {
  std::vector<uint16_t> out(uint64_t(dc.p.num_seqs) * dc.p.num_q_heads * dc.p.head_dim, kPoison);
  paged_decode_model(dc.format, dc.q, dc.k_cache, dc.v_cache, out, dc.tables, dc.lens, dc.p, ex2,
                     diag);
  return out;
}

// A synthetic EX2 profile: F[k] = float(exp2(-k * 2^-23)), correctly rounded from double. Valid
// for tests where the hardware's exact bits do not matter (the model must only call expf).
inline const Ex2Profile& synthetic_ex2() {
  static const Ex2Profile prof = [] {
    std::vector<uint32_t> f(kEx2FractionEntries);
    for (uint32_t k = 0; k < kEx2FractionEntries; ++k)
      f[k] = f32_bits(float(std::exp2(-double(k) * 0x1p-23)));
    return Ex2Profile::from_table("synthetic-exp2", "none", std::move(f));
  }();
  return prof;
}

}  // namespace tqref::test
