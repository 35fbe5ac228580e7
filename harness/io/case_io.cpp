#include "io/case_io.h"

#include <cstdio>
#include <cstring>

#include "io/atomic_output.h"
#include "io/case_checks.h"
#include "tqref/numeric.h"

namespace tqref::golden {

namespace {

// K pool bytes <-> bf16 elements (little-endian, as on the GPU).
std::vector<uint16_t> bytes_to_u16(const std::vector<uint8_t>& b) {
  std::vector<uint16_t> v(b.size() / 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = uint16_t(b[2 * i] | (b[2 * i + 1] << 8));
  return v;
}
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
// A float parameter is stored twice: as a readable double and as its exact binary32 bits; the
// bits are authoritative.
void set_float_attr(const h5::Node& n, const std::string& name, float v) {
  n.set_attr(name, double(v));
  n.set_attr(name + "_bits", int64_t(f32_bits(v)));
}
float get_float_attr(const h5::Node& n, const std::string& name) {
  return f32_from_bits(uint32_t(n.attr_int(name + "_bits")));
}

template <class T>
std::vector<T> read_shaped(const h5::Node& g, const std::string& name, std::vector<uint64_t> shape) {
  return g.read<T>(name, &shape);
}

// Attribute ranges are storage limits only (a dimension up to 2^30; num_blocks and num_seqs at
// least 1, since a golden case has both); the contract's rules come after, from check_*_params.
constexpr uint32_t kMaxDim = 1u << 30;

void write_writer(const h5::Node& g, const GoldenCase& c) {
  const WriterCase& w = c.w;
  const WriterParams& p = w.p;
  g.set_attr("hdim", int64_t(p.head_dim));
  g.set_attr("num_kv_heads", int64_t(p.num_kv_heads));
  g.set_attr("head_dim", int64_t(p.head_dim));
  g.set_attr("block_size", int64_t(p.block_size));
  g.set_attr("key_stride", int64_t(p.key_stride));
  g.set_attr("value_stride", int64_t(p.value_stride));
  g.set_attr("k_block_stride_bytes", int64_t(p.k_block_stride_bytes));
  g.set_attr("v_block_stride_bytes", int64_t(p.v_block_stride_bytes));
  g.set_attr("v_data_section_bytes", int64_t(p.v_data_section_bytes));
  g.set_attr("num_tokens", int64_t(w.num_tokens));
  g.set_attr("num_blocks", int64_t(w.num_blocks));
  g.set_attr("grid", std::vector<int64_t>{w.num_tokens, 1, 1});
  g.set_attr("block", std::vector<int64_t>{kThreadsPerBlock, 1, 1});
  const uint64_t T = w.num_tokens, B = p.block_size, H = p.num_kv_heads, D = p.head_dim;
  const uint64_t NB = w.num_blocks, VS = p.v_block_stride_bytes;
  h5::Node in = g.create_group("inputs"), init = g.create_group("initial"),
           ex = g.create_group("expected");
  in.write("key", w.key, {T, p.key_stride}, "bf16");
  in.write("value", w.value, {T, p.value_stride}, "bf16");
  in.write("slot_mapping", w.slot_mapping, {T});
  init.write("k_cache", bytes_to_u16(w.k_init), {NB, B, H, D}, "bf16");
  init.write("v_cache", w.v_init, {NB, VS}, pool_encoding(c.format));
  ex.write("k_cache", bytes_to_u16(w.k_expected), {NB, B, H, D}, "bf16");
  ex.write("v_cache", w.v_expected, {NB, VS}, pool_encoding(c.format));
}

void write_decode(const h5::Node& g, const GoldenCase& c) {
  const DecodeCase& d = c.d;
  const DecodeParams& p = d.p;
  g.set_attr("hdim", int64_t(p.hdim));
  g.set_attr("max_blocks_per_seq", int64_t(p.max_blocks_per_seq));
  g.set_attr("num_q_heads", int64_t(p.num_q_heads));
  g.set_attr("num_kv_heads", int64_t(p.num_kv_heads));
  g.set_attr("head_dim", int64_t(p.head_dim));
  g.set_attr("block_size", int64_t(p.block_size));
  set_float_attr(g, "inv_sqrt_d", p.inv_sqrt_d);
  g.set_attr("q_stride", int64_t(p.q_stride));
  g.set_attr("v_block_stride_bytes", int64_t(p.v_block_stride_bytes));
  g.set_attr("v_data_section_bytes", int64_t(p.v_data_section_bytes));
  g.set_attr("sliding_window", int64_t(p.sliding_window));
  g.set_attr("num_seqs", int64_t(p.num_seqs));
  g.set_attr("num_blocks", int64_t(d.num_blocks));
  g.set_attr("grid", std::vector<int64_t>{p.num_q_heads, p.num_seqs, 1});
  g.set_attr("block", std::vector<int64_t>{kThreadsPerBlock, 1, 1});
  const uint64_t S = p.num_seqs, QH = p.num_q_heads, B = p.block_size, H = p.num_kv_heads,
                 D = p.head_dim, NB = d.num_blocks;
  h5::Node in = g.create_group("inputs"), init = g.create_group("initial"),
           ex = g.create_group("expected"), dg = g.create_group("diagnostics");
  in.write("q", d.q, {S, p.q_stride}, "bf16");
  in.write("block_tables", d.block_tables, {S, p.max_blocks_per_seq});
  in.write("seq_lens", d.seq_lens, {S});
  init.write("k_cache", bytes_to_u16(d.k_init), {NB, B, H, D}, "bf16");
  init.write("v_cache", d.v_init, {NB, p.v_block_stride_bytes}, pool_encoding(c.format));
  init.write("output", d.out_init, {S, QH, D}, "bf16");
  ex.write("output", d.out_expected, {S, QH, D}, "bf16");
  const DecodeDiagData& x = d.diag;
  dg.write("skip_offsets", x.skip_offsets, {S * QH + 1});
  dg.write("skip_mask", x.skip_mask, {uint64_t(x.skip_mask.size())}, "mask");
  dg.write("skip_count", x.skip_count, {S, QH});
  dg.write("m", x.m, {S, QH});
  dg.write("l", x.l, {S, QH});
  dg.write("output_f32", x.out_f32, {S, QH, D});
  dg.write("reference_dequantised_v", x.ref_dequantised, {S, QH, D});
  dg.write("reference_unquantised_v", x.ref_unquantised, {S, QH, D});
}

WriterCase read_writer(const h5::Node& g, Format f) {
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
  // Parameters first (the contract's rules, tqref/contract.h): the dataset shapes below are
  // computed from them.
  if (const std::string why = common::check_writer_params(f, w); !why.empty())
    throw BadCase(g.where() + ": " + why);
  const uint64_t T = w.num_tokens, B = p.block_size, H = p.num_kv_heads, D = p.head_dim,
                 NB = w.num_blocks;
  h5::Node in = g.group("inputs"), init = g.group("initial"), ex = g.group("expected");
  w.key = read_shaped<uint16_t>(in, "key", {T, p.key_stride});
  w.value = read_shaped<uint16_t>(in, "value", {T, p.value_stride});
  w.slot_mapping = read_shaped<int64_t>(in, "slot_mapping", {T});
  w.k_init = u16_to_bytes(read_shaped<uint16_t>(init, "k_cache", {NB, B, H, D}));
  w.v_init = read_shaped<uint8_t>(init, "v_cache", {NB, p.v_block_stride_bytes});
  w.k_expected = u16_to_bytes(read_shaped<uint16_t>(ex, "k_cache", {NB, B, H, D}));
  w.v_expected = read_shaped<uint8_t>(ex, "v_cache", {NB, p.v_block_stride_bytes});
  return w;
}

DecodeCase read_decode(const h5::Node& g, Format f, bool with_diag) {
  DecodeCase d;
  DecodeParams& p = d.p;
  p.hdim = attr_u32(g, "hdim", 0, UINT32_MAX);
  p.max_blocks_per_seq = attr_u32(g, "max_blocks_per_seq", 0, kMaxDim);
  p.num_q_heads = attr_u32(g, "num_q_heads", 0, 65535);
  p.num_kv_heads = attr_u32(g, "num_kv_heads", 0, kMaxDim);
  p.head_dim = attr_u32(g, "head_dim", 0, kMaxDim);
  p.block_size = attr_u32(g, "block_size", 0, kMaxDim);
  p.inv_sqrt_d = get_float_attr(g, "inv_sqrt_d");
  p.q_stride = attr_u32(g, "q_stride", 0, UINT32_MAX);
  p.v_block_stride_bytes = attr_u64(g, "v_block_stride_bytes");
  p.v_data_section_bytes = attr_u64(g, "v_data_section_bytes");
  p.sliding_window = attr_u32(g, "sliding_window", 0, UINT32_MAX);
  p.num_seqs = attr_u32(g, "num_seqs", 1, 65535);
  d.num_blocks = attr_u32(g, "num_blocks", 1, kMaxDim);
  // Parameters first (the contract's rules, tqref/contract.h): the dataset shapes below are
  // computed from them.
  if (const std::string why = common::check_decode_params(f, d); !why.empty())
    throw BadCase(g.where() + ": " + why);
  const uint64_t S = p.num_seqs, QH = p.num_q_heads, B = p.block_size, H = p.num_kv_heads,
                 D = p.head_dim, NB = d.num_blocks;
  h5::Node in = g.group("inputs"), init = g.group("initial"), ex = g.group("expected");
  d.q = read_shaped<uint16_t>(in, "q", {S, p.q_stride});
  d.block_tables = read_shaped<int32_t>(in, "block_tables", {S, p.max_blocks_per_seq});
  d.seq_lens = read_shaped<int32_t>(in, "seq_lens", {S});
  d.k_init = u16_to_bytes(read_shaped<uint16_t>(init, "k_cache", {NB, B, H, D}));
  d.v_init = read_shaped<uint8_t>(init, "v_cache", {NB, p.v_block_stride_bytes});
  d.out_init = read_shaped<uint16_t>(init, "output", {S, QH, D});
  d.out_expected = read_shaped<uint16_t>(ex, "output", {S, QH, D});
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
  }
  return d;
}

}  // namespace

std::string kernel_name(CaseKind kind, Format f) {
  return std::string(kind == CaseKind::writer ? "reshape_and_cache_flash_bf16k_"
                                              : "paged_decode_attn_bf16k_") +
         traits(f).name;
}
const char* kind_name(CaseKind k) { return k == CaseKind::writer ? "writer" : "decode"; }
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
}

