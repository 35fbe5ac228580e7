#include "io/case_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "io/case_checks.h"
#include "io/ex2_profile_io.h"
#include "io/memory_budget.h"
#include "io/sparse_pool.h"
#include "io/text_escape.h"
#include "tqref/numeric.h"

namespace tqref::golden {

namespace {

// K pool bf16 elements -> bytes (little-endian, as on the GPU).
std::vector<uint8_t> u16_to_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    b[2 * i] = uint8_t(v[i] & 0xFF);
    b[2 * i + 1] = uint8_t(v[i] >> 8);
  }
  return b;
}

std::string pool_encoding(Format f) { return std::string(traits(f).name) + "_packed_pool"; }

// Reads an integer attribute and checks its range; the error names file, object and range.
uint32_t attr_u32(const h5::Node& n, const char* name, uint64_t lo, uint64_t hi) {
  int64_t v = n.attr_int(name);
  if (v < int64_t(lo) || uint64_t(v) > hi)
    throw BadCase(n.where() + ": attribute " + name + " = " + std::to_string(v) + "; allowed: " +
                  std::to_string(lo) + " .. " + std::to_string(hi));
  return uint32_t(v);
}
uint64_t attr_u64(const h5::Node& n, const char* name) {
  int64_t v = n.attr_int(name);
  if (v < 0) throw BadCase(n.where() + ": attribute " + name + " = " + std::to_string(v) + "; allowed: >= 0");
  return uint64_t(v);
}
uint64_t attr_seed(const h5::Node& n) {
  const int64_t v = n.attr_int("seed");
  if (v < 0) throw BadCase(n.where() + ": attribute seed = " + std::to_string(v) + "; allowed: 0 .. 2^63-1");
  return uint64_t(v);
}
// A float parameter is stored twice: as a readable double and as its exact binary32 bits; the
// bits are authoritative and must be a 32-bit pattern, and both must agree (an edit of one alone
// would otherwise go unnoticed).
void push_float_attr(std::vector<CaseAttr>& a, const std::string& name, float v) {
  a.push_back({name, double(v)});
  a.push_back({name + "_bits", int64_t(f32_bits(v))});
}
float get_float_attr(const h5::Node& n, const std::string& name) {
  const int64_t bits = n.attr_int(name + "_bits");
  if (bits < 0 || bits > int64_t(UINT32_MAX))
    throw BadCase(n.where() + ": attribute " + name + "_bits = " + std::to_string(bits) +
                  "; allowed: 0 .. 2^32-1 (a binary32 bit pattern)");
  const float f = f32_from_bits(uint32_t(bits));
  const double shown = n.attr_double(name);
  if (!(double(f) == shown) && !(std::isnan(f) && std::isnan(shown)))
    throw BadCase(n.where() + ": attributes " + name + " = " + std::to_string(shown) + " and " + name +
                  "_bits = " + std::to_string(bits) + " (" + std::to_string(f) + ") disagree");
  return f;
}
// The float parameters' documented ranges (docs/golden-schema.md): a softmax scale is a finite
// positive number; THRESH a finite float in (0, 1), as in a sweep file.
void check_inv_sqrt_d(const h5::Node& n, float v) {
  if (!std::isfinite(v) || !(v > 0.0f))
    throw BadCase(n.where() + ": attribute inv_sqrt_d = " + std::to_string(v) + "; allowed: a finite float > 0");
}
void check_threshold(const std::string& where, const char* name, double v) {
  if (!std::isfinite(v) || !(v > 0.0) || !(v < 1.0))
    throw BadCase(where + ": attribute " + name + " = " + std::to_string(v) + "; allowed: a finite float with 0 < " +
                  name + " < 1");
}
// A name from the file that tqref uses as an identifier or in a path (case names, linked_case,
// distribution).
void check_name(const std::string& where, const char* what, const std::string& v) {
  if (const std::string why = name_problem(v); !why.empty()) throw BadCase(where + ": " + what + " " + why);
}

