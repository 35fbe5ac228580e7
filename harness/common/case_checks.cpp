#include "common/case_checks.h"

#include <algorithm>
#include <set>

#include "tqref/format.h"

namespace tqref::common {

namespace {

using golden::CaseKind;
using golden::DecodeCase;
using golden::WriterCase;

std::string str(uint64_t v) { return std::to_string(v); }

// a*b, or false when it exceeds `limit` (no wrap-around: every extent below is checked this way).
bool mul(uint64_t a, uint64_t b, uint64_t limit, uint64_t* r) {
  if (__builtin_mul_overflow(a, b, r)) return false;
  return *r <= limit;
}

// Geometry shared by writer and decoder (SPEC section 3), checked in dependency order.
struct Geometry {
  uint64_t n = 0;            // elements per token, H*D
  uint64_t code_row = 0;     // n*b/8 bytes
  uint64_t scale_row = 0;    // n/16 bytes
  uint64_t k_block = 0;      // B*n*2 bytes
};

std::string check_geometry(Format f, uint64_t H, uint64_t D, uint64_t B, uint64_t v_data,
                           uint64_t v_stride, uint64_t num_blocks, Geometry* g) {
  if (H == 0) return "num_kv_heads = 0; allowed: >= 1";
  if (D == 0 || D % kGroupSize != 0)
    return "head_dim = " + str(D) + "; allowed: a positive multiple of 16";
  if (B == 0) return "block_size = 0; allowed: >= 1";
  if (num_blocks == 0) return "num_blocks = 0; allowed: >= 1";
  if (!mul(H, D, UINT32_MAX, &g->n))
    return "num_kv_heads*head_dim = " + str(H) + "*" + str(D) + "; allowed: <= 2^32-1";
  const uint32_t bits = traits(f).bits;
  g->code_row = g->n * bits / 8;
  g->scale_row = g->n / kGroupSize;
  uint64_t codes = 0, scales = 0, k_pool = 0, v_pool = 0;
  if (!mul(g->n * 2, B, kMaxPoolBytes, &g->k_block) ||
      !mul(g->k_block, num_blocks, kMaxPoolBytes, &k_pool))
    return "K pool num_blocks*block_size*num_kv_heads*head_dim*2 bytes; allowed: <= 2^40 (num_blocks = " +
           str(num_blocks) + ", block_size = " + str(B) + ")";
  mul(g->code_row, B, kMaxPoolBytes, &codes);  // <= k_block: cannot fail after the K check
  mul(g->scale_row, B, kMaxPoolBytes, &scales);
  if (v_data < codes)
    return "v_data_section_bytes = " + str(v_data) + "; allowed: >= block_size*n*b/8 = " + str(codes) +
           " (the code rows of a block)";
  if (v_data > kMaxPoolBytes || v_stride < v_data + scales)
    return "v_block_stride_bytes = " + str(v_stride) +
           "; allowed: >= v_data_section_bytes + block_size*n/16 = " + str(v_data + scales);
  if (!mul(v_stride, num_blocks, kMaxPoolBytes, &v_pool))
    return "V pool num_blocks*v_block_stride_bytes = " + str(num_blocks) + "*" + str(v_stride) +
           "; allowed: <= 2^40 bytes";
  return "";
}

std::string size_problem(const char* what, uint64_t have, uint64_t want, const std::string& as) {
  return std::string(what) + " holds " + str(have) + " elements; allowed: exactly " + as + " = " + str(want);
}

}  // namespace

std::string check_writer_params(Format f, const WriterCase& w) {
  const auto& p = w.p;
  Geometry g;
  std::string e = check_geometry(f, p.num_kv_heads, p.head_dim, p.block_size, p.v_data_section_bytes,
                                 p.v_block_stride_bytes, w.num_blocks, &g);
  if (!e.empty()) return e;
  if (p.key_stride < g.n)
    return "key_stride = " + str(p.key_stride) + "; allowed: >= num_kv_heads*head_dim = " + str(g.n);
  // SPEC section 4: 8-byte vector copies of K; another stride faults on the GPU.
  if (p.key_stride % 4 != 0) return "key_stride = " + str(p.key_stride) + "; allowed: a multiple of 4";
  if (p.value_stride < g.n)
    return "value_stride = " + str(p.value_stride) + "; allowed: >= num_kv_heads*head_dim = " + str(g.n);
  const uint64_t T = w.num_tokens;
  if (T > kMaxGridX) return "num_tokens = " + str(T) + "; allowed: <= 2^31-1 (grid.x)";
  uint64_t key_n = 0, value_n = 0;
  if (!mul(T, p.key_stride, kMaxPoolBytes, &key_n) || !mul(T, p.value_stride, kMaxPoolBytes, &value_n))
    return "num_tokens*stride = " + str(T) + "*" + str(std::max(p.key_stride, p.value_stride)) +
           "; allowed: <= 2^40 elements";
  return "";
}

std::string check_writer_case(Format f, const WriterCase& w) {
  if (std::string e = check_writer_params(f, w); !e.empty()) return e;
  const auto& p = w.p;
  Geometry g;
  check_geometry(f, p.num_kv_heads, p.head_dim, p.block_size, p.v_data_section_bytes,
                 p.v_block_stride_bytes, w.num_blocks, &g);
  const uint64_t T = w.num_tokens, key_n = T * p.key_stride, value_n = T * p.value_stride;
  if (w.key.size() != key_n) return size_problem("key", w.key.size(), key_n, "num_tokens*key_stride");
  if (w.value.size() != value_n)
    return size_problem("value", w.value.size(), value_n, "num_tokens*value_stride");
  if (w.slot_mapping.size() != T) return size_problem("slot_mapping", w.slot_mapping.size(), T, "num_tokens");
  const uint64_t k_pool = g.k_block * w.num_blocks, v_pool = p.v_block_stride_bytes * w.num_blocks;
  if (w.k_init.size() != k_pool || w.k_expected.size() != k_pool)
    return "K pool holds " + str(w.k_init.size()) + " / " + str(w.k_expected.size()) +
           " bytes (initial / expected); allowed: exactly num_blocks*block_size*n*2 = " + str(k_pool);
  if (w.v_init.size() != v_pool || w.v_expected.size() != v_pool)
    return "V pool holds " + str(w.v_init.size()) + " / " + str(w.v_expected.size()) +
           " bytes (initial / expected); allowed: exactly num_blocks*v_block_stride_bytes = " + str(v_pool);
  const uint64_t slots = uint64_t(w.num_blocks) * p.block_size;
  std::set<int64_t> seen;
  for (size_t i = 0; i < w.slot_mapping.size(); ++i) {
    const int64_t s = w.slot_mapping[i];
    if (s < 0) continue;  // padding token: nothing written
    if (uint64_t(s) >= slots)
      return "slot_mapping[" + str(i) + "] = " + std::to_string(s) +
             "; allowed: -1 (padding) or 0 .. num_blocks*block_size-1 = " + str(slots - 1);
    // Two tokens with one slot race on the GPU: no defined expectation exists.
    if (!seen.insert(s).second)
      return "slot_mapping[" + str(i) + "] = " + std::to_string(s) +
             " repeats an earlier token's slot; allowed: distinct slots";
  }
  return "";
}

std::string check_decode_params(Format f, const DecodeCase& d) {
  const auto& p = d.p;
  if (p.hdim != 128 && p.hdim != 256) return "hdim = " + str(p.hdim) + "; allowed: 128, 256 (the decoder builds)";
  if (p.head_dim != p.hdim)
    return "head_dim = " + str(p.head_dim) + "; allowed: equal to hdim = " + str(p.hdim) +
           " (the kernel's compile-time HDIM)";
  Geometry g;
  std::string e = check_geometry(f, p.num_kv_heads, p.head_dim, p.block_size, p.v_data_section_bytes,
                                 p.v_block_stride_bytes, d.num_blocks, &g);
  if (!e.empty()) return e;
  if (p.num_q_heads == 0 || p.num_q_heads % p.num_kv_heads != 0)
    return "num_q_heads = " + str(p.num_q_heads) + "; allowed: a positive multiple of num_kv_heads = " +
           str(p.num_kv_heads);
  if (p.num_q_heads > kMaxGridX) return "num_q_heads = " + str(p.num_q_heads) + "; allowed: <= 2^31-1 (grid.x)";
  if (p.num_seqs > kMaxGridY) return "num_seqs = " + str(p.num_seqs) + "; allowed: <= 65535 (grid.y)";
  uint64_t q_row = 0;
  if (!mul(p.num_q_heads, p.head_dim, UINT32_MAX, &q_row))
    return "num_q_heads*head_dim = " + str(p.num_q_heads) + "*" + str(p.head_dim) + "; allowed: <= 2^32-1";
  if (p.q_stride < q_row)
    return "q_stride = " + str(p.q_stride) + "; allowed: >= num_q_heads*head_dim = " + str(q_row);
  const uint64_t S = p.num_seqs;
  uint64_t q_n = 0, tables_n = 0, out_n = 0;
  if (!mul(S, p.q_stride, kMaxPoolBytes, &q_n) || !mul(S, p.max_blocks_per_seq, kMaxPoolBytes, &tables_n) ||
      !mul(S, q_row, kMaxPoolBytes, &out_n))
    return "num_seqs = " + str(S) + " with q_stride = " + str(p.q_stride) + ", max_blocks_per_seq = " +
           str(p.max_blocks_per_seq) + "; allowed: buffers <= 2^40 elements";
  return "";
}

std::string check_decode_case(Format f, const DecodeCase& d, bool diagnostics) {
  if (std::string e = check_decode_params(f, d); !e.empty()) return e;
  const auto& p = d.p;
  Geometry g;
  check_geometry(f, p.num_kv_heads, p.head_dim, p.block_size, p.v_data_section_bytes,
                 p.v_block_stride_bytes, d.num_blocks, &g);
  const uint64_t S = p.num_seqs, q_row = uint64_t(p.num_q_heads) * p.head_dim;
  const uint64_t q_n = S * p.q_stride, tables_n = S * p.max_blocks_per_seq, out_n = S * q_row;
  if (d.q.size() != q_n) return size_problem("q", d.q.size(), q_n, "num_seqs*q_stride");
  if (d.block_tables.size() != tables_n)
    return size_problem("block_tables", d.block_tables.size(), tables_n, "num_seqs*max_blocks_per_seq");
  if (d.seq_lens.size() != S) return size_problem("seq_lens", d.seq_lens.size(), S, "num_seqs");
  if (d.out_init.size() != out_n || d.out_expected.size() != out_n)
    return size_problem("output", d.out_init.size() != out_n ? d.out_init.size() : d.out_expected.size(),
                        out_n, "num_seqs*num_q_heads*head_dim");
  const uint64_t k_pool = g.k_block * d.num_blocks, v_pool = p.v_block_stride_bytes * d.num_blocks;
  if (d.k_init.size() != k_pool)
    return "K pool holds " + str(d.k_init.size()) + " bytes; allowed: exactly num_blocks*block_size*n*2 = " +
           str(k_pool);
  if (d.v_init.size() != v_pool)
    return "V pool holds " + str(d.v_init.size()) + " bytes; allowed: exactly num_blocks*v_block_stride_bytes = " +
           str(v_pool);
  const uint64_t cap = uint64_t(p.max_blocks_per_seq) * p.block_size;
  uint64_t positions = 0;  // sum over rows of L - start: the length of the skip mask
  for (uint64_t s = 0; s < S; ++s) {
    const int32_t L = d.seq_lens[s];
    if (L < 0 || uint64_t(L) > cap)
      return "seq_lens[" + str(s) + "] = " + std::to_string(L) +
             "; allowed: 0 .. max_blocks_per_seq*block_size = " + str(cap);
    if (L == 0) continue;
    const uint64_t start = (p.sliding_window > 0 && uint32_t(L) > p.sliding_window) ? L - p.sliding_window : 0;
    positions += (uint64_t(L) - start) * p.num_q_heads;
    // Entries of blocks holding positions [start, L) are read; the others may hold anything.
    for (uint64_t j = start / p.block_size; j <= uint64_t(L - 1) / p.block_size; ++j) {
      const int32_t b = d.block_tables[s * p.max_blocks_per_seq + j];
      if (b < 0 || uint64_t(b) >= d.num_blocks)
        return "block_tables[" + str(s) + "][" + str(j) + "] = " + std::to_string(b) + " (in use: seq_lens[" +
               str(s) + "] = " + std::to_string(L) + "); allowed: 0 .. num_blocks-1 = " + str(d.num_blocks - 1);
    }
  }
  const golden::DecodeDiagData& x = d.diag;
  if (!diagnostics || x.skip_offsets.empty()) return "";
  const uint64_t rows = S * p.num_q_heads;
  if (x.skip_offsets.size() != rows + 1)
    return size_problem("diagnostics/skip_offsets", x.skip_offsets.size(), rows + 1, "num_seqs*num_q_heads+1");
  if (x.skip_count.size() != rows || x.m.size() != rows || x.l.size() != rows)
    return size_problem("diagnostics/skip_count, m, l", x.skip_count.size(), rows, "num_seqs*num_q_heads");
  if (x.skip_offsets[0] != 0) return "diagnostics/skip_offsets[0] = " + str(x.skip_offsets[0]) + "; allowed: 0";
  for (uint64_t r = 0; r < rows; ++r) {
    const int32_t L = d.seq_lens[r / p.num_q_heads];
    const uint64_t start = (p.sliding_window > 0 && uint32_t(L) > p.sliding_window) ? L - p.sliding_window : 0;
    const uint64_t len = L == 0 ? 0 : uint64_t(L) - start;
    if (x.skip_offsets[r + 1] < x.skip_offsets[r] || x.skip_offsets[r + 1] - x.skip_offsets[r] != len)
      return "diagnostics/skip_offsets[" + str(r + 1) + "] = " + str(x.skip_offsets[r + 1]) +
             "; allowed: skip_offsets[" + str(r) + "] + the row's window length " + str(len) + " = " +
             str(x.skip_offsets[r] + len);
    if (x.skip_count[r] > len)
      return "diagnostics/skip_count[" + str(r) + "] = " + str(x.skip_count[r]) + "; allowed: 0 .. " + str(len);
  }
  if (x.skip_offsets.back() != positions || x.skip_mask.size() != positions)
    return size_problem("diagnostics/skip_mask", x.skip_mask.size(), positions, "the rows' window lengths summed");
  if (!x.out_f32.empty() && x.out_f32.size() != out_n)
    return size_problem("diagnostics/output_f32", x.out_f32.size(), out_n, "rows*head_dim");
  for (const auto* v : {&x.ref_dequantised, &x.ref_unquantised})
    if (!v->empty() && v->size() != out_n)
      return size_problem("diagnostics/reference_*_v", v->size(), out_n, "rows*head_dim");
  return "";
}

std::string check_case(const golden::GoldenCase& c) {
  return c.kind == CaseKind::writer ? check_writer_case(c.format, c.w) : check_decode_case(c.format, c.d);
}

namespace {

std::string over(const char* key, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v >= lo && v <= hi) return "";
  return std::string(key) + " = " + str(v) + "; allowed: " + str(lo) + " .. " + str(hi);
}

}  // namespace

