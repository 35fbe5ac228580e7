#include "tqref/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tqref/numeric.h"
#include "tqref/quantize.h"

// Plain fp64 softmax attention over the positions the kernel attends to. Inputs are exact in
// fp64 (bf16 q and K, bf16 V or dequantised V, which is an fp32 value); products of two of them
// are exact in fp64 too, so the only error is fp64 summation and exp.

namespace tqref {

namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("reference_attention: " + what);
}

std::string str(uint64_t v) { return std::to_string(v); }

void validate(const FormatTraits& t, size_t q_elems, size_t k_bytes, size_t v_bytes,
              size_t v_values, std::span<const int32_t> tables, std::span<const int32_t> lens,
              const DecodeParams& p, ReferenceV which) {
  if (p.head_dim == 0 || p.head_dim % kGroupSize != 0)
    bad("head_dim = " + str(p.head_dim) + "; allowed: a positive multiple of 16");
  if (p.num_kv_heads == 0) bad("num_kv_heads = 0; allowed: >= 1");
  if (p.num_q_heads == 0 || p.num_q_heads % p.num_kv_heads != 0)
    bad("num_q_heads = " + str(p.num_q_heads) + "; allowed: a positive multiple of num_kv_heads = " +
        str(p.num_kv_heads));
  if (p.block_size == 0) bad("block_size = 0; allowed: >= 1");
  const uint64_t q_row = uint64_t(p.num_q_heads) * p.head_dim;
  if (p.q_stride < q_row)
    bad("q_stride = " + str(p.q_stride) + "; allowed: >= num_q_heads*head_dim = " + str(q_row));
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  uint64_t blocks = k_bytes / g.k_block_bytes();
  if (which == ReferenceV::dequantised) {
    if (p.v_data_section_bytes < g.min_v_data_section_bytes(t.bits) ||
        p.v_block_stride_bytes < g.min_v_block_stride_bytes())
      bad("v_data_section_bytes / v_block_stride_bytes = " + str(p.v_data_section_bytes) + " / " +
          str(p.v_block_stride_bytes) + "; allowed: >= " + str(g.min_v_data_section_bytes(t.bits)) +
          " / >= v_data_section_bytes + block_size*n/16");
    const uint64_t v_end = p.v_data_section_bytes + g.v_scale_row_bytes() * p.block_size;
    blocks = std::min(blocks, v_bytes < v_end ? 0 : (v_bytes - v_end) / p.v_block_stride_bytes + 1);
  } else {
    blocks = std::min(blocks, v_values * 2 / g.k_block_bytes());
  }
  const uint64_t S = p.num_seqs;
  if (S == 0) return;
  if (q_elems < (S - 1) * p.q_stride + q_row)
    bad("q holds " + str(q_elems) + " elements; need (num_seqs-1)*q_stride + num_q_heads*head_dim");
  if (lens.size() < S || tables.size() < S * p.max_blocks_per_seq)
    bad("seq_lens / block_tables hold " + str(lens.size()) + " / " + str(tables.size()) +
        " entries; need num_seqs / num_seqs*max_blocks_per_seq");
  const uint64_t cap = uint64_t(p.max_blocks_per_seq) * p.block_size;
  for (uint64_t s = 0; s < S; ++s) {
    const int32_t L = lens[s];
    if (L < 0 || uint64_t(L) > cap)
      bad("seq_lens[" + str(s) + "] = " + std::to_string(L) + "; allowed: 0 .. " + str(cap));
    if (L == 0) continue;
    const uint32_t start =
        (p.sliding_window > 0 && uint32_t(L) > p.sliding_window) ? L - p.sliding_window : 0;
    for (uint64_t j = start / p.block_size; j <= uint64_t(L - 1) / p.block_size; ++j) {
      const int32_t b = tables[s * p.max_blocks_per_seq + j];
      if (b < 0 || uint64_t(b) >= blocks)
        bad("block_tables[" + str(s) + "][" + str(j) + "] = " + std::to_string(b) +
            "; allowed: 0 .. " + std::to_string(int64_t(blocks) - 1));
    }
  }
}

}  // namespace

std::vector<double> reference_attention(Format format, std::span<const uint16_t> q,
                                        std::span<const uint8_t> k_cache,
                                        std::span<const uint8_t> v_cache,
                                        std::span<const uint16_t> v_values,
                                        std::span<const int32_t> block_tables,
                                        std::span<const int32_t> seq_lens, const DecodeParams& p,
                                        ReferenceV which) {
  const FormatTraits& t = traits(format);
  validate(t, q.size(), k_cache.size(), v_cache.size(), v_values.size(), block_tables, seq_lens, p,
           which);
  const uint32_t D = p.head_dim;
  const CacheGeometry g{p.num_kv_heads, D, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  std::vector<double> out(uint64_t(p.num_seqs) * p.num_q_heads * D, 0.0);
  const int64_t ctas = int64_t(p.num_seqs) * p.num_q_heads;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < ctas; ++i) {
    const uint32_t s = uint32_t(i / p.num_q_heads), qh = uint32_t(i % p.num_q_heads);
    const uint32_t L = uint32_t(seq_lens[s]);
    if (L == 0) continue;
    const uint32_t start = (p.sliding_window > 0 && L > p.sliding_window) ? L - p.sliding_window : 0;
    const uint32_t kvh = qh / (p.num_q_heads / p.num_kv_heads);
    const uint16_t* qrow = q.data() + uint64_t(s) * p.q_stride + uint64_t(qh) * D;
    // slot (in pool order) of each attended position
    std::vector<int64_t> slot(L - start);
    std::vector<double> score(L - start);
    for (uint32_t pos = start; pos < L; ++pos) {
      const int64_t blk = block_tables[uint64_t(s) * p.max_blocks_per_seq + pos / p.block_size];
      slot[pos - start] = blk * p.block_size + pos % p.block_size;
      const uint8_t* krow = k_cache.data() + g.k_row_offset(slot[pos - start]) + uint64_t(kvh) * D * 2;
      double dot = 0.0;
      for (uint32_t d = 0; d < D; ++d) {
        uint16_t kb;
        std::memcpy(&kb, krow + uint64_t(d) * 2, 2);
        dot += double(bf16_to_f32(qrow[d])) * double(bf16_to_f32(kb));  // exact product
      }
      score[pos - start] = dot * double(p.inv_sqrt_d);
    }
    double mx = -INFINITY;
    for (double x : score) mx = std::max(mx, x);
    double sum = 0.0;
    for (double& x : score) {
      x = std::exp(x - mx);
      sum += x;
    }
    double* o = out.data() + uint64_t(i) * D;
    for (uint32_t j = 0; j < L - start; ++j) {
      const double w = score[j] / sum;
      for (uint32_t d = 0; d < D; ++d) {
        const uint32_t e = kvh * D + d;
        double v;
        if (which == ReferenceV::unquantised) {
          v = bf16_to_f32(v_values[uint64_t(slot[j]) * g.elems_per_token() + e]);
        } else {
          const uint32_t grp = e / kGroupSize;
          const uint8_t* codes = v_cache.data() + g.v_code_row_offset(slot[j], t.bits) +
                                 uint64_t(grp) * t.group_code_bytes;
          const uint8_t sb = v_cache[g.v_scale_row_offset(slot[j]) + grp];
          v = dequantize_code(t, unpack_group_code(t.bits, codes, e % kGroupSize), sb);
        }
        o[d] += w * v;
      }
    }
  }
  return out;
}

}  // namespace tqref