// Memory to read a case and run it on a backend, from its parameters alone (checked before any
// dataset is read): every dataset, the K pool a second time (read as bf16, then converted to
// bytes), and the backend's own copies of what it writes (writer: both pools; decoder: the output
// and its fp32 diagnostics). The skip mask's length is known only after seq_lens is read; its
// dataset is checked against the budget when it is read.
uint64_t writer_bytes(const WriterCase& w) {
  const uint64_t T = w.num_tokens, k_pool = mul_sat(mul_sat(mul_sat(w.num_blocks, w.p.block_size),
                                                            mul_sat(w.p.num_kv_heads, w.p.head_dim)), 2),
                 v_pool = mul_sat(w.num_blocks, w.p.v_block_stride_bytes);
  const uint64_t inputs = add_sat(mul_sat(mul_sat(T, add_sat(w.p.key_stride, w.p.value_stride)), 2), mul_sat(T, 8));
  return add_sat(inputs, add_sat(mul_sat(k_pool, 4), mul_sat(v_pool, 3)));
}
uint64_t decode_bytes(const DecodeCase& d, bool with_diag) {
  const DecodeParams& p = d.p;
  const uint64_t S = p.num_seqs, rows = mul_sat(S, p.num_q_heads), out = mul_sat(mul_sat(rows, p.head_dim), 2);
  const uint64_t k_pool = mul_sat(mul_sat(mul_sat(d.num_blocks, p.block_size), mul_sat(p.num_kv_heads, p.head_dim)), 2),
                 v_pool = mul_sat(d.num_blocks, p.v_block_stride_bytes);
  const uint64_t inputs = add_sat(mul_sat(mul_sat(S, p.q_stride), 2), mul_sat(mul_sat(S, add_sat(p.max_blocks_per_seq, 1)), 4));
  const uint64_t diag = add_sat(mul_sat(rows, 24), with_diag ? mul_sat(mul_sat(rows, p.head_dim), 20) : 0);
  const uint64_t backend = add_sat(out, mul_sat(mul_sat(rows, p.head_dim), 4));
  return add_sat(add_sat(inputs, mul_sat(k_pool, 2)), add_sat(add_sat(v_pool, mul_sat(out, 2)), add_sat(diag, backend)));
}
void check_budget(const h5::Node& g, uint64_t bytes, uint64_t num_blocks) {
  if (const std::string why = over_budget(bytes, "the case (num_blocks = " + std::to_string(num_blocks) +
                                                     ", read and run)");
      !why.empty())
    throw BadCase(g.where() + ": " + why);
}

template <class T>
std::vector<T> read_shaped(const h5::Node& g, const std::string& name, std::vector<uint64_t> shape) {
  return g.read<T>(name, &shape);
}

// A bulk dataset (key, value, q, pools, outputs): read, or with `keep` false only checked as read
// checks it (h5::Node::verify: type, shape, checksums) and left empty (read_case_summary).
template <class T>
std::vector<T> read_bulk(const h5::Node& g, const std::string& name, const std::vector<uint64_t>& shape, bool keep) {
  if (keep) return read_shaped<T>(g, name, shape);
  g.verify<T>(name, shape);
  return {};
}

// Attribute ranges are storage limits only (a dimension up to 2^30; num_blocks and num_seqs at
// least 1, since a golden case has both); the contract's rules come after, from check_*_params.
constexpr uint32_t kMaxDim = 1u << 30;

// The launch attributes of a case, in the order write_case stores them.
void writer_attributes(const GoldenCase& c, std::vector<CaseAttr>& a) {
  const WriterCase& w = c.w;
  const WriterParams& p = w.p;
  a.push_back({"hdim", int64_t(p.head_dim)});
  a.push_back({"num_kv_heads", int64_t(p.num_kv_heads)});
  a.push_back({"head_dim", int64_t(p.head_dim)});
  a.push_back({"block_size", int64_t(p.block_size)});
  a.push_back({"key_stride", int64_t(p.key_stride)});
  a.push_back({"value_stride", int64_t(p.value_stride)});
  a.push_back({"k_block_stride_bytes", int64_t(p.k_block_stride_bytes)});
  a.push_back({"v_block_stride_bytes", int64_t(p.v_block_stride_bytes)});
  a.push_back({"v_data_section_bytes", int64_t(p.v_data_section_bytes)});
  a.push_back({"num_tokens", int64_t(w.num_tokens)});
  a.push_back({"num_blocks", int64_t(w.num_blocks)});
  a.push_back({"grid", std::vector<int64_t>{w.num_tokens, 1, 1}});
  a.push_back({"block", std::vector<int64_t>{kThreadsPerBlock, 1, 1}});
}