Provenance read_provenance(const h5::Node& r) {
  Provenance p;
  p.schema_version = r.attr_int("schema_version");
  if (p.schema_version != kSchemaVersion)
    throw BadCase(r.where() + ": attribute schema_version = " + std::to_string(p.schema_version) +
                  "; this tqref reads schema version " + std::to_string(kSchemaVersion));
  p.tqref_version = r.attr_string("tqref_version");
  p.git_commit = r.attr_string("git_commit");
  p.seed = uint64_t(r.attr_int("seed"));
  p.rng = r.attr_string("rng");
  p.threshold = r.attr_double("threshold");
  p.ex2_profile_id = r.attr_string("ex2_profile_id");
  p.command_line = r.attr_string("command_line");
  p.suite = r.attr_string("suite");
  p.shard = r.attr_string("shard");
  p.config_yaml = r.attr_string("config_yaml");
  if (r.has_attr("reproducer_of")) p.reproducer_of = r.attr_string("reproducer_of");
  return p;
}

void write_case(const h5::Node& cases, const GoldenCase& c) {
  h5::Node g = cases.create_group(c.name);
  g.set_attr("kernel", kernel_name(c.kind, c.format));
  g.set_attr("format", std::string(traits(c.format).name));
  g.set_attr("kind", std::string(kind_name(c.kind)));
  set_float_attr(g, "threshold", c.threshold);
  g.set_attr("seed", int64_t(c.seed));
  g.set_attr("distribution", c.distribution);
  g.set_attr("exercises", c.exercises);
  g.set_attr("linked_case", c.linked_case);
  if (c.kind == CaseKind::writer) write_writer(g, c);
  else write_decode(g, c);
}

