#include "io/case_checks.h"

#include <algorithm>

#include "tqref/contract.h"

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

std::string text(const Check& c) { return c ? c->message : ""; }

// The harness's limits on one case's pools, after the contract's geometry (so every product
// below fits 64 bits before it is compared): at least one block, each pool at most 2^40 bytes.
std::string check_pools(const CacheGeometry& g, uint64_t num_blocks) {
  if (num_blocks == 0) return "num_blocks = 0; allowed: >= 1";
  uint64_t pool = 0;
  if (!mul(g.k_block_bytes(), num_blocks, kMaxPoolBytes, &pool))
    return "K pool num_blocks*block_size*num_kv_heads*head_dim*2 bytes; allowed: <= 2^40 (num_blocks = " +
           str(num_blocks) + ", block_size = " + str(g.block_size) + ")";
  if (!mul(g.v_block_stride_bytes, num_blocks, kMaxPoolBytes, &pool))
    return "V pool num_blocks*v_block_stride_bytes = " + str(num_blocks) + "*" + str(g.v_block_stride_bytes) +
           "; allowed: <= 2^40 bytes";
  return "";
}

// The pools of a case: WriterParams and DecodeParams name the geometry alike.
template <class Params>
CacheGeometry geometry(const Params& p, uint32_t num_blocks) {
  return {p.num_kv_heads, p.head_dim, p.block_size, num_blocks, p.v_block_stride_bytes, p.v_data_section_bytes};
}

std::string size_problem(const char* what, uint64_t have, uint64_t want, const std::string& as) {
  return std::string(what) + " holds " + str(have) + " elements; allowed: exactly " + as + " = " + str(want);
}

}  // namespace

std::string check_writer_params(Format f, const WriterCase& w) {
  const auto& p = w.p;
  if (std::string e = text(tqref::check_writer_params(f, p)); !e.empty()) return e;
  if (std::string e = check_pools(geometry(p, w.num_blocks), w.num_blocks); !e.empty()) return e;
  if (std::string e = text(check_writer_launch(w.num_tokens)); !e.empty()) return e;
  uint64_t key_n = 0, value_n = 0;
  const uint64_t T = w.num_tokens;
  if (!mul(T, p.key_stride, kMaxPoolBytes, &key_n) || !mul(T, p.value_stride, kMaxPoolBytes, &value_n))
    return "num_tokens*stride = " + str(T) + "*" + str(std::max(p.key_stride, p.value_stride)) +
           "; allowed: <= 2^40 elements";
  return "";
}

namespace {

// What a writer case holds beyond its bulk buffers: the slot mapping.
std::string writer_contents(const WriterCase& w) {
  const uint64_t T = w.num_tokens;
  if (w.slot_mapping.size() != T) return size_problem("slot_mapping", w.slot_mapping.size(), T, "num_tokens");
  return text(check_slot_mapping(w.slot_mapping, w.num_blocks, w.p.block_size));
}

}  // namespace

std::string check_writer_case(Format f, const WriterCase& w) {
  if (std::string e = check_writer_params(f, w); !e.empty()) return e;
  const auto& p = w.p;
  const CacheGeometry g = geometry(p, w.num_blocks);
  const uint64_t T = w.num_tokens, key_n = T * p.key_stride, value_n = T * p.value_stride;
  if (w.key.size() != key_n) return size_problem("key", w.key.size(), key_n, "num_tokens*key_stride");
  if (w.value.size() != value_n)
    return size_problem("value", w.value.size(), value_n, "num_tokens*value_stride");
  const uint64_t k_pool = g.k_pool_bytes(), v_pool = g.v_pool_bytes();
  if (w.k_init.size() != k_pool || w.k_expected.size() != k_pool)
    return "K pool holds " + str(w.k_init.size()) + " / " + str(w.k_expected.size()) +
           " bytes (initial / expected); allowed: exactly num_blocks*block_size*n*2 = " + str(k_pool);
  if (w.v_init.size() != v_pool || w.v_expected.size() != v_pool)
    return "V pool holds " + str(w.v_init.size()) + " / " + str(w.v_expected.size()) +
           " bytes (initial / expected); allowed: exactly num_blocks*v_block_stride_bytes = " + str(v_pool);
  return writer_contents(w);
}

