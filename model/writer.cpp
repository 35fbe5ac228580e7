#include "tqref/writer.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "simd_kernels.h"
#include "tqref/contract.h"
#include "tqref/model_path.h"
#include "tqref/quantize.h"

namespace tqref {

static_assert(std::endian::native == std::endian::little, "the K copy assumes a little-endian host");

namespace {

// Every rule of docs/spec.md sections 3-4 (tqref/contract.h); afterwards no write of the model
// leaves its row.
void validate(Format f, size_t key_elems, size_t value_elems, size_t k_bytes, size_t v_bytes,
              std::span<const int64_t> slots, const WriterParams& p) {
  constexpr const char* kFunction = "reshape_and_cache_model";
  require(kFunction, check_writer_params(f, p));
  require(kFunction, check_writer_buffers(p, slots.size(), key_elems, value_elems));
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  require(kFunction, check_slot_mapping(slots, pool_blocks(g, k_bytes, v_bytes), p.block_size));
}

// V row of one token: one quantised group per 16 elements, quantised kChunk groups at a time
// (see quantize_groups), under the contract or, when `variant` is set, that variant. Bits is a
// template parameter so that the packing loop of format.h is specialised per format.
template <uint32_t Bits>
void write_v_row(const FormatTraits& t, const uint16_t* vrow, uint32_t n, uint8_t* codes,
                 uint8_t* scales, const Variant* variant) {
  constexpr uint32_t kChunk = 8;  // groups quantised together (their chains overlap)
  QuantizedGroup q[kChunk];
  const uint32_t groups = n / kGroupSize;
  for (uint32_t g0 = 0; g0 < groups; g0 += kChunk) {
    const uint32_t count = std::min(kChunk, groups - g0);
    if (variant)
      quantize_groups(t, vrow + g0 * kGroupSize, count, q, *variant);
    else
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
  reshape_and_cache_model(format, key, value, k_cache, v_cache, slot_mapping, p, model_variant());
}

void reshape_and_cache_model(Format format, std::span<const uint16_t> key,
                             std::span<const uint16_t> value, std::span<uint8_t> k_cache,
                             std::span<uint8_t> v_cache, std::span<const int64_t> slot_mapping,
                             const WriterParams& p, const Variant& v) {
  const FormatTraits& t = traits(format);
  validate(format, key.size(), value.size(), k_cache.size(), v_cache.size(), slot_mapping, p);
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  const uint32_t n = g.elems_per_token();
  const int64_t tokens = static_cast<int64_t>(slot_mapping.size());
  // Variants run on the scalar path only (tqref/variant.h); the contract on the chosen path.
  const bool contract = v.is_contract();
  const Variant* variant = contract ? nullptr : &v;
  const simd::SimdKernels* fk =
      contract && model_path() == ModelPath::simd ? &simd::kernels() : nullptr;
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
    if (fk) {  // the SIMD path, equal bit for bit (writer_simd_impl.h)
      fk->writer_v_row(t, vrow, n, codes, scales);
      continue;
    }
    switch (t.bits) {
      case 2: write_v_row<2>(t, vrow, n, codes, scales, variant); break;
      case 3: write_v_row<3>(t, vrow, n, codes, scales, variant); break;
      default: write_v_row<4>(t, vrow, n, codes, scales, variant); break;
    }
  }
}

}  // namespace tqref