void decode_attributes(const GoldenCase& c, std::vector<CaseAttr>& a) {
  const DecodeCase& d = c.d;
  const DecodeParams& p = d.p;
  a.push_back({"hdim", int64_t(p.hdim)});
  a.push_back({"max_blocks_per_seq", int64_t(p.max_blocks_per_seq)});
  a.push_back({"num_q_heads", int64_t(p.num_q_heads)});
  a.push_back({"num_kv_heads", int64_t(p.num_kv_heads)});
  a.push_back({"head_dim", int64_t(p.head_dim)});
  a.push_back({"block_size", int64_t(p.block_size)});
  push_float_attr(a, "inv_sqrt_d", p.inv_sqrt_d);
  a.push_back({"q_stride", int64_t(p.q_stride)});
  a.push_back({"v_block_stride_bytes", int64_t(p.v_block_stride_bytes)});
  a.push_back({"v_data_section_bytes", int64_t(p.v_data_section_bytes)});
  a.push_back({"sliding_window", int64_t(p.sliding_window)});
  a.push_back({"num_seqs", int64_t(p.num_seqs)});
  a.push_back({"num_blocks", int64_t(d.num_blocks)});
  a.push_back({"grid", std::vector<int64_t>{p.num_q_heads, p.num_seqs, 1}});
  a.push_back({"block", std::vector<int64_t>{kThreadsPerBlock, 1, 1}});
}

template <class T>
CaseDataset dataset(const char* group, const char* name, const std::vector<T>& v,
                    std::vector<uint64_t> shape, const std::string& encoding = "") {
  return {group, name, elem_type<T>(), std::move(shape), v.data(), v.size(), encoding};
}
// A K pool held as bytes, stored as its bf16 elements (little-endian host, as on the GPU).
CaseDataset k_pool(const char* group, const std::vector<uint8_t>& bytes,
                   std::vector<uint64_t> shape) {
  return {group, "k_cache", ElemType::u16, std::move(shape), bytes.data(), bytes.size() / 2, "bf16"};
}

std::vector<CaseDataset> writer_datasets(const GoldenCase& c) {
  const WriterCase& w = c.w;
  const WriterParams& p = w.p;
  const uint64_t T = w.num_tokens, B = p.block_size, H = p.num_kv_heads, D = p.head_dim;
  const uint64_t NB = w.num_blocks, VS = p.v_block_stride_bytes;
  const std::string pool = pool_encoding(c.format);
  return {dataset("inputs", "key", w.key, {T, p.key_stride}, "bf16"),
          dataset("inputs", "value", w.value, {T, p.value_stride}, "bf16"),
          dataset("inputs", "slot_mapping", w.slot_mapping, {T}),
          k_pool("initial", w.k_init, {NB, B, H, D}),
          dataset("initial", "v_cache", w.v_init, {NB, VS}, pool),
          k_pool("expected", w.k_expected, {NB, B, H, D}),
          dataset("expected", "v_cache", w.v_expected, {NB, VS}, pool)};
}

