// Cases whose blocks sit in a pool of production size (docs/golden-schema.md, "Pools of
// production size"): the builders make the case with its few blocks as usual; this places those
// blocks at physical ids of a pool of gigabytes (SparsePool), where byte offsets pass 2^31, 2^32
// and 2^33 and block ids run into the millions: the bug class of 32-bit offset arithmetic.
#pragma once
#include <vector>

#include "cases/case_spec.h"
#include "io/golden_case.h"

namespace tqref::cases {

// Gives every case of one spec (a writer case, or a linked writer + decode pair, which share
// their blocks) the same SparsePool for spec.pool: the blocks that hold tokens go to the ids
// whose K or V block contains byte 2^31, 2^32 or 2^33 (beyond_4g; 2^31 .. 2^36 for max_id) or
// just precedes it, and to the pool's last block; the rest are spread over the pool. Appends what
// was placed where to each case's `exercises`. Throws std::logic_error when the case has fewer
// blocks holding tokens than such ids (a suite mistake).
void place_in_large_pool(const CaseSpec& spec, std::vector<golden::GoldenCase>& cases);

}  // namespace tqref::cases
