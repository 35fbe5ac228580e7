// fp64 reference attention for one decode query: exact softmax, no skip, no operation order.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "tqref/decode.h"

namespace tqref {

enum class ReferenceV { unquantised, dequantised };

// Output [num_seqs * num_q_heads * head_dim] in fp64. With `unquantised`, `v_values` holds the
// bf16 V rows the writer consumed, laid out like K ([num_blocks, block_size, H, D]); with
// `dequantised` V comes from the Turbo pool. Sequences with L == 0 give zeros.
std::vector<double> reference_attention(Format format, std::span<const uint16_t> q,
                                        std::span<const uint8_t> k_cache,
                                        std::span<const uint8_t> v_cache,
                                        std::span<const uint16_t> v_values,
                                        std::span<const int32_t> block_tables,
                                        std::span<const int32_t> seq_lens, const DecodeParams& p,
                                        ReferenceV which);

}  // namespace tqref
