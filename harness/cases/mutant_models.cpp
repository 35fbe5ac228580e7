#include "cases/mutant_models.h"

#include <algorithm>
#include <cmath>

#include "cases/fma_groups.h"
#include "tqref/decode.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

std::vector<uint16_t> run_decode(const GoldenCase& c, const DecodeParams& p, const Ex2Profile& ex2) {
  const DecodeCase& d = c.d;
  std::vector<uint16_t> out(d.out_init);
  paged_decode_model(c.format, d.q, d.k_init, d.v_init, out, d.block_tables, d.seq_lens, p, ex2);
  return out;
}

// Applies `change(t, x, codes, scale)` to every group of every written token of the writer case:
// x are the group's 16 bf16 inputs, codes and scale point at its bytes in v_cache; `change`
// rewrites them and returns whether they changed. Returns the groups that changed.
template <class F>
uint64_t for_each_written_group(const GoldenCase& c, std::span<uint8_t> v_cache, F change) {
  const WriterCase& w = c.w;
  const CacheGeometry g = pool_geometry(w);
  const FormatTraits& t = traits(c.format);
  const uint64_t groups = g.elems_per_token() / kGroupSize;
  uint64_t changed = 0;
  for (uint32_t tok = 0; tok < w.num_tokens; ++tok) {
    const int64_t s = w.slot_mapping[tok];
    if (s < 0) continue;
    for (uint64_t k = 0; k < groups; ++k) {
      uint16_t x[kGroupSize];
      std::copy_n(w.value.data() + uint64_t(tok) * w.p.value_stride + k * kGroupSize, kGroupSize, x);
      uint8_t* codes = v_cache.data() + g.v_code_row_offset(s, t.bits) + k * t.group_code_bytes;
      uint8_t* scale = v_cache.data() + g.v_scale_row_offset(s) + k;
      changed += change(t, x, codes, scale);
    }
  }
  return changed;
}

}  // namespace

std::vector<uint16_t> decode_output_thresh_ge(const GoldenCase& c, const Ex2Profile& ex2) {
  DecodeParams p = c.d.p;
  p.threshold = std::nextafter(p.threshold, 0.0f);
  return run_decode(c, p, ex2);
}

std::vector<uint16_t> decode_output_variant(const GoldenCase& c, const Ex2Profile& ex2, const std::string& variant) {
  std::vector<uint16_t> out(c.d.out_init);
  paged_decode_model(c.format, c.d.q, c.d.k_init, c.d.v_init, out, c.d.block_tables, c.d.seq_lens,
                     c.d.p, ex2, parse_variant(variant));
  return out;
}

std::vector<uint16_t> decode_output_expf_no_split(const GoldenCase& c, const Ex2Profile& ex2) {
  return decode_output_variant(c, ex2, "expf-no-split");
}

uint64_t writer_fma_contract_scales(const GoldenCase& c, std::span<uint8_t> v_cache) {
  return for_each_written_group(c, v_cache, [](const FormatTraits& t, const uint16_t (&x)[kGroupSize],
                                               uint8_t*, uint8_t* scale) {
    const uint8_t b = scale_byte_fma_contracted(t, x);
    const bool changed = b != *scale;
    *scale = b;
    return changed;
  });
}

uint64_t writer_scale_rz_scales(const GoldenCase& c, std::span<uint8_t> v_cache) {
  return for_each_written_group(c, v_cache, [](const FormatTraits& t, const uint16_t (&x)[kGroupSize],
                                               uint8_t*, uint8_t* scale) {
    const QuantizedGroup q = quantize_group(t, x);
    uint8_t sb = q.scale_byte;
    if (sb != 0 && fp8e4m3_to_f32(sb) > q.scale) sb -= 1;  // the kernel's line, s >= 0
    const bool changed = sb != *scale;
    *scale = sb;
    return changed;
  });
}

uint64_t writer_bound_strict(const GoldenCase& c, std::span<uint8_t> v_cache) {
  return for_each_written_group(c, v_cache, [](const FormatTraits& t, const uint16_t (&x)[kGroupSize],
                                               uint8_t* codes, uint8_t* scale) {
    const QuantizedGroup q = quantize_group(t, x);
    uint8_t strict[kGroupSize];
    bool same = true;
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      const float y = bf16_to_f32(x[i]) * q.inv;
      uint32_t n = 0;
      for (uint32_t j = 0; j + 1 < t.levels; ++j) n += t.bounds[j] < y ? 1u : 0u;  // strict
      strict[i] = uint8_t(n);
      same = same && strict[i] == q.codes[i];
    }
    if (same) return false;
    float rsq = 0.0f;  // steps 5-7 of docs/spec.md section 4 on the changed codes
    for (uint32_t i = 0; i < kGroupSize; ++i) {
      const float sq = t.codebook[strict[i]] * t.codebook[strict[i]];
      rsq = rsq + sq;
    }
    const float rn = std::sqrt(rsq);
    float s = rn > 1e-10f ? std::sqrt(q.nsq) / rn : q.amax / t.max;
    if (s > 448.0f) s = 448.0f;
    uint8_t packed[8];
    pack_group_codes(t.bits, strict, packed);
    const uint8_t sb = f32_to_fp8e4m3_satfinite(s);
    const bool changed = sb != *scale || !std::equal(packed, packed + t.group_code_bytes, codes);
    std::copy_n(packed, t.group_code_bytes, codes);
    *scale = sb;
    return changed;
  });
}

std::vector<int64_t> contiguous_shortcut_slots(std::span<const int64_t> slots) {
  std::vector<int64_t> out(slots.begin(), slots.end());
  const int64_t T = int64_t(slots.size());
  if (T == 0 || slots[0] < 0 || slots[T - 1] - slots[0] != T - 1 || slots[T / 2] - slots[0] != T / 2) return out;
  for (int64_t t = 0; t < T; ++t) out[t] = slots[0] + t;
  return out;
}

uint64_t count_differing(std::span<const uint16_t> a, std::span<const uint16_t> b) {
  uint64_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace tqref::cases
