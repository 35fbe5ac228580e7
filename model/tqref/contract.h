// The parameter rules of the writer and the decoder (docs/spec.md sections 3-5), in one place:
// ranges, divisibility, strides, geometry, launch limits, buffer extents, slots, sequence lengths,
// block-table entries in use, and the window start. The model, the reference, the golden-file
// reader, the case builders and the GPU launcher all ask these functions; nothing else restates a
// rule. Each check returns the first rule its inputs break, as one message
// "<parameter> = <value>; allowed: <range>" (buffers: "<buffer> holds <count> ...; allowed: ..."),
// or nothing. The model throws ContractError with it; the harness prefixes file and object.
// docs/contract-checks.md lists every rule with its message.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "tqref/decode.h"
#include "tqref/format.h"
#include "tqref/writer.h"

namespace tqref {

// docs/spec.md section 5: the first position a CTA attends to for a sequence of length L.
// sliding_window = 0 is off; a window as long as the sequence or longer changes nothing.
constexpr uint32_t window_start(uint32_t L, uint32_t sliding_window) {
  return (sliding_window > 0 && L > sliding_window) ? L - sliding_window : 0;
}

// The kernel copies K rows with 8-byte vector accesses: key_stride (in bf16) must keep every row
// 8-byte aligned (docs/spec.md section 4).
inline constexpr uint32_t kKeyStrideMultiple = 4;
// The decoder builds: HDIM is a compile-time constant, 128 or 256 (docs/spec.md section 5).
inline constexpr uint32_t kDecodeHdims[2] = {128, 256};
constexpr bool is_decode_hdim(uint32_t hdim) {
  return hdim == kDecodeHdims[0] || hdim == kDecodeHdims[1];
}
// docs/spec.md section 5: the decoder build an engine loads for a model's head_dim, HDIM=128 for
// head_dim up to 128 and HDIM=256 above; a head_dim below HDIM then runs on a mismatched build
// (judged at level T). check_engine_head_dim says which head_dims have a build at all.
constexpr uint32_t engine_hdim(uint32_t head_dim) {
  return head_dim <= kDecodeHdims[0] ? kDecodeHdims[0] : kDecodeHdims[1];
}
// A decode launch is inside the contract when head_dim equals the build's HDIM (docs/spec.md
// section 5). Other launches are defined only by the extension of section 5.1 (tqref's decoders).
constexpr bool decode_in_contract(uint32_t head_dim, uint32_t hdim) { return head_dim == hdim; }
// What a CTA writes to each element of its row when it cannot compute the launch (head_dim > HDIM
// and the other cases of section 5.1): bf16 NaN, as __float2bfloat16_rn writes every NaN.
inline constexpr uint16_t kNoComputeOutput = 0x7FFF;
// cuLaunchKernel limits on the grids of docs/spec.md sections 4-5: grid.x < 2^31, grid.y <= 65535.
inline constexpr uint64_t kMaxGridX = (uint64_t(1) << 31) - 1;
inline constexpr uint64_t kMaxGridY = 65535;

// One broken rule: "<parameter> = <value>; allowed: <range>".
struct Violation {
  std::string message;
};
// The result of a check: the first broken rule, or nothing.
using Check = std::optional<Violation>;

// What the model throws for a broken rule; what() is "<function>: <violation message>". Derives
// from std::invalid_argument, which the model's callers catch.
struct ContractError : std::invalid_argument {
  ContractError(const std::string& function, Violation v)
      : std::invalid_argument(function + ": " + v.message), violation(std::move(v)) {}
  Violation violation;
};

// Throws ContractError(function, *c) when c holds a violation.
inline void require(const std::string& function, const Check& c) {
  if (c) throw ContractError(function, *c);
}

// ---- Section 3: cache geometry -----------------------------------------------------------------
// num_kv_heads >= 1; head_dim a positive multiple of 16; block_size >= 1; n = num_kv_heads*head_dim
// <= 2^32-1 (the model and the kernels hold n in 32 bits); a K block (block_size*n*2 bytes) below
// 2^64. Reads g.num_kv_heads, g.head_dim, g.block_size.
Check check_cache_geometry(const CacheGeometry& g);
// v_data_section_bytes >= block_size*n*b/8 (the index section); v_block_stride_bytes >=
// v_data_section_bytes + block_size*n/16 (the scale section after it). Needs a valid geometry.
Check check_v_sections(Format f, const CacheGeometry& g);

// Whole blocks of the K pool that fit in k_bytes (needs a valid geometry).
uint64_t k_pool_blocks(const CacheGeometry& g, uint64_t k_bytes);
// Blocks usable in pools of k_bytes and v_bytes: the whole K block, and the V block up to the end
// of its scale section (a last block's trailing padding may be absent: no kernel touches it).
// Needs valid V sections.
uint64_t pool_blocks(const CacheGeometry& g, uint64_t k_bytes, uint64_t v_bytes);

// ---- Section 4: the writer ---------------------------------------------------------------------
// Geometry and V sections, then key_stride >= n and a multiple of 4, value_stride >= n.
Check check_writer_params(Format f, const WriterParams& p);
// num_tokens <= 2^31-1 (grid.x).
Check check_writer_launch(uint64_t num_tokens);
// key and value hold (num_tokens-1)*stride + n elements at least (token t reads [t*stride, +n)).
Check check_writer_buffers(const WriterParams& p, uint64_t num_tokens, uint64_t key_elems,
                           uint64_t value_elems);
// Every slot is negative (padding) or in 0 .. num_blocks*block_size-1, and no slot is used twice
// (two tokens on one slot race on the GPU: no defined result). block_size >= 1.
Check check_slot_mapping(std::span<const int64_t> slots, uint64_t num_blocks, uint32_t block_size);

// ---- Section 5: the decoder --------------------------------------------------------------------
// A model's head_dim an engine can serve: 1 .. 256 (the largest build is HDIM=256).
Check check_engine_head_dim(uint32_t head_dim);
// hdim (the build's HDIM) is 128 or 256. head_dim may differ from it: such a launch is outside
// the contract (decode_in_contract), and the model computes it by docs/spec.md section 5.1.
Check check_decode_build(const DecodeParams& p);
// Geometry (without the V sections), num_q_heads a positive multiple of num_kv_heads,
// q_stride >= num_q_heads*head_dim. What the fp64 reference needs; it ignores hdim.
Check check_decode_geometry(const DecodeParams& p);
// check_decode_build, check_decode_geometry, then check_v_sections: what the kernel needs.
Check check_decode_params(Format f, const DecodeParams& p);
// num_q_heads <= 2^31-1 (grid.x), num_seqs <= 65535 (grid.y).
Check check_decode_launch(const DecodeParams& p);
// Sizes of the decoder's buffers; output_elems is absent for a caller that returns its output.
struct DecodeBuffers {
  uint64_t q_elems = 0;
  std::optional<uint64_t> output_elems;
  uint64_t seq_lens_entries = 0;
  uint64_t block_table_entries = 0;
};
// For num_seqs > 0: q holds (num_seqs-1)*q_stride + num_q_heads*head_dim elements, output
// num_seqs*num_q_heads*head_dim, seq_lens num_seqs entries, block_tables
// num_seqs*max_blocks_per_seq. Needs a valid geometry.
Check check_decode_buffers(const DecodeParams& p, const DecodeBuffers& b);
// For each sequence s < num_seqs: 0 <= seq_lens[s] <= max_blocks_per_seq*block_size, and the
// block-table entries of the blocks holding positions [window_start, L) (logical blocks
// start/B .. (L-1)/B) in 0 .. num_blocks-1. Other entries are never read and may hold anything
// (docs/spec.md section 7). Needs a valid geometry and buffers of the sizes above.
Check check_sequences(const DecodeParams& p, std::span<const int32_t> block_tables,
                      std::span<const int32_t> seq_lens, uint64_t num_blocks);

}  // namespace tqref