GoldenCase read_case(const h5::Node& cases, const std::string& name, bool with_diagnostics) {
  h5::Node g = cases.group(name);
  GoldenCase c;
  c.name = name;
  const std::string kind = g.attr_string("kind");
  if (kind == "writer") c.kind = CaseKind::writer;
  else if (kind == "decode") c.kind = CaseKind::decode;
  else throw BadCase(g.where() + ": attribute kind = '" + kind + "'; allowed: writer, decode");
  const std::string fmt = g.attr_string("format");
  if (!parse_format(fmt, &c.format))
    throw BadCase(g.where() + ": attribute format = '" + fmt + "'; allowed: turbo2v, turbo3v, turbo4v");
  const std::string kernel = g.attr_string("kernel");
  if (kernel != kernel_name(c.kind, c.format))
    throw BadCase(g.where() + ": attribute kernel = '" + kernel + "' does not match kind " + kind +
                  " and format " + fmt + " (expected '" + kernel_name(c.kind, c.format) + "')");
  c.threshold = get_float_attr(g, "threshold");
  c.seed = uint64_t(g.attr_int("seed"));
  c.distribution = g.attr_string("distribution");
  c.exercises = g.attr_string("exercises");
  c.linked_case = g.attr_string("linked_case");
  if (c.kind == CaseKind::writer) {
    c.w = read_writer(g, c.format);
  } else {
    c.d = read_decode(g, c.format, with_diagnostics);
    c.d.p.threshold = c.threshold;
  }
  // Every SPEC range and buffer extent, before any backend sees the case (docs/reliability.md).
  if (const std::string why = common::check_case(c); !why.empty()) throw BadCase(g.where() + ": " + why);
  return c;
}

std::string write_reproducer(const std::string& dir, const std::string& source,
                             const Provenance& prov, const GoldenCase& c) {
  const std::string path = (dir.empty() ? std::string(".") : dir) + "/" + c.name + ".h5";
  common::AtomicOutput output(path);  // removed on error or interrupt
  Provenance p = prov;
  p.reproducer_of = source;
  {
    h5::Node root = h5::Node::create_file(output.temp_path());
    write_provenance(root, p);
    write_case(root.create_group("cases"), c);
  }
  output.commit();
  return path;
}

}  // namespace tqref::golden