std::vector<CaseDataset> decode_datasets(const GoldenCase& c) {
  const DecodeCase& d = c.d;
  const DecodeParams& p = d.p;
  const uint64_t S = p.num_seqs, QH = p.num_q_heads, B = p.block_size, H = p.num_kv_heads,
                 D = p.head_dim, NB = d.num_blocks;
  const DecodeDiagData& x = d.diag;
  std::vector<CaseDataset> r = {
      dataset("inputs", "q", d.q, {S, p.q_stride}, "bf16"),
      dataset("inputs", "block_tables", d.block_tables, {S, p.max_blocks_per_seq}),
      dataset("inputs", "seq_lens", d.seq_lens, {S}),
      k_pool("initial", d.k_init, {NB, B, H, D}),
      dataset("initial", "v_cache", d.v_init, {NB, p.v_block_stride_bytes}, pool_encoding(c.format)),
      dataset("initial", "output", d.out_init, {S, QH, D}, "bf16"),
      dataset("expected", "output", d.out_expected, {S, QH, D}, "bf16"),
      dataset("diagnostics", "skip_offsets", x.skip_offsets, {S * QH + 1}),
      dataset("diagnostics", "skip_mask", x.skip_mask, {uint64_t(x.skip_mask.size())}, "mask"),
      dataset("diagnostics", "skip_count", x.skip_count, {S, QH}),
      dataset("diagnostics", "m", x.m, {S, QH}),
      dataset("diagnostics", "l", x.l, {S, QH})};
  // Read without diagnostics, a case lacks these three (write_case needs them).
  if (!x.out_f32.empty()) r.push_back(dataset("diagnostics", "output_f32", x.out_f32, {S, QH, D}));
  if (!x.ref_dequantised.empty())
    r.push_back(dataset("diagnostics", "reference_dequantised_v", x.ref_dequantised, {S, QH, D}));
  if (!x.ref_unquantised.empty())
    r.push_back(dataset("diagnostics", "reference_unquantised_v", x.ref_unquantised, {S, QH, D}));
  if (!x.ref_skip_bound.empty())  // only launches outside the contract (head_dim != hdim)
    r.push_back(dataset("diagnostics", "reference_skip_bound", x.ref_skip_bound, {S, QH}));
  return r;
}

void write_attr(const h5::Node& g, const CaseAttr& a) {
  std::visit([&](const auto& v) { g.set_attr(a.name, v); }, a.value);
}

template <class T>
void write_dataset(const h5::Node& g, const CaseDataset& d) {
  g.write_span(d.name, static_cast<const T*>(d.data), d.count, d.shape, d.encoding);
}

void write_dataset(const h5::Node& g, const CaseDataset& d) {
  switch (d.type) {
    case ElemType::u8: return write_dataset<uint8_t>(g, d);
    case ElemType::u16: return write_dataset<uint16_t>(g, d);
    case ElemType::u32: return write_dataset<uint32_t>(g, d);
    case ElemType::u64: return write_dataset<uint64_t>(g, d);
    case ElemType::i32: return write_dataset<int32_t>(g, d);
    case ElemType::i64: return write_dataset<int64_t>(g, d);
    case ElemType::f32: return write_dataset<float>(g, d);
    case ElemType::f64: return write_dataset<double>(g, d);
  }
}

// The parameters of a writer case from its attributes, checked against the contract (no dataset
// read, no budget check).
WriterCase read_writer_params(const h5::Node& g, Format f) {
  WriterCase w;
  WriterParams& p = w.p;
  p.num_kv_heads = attr_u32(g, "num_kv_heads", 0, kMaxDim);
  p.head_dim = attr_u32(g, "head_dim", 0, kMaxDim);
  p.block_size = attr_u32(g, "block_size", 0, kMaxDim);
  p.key_stride = attr_u32(g, "key_stride", 0, UINT32_MAX);
  p.value_stride = attr_u32(g, "value_stride", 0, UINT32_MAX);
  p.k_block_stride_bytes = attr_u64(g, "k_block_stride_bytes");
  p.v_block_stride_bytes = attr_u64(g, "v_block_stride_bytes");
  p.v_data_section_bytes = attr_u64(g, "v_data_section_bytes");
  w.num_tokens = attr_u32(g, "num_tokens", 0, kMaxDim);
  w.num_blocks = attr_u32(g, "num_blocks", 1, kMaxDim);
  // The contract's rules (tqref/contract.h): the dataset shapes read_writer reads are computed
  // from these parameters.
  if (const std::string why = common::check_writer_params(f, w); !why.empty())
    throw BadCase(g.where() + ": " + why);
  return w;
}

