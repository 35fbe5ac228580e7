// One golden case in memory: everything a backend needs to launch the kernel once and everything
// a checker needs to judge the result. The HDF5 layout is described in docs/golden-schema.md;
// case_io.h moves these structs to and from /cases/<name>.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tqref/decode.h"
#include "tqref/format.h"
#include "tqref/writer.h"

namespace tqref::golden {

enum class CaseKind { writer, decode };

// reshape_and_cache_flash_bf16k_turbo{2,3,4}v launch: grid [num_tokens,1,1], block [256,1,1].
struct WriterCase {
  WriterParams p;
  uint32_t num_tokens = 0;
  uint32_t num_blocks = 0;
  std::vector<uint16_t> key;           // [num_tokens, key_stride] bf16
  std::vector<uint16_t> value;         // [num_tokens, value_stride] bf16
  std::vector<int64_t> slot_mapping;   // [num_tokens], < 0 = padding token
  std::vector<uint8_t> k_init, v_init; // pools before the launch (poison background)
  std::vector<uint8_t> k_expected, v_expected;  // whole pools after the launch
};

// Model diagnostics of a decode case, per (sequence, q head) row r = s * num_q_heads + qh.
struct DecodeDiagData {
  std::vector<uint64_t> skip_offsets;  // [rows + 1]: row r's positions start .. L-1 live at
  std::vector<uint8_t> skip_mask;      //   skip_mask[skip_offsets[r] .. skip_offsets[r+1]), 1 = skipped
  std::vector<uint32_t> skip_count;    // [rows]
  std::vector<float> m, l;             // [rows] warp 0's state after the merge
  std::vector<float> out_f32;          // [rows, head_dim] before the bf16 rounding
  std::vector<double> ref_dequantised; // [rows, head_dim] fp64 softmax over dequantised V
  std::vector<double> ref_unquantised; // [rows, head_dim] fp64 softmax over the writer's bf16 V
  // [rows] only for launches outside the contract (head_dim != hdim, docs/spec.md section 5.1):
  // the most the sparse-V skip can move an element of the row (tqref::reference_skip_bound),
  // which level T against the fp64 reference adds to its tolerance. Empty otherwise.
  std::vector<double> ref_skip_bound;
};

// paged_decode_attn_bf16k_turbo{2,3,4}v launch: grid [num_q_heads, num_seqs, 1], block [256,1,1].
struct DecodeCase {
  DecodeParams p;
  uint32_t num_blocks = 0;
  std::vector<uint16_t> q;              // [num_seqs, q_stride] bf16
  std::vector<int32_t> block_tables;    // [num_seqs, max_blocks_per_seq]
  std::vector<int32_t> seq_lens;        // [num_seqs]
  std::vector<uint8_t> k_init, v_init;  // pools (written by the linked writer case, then poisoned)
  std::vector<uint16_t> out_init;       // [num_seqs, num_q_heads, head_dim] bf16 poison
  std::vector<uint16_t> out_expected;   // same shape, after the launch
  DecodeDiagData diag;
};

// A pool of production size, stored sparsely (docs/golden-schema.md, "Pools of production size"):
// the case's pools hold only the stored blocks, compact block j being physical block
// block_ids[j] of a pool of pool_blocks blocks whose other bytes all hold `background`. Every
// launch parameter of the case (slot_mapping, block_tables) is in the compact numbering, so the
// model and the judge work on the compact pools unchanged; only a backend that allocates the
// whole pool translates (launch_ids.h).
struct SparsePool {
  std::vector<int64_t> block_ids;   // [stored blocks] distinct physical ids
  uint64_t pool_blocks = 0;         // blocks of the whole pool (ids 0 .. pool_blocks-1)
  uint8_t background = 0xFF;        // every unstored byte of both pools (K 0xFFFF bf16 NaN,
                                    // V scale byte 0xFF fp8 NaN)
  // Byte offsets of the stored blocks in the whole pools (id x block bytes), as the file stores
  // them (derived from block_ids and the geometry by sparse_offsets()).
  std::vector<uint64_t> k_offsets, v_offsets;
};

struct GoldenCase {
  std::string name;
  CaseKind kind = CaseKind::writer;
  Format format = Format::turbo3v;
  float threshold = kSparseVThreshold;  // compile-time THRESH of the decode build
  uint64_t seed = 0;                    // per-case seed the inputs were drawn from
  std::string distribution;             // value distribution, e.g. "gaussian"
  std::string exercises;                // free text: which docs/spec.md section 7 items the case covers
  std::string linked_case;              // decode: the writer case that produced its caches
  WriterCase w;                         // valid when kind == writer
  DecodeCase d;                         // valid when kind == decode
  std::optional<SparsePool> sparse;     // set: the pools are the stored blocks of a large pool
};

// The pool geometry (docs/spec.md section 3) of a writer or decode case.
inline CacheGeometry pool_geometry(const WriterCase& w) {
  return {w.p.num_kv_heads, w.p.head_dim, w.p.block_size, w.num_blocks, w.p.v_block_stride_bytes,
          w.p.v_data_section_bytes};
}
inline CacheGeometry pool_geometry(const DecodeCase& d) {
  return {d.p.num_kv_heads, d.p.head_dim, d.p.block_size, d.num_blocks, d.p.v_block_stride_bytes,
          d.p.v_data_section_bytes};
}

// Kernel name, e.g. "paged_decode_attn_bf16k_turbo3v".
std::string kernel_name(CaseKind kind, Format f);
const char* kind_name(CaseKind k);
// Parses "turbo2v" etc.; returns false on an unknown name.
bool parse_format(const std::string& s, Format* f);
// "turbo2v, turbo3v, turbo4v": every format's name from kFormats, for messages.
std::string format_names();

}  // namespace tqref::golden
