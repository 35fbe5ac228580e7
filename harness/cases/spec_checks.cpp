#include "cases/spec_checks.h"

#include <algorithm>

#include "io/memory_budget.h"
#include "tqref/contract.h"
#include "tqref/format.h"

namespace tqref::cases {

namespace {

using golden::CaseKind;

std::string str(uint64_t v) { return std::to_string(v); }

std::string over(const char* key, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v >= lo && v <= hi) return "";
  return std::string(key) + " = " + str(v) + "; allowed: " + str(lo) + " .. " + str(hi);
}

}  // namespace

std::string check_spec(const CaseSpec& s) {
  const bool dec = s.kind == CaseKind::decode;
  // Decode cases are built for the build the engine's dispatch picks (engine_hdim):
  // head_dim up to the largest HDIM; head_dim != HDIM is outside the contract (docs/spec.md 5.1).
  const uint32_t max_dim = dec ? kDecodeHdims[1] : 4096;
  if (s.head_dim == 0 || s.head_dim % kGroupSize != 0 || s.head_dim > max_dim)
    return "head_dim = " + str(s.head_dim) + "; allowed: a multiple of 16 in 16 .. " + str(max_dim) +
           (dec ? " (the decoder builds are HDIM 128 and 256)" : "");
  std::string e;
  if (!(e = over("num_kv_heads", s.num_kv_heads, 1, 128)).empty()) return e;
  if (!(e = over("block_size", s.block_size, 1, 4096)).empty()) return e;
  if (dec && !(e = over("q_per_kv", s.q_per_kv, 1, 128)).empty()) return e;
  if (!(e = over("num_tokens", s.num_tokens, 0, 1u << 20)).empty()) return e;
  if (!(e = over("padding_tokens", s.padding_tokens, 0, 1u << 16)).empty()) return e;
  if (!(e = over("key_pad", s.key_pad, 0, 4096)).empty()) return e;
  if (s.key_pad % kKeyStrideMultiple) return "key_pad = " + str(s.key_pad) + "; allowed: a multiple of 4 (key_stride % 4 == 0)";
  if (!(e = over("value_pad", s.value_pad, 0, 4096)).empty()) return e;
  if (!(e = over("q_pad", s.q_pad, 0, 4096)).empty()) return e;
  if (!(e = over("v_data_pad", s.v_data_pad, 0, 1u << 16)).empty()) return e;
  if (!(e = over("v_block_pad", s.v_block_pad, 0, 1u << 16)).empty()) return e;
  if (!(e = over("spare_blocks", s.spare_blocks, 0, 1u << 16)).empty()) return e;
  if (!(e = over("spare_table_entries", s.spare_table_entries, 0, 1u << 16)).empty()) return e;
  if (dec && !(e = over("number of seq_lens", s.seq_lens.size(), 0, kMaxGridY)).empty()) return e;
  for (size_t i = 0; i < s.seq_lens.size(); ++i)
    if (dec && (s.seq_lens[i] < 0 || s.seq_lens[i] > (1 << 20)))
      return "seq_lens[" + str(i) + "] = " + std::to_string(s.seq_lens[i]) + "; allowed: 0 .. 2^20";
  // Positions written: the writer's tokens, or every built sequence's positions for a decode pair.
  const std::vector<int32_t> lens = dec ? built_seq_lens(s) : std::vector<int32_t>{};
  uint64_t positions = dec ? 0 : s.num_tokens;
  for (int32_t L : lens) positions += uint64_t(L);
  // Blocks: every position in its own block at worst (block tables round up per sequence), plus spares.
  const uint64_t blocks = positions / s.block_size + lens.size() + 1 + s.spare_blocks;
  const uint64_t n = uint64_t(s.num_kv_heads) * s.head_dim;
  const uint64_t k_pool = blocks * s.block_size * n * 2;
  if (k_pool > kMaxSpecPoolBytes)
    return "K pool of about " + str(k_pool) + " bytes (positions " + str(positions) + ", block_size " +
           str(s.block_size) + ", num_kv_heads*head_dim " + str(n) + "); allowed: <= 2^32 bytes per case";
  return over_budget(memory_bytes(s), "building the spec (pools, inputs and outputs, pads and spares)");
}

std::string SpecTotal::add(const CaseSpec& s) {
  if (std::string why = check_spec(s); !why.empty()) return why;
  bytes_ = add_sat(bytes_, memory_bytes(s));
  if (bytes_ <= kMaxSweepBytes) return "";
  return "the file's cases need more than " + str(bytes_) + " bytes by this one; allowed: <= " + str(kMaxSweepBytes) +
         " (256 GiB; split it into several files)";
}

uint64_t memory_bytes(const CaseSpec& s) {
  const bool dec = s.kind == CaseKind::decode;
  const std::vector<int32_t> lens = dec ? built_seq_lens(s) : std::vector<int32_t>{};
  uint64_t positions = dec ? 0 : add_sat(s.num_tokens, s.padding_tokens), longest = 0;
  for (int32_t L : lens)
    if (L > 0) positions = add_sat(positions, uint64_t(L)), longest = std::max<uint64_t>(longest, uint64_t(L));
  const uint64_t B = s.block_size, n = mul_sat(s.num_kv_heads, s.head_dim), S = lens.size();
  const uint64_t blocks = add_sat(add_sat(positions / std::max<uint64_t>(B, 1), S + 1), s.spare_blocks);
  const uint64_t k_pool = mul_sat(mul_sat(blocks, B), mul_sat(n, 2));
  const uint64_t v_stride = add_sat(add_sat(mul_sat(B, n), s.v_data_pad), s.v_block_pad);  // >= codes + scales
  const uint64_t v_pool = mul_sat(blocks, v_stride);
  const uint64_t rows = positions, strides = add_sat(mul_sat(n, 2), add_sat(s.key_pad, s.value_pad));
  // The writer case: key and value rows, slots, two of each pool, and the builder's working pools.
  uint64_t bytes = add_sat(mul_sat(rows, add_sat(mul_sat(strides, 2), 8)), mul_sat(add_sat(k_pool, v_pool), 3));
  // A search holds a round of attempts at once (kSearchRound).
  const uint64_t in_flight = s.search_attempts > 1 ? std::min(s.search_attempts, kSearchRound) : 1;
  if (!dec) return mul_sat(bytes, in_flight);
  const uint64_t qh = mul_sat(s.num_kv_heads, s.q_per_kv), out = mul_sat(mul_sat(S, qh), s.head_dim);
  const uint64_t table = mul_sat(S, add_sat(longest / std::max<uint64_t>(B, 1) + 1, s.spare_table_entries));
  // The decode case: its own pools, q, tables, outputs (bf16 x2, fp32, fp64 references x2) and
  // the skip masks of every (row, position).
  const uint64_t decode = add_sat(add_sat(add_sat(k_pool, v_pool), mul_sat(add_sat(mul_sat(qh, s.head_dim), s.q_pad),
                                                                           mul_sat(S, 2))),
                                  add_sat(add_sat(mul_sat(table, 4), mul_sat(out, 24)), mul_sat(positions, qh)));
  return mul_sat(add_sat(bytes, decode), in_flight);
}

}  // namespace tqref::cases