WriterCase read_writer(const h5::Node& g, Format f, bool keep) {
  WriterCase w = read_writer_params(g, f);
  const WriterParams& p = w.p;
  check_budget(g, writer_bytes(w), w.num_blocks);
  const uint64_t T = w.num_tokens, B = p.block_size, H = p.num_kv_heads, D = p.head_dim,
                 NB = w.num_blocks;
  h5::Node in = g.group("inputs"), init = g.group("initial"), ex = g.group("expected");
  w.key = read_bulk<uint16_t>(in, "key", {T, p.key_stride}, keep);
  w.value = read_bulk<uint16_t>(in, "value", {T, p.value_stride}, keep);
  w.slot_mapping = read_shaped<int64_t>(in, "slot_mapping", {T});
  w.k_init = u16_to_bytes(read_bulk<uint16_t>(init, "k_cache", {NB, B, H, D}, keep));
  w.v_init = read_bulk<uint8_t>(init, "v_cache", {NB, p.v_block_stride_bytes}, keep);
  w.k_expected = u16_to_bytes(read_bulk<uint16_t>(ex, "k_cache", {NB, B, H, D}, keep));
  w.v_expected = read_bulk<uint8_t>(ex, "v_cache", {NB, p.v_block_stride_bytes}, keep);
  return w;
}

// The parameters of a decode case from its attributes, checked against the contract (no dataset
// read, no budget check).
DecodeCase read_decode_params(const h5::Node& g, Format f) {
  DecodeCase d;
  DecodeParams& p = d.p;
  p.hdim = attr_u32(g, "hdim", 0, UINT32_MAX);
  p.max_blocks_per_seq = attr_u32(g, "max_blocks_per_seq", 0, kMaxDim);
  p.num_q_heads = attr_u32(g, "num_q_heads", 0, 65535);
  p.num_kv_heads = attr_u32(g, "num_kv_heads", 0, kMaxDim);
  p.head_dim = attr_u32(g, "head_dim", 0, kMaxDim);
  p.block_size = attr_u32(g, "block_size", 0, kMaxDim);
  p.inv_sqrt_d = get_float_attr(g, "inv_sqrt_d");
  check_inv_sqrt_d(g, p.inv_sqrt_d);
  p.q_stride = attr_u32(g, "q_stride", 0, UINT32_MAX);
  p.v_block_stride_bytes = attr_u64(g, "v_block_stride_bytes");
  p.v_data_section_bytes = attr_u64(g, "v_data_section_bytes");
  p.sliding_window = attr_u32(g, "sliding_window", 0, UINT32_MAX);
  p.num_seqs = attr_u32(g, "num_seqs", 1, 65535);
  d.num_blocks = attr_u32(g, "num_blocks", 1, kMaxDim);
  // The contract's rules (tqref/contract.h): the dataset shapes read_decode reads are computed
  // from these parameters.
  if (const std::string why = common::check_decode_params(f, d); !why.empty())
    throw BadCase(g.where() + ": " + why);
  return d;
}

DecodeCase read_decode(const h5::Node& g, Format f, bool with_diag, bool keep) {
  DecodeCase d = read_decode_params(g, f);
  const DecodeParams& p = d.p;
  check_budget(g, decode_bytes(d, with_diag), d.num_blocks);
  const uint64_t S = p.num_seqs, QH = p.num_q_heads, B = p.block_size, H = p.num_kv_heads,
                 D = p.head_dim, NB = d.num_blocks;
  h5::Node in = g.group("inputs"), init = g.group("initial"), ex = g.group("expected");
  d.q = read_bulk<uint16_t>(in, "q", {S, p.q_stride}, keep);
  d.block_tables = read_shaped<int32_t>(in, "block_tables", {S, p.max_blocks_per_seq});
  d.seq_lens = read_shaped<int32_t>(in, "seq_lens", {S});
  d.k_init = u16_to_bytes(read_bulk<uint16_t>(init, "k_cache", {NB, B, H, D}, keep));
  d.v_init = read_bulk<uint8_t>(init, "v_cache", {NB, p.v_block_stride_bytes}, keep);
  d.out_init = read_bulk<uint16_t>(init, "output", {S, QH, D}, keep);
  d.out_expected = read_bulk<uint16_t>(ex, "output", {S, QH, D}, keep);
  h5::Node dg = g.group("diagnostics");
  DecodeDiagData& x = d.diag;
  x.skip_offsets = read_shaped<uint64_t>(dg, "skip_offsets", {S * QH + 1});
  x.skip_mask = read_shaped<uint8_t>(dg, "skip_mask", {x.skip_offsets.back()});
  x.skip_count = read_shaped<uint32_t>(dg, "skip_count", {S, QH});
  x.m = read_shaped<float>(dg, "m", {S, QH});
  x.l = read_shaped<float>(dg, "l", {S, QH});
  if (with_diag) {
    x.out_f32 = read_shaped<float>(dg, "output_f32", {S, QH, D});
    x.ref_dequantised = read_shaped<double>(dg, "reference_dequantised_v", {S, QH, D});
    x.ref_unquantised = read_shaped<double>(dg, "reference_unquantised_v", {S, QH, D});
    if (dg.has("reference_skip_bound"))
      x.ref_skip_bound = read_shaped<double>(dg, "reference_skip_bound", {S, QH});
  }
  return d;
}