std::string check_spec(const golden::CaseSpec& s) {
  const bool dec = s.kind == CaseKind::decode;
  if (dec ? s.head_dim != 128 && s.head_dim != 256 : s.head_dim == 0 || s.head_dim % kGroupSize != 0 || s.head_dim > 4096)
    return "head_dim = " + str(s.head_dim) +
           (dec ? "; allowed: 128, 256 (decoder HDIM)" : "; allowed: a multiple of 16 in 16 .. 4096");
  std::string e;
  if (!(e = over("num_kv_heads", s.num_kv_heads, 1, 128)).empty()) return e;
  if (!(e = over("block_size", s.block_size, 1, 4096)).empty()) return e;
  if (dec && !(e = over("q_per_kv", s.q_per_kv, 1, 128)).empty()) return e;
  if (!(e = over("num_tokens", s.num_tokens, 0, 1u << 20)).empty()) return e;
  if (!(e = over("padding_tokens", s.padding_tokens, 0, 1u << 16)).empty()) return e;
  if (!(e = over("key_pad", s.key_pad, 0, 4096)).empty()) return e;
  if (s.key_pad % 4) return "key_pad = " + str(s.key_pad) + "; allowed: a multiple of 4 (key_stride % 4 == 0)";
  if (!(e = over("value_pad", s.value_pad, 0, 4096)).empty()) return e;
  if (!(e = over("q_pad", s.q_pad, 0, 4096)).empty()) return e;
  if (!(e = over("v_data_pad", s.v_data_pad, 0, 1u << 16)).empty()) return e;
  if (!(e = over("v_block_pad", s.v_block_pad, 0, 1u << 16)).empty()) return e;
  if (!(e = over("spare_blocks", s.spare_blocks, 0, 1u << 16)).empty()) return e;
  if (!(e = over("spare_table_entries", s.spare_table_entries, 0, 1u << 16)).empty()) return e;
  if (dec && !(e = over("number of seq_lens", s.seq_lens.size(), 0, kMaxGridY)).empty()) return e;
  // Positions written: the writer's tokens, or every sequence's positions for a decode pair.
  uint64_t positions = s.num_tokens;
  if (dec) {
    positions = 0;
    for (size_t i = 0; i < s.seq_lens.size(); ++i) {
      if (s.seq_lens[i] < 0 || s.seq_lens[i] > (1 << 20))
        return "seq_lens[" + str(i) + "] = " + std::to_string(s.seq_lens[i]) + "; allowed: 0 .. 2^20";
      positions += uint64_t(s.seq_lens[i]);
    }
  }
  // Blocks: every position in its own block at worst (block tables round up per sequence), plus spares.
  const uint64_t blocks = positions / s.block_size + s.seq_lens.size() + 1 + s.spare_blocks;
  const uint64_t n = uint64_t(s.num_kv_heads) * s.head_dim;
  const uint64_t k_pool = blocks * s.block_size * n * 2;
  if (k_pool > kMaxSpecPoolBytes)
    return "K pool of about " + str(k_pool) + " bytes (positions " + str(positions) + ", block_size " +
           str(s.block_size) + ", num_kv_heads*head_dim " + str(n) + "); allowed: <= 2^32 bytes per case";
  return "";
}

}  // namespace tqref::common
