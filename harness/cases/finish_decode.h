// The second half of every decode case, shared by the synthetic builder (build_decode.cpp) and
// the trace builder (trace_golden.cpp): given the queries, block tables and sequence lengths, and
// the linked writer case whose expected pools are the decode case's caches, it
//   - poisons the slots that are written but that no sequence reads (K, V codes, V scales);
//   - computes the fp64 references (before any V group is poisoned: they read every position);
//   - runs the model once to find the V groups (slot, kv head) that every reading q head skips,
//     poisons them, runs it again and requires the same output (the model read no poison);
//   - stores the expected output and the model diagnostics (skip masks, m, l, fp32 output).
// The poison random stream is seeded from the case seed, and slots are poisoned in the order the
// caller lists them, so the bytes of a case depend only on its inputs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/golden_case.h"
#include "tqref/decode.h"
#include "tqref/ex2.h"

namespace tqref::cases {

struct DecodeInputs {
  std::string name;          // the decode case's name
  std::string distribution;  // how its inputs were made (dist_name(), or "trace")
  uint64_t seed = 0;
  // Launch parameters; v_block_stride_bytes and v_data_section_bytes are taken from the writer.
  DecodeParams p;
  uint32_t num_blocks = 0;
  std::vector<uint16_t> q;               // [num_seqs, q_stride] bf16
  std::vector<int32_t> block_tables;     // [num_seqs, max_blocks_per_seq]
  std::vector<int32_t> seq_lens;         // [num_seqs]
  // The writer's bf16 V laid out like K: [num_blocks * block_size, num_kv_heads * head_dim]
  // (zeros where no token was written); input of the fp64 references.
  std::vector<uint16_t> v_values;
  // Slots the writer filled that no sequence reads: poisoned whole, in this order.
  std::vector<int64_t> unread_slots;
  // Slots some sequence reads: each V group of theirs that every reading q head skips is
  // poisoned, in this order (slot, then kv head).
  std::vector<int64_t> read_slots;
};

// Counts for the case's `exercises` text.
struct DecodeStats {
  uint64_t skipped = 0;          // (row, position) pairs skipped
  uint64_t reads = 0;            // (row, position) pairs in the windows
  uint64_t poisoned_groups = 0;  // skipped V groups poisoned
};

// The model's per-row diagnostics, flattened as the golden file stores them (skip masks with
// their offsets, skip counts, m, l, and head_dim fp32 outputs per row, zeros for L == 0), and
// the counts for `exercises`. Also used for cases made from a user's arrays (python/capi).
void store_diagnostics(const DecodeDiagnostics& diag, uint32_t head_dim, golden::DecodeDiagData& x,
                       DecodeStats& st);

// Builds the decode case linked to `writer` (its format, name and expected pools). Throws
// std::logic_error when the second model run differs from the first.
golden::GoldenCase finish_decode_case(DecodeInputs in, const golden::GoldenCase& writer,
                                      const Ex2Profile& ex2, DecodeStats* stats);

}  // namespace tqref::cases
