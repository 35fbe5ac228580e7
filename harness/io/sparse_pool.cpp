#include "io/sparse_pool.h"

#include <algorithm>
#include <climits>
#include <set>

namespace tqref::golden {

namespace {

// The largest whole pool a file may describe (io/case_checks.h has the same limit for stored pools).
constexpr unsigned __int128 kMaxWholePoolBytes = (unsigned __int128)(1) << 40;
// Sampled blocks per pool.
constexpr size_t kMaxSamples = 256;

std::string str(uint64_t v) { return std::to_string(v); }

}  // namespace

BlockBytes block_bytes(const GoldenCase& c) {
  const CacheGeometry g = c.kind == CaseKind::writer ? pool_geometry(c.w) : pool_geometry(c.d);
  return {g.k_block_bytes(), g.v_block_stride_bytes};
}

uint32_t stored_blocks(const GoldenCase& c) { return c.kind == CaseKind::writer ? c.w.num_blocks : c.d.num_blocks; }

void set_sparse_offsets(const GoldenCase& c, SparsePool& sp) {
  const BlockBytes b = block_bytes(c);
  sp.k_offsets.clear();
  sp.v_offsets.clear();
  for (int64_t id : sp.block_ids) {
    sp.k_offsets.push_back(uint64_t(id) * b.k);
    sp.v_offsets.push_back(uint64_t(id) * b.v);
  }
}

std::string check_sparse_pool(const SparsePool& sp, const BlockBytes& b, uint32_t n) {
  if (sp.block_ids.size() != n)
    return "sparse/block_ids holds " + str(sp.block_ids.size()) + " ids; allowed: one per stored block = " + str(n);
  if (sp.pool_blocks < n || sp.pool_blocks > uint64_t(INT32_MAX) + 1)
    return "pool_blocks = " + str(sp.pool_blocks) + "; allowed: " + str(n) + " .. 2^31 (block-table entries are int32)";
  if ((unsigned __int128)(sp.pool_blocks) * b.k > kMaxWholePoolBytes ||
      (unsigned __int128)(sp.pool_blocks) * b.v > kMaxWholePoolBytes)
    return "pool_blocks = " + str(sp.pool_blocks) + "; allowed: whole K and V pools of at most 2^40 bytes";
  std::set<int64_t> seen;
  for (size_t j = 0; j < sp.block_ids.size(); ++j) {
    const int64_t id = sp.block_ids[j];
    if (id < 0 || uint64_t(id) >= sp.pool_blocks || !seen.insert(id).second)
      return "sparse/block_ids[" + str(j) + "] = " + std::to_string(id) + "; allowed: distinct ids in 0 .. " +
             "pool_blocks-1 = " + str(sp.pool_blocks - 1);
    if (sp.k_offsets.size() != n || sp.v_offsets.size() != n || sp.k_offsets[j] != uint64_t(id) * b.k ||
        sp.v_offsets[j] != uint64_t(id) * b.v)
      return "sparse/k_offsets, v_offsets[" + str(j) + "]; allowed: block_ids[" + str(j) + "] x " + str(b.k) +
             " and x " + str(b.v) + " (the block sizes of the K and V pools)";
  }
  return "";
}

int64_t physical_slot(const SparsePool& sp, uint32_t block_size, int64_t compact_slot) {
  if (compact_slot < 0) return compact_slot;
  return sp.block_ids[uint64_t(compact_slot) / block_size] * block_size + compact_slot % block_size;
}

int32_t physical_table_entry(const SparsePool& sp, uint32_t stored, int32_t entry) {
  if (entry < 0) return entry;
  if (uint32_t(entry) < stored) return int32_t(sp.block_ids[uint32_t(entry)]);
  return int32_t(std::min<int64_t>(INT32_MAX, int64_t(sp.pool_blocks) + (int64_t(entry) - stored)));
}

std::vector<uint64_t> sampled_blocks(const SparsePool& sp, uint64_t bytes) {
  const std::set<int64_t> stored(sp.block_ids.begin(), sp.block_ids.end());
  std::set<uint64_t> s;
  const auto add = [&](int64_t id) {
    if (id >= 0 && uint64_t(id) < sp.pool_blocks && !stored.count(id)) s.insert(uint64_t(id));
  };
  add(0);
  add(int64_t(sp.pool_blocks) - 1);
  for (int64_t id : sp.block_ids) {
    add(id - 1);
    add(id + 1);
    for (uint64_t wrap : {uint64_t(1) << 32, uint64_t(1) << 31}) {
      const int64_t at = int64_t((uint64_t(id) * bytes) % wrap / bytes);
      add(at);
      add(at + 1);
    }
  }
  std::vector<uint64_t> r(s.begin(), s.end());
  if (r.size() > kMaxSamples) r.resize(kMaxSamples);
  return r;
}

}  // namespace tqref::golden
