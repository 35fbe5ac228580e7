// CPU model of paged_decode_attn_bf16k_turbo{2,3,4}v (docs/spec.md section 5), operation by operation:
// 8-warp partition, per-block batches of 4 then singles, 32 simulated lanes with the xor
// butterfly, online softmax, the sparse-V skip, the merge tree and the bf16 output.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "tqref/ex2.h"
#include "tqref/format.h"
#include "tqref/variant.h"

namespace tqref {

// The kernel's scalar parameters in declaration order, plus what the launch implies.
struct DecodeParams {
  uint32_t max_blocks_per_seq = 0;
  uint32_t num_q_heads = 0;
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t block_size = 0;
  float inv_sqrt_d = 0;
  uint32_t q_stride = 0;               // elements between sequences of q
  uint64_t v_block_stride_bytes = 0;
  uint64_t v_data_section_bytes = 0;
  uint32_t sliding_window = 0;         // 0 = off
  // Launch / build facts, not kernel parameters:
  uint32_t num_seqs = 0;               // grid.y
  uint32_t hdim = 128;                 // compile-time HDIM of the build (128 or 256)
  float threshold = kSparseVThreshold; // compile-time TQ_PLUS_SPARSE_V_THRESHOLD
};

// Per (sequence, q head) diagnostics, index [s * num_q_heads + qh].
struct DecodeHeadDiag {
  std::vector<uint8_t> skipped;  // [L - start]: 1 where the V load was skipped
  uint32_t skip_count = 0;
  float m = 0, l = 0;            // warp 0's state after the merge
  std::vector<float> out_f32;    // [head_dim] o_0[i] * inv before the bf16 rounding
};

struct DecodeDiagnostics {
  std::vector<DecodeHeadDiag> heads;
};

// q: [num_seqs][q_stride] bf16 bits; k_cache/v_cache: whole pools; output: [num_seqs *
// num_q_heads * head_dim] bf16 bits, rows of sequences with L == 0 untouched; block_tables:
// [num_seqs][max_blocks_per_seq]; seq_lens: [num_seqs]. Throws ContractError (an
// std::invalid_argument, tqref/contract.h) naming the parameter and its allowed range when
// check_decode_params, check_decode_buffers or check_sequences refuses the launch: hdim not
// 128/256, num_q_heads not a multiple of num_kv_heads, a stride, section size or
// buffer too small, a seq_len outside 0..max_blocks_per_seq*block_size, or a table entry in use
// (logical blocks start/B .. (L-1)/B) outside the pool; other entries are never read.
// head_dim != hdim (outside the contract) follows docs/spec.md section 5.1: head_dim < hdim as the
// HDIM build on q and K zero-padded to hdim dims; head_dim > hdim gives rows of bf16 NaN 0x7FFF.
// Diagnostics: heads[s*num_q_heads + qh]; empty vectors for L == 0. See docs/decode-model.md.
// OpenMP across (sequence, q head); identical bits for any thread count.
void paged_decode_model(Format format, std::span<const uint16_t> q,
                        std::span<const uint8_t> k_cache, std::span<const uint8_t> v_cache,
                        std::span<uint16_t> output, std::span<const int32_t> block_tables,
                        std::span<const int32_t> seq_lens, const DecodeParams& p,
                        const Ex2Profile& ex2, DecodeDiagnostics* diag = nullptr);
// The same under a variant of the contract (tqref/variant.h; docs/variants.md) on the scalar path;
// the call above computes model_variant() (tqref/model_path.h), the contract unless one was set.
void paged_decode_model(Format format, std::span<const uint16_t> q,
                        std::span<const uint8_t> k_cache, std::span<const uint8_t> v_cache,
                        std::span<uint16_t> output, std::span<const int32_t> block_tables,
                        std::span<const int32_t> seq_lens, const DecodeParams& p,
                        const Ex2Profile& ex2, const Variant& v, DecodeDiagnostics* diag = nullptr);

}  // namespace tqref
