#include "tqref/writer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "tqref/quantize.h"

namespace tqref {

static_assert(std::endian::native == std::endian::little, "the K copy assumes a little-endian host");

namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("reshape_and_cache_model: " + what);
}

void validate(const FormatTraits& t, size_t key_elems, size_t value_elems, size_t k_bytes,
              size_t v_bytes, std::span<const int64_t> slots, const WriterParams& p) {
  const uint64_t n = uint64_t(p.num_kv_heads) * p.head_dim;
  if (p.num_kv_heads == 0) bad("num_kv_heads = 0; allowed: >= 1");
  if (p.head_dim == 0 || p.head_dim % kGroupSize != 0)
    bad("head_dim = " + std::to_string(p.head_dim) + "; allowed: a positive multiple of 16");
  if (p.block_size == 0) bad("block_size = 0; allowed: >= 1");
  if (p.key_stride < n)
    bad("key_stride = " + std::to_string(p.key_stride) + "; allowed: >= num_kv_heads*head_dim = " +
        std::to_string(n));
  // The kernel copies K with 8-byte vector accesses: a key_stride that is not a multiple of 4
  // bf16 faults on the GPU (SPEC section 4), so the model refuses it rather than invent bytes.
  if (p.key_stride % 4 != 0)
    bad("key_stride = " + std::to_string(p.key_stride) +
        "; allowed: a multiple of 4 (8-byte vector copy of K)");
  if (p.value_stride < n)
    bad("value_stride = " + std::to_string(p.value_stride) +
        "; allowed: >= num_kv_heads*head_dim = " + std::to_string(n));
  CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                  p.v_data_section_bytes};
  if (p.v_data_section_bytes < g.min_v_data_section_bytes(t.bits))
    bad("v_data_section_bytes = " + std::to_string(p.v_data_section_bytes) +
        "; allowed: >= block_size*n*b/8 = " + std::to_string(g.min_v_data_section_bytes(t.bits)));
  if (p.v_block_stride_bytes < g.min_v_block_stride_bytes())
    bad("v_block_stride_bytes = " + std::to_string(p.v_block_stride_bytes) +
        "; allowed: >= v_data_section_bytes + block_size*n/16 = " +
        std::to_string(g.min_v_block_stride_bytes()));
  const uint64_t k_blocks = k_bytes / g.k_block_bytes();
  const uint64_t v_blocks = v_bytes / p.v_block_stride_bytes;
  const uint64_t blocks = std::min(k_blocks, v_blocks);
  const size_t tokens = slots.size();
  if (tokens > 0 && key_elems < (tokens - 1) * uint64_t(p.key_stride) + n)
    bad("key holds " + std::to_string(key_elems) + " elements; need (num_tokens-1)*key_stride+n");
  if (tokens > 0 && value_elems < (tokens - 1) * uint64_t(p.value_stride) + n)
    bad("value holds " + std::to_string(value_elems) +
        " elements; need (num_tokens-1)*value_stride+n");
  std::unordered_set<int64_t> seen;
  for (size_t i = 0; i < tokens; ++i) {
    int64_t s = slots[i];
    if (s < 0) continue;
    if (uint64_t(s) / p.block_size >= blocks)
      bad("slot_mapping[" + std::to_string(i) + "] = " + std::to_string(s) +
          "; allowed: < num_blocks*block_size = " + std::to_string(blocks * p.block_size));
    if (!seen.insert(s).second)
      bad("slot_mapping[" + std::to_string(i) + "] = " + std::to_string(s) +
          " repeats an earlier token's slot; allowed: distinct slots");
  }
}

// V row of one token: one quantised group per 16 elements, quantised kChunk groups at a time
// (see quantize_groups). Bits is a template parameter so that the packing loop of format.h is
// specialised per format.
template <uint32_t Bits>
void write_v_row(const FormatTraits& t, const uint16_t* vrow, uint32_t n, uint8_t* codes,
                 uint8_t* scales) {
  constexpr uint32_t kChunk = 8;  // groups quantised together (their chains overlap)
  QuantizedGroup q[kChunk];
  const uint32_t groups = n / kGroupSize;
  for (uint32_t g0 = 0; g0 < groups; g0 += kChunk) {
    const uint32_t count = std::min(kChunk, groups - g0);
    quantize_groups(t, vrow + g0 * kGroupSize, count, q);
    for (uint32_t k = 0; k < count; ++k) {
      pack_group_codes(Bits, q[k].codes, codes + uint64_t(g0 + k) * Bits * 2);
      scales[g0 + k] = q[k].scale_byte;
    }
  }
}

}  // namespace

void reshape_and_cache_model(Format format, std::span<const uint16_t> key,
                             std::span<const uint16_t> value, std::span<uint8_t> k_cache,
                             std::span<uint8_t> v_cache, std::span<const int64_t> slot_mapping,
                             const WriterParams& p) {
  const FormatTraits& t = traits(format);
  validate(t, key.size(), value.size(), k_cache.size(), v_cache.size(), slot_mapping, p);
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  const uint32_t n = g.elems_per_token();
  const int64_t tokens = static_cast<int64_t>(slot_mapping.size());
#pragma omp parallel for schedule(static)
  for (int64_t tok = 0; tok < tokens; ++tok) {
    const int64_t s = slot_mapping[tok];
    if (s < 0) continue;  // padding token: nothing is written
    // K: bit-for-bit copy into the dense pool; on this little-endian host the bytes of the
    // uint16 bf16 values are the pool's bytes
    std::memcpy(k_cache.data() + g.k_row_offset(s), key.data() + uint64_t(tok) * p.key_stride,
                size_t(n) * 2);
    const uint16_t* vrow = value.data() + uint64_t(tok) * p.value_stride;
    uint8_t* codes = v_cache.data() + g.v_code_row_offset(s, t.bits);
    uint8_t* scales = v_cache.data() + g.v_scale_row_offset(s);
    switch (t.bits) {
      case 2: write_v_row<2>(t, vrow, n, codes, scales); break;
      case 3: write_v_row<3>(t, vrow, n, codes, scales); break;
      default: write_v_row<4>(t, vrow, n, codes, scales); break;
    }
  }
}

}  // namespace tqref
