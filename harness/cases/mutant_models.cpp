#include "cases/mutant_models.h"

#include <algorithm>
#include <cmath>

#include "cases/fma_groups.h"
#include "tqref/decode.h"

namespace tqref::golden {

namespace {

std::vector<uint16_t> run_decode(const GoldenCase& c, const DecodeParams& p, const Ex2Profile& ex2) {
  const DecodeCase& d = c.d;
  std::vector<uint16_t> out(d.out_init);
  paged_decode_model(c.format, d.q, d.k_init, d.v_init, out, d.block_tables, d.seq_lens, p, ex2);
  return out;
}

}  // namespace

std::vector<uint16_t> decode_output_thresh_ge(const GoldenCase& c, const Ex2Profile& ex2) {
  DecodeParams p = c.d.p;
  p.threshold = std::nextafter(p.threshold, 0.0f);
  return run_decode(c, p, ex2);
}

std::vector<uint16_t> decode_output_expf_no_split(const GoldenCase& c, const Ex2Profile& ex2) {
  DecodeParams p = c.d.p;
  p.expf_split = false;
  return run_decode(c, p, ex2);
}

uint64_t writer_fma_contract_scales(const GoldenCase& c, std::span<uint8_t> v_cache) {
  const WriterCase& w = c.w;
  const CacheGeometry g{w.p.num_kv_heads, w.p.head_dim, w.p.block_size, w.num_blocks,
                        w.p.v_block_stride_bytes, w.p.v_data_section_bytes};
  const FormatTraits& t = traits(c.format);
  const uint64_t groups = g.elems_per_token() / kGroupSize;
  uint64_t changed = 0;
  for (uint32_t tok = 0; tok < w.num_tokens; ++tok) {
    const int64_t s = w.slot_mapping[tok];
    if (s < 0) continue;
    uint8_t* scales = v_cache.data() + g.v_scale_row_offset(s);
    for (uint64_t k = 0; k < groups; ++k) {
      uint16_t x[kGroupSize];
      std::copy_n(w.value.data() + uint64_t(tok) * w.p.value_stride + k * kGroupSize, kGroupSize, x);
      const uint8_t b = scale_byte_fma_contracted(t, x);
      changed += b != scales[k];
      scales[k] = b;
    }
  }
  return changed;
}

uint64_t count_differing(std::span<const uint16_t> a, std::span<const uint16_t> b) {
  uint64_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace tqref::golden