// The sparse description of a pool of production size: attributes pool_layout ("sparse"),
// pool_blocks and pool_background, datasets sparse/{block_ids,k_offsets,v_offsets}.
SparsePool read_sparse_pool(const h5::Node& g, const GoldenCase& c) {
  const std::string layout = g.attr_string("pool_layout");
  if (layout != "sparse") throw BadCase(g.where() + ": attribute pool_layout = '" + layout + "'; allowed: sparse");
  SparsePool sp;
  sp.pool_blocks = attr_u64(g, "pool_blocks");
  sp.background = uint8_t(attr_u32(g, "pool_background", 0, 255));
  const uint64_t n = stored_blocks(c);
  h5::Node s = g.group("sparse");
  sp.block_ids = read_shaped<int64_t>(s, "block_ids", {n});
  sp.k_offsets = read_shaped<uint64_t>(s, "k_offsets", {n});
  sp.v_offsets = read_shaped<uint64_t>(s, "v_offsets", {n});
  if (const std::string why = check_sparse_pool(sp, block_bytes(c), uint32_t(n)); !why.empty())
    throw BadCase(s.where() + ": " + why);
  return sp;
}

}  // namespace

std::string kernel_name(CaseKind kind, Format f) {
  return std::string(kind == CaseKind::writer ? "reshape_and_cache_flash_bf16k_"
                                              : "paged_decode_attn_bf16k_") +
         traits(f).name;
}
const char* kind_name(CaseKind k) { return k == CaseKind::writer ? "writer" : "decode"; }
std::string format_names() {
  std::string s;
  for (const FormatTraits& t : kFormats) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

bool parse_format(const std::string& s, Format* f) {
  for (const auto& t : kFormats)
    if (s == t.name) {
      *f = t.format;
      return true;
    }
  return false;
}

void write_provenance(const h5::Node& r, const Provenance& p) {
  r.set_attr("schema_version", p.schema_version);
  r.set_attr("tqref_version", p.tqref_version);
  r.set_attr("git_commit", p.git_commit);
  r.set_attr("seed", int64_t(p.seed));
  r.set_attr("rng", p.rng);
  r.set_attr("threshold", p.threshold);
  r.set_attr("threshold_bits", int64_t(f32_bits(float(p.threshold))));
  r.set_attr("ex2_profile_id", p.ex2_profile_id);
  r.set_attr("command_line", p.command_line);
  r.set_attr("suite", p.suite);
  r.set_attr("shard", p.shard);
  r.set_attr("config_yaml", p.config_yaml);
  if (!p.reproducer_of.empty()) r.set_attr("reproducer_of", p.reproducer_of);
  if (!p.model_variant.empty()) r.set_attr("model_variant", p.model_variant);
}

Provenance read_provenance(const h5::Node& r) {
  Provenance p;
  p.schema_version = r.attr_int("schema_version");
  if (p.schema_version != kSchemaVersion)
    throw BadCase(r.where() + ": attribute schema_version = " + std::to_string(p.schema_version) +
                  "; this tqref reads schema version " + std::to_string(kSchemaVersion));
  p.tqref_version = r.attr_string("tqref_version");
  p.git_commit = r.attr_string("git_commit");
  p.seed = attr_seed(r);
  p.rng = r.attr_string("rng");
  p.threshold = get_float_attr(r, "threshold");
  check_threshold(r.where(), "threshold", p.threshold);
  p.ex2_profile_id = r.attr_string("ex2_profile_id");
  // Becomes part of a path (data/hw/<arch>/ex2.h5): a strict pattern before any use.
  if (!p.ex2_profile_id.empty())
    if (const std::string why = ex2_profile_id_problem(p.ex2_profile_id); !why.empty())
      throw BadCase(r.where() + ": attribute ex2_profile_id = " + why);
  p.command_line = r.attr_string("command_line");
  p.suite = r.attr_string("suite");
  p.shard = r.attr_string("shard");
  p.config_yaml = r.attr_string("config_yaml");
  if (r.has_attr("reproducer_of")) p.reproducer_of = r.attr_string("reproducer_of");
  if (r.has_attr("model_variant")) p.model_variant = r.attr_string("model_variant");
  return p;
}

std::vector<CaseAttr> case_attributes(const GoldenCase& c) {
  std::vector<CaseAttr> a = {{"kernel", kernel_name(c.kind, c.format)},
                             {"format", std::string(traits(c.format).name)},
                             {"kind", std::string(kind_name(c.kind))}};
  push_float_attr(a, "threshold", c.threshold);
  a.push_back({"seed", int64_t(c.seed)});
  a.push_back({"distribution", c.distribution});
  a.push_back({"exercises", c.exercises});
  a.push_back({"linked_case", c.linked_case});
  if (c.kind == CaseKind::writer) writer_attributes(c, a);
  else decode_attributes(c, a);
  if (c.sparse) {  // a pool of production size (docs/golden-schema.md)
    a.push_back({"pool_layout", std::string("sparse")});
    a.push_back({"pool_blocks", int64_t(c.sparse->pool_blocks)});
    a.push_back({"pool_background", int64_t(c.sparse->background)});
  }
  return a;
}

std::vector<CaseDataset> case_datasets(const GoldenCase& c) {
  std::vector<CaseDataset> r = c.kind == CaseKind::writer ? writer_datasets(c) : decode_datasets(c);
  if (c.sparse) {
    const SparsePool& sp = *c.sparse;
    const uint64_t n = sp.block_ids.size();
    r.push_back(dataset("sparse", "block_ids", sp.block_ids, {n}));
    r.push_back(dataset("sparse", "k_offsets", sp.k_offsets, {n}));
    r.push_back(dataset("sparse", "v_offsets", sp.v_offsets, {n}));
  }
  return r;
}

void write_case(const h5::Node& cases, const GoldenCase& c) {
  h5::Node g = cases.create_group(c.name);
  for (const CaseAttr& a : case_attributes(c)) write_attr(g, a);
  const std::vector<CaseDataset> ds = case_datasets(c);
  // Groups first, in order of first use, then the datasets: the creation order of the file.
  std::vector<std::pair<std::string, h5::Node>> groups;
  for (const CaseDataset& d : ds)
    if (std::none_of(groups.begin(), groups.end(), [&](const auto& p) { return p.first == d.group; }))
      groups.emplace_back(d.group, g.create_group(d.group));
  for (const CaseDataset& d : ds)
    for (const auto& [name, node] : groups)
      if (name == d.group) write_dataset(node, d);
}

namespace {

// The case group's own attributes (kind, format, kernel, threshold, seed, distribution,
// exercises, linked_case), checked; no parameter and no dataset.
GoldenCase read_case_attrs(const h5::Node& g, const std::string& name) {
  GoldenCase c;
  c.name = name;
  const std::string kind = g.attr_string("kind");
  if (kind == "writer") c.kind = CaseKind::writer;
  else if (kind == "decode") c.kind = CaseKind::decode;
  else throw BadCase(g.where() + ": attribute kind = '" + printable(kind) + "'; allowed: writer, decode");
  const std::string fmt = g.attr_string("format");
  if (!parse_format(fmt, &c.format))
    throw BadCase(g.where() + ": attribute format = '" + printable(fmt) + "'; allowed: " + format_names());
  const std::string kernel = g.attr_string("kernel");
  if (kernel != kernel_name(c.kind, c.format))
    throw BadCase(g.where() + ": attribute kernel = '" + printable(kernel) + "' does not match kind " + kind +
                  " and format " + fmt + " (expected '" + kernel_name(c.kind, c.format) + "')");
  c.threshold = get_float_attr(g, "threshold");
  check_threshold(g.where(), "threshold", c.threshold);
  c.seed = attr_seed(g);
  c.distribution = g.attr_string("distribution");
  check_name(g.where(), "attribute distribution =", c.distribution);
  c.exercises = g.attr_string("exercises");
  c.linked_case = g.attr_string("linked_case");
  if (!c.linked_case.empty()) check_name(g.where(), "attribute linked_case =", c.linked_case);
  return c;
}

// The case's group under `cases`, its name checked first: it names a reproducer file
// (write_reproducer) and reaches terminals and reports.
h5::Node case_group(const h5::Node& cases, const std::string& name) {
  check_name(cases.where(), "case name", name);
  return cases.group(name);
}

// read_case and read_case_summary: `keep` false leaves the bulk datasets checked and empty.
GoldenCase read_case_parts(const h5::Node& cases, const std::string& name, bool with_diagnostics, bool keep) {
  const h5::Node g = case_group(cases, name);
  GoldenCase c = read_case_attrs(g, name);
  if (c.kind == CaseKind::writer) {
    c.w = read_writer(g, c.format, keep);
  } else {
    c.d = read_decode(g, c.format, with_diagnostics, keep);
    c.d.p.threshold = c.threshold;
  }
  if (g.has_attr("pool_layout")) c.sparse = read_sparse_pool(g, c);
  // Every SPEC range and buffer extent, before any backend sees the case (docs/bad-input.md).
  const std::string why = keep ? common::check_case(c) : common::check_case_contents(c);
  if (!why.empty()) throw BadCase(g.where() + ": " + why);
  return c;
}

}  // namespace

GoldenCase read_case(const h5::Node& cases, const std::string& name, bool with_diagnostics) {
  return read_case_parts(cases, name, with_diagnostics, true);
}

GoldenCase read_case_summary(const h5::Node& cases, const std::string& name) {
  return read_case_parts(cases, name, false, false);
}

GoldenCase read_case_header(const h5::Node& cases, const std::string& name, bool* pooled) {
  const h5::Node g = case_group(cases, name);
  GoldenCase c = read_case_attrs(g, name);
  if (c.kind == CaseKind::writer) {
    c.w = read_writer_params(g, c.format);
  } else {
    c.d = read_decode_params(g, c.format);
    c.d.p.threshold = c.threshold;
  }
  *pooled = g.has_attr("pool_layout");
  return c;
}

void check_case_memory(const h5::Node& root) {
  std::vector<std::string> names;
  try {
    names = root.group("cases").children();
  } catch (const std::exception&) {
    return;  // no readable /cases: read_case's callers report it
  }
  const h5::Node cases = root.group("cases");
  for (const std::string& name : names) {
    std::optional<h5::Node> g;
    uint64_t bytes = 0, blocks = 0;
    try {  // as read_case reads them; a case they refuse is the reader's to report, if it reads it
      g.emplace(cases.group(name));
      const std::string kind = g->attr_string("kind");
      Format f;
      if ((kind != "writer" && kind != "decode") || !parse_format(g->attr_string("format"), &f)) continue;
      if (kind == "writer") {
        const WriterCase w = read_writer_params(*g, f);
        bytes = writer_bytes(w), blocks = w.num_blocks;
      } else {
        const DecodeCase d = read_decode_params(*g, f);
        bytes = decode_bytes(d, false), blocks = d.num_blocks;
      }
    } catch (const std::exception&) {
      continue;
    }
    check_budget(*g, bytes, blocks);
  }
}

h5::Node open_golden_file(const std::string& path) { return h5::Node::open_file(path, check_case_memory); }

std::string write_reproducer(const std::string& dir, const std::string& source,
                             const Provenance& prov, const GoldenCase& c) {
  // The case name passed name_problem() when the case was read: no separator, no "..".
  const std::string path = (dir.empty() ? std::string(".") : dir) + "/" + c.name + ".h5";
  Provenance p = prov;
  p.reproducer_of = source;
  h5::write_file_atomic(path, [&](const h5::Node& root) {
    write_provenance(root, p);
    write_case(root.create_group("cases"), c);
  });
  return path;
}

}  // namespace tqref::golden
