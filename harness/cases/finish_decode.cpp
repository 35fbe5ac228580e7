#include "cases/finish_decode.h"

#include <stdexcept>

#include "cases/rng.h"
#include "cases/values.h"
#include "tqref/contract.h"
#include "tqref/format.h"
#include "tqref/reference.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

constexpr uint16_t kOutputPoison = 0xFFFF;  // a NaN the kernel never writes (it writes 0x7FFF)

// V group (slot, kv head) -> 1 when some q head of that kv head reads it unskipped.
std::vector<uint8_t> v_groups_needed(const DecodeCase& d, const DecodeDiagnostics& diag) {
  const DecodeParams& p = d.p;
  const uint32_t S = p.num_seqs, QH = p.num_q_heads, H = p.num_kv_heads, B = p.block_size;
  const uint32_t MB = p.max_blocks_per_seq, q_per_kv = QH / H;
  std::vector<uint8_t> needed(uint64_t(d.num_blocks) * B * H, 0);
  for (uint32_t s = 0; s < S; ++s) {
    const uint32_t L = uint32_t(d.seq_lens[s]), start = window_start(L, p.sliding_window);
    for (uint32_t qh = 0; qh < QH; ++qh) {
      const DecodeHeadDiag& hd = diag.heads[uint64_t(s) * QH + qh];
      for (uint32_t pos = start; pos < L; ++pos) {
        if (hd.skipped[pos - start]) continue;
        const int64_t slot = int64_t(d.block_tables[uint64_t(s) * MB + pos / B]) * B + pos % B;
        needed[uint64_t(slot) * H + qh / q_per_kv] = 1;
      }
    }
  }
  return needed;
}

}  // namespace

void store_diagnostics(const DecodeDiagnostics& diag, uint32_t head_dim, DecodeDiagData& x,
                       DecodeStats& st) {
  x.skip_offsets.push_back(0);
  for (const DecodeHeadDiag& hd : diag.heads) {
    x.skip_mask.insert(x.skip_mask.end(), hd.skipped.begin(), hd.skipped.end());
    x.skip_offsets.push_back(x.skip_mask.size());
    x.skip_count.push_back(hd.skip_count);
    x.m.push_back(hd.m);
    x.l.push_back(hd.l);
    std::vector<float> of = hd.out_f32;
    of.resize(head_dim, 0.0f);  // rows of L == 0 sequences: no output, zeros
    x.out_f32.insert(x.out_f32.end(), of.begin(), of.end());
    st.skipped += hd.skip_count;
    st.reads += hd.skipped.size();
  }
}

GoldenCase finish_decode_case(DecodeInputs in, const GoldenCase& writer, const Ex2Profile& ex2,
                              DecodeStats* stats) {
  DecodeStats st;
  GoldenCase dc;
  dc.name = in.name;
  dc.kind = CaseKind::decode;
  dc.format = writer.format;
  dc.threshold = in.p.threshold;
  dc.seed = in.seed;
  dc.distribution = in.distribution;
  dc.linked_case = writer.name;
  DecodeCase& d = dc.d;
  in.p.v_block_stride_bytes = writer.w.p.v_block_stride_bytes;
  in.p.v_data_section_bytes = writer.w.p.v_data_section_bytes;
  d.p = in.p;
  d.num_blocks = in.num_blocks;
  d.q = std::move(in.q);
  d.block_tables = std::move(in.block_tables);
  d.seq_lens = std::move(in.seq_lens);
  d.k_init = writer.w.k_expected;
  d.v_init = writer.w.v_expected;
  const DecodeParams& p = d.p;
  const uint32_t H = p.num_kv_heads, D = p.head_dim;
  const FormatTraits& t = traits(dc.format);
  const CacheGeometry g{H, D, p.block_size, d.num_blocks, p.v_block_stride_bytes, p.v_data_section_bytes};
  Rng prng(in.seed ^ 0x504F49534F4E0000ull);  // "POISON"
  for (int64_t slot : in.unread_slots) {
    poison_k(prng, {d.k_init.data() + g.k_row_offset(slot), g.k_row_bytes()});
    poison_v_codes(prng, {d.v_init.data() + g.v_code_row_offset(slot, t.bits), g.v_code_row_bytes(t.bits)});
    poison_v_scales(prng, {d.v_init.data() + g.v_scale_row_offset(slot), g.v_scale_row_bytes()});
  }
  d.out_init.assign(uint64_t(p.num_seqs) * p.num_q_heads * D, kOutputPoison);

  d.diag.ref_dequantised = reference_attention(dc.format, d.q, d.k_init, d.v_init, in.v_values,
                                               d.block_tables, d.seq_lens, p, ReferenceV::dequantised);
  d.diag.ref_unquantised = reference_attention(dc.format, d.q, d.k_init, d.v_init, in.v_values,
                                               d.block_tables, d.seq_lens, p, ReferenceV::unquantised);
  if (!decode_in_contract(D, p.hdim))  // what level T against fp64 allows for skips (docs/models.md)
    d.diag.ref_skip_bound = reference_skip_bound(dc.format, d.q, d.k_init, d.v_init, d.block_tables, d.seq_lens,
                                                 p, double(dc.threshold) * kSkipBoundFactorMargin);

  DecodeDiagnostics diag;
  std::vector<uint16_t> out1(d.out_init);
  paged_decode_model(dc.format, d.q, d.k_init, d.v_init, out1, d.block_tables, d.seq_lens, p, ex2, &diag);
  const std::vector<uint8_t> v_needed = v_groups_needed(d, diag);
  const uint32_t gph = D / kGroupSize;  // groups per head
  for (int64_t slot : in.read_slots)
    for (uint32_t h = 0; h < H; ++h) {
      if (v_needed[uint64_t(slot) * H + h]) continue;
      poison_v_codes(prng, {d.v_init.data() + g.v_code_row_offset(slot, t.bits) +
                                uint64_t(h) * gph * t.group_code_bytes,
                            uint64_t(gph) * t.group_code_bytes});
      poison_v_scales(prng, {d.v_init.data() + g.v_scale_row_offset(slot) + uint64_t(h) * gph, gph});
      ++st.poisoned_groups;
    }
  DecodeDiagnostics diag2;
  d.out_expected = d.out_init;
  paged_decode_model(dc.format, d.q, d.k_init, d.v_init, d.out_expected, d.block_tables, d.seq_lens,
                     p, ex2, &diag2);
  if (d.out_expected != out1)
    throw std::logic_error(in.name + ": decode output changed after poisoning skipped V groups");
  store_diagnostics(diag2, D, d.diag, st);
  if (stats) *stats = st;
  return dc;
}

}  // namespace tqref::cases
