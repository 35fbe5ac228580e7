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

// factor_limit = THRESH * kSkipBoundFactorMargin in the golden files: a kernel's fp32 score differs
// from the fp64 one by a few roundings (|error| << 0.01 for scores up to 2^10), which moves its
// factor by far less than 1%.
inline constexpr double kSkipBoundFactorMargin = 1.01;

// Per row r = s*num_q_heads + qh: the most the sparse-V skip can take from any output element of
// the row, sum over the attended positions p with e_p = exp(score_p - max score) <= factor_limit
// of (e_p / sum e) * max_d |v_p,d| (V dequantised). A decoder skips p only when its factor,
// relative to a running maximum at or below the row's maximum, is <= THRESH, so e_p <= THRESH;
// and the skip removes e_p*v_p from the numerator only (l keeps e_p, docs/spec.md section 5).
// With factor_limit a little above THRESH (the kernel's fp32 scores differ by roundings) this
// bounds the skip error of any decoder that follows the format: level T against the fp64
// reference (launches outside the contract, docs/spec.md section 5.1). Rows with L == 0 give 0.
std::vector<double> reference_skip_bound(Format format, std::span<const uint16_t> q,
                                         std::span<const uint8_t> k_cache,
                                         std::span<const uint8_t> v_cache,
                                         std::span<const int32_t> block_tables,
                                         std::span<const int32_t> seq_lens, const DecodeParams& p,
                                         double factor_limit);

}  // namespace tqref
