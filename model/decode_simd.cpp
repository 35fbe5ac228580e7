#include "decode_simd.h"

#include "simd_kernels.h"
#include "tqref/contract.h"
#include "tqref/numeric.h"

namespace tqref::simd {

namespace {

DecodeJob make_job(Format format, std::span<const uint16_t> q, std::span<const uint8_t> k_cache,
                   std::span<const uint8_t> v_cache, std::span<const int32_t> block_tables,
                   std::span<const int32_t> seq_lens, const DecodeParams& p, const Ex2Profile& ex2) {
  const FormatTraits& t = traits(format);
  DecodeJob j{};
  j.q = q.data();
  j.k = k_cache.data();
  j.v = v_cache.data();
  j.tables = block_tables.data();
  j.lens = seq_lens.data();
  j.p = &p;
  j.geo = CacheGeometry{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  j.bits = t.bits;
  j.group_code_bytes = t.group_code_bytes;
  j.heads_per_kv = p.num_q_heads / p.num_kv_heads;
  j.ex2 = ex2.eval_data();
  for (uint32_t c = 0; c < t.levels; ++c) j.cb16[c] = f16_to_f32(f32_to_f16(t.codebook[c]));
  for (uint32_t sb = 0; sb < 256; ++sb) j.scale[sb] = fp8e4m3_to_f32(uint8_t(sb));
  return j;
}

}  // namespace

void paged_decode(Format format, std::span<const uint16_t> q, std::span<const uint8_t> k_cache,
                  std::span<const uint8_t> v_cache, std::span<uint16_t> output,
                  std::span<const int32_t> block_tables, std::span<const int32_t> seq_lens,
                  const DecodeParams& p, const Ex2Profile& ex2, DecodeDiagnostics* diag) {
  const SimdKernels& fk = kernels();
  const DecodeJob j = make_job(format, q, k_cache, v_cache, block_tables, seq_lens, p, ex2);
  const uint64_t ctas = uint64_t(p.num_seqs) * p.num_q_heads;
  WarpStates st;
  st.hdim = p.hdim;
  st.m.resize(ctas * kDecodeWarps);
  st.l.resize(ctas * kDecodeWarps);
  st.o.resize(ctas * kDecodeWarps * p.hdim);
  if (diag)
    for (uint64_t i = 0; i < ctas; ++i) {
      const uint32_t L = uint32_t(seq_lens[i / p.num_q_heads]);
      if (L == 0) continue;  // empty vectors and zeros, as the scalar model
      diag->heads[i].skipped.assign(L - window_start(L, p.sliding_window), 0);
      diag->heads[i].out_f32.assign(p.hdim, 0.0f);
    }
  // Work items: (sequence, kv head, warp). Each writes only its own states and its own range of
  // skipped[]; each CTA then writes only its own output row and diagnostics entry, so any thread
  // count and schedule give the same bits.
  const int64_t items = int64_t(p.num_seqs) * p.num_kv_heads * kDecodeWarps;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < items; ++i) {
    const uint32_t w = uint32_t(i % kDecodeWarps), kvh = uint32_t(i / kDecodeWarps % p.num_kv_heads);
    const uint32_t s = uint32_t(i / kDecodeWarps / p.num_kv_heads);
    if (seq_lens[s] != 0) fk.decode_warp(j, st, diag, s, kvh, w);
  }
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t i = 0; i < int64_t(ctas); ++i) {
    const uint32_t s = uint32_t(i / p.num_q_heads), qh = uint32_t(i % p.num_q_heads);
    if (seq_lens[s] == 0) continue;  // the CTA returns and writes nothing
    fk.decode_cta(j, st, output.data() + uint64_t(i) * p.hdim, diag ? &diag->heads[i] : nullptr, s, qh);
  }
}

}  // namespace tqref::simd
