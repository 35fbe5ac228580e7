#include "cases/large_pool.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "io/sparse_pool.h"
#include "tqref/contract.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

constexpr uint64_t kGiB = uint64_t(1) << 30;

// Blocks of the whole pool: beyond_4g makes both pools longer than 2^33 + 2^30 bytes; max_id
// has 2^31 blocks, so the last id is INT32_MAX.
uint64_t pool_blocks(PoolPlacement p, const BlockBytes& b) {
  if (p == PoolPlacement::max_id) return uint64_t(1) << 31;
  const uint64_t want = (uint64_t(1) << 33) + kGiB;
  return (want + std::min(b.k, b.v) - 1) / std::min(b.k, b.v);
}

// The ids the placement must use: for each pool and each boundary X, the block holding byte X and
// the block before it; the last block. Ascending.
std::vector<int64_t> boundary_ids(PoolPlacement p, const BlockBytes& b, uint64_t blocks) {
  std::set<int64_t> ids = {int64_t(blocks) - 1};
  const int top = p == PoolPlacement::max_id ? 36 : 33;
  for (uint64_t bytes : {b.k, b.v})
    for (int e = 31; e <= top; ++e) {
      const uint64_t at = (uint64_t(1) << e) / bytes;
      if (at < blocks) ids.insert(int64_t(at));
      if (at >= 1 && at - 1 < blocks) ids.insert(int64_t(at - 1));
    }
  return {ids.begin(), ids.end()};
}

// Compact blocks the launch touches: those holding a token (writer case), those the table entries
// in use point to (decode case: blocks of [window start, L), a subset of its writer's).
std::vector<bool> used_blocks(const GoldenCase& c) {
  if (c.kind == CaseKind::writer) {
    std::vector<bool> used(c.w.num_blocks, false);
    for (int64_t s : c.w.slot_mapping)
      if (s >= 0) used[uint64_t(s) / c.w.p.block_size] = true;
    return used;
  }
  const DecodeParams& p = c.d.p;
  std::vector<bool> used(c.d.num_blocks, false);
  for (uint32_t s = 0; s < p.num_seqs; ++s) {
    const uint32_t L = uint32_t(c.d.seq_lens[s]);
    for (uint32_t j = window_start(L, p.sliding_window) / p.block_size; j * p.block_size < L; ++j)
      used[uint32_t(c.d.block_tables[uint64_t(s) * p.max_blocks_per_seq + j])] = true;
  }
  return used;
}

std::string describe(const SparsePool& sp, const BlockBytes& b, size_t boundary) {
  const double gk = double(sp.pool_blocks) * double(b.k) / double(kGiB);
  const double gv = double(sp.pool_blocks) * double(b.v) / double(kGiB);
  char s[256];
  std::snprintf(s, sizeof s,
                "; pool of production size: %llu blocks (K %.2f GiB, V %.2f GiB), the %zu stored blocks at physical "
                "ids up to %lld, %zu of them at the 2^31/2^32/2^33-byte boundaries of a pool or its last block",
                (unsigned long long)sp.pool_blocks, gk, gv, sp.block_ids.size(),
                (long long)*std::max_element(sp.block_ids.begin(), sp.block_ids.end()), boundary);
  return s;
}

}  // namespace

void place_in_large_pool(const CaseSpec& spec, std::vector<GoldenCase>& cases) {
  if (spec.pool == PoolPlacement::dense || cases.empty()) return;
  const GoldenCase& writer = cases.front();  // a pair is {linked writer, decode}
  const BlockBytes b = block_bytes(writer);
  SparsePool sp;
  sp.pool_blocks = pool_blocks(spec.pool, b);
  const std::vector<int64_t> must = boundary_ids(spec.pool, b, sp.pool_blocks);
  const std::vector<bool> used = used_blocks(cases.back());  // a pair: what the decoder reads
  const size_t n = used.size(), n_used = size_t(std::count(used.begin(), used.end(), true));
  if (n_used < must.size())
    throw std::logic_error(writer.name + ": " + std::to_string(n_used) + " blocks hold tokens, the placement needs " +
                           std::to_string(must.size()));
  // used blocks: the boundary ids first, then ids spread over the pool; unused blocks: spread too
  std::set<int64_t> taken(must.begin(), must.end());
  size_t next_must = 0;
  uint64_t spread = 0;
  const auto spread_id = [&]() {  // a Weyl sequence over the pool: distinct, spread, reproducible
    for (;;) {
      const int64_t id = int64_t((unsigned __int128)(++spread) * 0x9E3779B97F4A7C15ull % sp.pool_blocks);
      if (taken.insert(id).second) return id;
    }
  };
  sp.block_ids.assign(n, 0);
  for (size_t j = 0; j < n; ++j)
    sp.block_ids[j] = used[j] && next_must < must.size() ? must[next_must++] : spread_id();
  for (GoldenCase& c : cases) {
    set_sparse_offsets(c, sp);
    c.sparse = sp;
    c.exercises += describe(sp, b, must.size());
  }
  if (const std::string why = check_sparse_pool(*cases.front().sparse, b, uint32_t(n)); !why.empty())
    throw std::logic_error(writer.name + ": " + why);
}

}  // namespace tqref::cases
