// Pools of production size (docs/golden-schema.md, "Pools of production size"): a case whose pools
// are a few stored blocks of a pool of gigabytes (SparsePool in golden_case.h). The case keeps
// every launch parameter in the compact numbering of its stored blocks; this file translates them
// to the physical pool for a backend that allocates it, checks a file's sparse description, and
// names the unstored blocks a backend reads back to show that nothing else was written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/golden_case.h"

namespace tqref::golden {

// Bytes of one block of the K pool (block_size*n*2) and of the V pool (v_block_stride_bytes).
struct BlockBytes {
  uint64_t k = 0, v = 0;
};
BlockBytes block_bytes(const GoldenCase& c);

// Blocks the case's pools hold (its num_blocks).
uint32_t stored_blocks(const GoldenCase& c);

// sp.k_offsets / v_offsets from sp.block_ids and the case's geometry.
void set_sparse_offsets(const GoldenCase& c, SparsePool& sp);

// "" when sp describes a pool a case with `stored` blocks of these sizes can use: one id per
// stored block, distinct, below pool_blocks <= 2^31; offsets equal id x block bytes; the whole
// pools at most 2^40 bytes each. Else the first problem, "<field> = <value>; allowed: <range>".
std::string check_sparse_pool(const SparsePool& sp, const BlockBytes& b, uint32_t stored);

// The physical slot of a compact slot (negative: padding, unchanged).
int64_t physical_slot(const SparsePool& sp, uint32_t block_size, int64_t compact_slot);
// The physical block-table entry of a compact one: a stored block's id; a negative entry as it
// is; an entry past the stored blocks (an out-of-range marker) moved past the whole pool by the
// same amount (at most INT32_MAX). Entries keep their meaning: in range exactly when they were.
int32_t physical_table_entry(const SparsePool& sp, uint32_t stored, int32_t entry);

// Unstored blocks a backend reads back after the launch, ascending: the first and last block of
// the pool, the neighbours of every stored block, and the blocks where a stored block's byte
// offset lands when it wraps at 2^32 or 2^31 bytes (where 32-bit offset arithmetic writes), each
// with its successor; at most 256. `bytes` is the pool's block size (BlockBytes).
std::vector<uint64_t> sampled_blocks(const SparsePool& sp, uint64_t bytes);

}  // namespace tqref::golden
