#include "tqref/contract.h"

#include <algorithm>
#include <unordered_set>

namespace tqref {

namespace {

// Extents are computed in 128 bits: parameters are u32/u64, so no product or sum below wraps.
__extension__ using u128 = unsigned __int128;

std::string str(u128 v) {
  std::string s;
  do {
    s.insert(s.begin(), char('0' + unsigned(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}
std::string str(uint64_t v) { return std::to_string(v); }
std::string str(uint32_t v) { return std::to_string(v); }
std::string str(int64_t v) { return std::to_string(v); }
std::string str(int32_t v) { return std::to_string(v); }

Violation bad(const std::string& param, const std::string& value, const std::string& allowed) {
  return Violation{param + " = " + value + "; allowed: " + allowed};
}
// "<buffer> holds <have> <unit>; allowed: >= <formula> = <need>"
Violation too_small(const char* buffer, uint64_t have, const char* unit, const char* formula,
                    u128 need) {
  return Violation{std::string(buffer) + " holds " + str(have) + " " + unit + "; allowed: >= " +
                   formula + " = " + str(need)};
}

u128 elems(const CacheGeometry& g) { return u128(g.num_kv_heads) * g.head_dim; }

}  // namespace

Check check_cache_geometry(const CacheGeometry& g) {
  if (g.num_kv_heads == 0) return bad("num_kv_heads", "0", ">= 1");
  if (g.head_dim == 0 || g.head_dim % kGroupSize != 0)
    return bad("head_dim", str(g.head_dim), "a positive multiple of 16");
  if (g.block_size == 0) return bad("block_size", "0", ">= 1");
  const u128 n = elems(g);
  if (n > UINT32_MAX) return bad("num_kv_heads*head_dim", str(n), "<= 2^32-1");
  const u128 k_block = n * 2 * g.block_size;
  if (k_block > UINT64_MAX)
    return bad("block_size*num_kv_heads*head_dim*2 (bytes of a K block)", str(k_block),
               "<= 2^64-1");
  return std::nullopt;
}

Check check_v_sections(Format f, const CacheGeometry& g) {
  const u128 codes = elems(g) * traits(f).bits / 8 * g.block_size;
  if (g.v_data_section_bytes < codes)
    return bad("v_data_section_bytes", str(g.v_data_section_bytes),
               ">= block_size*n*b/8 = " + str(codes) + " (the index section)");
  const u128 end = u128(g.v_data_section_bytes) + elems(g) / kGroupSize * g.block_size;
  if (g.v_block_stride_bytes < end)
    return bad("v_block_stride_bytes", str(g.v_block_stride_bytes),
               ">= v_data_section_bytes + block_size*n/16 = " + str(end));
  return std::nullopt;
}

uint64_t k_pool_blocks(const CacheGeometry& g, uint64_t k_bytes) {
  return k_bytes / g.k_block_bytes();
}

uint64_t pool_blocks(const CacheGeometry& g, uint64_t k_bytes, uint64_t v_bytes) {
  const uint64_t v_end = g.v_data_section_bytes + g.v_scale_row_bytes() * g.block_size;
  const uint64_t v_blocks = v_bytes < v_end ? 0 : (v_bytes - v_end) / g.v_block_stride_bytes + 1;
  return std::min(k_pool_blocks(g, k_bytes), v_blocks);
}

Check check_writer_params(Format f, const WriterParams& p) {
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, p.v_block_stride_bytes,
                        p.v_data_section_bytes};
  if (Check c = check_cache_geometry(g)) return c;
  if (Check c = check_v_sections(f, g)) return c;
  const uint32_t n = g.elems_per_token();
  if (p.key_stride < n)
    return bad("key_stride", str(p.key_stride), ">= num_kv_heads*head_dim = " + str(n));
  if (p.key_stride % kKeyStrideMultiple != 0)
    return bad("key_stride", str(p.key_stride), "a multiple of 4 (8-byte vector copy of K)");
  if (p.value_stride < n)
    return bad("value_stride", str(p.value_stride), ">= num_kv_heads*head_dim = " + str(n));
  return std::nullopt;
}

Check check_writer_launch(uint64_t num_tokens) {
  if (num_tokens > kMaxGridX) return bad("num_tokens", str(num_tokens), "<= 2^31-1 (grid.x)");
  return std::nullopt;
}

Check check_writer_buffers(const WriterParams& p, uint64_t num_tokens, uint64_t key_elems,
                           uint64_t value_elems) {
  if (num_tokens == 0) return std::nullopt;
  const u128 n = u128(p.num_kv_heads) * p.head_dim;
  const u128 key = u128(num_tokens - 1) * p.key_stride + n;
  if (key_elems < key)
    return too_small("key", key_elems, "elements", "(num_tokens-1)*key_stride + n", key);
  const u128 value = u128(num_tokens - 1) * p.value_stride + n;
  if (value_elems < value)
    return too_small("value", value_elems, "elements", "(num_tokens-1)*value_stride + n", value);
  return std::nullopt;
}

Check check_slot_mapping(std::span<const int64_t> slots, uint64_t num_blocks, uint32_t block_size) {
  const u128 capacity = u128(num_blocks) * block_size;
  std::unordered_set<int64_t> seen;
  for (size_t i = 0; i < slots.size(); ++i) {
    const int64_t s = slots[i];
    if (s < 0) continue;  // padding token: nothing is written
    const std::string param = "slot_mapping[" + str(uint64_t(i)) + "]";
    if (u128(s) >= capacity)
      return bad(param, str(s),
                 capacity == 0 ? std::string("negative (padding): the pools hold no whole block")
                               : "negative (padding) or 0 .. num_blocks*block_size-1 = " +
                                     str(capacity - 1));
    if (!seen.insert(s).second)
      return Violation{param + " = " + str(s) +
                       " repeats an earlier token's slot; allowed: distinct slots"};
  }
  return std::nullopt;
}

Check check_engine_head_dim(uint32_t head_dim) {
  if (head_dim == 0 || head_dim > kDecodeHdims[1])
    return bad("head_dim", str(head_dim),
               "1 .. 256 (the engine runs HDIM=128 up to 128, HDIM=256 up to 256)");
  return std::nullopt;
}

Check check_decode_build(const DecodeParams& p) {
  if (!is_decode_hdim(p.hdim))
    return bad("hdim", str(p.hdim), "128, 256 (the kernel's compile-time HDIM)");
  return std::nullopt;
}

Check check_decode_geometry(const DecodeParams& p) {
  const CacheGeometry g{p.num_kv_heads, p.head_dim, p.block_size, 0, 0, 0};
  if (Check c = check_cache_geometry(g)) return c;
  if (p.num_q_heads == 0 || p.num_q_heads % p.num_kv_heads != 0)
    return bad("num_q_heads", str(p.num_q_heads),
               "a positive multiple of num_kv_heads = " + str(p.num_kv_heads));
  const uint64_t q_row = uint64_t(p.num_q_heads) * p.head_dim;
  if (p.q_stride < q_row)
    return bad("q_stride", str(p.q_stride), ">= num_q_heads*head_dim = " + str(q_row));
  return std::nullopt;
}

Check check_decode_params(Format f, const DecodeParams& p) {
  if (Check c = check_decode_build(p)) return c;
  if (Check c = check_decode_geometry(p)) return c;
  return check_v_sections(f, CacheGeometry{p.num_kv_heads, p.head_dim, p.block_size, 0,
                                           p.v_block_stride_bytes, p.v_data_section_bytes});
}

Check check_decode_launch(const DecodeParams& p) {
  if (p.num_q_heads > kMaxGridX)
    return bad("num_q_heads", str(p.num_q_heads), "<= 2^31-1 (grid.x)");
  if (p.num_seqs > kMaxGridY) return bad("num_seqs", str(p.num_seqs), "<= 65535 (grid.y)");
  return std::nullopt;
}

Check check_decode_buffers(const DecodeParams& p, const DecodeBuffers& b) {
  const uint64_t S = p.num_seqs;
  if (S == 0) return std::nullopt;
  const u128 q_row = u128(p.num_q_heads) * p.head_dim;
  const u128 q = u128(S - 1) * p.q_stride + q_row;
  if (b.q_elems < q)
    return too_small("q", b.q_elems, "elements", "(num_seqs-1)*q_stride + num_q_heads*head_dim", q);
  if (b.output_elems && *b.output_elems < S * q_row)
    return too_small("output", *b.output_elems, "elements", "num_seqs*num_q_heads*head_dim",
                     S * q_row);
  if (b.seq_lens_entries < S)
    return too_small("seq_lens", b.seq_lens_entries, "entries", "num_seqs", S);
  const u128 tables = u128(S) * p.max_blocks_per_seq;
  if (b.block_table_entries < tables)
    return too_small("block_tables", b.block_table_entries, "entries",
                     "num_seqs*max_blocks_per_seq", tables);
  return std::nullopt;
}

Check check_sequences(const DecodeParams& p, std::span<const int32_t> block_tables,
                      std::span<const int32_t> seq_lens, uint64_t num_blocks) {
  const uint64_t cap = uint64_t(p.max_blocks_per_seq) * p.block_size;
  for (uint64_t s = 0; s < p.num_seqs; ++s) {
    const int32_t L = seq_lens[s];
    const std::string len = "seq_lens[" + str(s) + "]";
    if (L < 0 || uint64_t(L) > cap)
      return bad(len, str(L), "0 .. max_blocks_per_seq*block_size = " + str(cap));
    if (L == 0) continue;
    const uint32_t start = window_start(uint32_t(L), p.sliding_window);
    for (uint64_t j = start / p.block_size; j <= uint64_t(L - 1) / p.block_size; ++j) {
      const int32_t b = block_tables[s * p.max_blocks_per_seq + j];
      if (b < 0 || uint64_t(b) >= num_blocks)
        return bad("block_tables[" + str(s) + "][" + str(j) + "]",
                   str(b) + " (in use by " + len + " = " + str(L) + ")",
                   "0 .. num_blocks-1 = " + str(int64_t(num_blocks) - 1));
    }
  }
  return std::nullopt;
}

}  // namespace tqref
