#include "tqref/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tqref/contract.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

// Plain fp64 softmax attention over the positions the kernel attends to. Inputs are exact in
// fp64 (bf16 q and K, bf16 V or dequantised V, which is an fp32 value); products of two of them
// are exact in fp64 too, so the only error is fp64 summation and exp.

namespace tqref {

namespace {

// The rules of docs/spec.md sections 3 and 5 (tqref/contract.h) that the reference needs: not the
// build's HDIM (it judges mismatched launches at level T), and the V sections only when V comes
// from the Turbo pool. Afterwards no access is out of range.
void validate(Format f, size_t q_elems, size_t k_bytes, size_t v_bytes, size_t v_values,
              std::span<const int32_t> tables, std::span<const int32_t> lens, const DecodeParams& p,
              ReferenceV which) {
  constexpr const char* kFunction = "reference_attention";
  require(kFunction, check_decode_geometry(p));
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  uint64_t blocks = 0;
  if (which == ReferenceV::dequantised) {
    require(kFunction, check_v_sections(f, g));
    blocks = pool_blocks(g, k_bytes, v_bytes);
  } else {  // v_values: bf16 rows laid out like the K pool
    blocks = std::min(k_pool_blocks(g, k_bytes), k_pool_blocks(g, uint64_t(v_values) * 2));
  }
  const DecodeBuffers buffers{q_elems, std::nullopt, lens.size(), tables.size()};
  require(kFunction, check_decode_buffers(p, buffers));
  require(kFunction, check_sequences(p, tables, lens, blocks));
}

// The attended positions of row (s, qh) with their softmax weights before normalisation:
// e[j] = exp(score_j - max score), sum = sum of e. slot[j] is position start + j's slot.
struct RowWeights {
  uint32_t kvh = 0;
  std::vector<int64_t> slot;
  std::vector<double> e;
  double sum = 0.0;
};

RowWeights row_weights(std::span<const uint16_t> q, std::span<const uint8_t> k_cache,
                       std::span<const int32_t> block_tables, uint32_t L, const DecodeParams& p,
                       const CacheGeometry& g, uint32_t s, uint32_t qh) {
  const uint32_t D = p.head_dim;
  const uint32_t start = window_start(L, p.sliding_window);
  RowWeights r;
  r.kvh = qh / (p.num_q_heads / p.num_kv_heads);
  const uint16_t* qrow = q.data() + uint64_t(s) * p.q_stride + uint64_t(qh) * D;
  r.slot.resize(L - start);
  r.e.resize(L - start);
  for (uint32_t pos = start; pos < L; ++pos) {
    const int64_t blk = block_tables[uint64_t(s) * p.max_blocks_per_seq + pos / p.block_size];
    r.slot[pos - start] = blk * p.block_size + pos % p.block_size;
    const uint8_t* krow = k_cache.data() + g.k_row_offset(r.slot[pos - start]) + uint64_t(r.kvh) * D * 2;
    double dot = 0.0;
    for (uint32_t d = 0; d < D; ++d) {
      uint16_t kb;
      std::memcpy(&kb, krow + uint64_t(d) * 2, 2);
      dot += double(bf16_to_f32(qrow[d])) * double(bf16_to_f32(kb));  // exact product
    }
    r.e[pos - start] = dot * double(p.inv_sqrt_d);
  }
  double mx = -INFINITY;
  for (double x : r.e) mx = std::max(mx, x);
  for (double& x : r.e) {
    x = std::exp(x - mx);
    r.sum += x;
  }
  return r;
}

// Element e of the slot's V row as the decoder dequantises it (exact in fp64).
double dequantised_v(const FormatTraits& t, std::span<const uint8_t> v_cache, const CacheGeometry& g,
                     int64_t slot, uint32_t e) {
  const uint32_t grp = e / kGroupSize;
  const uint8_t* codes = v_cache.data() + g.v_code_row_offset(slot, t.bits) + uint64_t(grp) * t.group_code_bytes;
  const uint8_t sb = v_cache[g.v_scale_row_offset(slot) + grp];
  return dequantize_code(t, unpack_group_code(t.bits, codes, e % kGroupSize), sb);
}

// Calls row(i, s, qh, L) for every row i = s*num_q_heads + qh of a sequence with L > 0, rows in
// parallel: each call writes only row i's results.
template <class Row>
void for_each_row(const DecodeParams& p, std::span<const int32_t> seq_lens, const Row& row) {
  const int64_t ctas = int64_t(p.num_seqs) * p.num_q_heads;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < ctas; ++i) {
    const uint32_t s = uint32_t(i / p.num_q_heads), qh = uint32_t(i % p.num_q_heads);
    const uint32_t L = uint32_t(seq_lens[s]);
    if (L > 0) row(i, s, qh, L);
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
  validate(format, q.size(), k_cache.size(), v_cache.size(), v_values.size(), block_tables,
           seq_lens, p, which);
  const uint32_t D = p.head_dim;
  const CacheGeometry g{p.num_kv_heads, D, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  std::vector<double> out(uint64_t(p.num_seqs) * p.num_q_heads * D, 0.0);
  for_each_row(p, seq_lens, [&](int64_t i, uint32_t s, uint32_t qh, uint32_t L) {
    const RowWeights r = row_weights(q, k_cache, block_tables, L, p, g, s, qh);
    double* o = out.data() + uint64_t(i) * D;
    for (size_t j = 0; j < r.e.size(); ++j) {
      const double w = r.e[j] / r.sum;
      for (uint32_t d = 0; d < D; ++d) {
        const uint32_t e = r.kvh * D + d;
        const double v = which == ReferenceV::unquantised
                             ? double(bf16_to_f32(v_values[uint64_t(r.slot[j]) * g.elems_per_token() + e]))
                             : dequantised_v(t, v_cache, g, r.slot[j], e);
        o[d] += w * v;
      }
    }
  });
  return out;
}

std::vector<double> reference_skip_bound(Format format, std::span<const uint16_t> q,
                                         std::span<const uint8_t> k_cache,
                                         std::span<const uint8_t> v_cache,
                                         std::span<const int32_t> block_tables,
                                         std::span<const int32_t> seq_lens, const DecodeParams& p,
                                         double factor_limit) {
  const FormatTraits& t = traits(format);
  validate(format, q.size(), k_cache.size(), v_cache.size(), 0, block_tables, seq_lens, p,
           ReferenceV::dequantised);
  const uint32_t D = p.head_dim;
  const CacheGeometry g{p.num_kv_heads, D, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  std::vector<double> bound(uint64_t(p.num_seqs) * p.num_q_heads, 0.0);
  for_each_row(p, seq_lens, [&](int64_t i, uint32_t s, uint32_t qh, uint32_t L) {
    const RowWeights r = row_weights(q, k_cache, block_tables, L, p, g, s, qh);
    for (size_t j = 0; j < r.e.size(); ++j) {
      if (!(r.e[j] <= factor_limit)) continue;
      double vmax = 0.0;
      for (uint32_t d = 0; d < D; ++d)
        vmax = std::max(vmax, std::fabs(dequantised_v(t, v_cache, g, r.slot[j], r.kvh * D + d)));
      bound[i] += r.e[j] / r.sum * vmax;
    }
  });
  return bound;
}

}  // namespace tqref