std::string check_decode_params(Format f, const DecodeCase& d) {
  const auto& p = d.p;
  if (std::string e = text(tqref::check_decode_params(f, p)); !e.empty()) return e;
  if (std::string e = check_pools(geometry(p, d.num_blocks), d.num_blocks); !e.empty()) return e;
  if (std::string e = text(check_decode_launch(p)); !e.empty()) return e;
  const uint64_t S = p.num_seqs, q_row = uint64_t(p.num_q_heads) * p.head_dim;
  uint64_t q_n = 0, tables_n = 0, out_n = 0;
  if (!mul(S, p.q_stride, kMaxPoolBytes, &q_n) || !mul(S, p.max_blocks_per_seq, kMaxPoolBytes, &tables_n) ||
      !mul(S, q_row, kMaxPoolBytes, &out_n))
    return "num_seqs = " + str(S) + " with q_stride = " + str(p.q_stride) + ", max_blocks_per_seq = " +
           str(p.max_blocks_per_seq) + "; allowed: buffers <= 2^40 elements";
  return "";
}

namespace {

// The stored model diagnostics: one skip-mask row per (sequence, q head) of its window's length.
std::string check_diagnostics(const DecodeCase& d) {
  const auto& p = d.p;
  const golden::DecodeDiagData& x = d.diag;
  const uint64_t rows = uint64_t(p.num_seqs) * p.num_q_heads, out_n = rows * p.head_dim;
  if (x.skip_offsets.size() != rows + 1)
    return size_problem("diagnostics/skip_offsets", x.skip_offsets.size(), rows + 1, "num_seqs*num_q_heads+1");
  if (x.skip_count.size() != rows || x.m.size() != rows || x.l.size() != rows)
    return size_problem("diagnostics/skip_count, m, l", x.skip_count.size(), rows, "num_seqs*num_q_heads");
  if (x.skip_offsets[0] != 0) return "diagnostics/skip_offsets[0] = " + str(x.skip_offsets[0]) + "; allowed: 0";
  uint64_t positions = 0;  // sum over rows of L - start: the length of the skip mask
  for (uint64_t r = 0; r < rows; ++r) {
    const uint32_t L = uint32_t(d.seq_lens[r / p.num_q_heads]);
    const uint64_t len = L - window_start(L, p.sliding_window);
    positions += len;
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

}  // namespace

namespace {

// What a decode case holds beyond its bulk buffers: block tables, sequence lengths, diagnostics.
std::string decode_contents(const DecodeCase& d, bool diagnostics) {
  const auto& p = d.p;
  const uint64_t S = p.num_seqs, tables_n = S * p.max_blocks_per_seq;
  if (d.block_tables.size() != tables_n)
    return size_problem("block_tables", d.block_tables.size(), tables_n, "num_seqs*max_blocks_per_seq");
  if (d.seq_lens.size() != S) return size_problem("seq_lens", d.seq_lens.size(), S, "num_seqs");
  if (std::string e = text(check_sequences(p, d.block_tables, d.seq_lens, d.num_blocks)); !e.empty()) return e;
  if (!diagnostics || d.diag.skip_offsets.empty()) return "";
  return check_diagnostics(d);
}

}  // namespace

std::string check_decode_case(Format f, const DecodeCase& d, bool diagnostics) {
  if (std::string e = check_decode_params(f, d); !e.empty()) return e;
  const auto& p = d.p;
  const CacheGeometry g = geometry(p, d.num_blocks);
  const uint64_t S = p.num_seqs, q_row = uint64_t(p.num_q_heads) * p.head_dim;
  const uint64_t q_n = S * p.q_stride, out_n = S * q_row;
  if (d.q.size() != q_n) return size_problem("q", d.q.size(), q_n, "num_seqs*q_stride");
  if (d.out_init.size() != out_n || d.out_expected.size() != out_n)
    return size_problem("output", d.out_init.size() != out_n ? d.out_init.size() : d.out_expected.size(),
                        out_n, "num_seqs*num_q_heads*head_dim");
  const uint64_t k_pool = g.k_pool_bytes(), v_pool = g.v_pool_bytes();
  if (d.k_init.size() != k_pool)
    return "K pool holds " + str(d.k_init.size()) + " bytes; allowed: exactly num_blocks*block_size*n*2 = " +
           str(k_pool);
  if (d.v_init.size() != v_pool)
    return "V pool holds " + str(d.v_init.size()) + " bytes; allowed: exactly num_blocks*v_block_stride_bytes = " +
           str(v_pool);
  return decode_contents(d, diagnostics);
}

std::string check_case(const golden::GoldenCase& c) {
  return c.kind == CaseKind::writer ? check_writer_case(c.format, c.w) : check_decode_case(c.format, c.d);
}

std::string check_case_contents(const golden::GoldenCase& c) {
  if (c.kind == CaseKind::writer) {
    if (std::string e = check_writer_params(c.format, c.w); !e.empty()) return e;
    return writer_contents(c.w);
  }
  if (std::string e = check_decode_params(c.format, c.d); !e.empty()) return e;
  return decode_contents(c.d, true);
}

}  // namespace tqref::common
