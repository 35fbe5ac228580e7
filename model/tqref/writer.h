// CPU model of reshape_and_cache_flash_bf16k_turbo{2,3,4}v (docs/spec.md section 4) on raw byte buffers
// laid out exactly as on the GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "tqref/format.h"
#include "tqref/variant.h"

namespace tqref {

// The kernel's scalar parameters, in declaration order (pointers are passed separately).
struct WriterParams {
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t block_size = 0;
  uint32_t key_stride = 0;    // elements between tokens of `key`
  uint32_t value_stride = 0;  // elements between tokens of `value`
  uint64_t k_block_stride_bytes = 0;  // accepted and ignored: the K pool is dense
  uint64_t v_block_stride_bytes = 0;
  uint64_t v_data_section_bytes = 0;
};

// key/value: [num_tokens][*_stride] bf16 bits; k_cache/v_cache: whole pools (their sizes give
// num_blocks); slot_mapping: [num_tokens], s < 0 = padding. Throws ContractError (an
// std::invalid_argument, tqref/contract.h) naming the parameter and its allowed range when a
// parameter, buffer size or slot breaks a rule of docs/spec.md sections 3-4, before any byte is
// written. Bytes outside the written rows are untouched. OpenMP across tokens; the result is
// independent of the thread count (tokens write disjoint rows: two tokens with the same slot are
// rejected, since on the GPU their order is a race).
void reshape_and_cache_model(Format format, std::span<const uint16_t> key,
                             std::span<const uint16_t> value, std::span<uint8_t> k_cache,
                             std::span<uint8_t> v_cache, std::span<const int64_t> slot_mapping,
                             const WriterParams& p);
// The same under a variant of the contract (tqref/variant.h), on the scalar path; the call above
// computes model_variant() (tqref/model_path.h), the contract unless one was set.
void reshape_and_cache_model(Format format, std::span<const uint16_t> key,
                             std::span<const uint16_t> value, std::span<uint8_t> k_cache,
                             std::span<uint8_t> v_cache, std::span<const int64_t> slot_mapping,
                             const WriterParams& p, const Variant& v);

}  // namespace tqref
