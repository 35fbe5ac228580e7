// Golden files behind the C ABI: suite lookup, reading cases (their attributes and datasets by
// the schema's names, case_io.h), the launch buffers a harness uploads, guard bands, new cases
// from a user's arrays (expectations by the model) and writing them as a replayable file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "capi_call.h"
#include "io/atomic_output.h"
#include "io/case_checks.h"
#include "cases/finish_decode.h"
#include "io/data_dir.h"
#include "io/report_doc.h"
#include "judge/backend.h"
#include "judge/ex2_for_file.h"
#include "tqref/build_info.h"
#include "tqref/contract.h"
#include "tqref/reference.h"

using namespace tqref;
using tqref::capi::c_call;
using tqref::capi::require;

namespace {

report::Json provenance_json(const golden::Provenance& p) {
  return {{"schema_version", p.schema_version},
          {"tqref_version", p.tqref_version},
          {"git_commit", p.git_commit},
          {"seed", p.seed},
          {"rng", p.rng},
          {"threshold", report::json_number(p.threshold, "%f")},
          {"ex2_profile_id", p.ex2_profile_id},
          {"command_line", p.command_line},
          {"suite", p.suite},
          {"shard", p.shard},
          {"config_yaml", p.config_yaml},
          {"reproducer_of", p.reproducer_of}};
}

template <class T>
std::vector<T> copy_of(const T* p, uint64_t n, const char* name) {
  std::span<const T> s = capi::span_of(p, n, name);
  return std::vector<T>(s.begin(), s.end());
}

// Whole blocks of a pool of `bytes` bytes with blocks of `block_bytes`: the pool must be exactly
// that many blocks, so the file's num_blocks describes both pools.
uint32_t blocks_of(uint64_t bytes, uint64_t block_bytes, const char* name) {
  if (block_bytes == 0 || bytes == 0 || bytes % block_bytes != 0 || bytes / block_bytes > UINT32_MAX)
    throw capi::BadArgument(std::string(name) + " holds " + std::to_string(bytes) +
                            " bytes; allowed: a positive whole number of blocks of " +
                            std::to_string(block_bytes) + " bytes");
  return uint32_t(bytes / block_bytes);
}

// num_blocks of a user's K and V pools (parameters already checked): both whole, and equal.
uint32_t pool_blocks_of(const CacheGeometry& g, uint64_t k_bytes, uint64_t v_bytes) {
  const uint32_t nb = blocks_of(k_bytes, g.k_block_bytes(), "k_cache");
  if (blocks_of(v_bytes, g.v_block_stride_bytes, "v_cache") != nb)
    throw capi::BadArgument("v_cache holds " + std::to_string(v_bytes / g.v_block_stride_bytes) +
                            " blocks; allowed: as many as k_cache (" + std::to_string(nb) + ")");
  return nb;
}

tqref_case* new_case(golden::GoldenCase c) {
  if (const std::string why = common::check_case(c); !why.empty()) throw capi::BadArgument(why);
  auto h = std::make_unique<tqref_case>();
  h->c = std::move(c);
  capi::index_case(*h);
  return h.release();
}

golden::GoldenCase base_case(int format, const char* name, golden::CaseKind kind) {
  require(name, "name");
  golden::GoldenCase c;
  c.name = name;
  if (c.name.empty() || c.name.find('/') != std::string::npos || c.name == "." || c.name == "..")
    throw capi::BadArgument("name = '" + c.name + "'; allowed: a non-empty HDF5 group name without '/'");
  c.kind = kind;
  c.format = capi::format_of(format);
  c.distribution = "user";
  c.exercises = "user case (tqref.write_golden)";
  return c;
}

// The decode case's model outputs: expected output and diagnostics from one run, and the fp64
// references (the unquantised one NaN when the writer's bf16 V is not known).
void finish_user_decode(golden::GoldenCase& c, const std::vector<uint16_t>& v_values,
                        const Ex2Profile& ex2) {
  golden::DecodeCase& d = c.d;
  DecodeDiagnostics diag;
  d.out_expected = d.out_init;
  paged_decode_model(c.format, d.q, d.k_init, d.v_init, d.out_expected, d.block_tables, d.seq_lens,
                     d.p, ex2, &diag);
  golden::DecodeDiagData& x = d.diag;
  cases::DecodeStats stats;
  cases::store_diagnostics(diag, d.p.head_dim, x, stats);
  x.ref_dequantised = reference_attention(c.format, d.q, d.k_init, d.v_init, v_values,
                                          d.block_tables, d.seq_lens, d.p, ReferenceV::dequantised);
  if (v_values.empty())
    x.ref_unquantised.assign(x.ref_dequantised.size(), std::nan(""));
  else
    x.ref_unquantised = reference_attention(c.format, d.q, d.k_init, d.v_init, v_values,
                                            d.block_tables, d.seq_lens, d.p, ReferenceV::unquantised);
}

}  // namespace

extern "C" {

int tqref_find_suite(const char* item, char** json) {
  return c_call([&] {
    require(item, "item");
    require(json, "json");
    // A name (smoke, standard, real, models, ...) is golden/<name>.h5 under the data folders
    // (io/data_dir.h, the one search policy); a path (with '/' or ending in .h5) is taken as given.
    const std::string s = item;
    const bool path = s.find('/') != std::string::npos ||
                      (s.size() > 3 && s.compare(s.size() - 3, 3, ".h5") == 0);
    const std::vector<std::string> looked = path ? std::vector<std::string>{s}
                                                 : data_file_candidates("golden/" + s + ".h5");
    std::string found;
    for (const std::string& p : looked) {
      std::error_code ec;
      if (found.empty() && std::filesystem::is_regular_file(p, ec)) found = p;
    }
    *json = capi::c_string(report::json_line({{"name", s}, {"path", found}, {"looked_in", looked}}));
  });
}

int tqref_golden_open(const char* path, tqref_file** out) {
  if (out) *out = nullptr;
  return c_call([&] {
    require(path, "path");
    require(out, "out");
    std::lock_guard<std::mutex> lock(capi::hdf5_lock());
    h5::Node root = golden::open_golden_file(path);
    golden::Provenance prov = golden::read_provenance(root);
    std::vector<std::string> names = root.group("cases").children();
    *out = new tqref_file{path, std::move(root), std::move(prov), std::move(names)};
  });
}

int tqref_golden_info(const tqref_file* f, char** json) {
  return c_call([&] {
    require(f, "file");
    require(json, "json");
    std::lock_guard<std::mutex> lock(capi::hdf5_lock());
    const h5::Node cases = f->root.group("cases");
    report::Json list = report::Json::array();
    for (const std::string& name : f->case_names) {
      const h5::Node g = cases.group(name);
      list.push_back({{"name", name},
                      {"kind", g.attr_string("kind")},
                      {"format", g.attr_string("format")},
                      {"kernel", g.attr_string("kernel")},
                      {"hdim", g.attr_int("hdim")}});
    }
    *json = capi::c_string(
        report::json_line({{"path", f->path}, {"provenance", provenance_json(f->prov)}, {"cases", std::move(list)}}));
  });
}

void tqref_golden_close(tqref_file* f) {
  if (!f) return;
  std::lock_guard<std::mutex> lock(capi::hdf5_lock());
  delete f;
}

int tqref_ex2_for_golden(const tqref_file* f, tqref_ex2** out) {
  if (out) *out = nullptr;
  return c_call([&] {
    require(f, "file");
    require(out, "out");
    std::lock_guard<std::mutex> lock(capi::hdf5_lock());
    std::optional<Ex2Profile> p = judge::ex2_for_file(f->prov, f->path);
    if (p) *out = new tqref_ex2{std::move(*p)};
  });
}

int tqref_case_read(const tqref_file* f, const char* name, int with_diagnostics, tqref_case** out) {
  if (out) *out = nullptr;
  return c_call([&] {
    require(f, "file");
    require(name, "name");
    require(out, "out");
    auto h = std::make_unique<tqref_case>();
    std::vector<golden::CaseAttr> attrs;
    {
      std::lock_guard<std::mutex> lock(capi::hdf5_lock());
      const h5::Node cases = f->root.group("cases");
      h->c = golden::read_case(cases, name, with_diagnostics != 0);
      const h5::Node g = cases.group(name);
      for (const std::string& a : g.attr_names()) attrs.push_back({a, g.attr_value(a)});
    }
    capi::index_case(*h, &attrs);
    *out = h.release();
  });
}

void tqref_case_free(tqref_case* c) { delete c; }

int tqref_case_attrs(const tqref_case* c, char** json) {
  return c_call([&] {
    require(c, "case");
    require(json, "json");
    *json = capi::c_string(c->attrs_json);
  });
}

int tqref_case_array_count(const tqref_case* c) { return c ? int(c->arrays.size()) : 0; }

int tqref_case_array(const tqref_case* c, int i, const char** name, int* dtype, int* ndim,
                     uint64_t shape[4], const void** data, const char** encoding) {
  return c_call([&] {
    require(c, "case");
    if (i < 0 || size_t(i) >= c->arrays.size())
      throw capi::BadArgument("i = " + std::to_string(i) + "; allowed: 0 .. " +
                              std::to_string(int(c->arrays.size()) - 1));
    const CaseArray& a = c->arrays[size_t(i)];
    *name = a.name.c_str();
    *dtype = a.dtype;
    *ndim = int(a.shape.size());
    for (size_t k = 0; k < 4; ++k) shape[k] = k < a.shape.size() ? a.shape[k] : 0;
    *data = a.data;
    *encoding = a.encoding.c_str();
  });
}

int tqref_case_launch_count(const tqref_case* c) { return c ? int(c->launch.size()) : 0; }

int tqref_case_launch_buffer(const tqref_case* c, int i, const char** name, const uint8_t** data,
                             uint64_t* bytes, int* is_output) {
  return c_call([&] {
    require(c, "case");
    if (i < 0 || size_t(i) >= c->launch.size())
      throw capi::BadArgument("i = " + std::to_string(i) + "; allowed: 0 .. " +
                              std::to_string(int(c->launch.size()) - 1));
    const judge::LaunchBuffer& b = c->launch[size_t(i)];
    *name = b.name.c_str();
    *data = b.bytes.data();
    *bytes = b.bytes.size();
    *is_output = b.output ? 1 : 0;
  });
}

uint64_t tqref_guard_bytes(void) { return judge::kGuardBytes; }

void tqref_guard_fill(uint8_t* band, uint64_t n) {
  if (!band) return;
  for (uint64_t i = 0; i < n; ++i) band[i] = judge::guard_byte(i);
}

int tqref_case_make_writer(int format, const char* name, const uint16_t* key, uint64_t key_elems,
                           const uint16_t* value, uint64_t value_elems, const uint8_t* k_cache,
                           uint64_t k_cache_bytes, const uint8_t* v_cache, uint64_t v_cache_bytes,
                           const int64_t* slot_mapping, uint64_t num_tokens,
                           const tqref_writer_params* p, tqref_case** out) {
  if (out) *out = nullptr;
  return c_call([&] {
    require(out, "out");
    golden::GoldenCase c = base_case(format, name, golden::CaseKind::writer);
    golden::WriterCase& w = c.w;
    w.p = capi::writer_params(p);
    require("tqref_case_make_writer", check_writer_params(c.format, w.p));
    w.num_blocks = pool_blocks_of({w.p.num_kv_heads, w.p.head_dim, w.p.block_size, 0,
                                   w.p.v_block_stride_bytes, w.p.v_data_section_bytes},
                                  k_cache_bytes, v_cache_bytes);
    if (num_tokens > UINT32_MAX) throw capi::BadArgument("num_tokens = " + std::to_string(num_tokens) + "; allowed: < 2^32");
    w.num_tokens = uint32_t(num_tokens);
    w.key = copy_of(key, key_elems, "key");
    w.value = copy_of(value, value_elems, "value");
    w.slot_mapping = copy_of(slot_mapping, num_tokens, "slot_mapping");
    w.k_init = copy_of(k_cache, k_cache_bytes, "k_cache");
    w.v_init = copy_of(v_cache, v_cache_bytes, "v_cache");
    w.k_expected = w.k_init;
    w.v_expected = w.v_init;
    reshape_and_cache_model(c.format, w.key, w.value, w.k_expected, w.v_expected, w.slot_mapping, w.p);
    *out = new_case(std::move(c));
  });
}

int tqref_case_make_decode(int format, const char* name, const uint16_t* q, uint64_t q_elems,
                           const uint8_t* k_cache, uint64_t k_cache_bytes, const uint8_t* v_cache,
                           uint64_t v_cache_bytes, const uint16_t* output_init,
                           uint64_t output_elems, const int32_t* block_tables,
                           uint64_t block_tables_elems, const int32_t* seq_lens,
                           uint64_t seq_lens_elems, const uint16_t* v_values,
                           uint64_t v_values_elems, const tqref_decode_params* params,
                           const tqref_ex2* ex2, tqref_case** out) {
  if (out) *out = nullptr;
  return c_call([&] {
    require(out, "out");
    require(ex2, "ex2 (an EX2 profile)");
    golden::GoldenCase c = base_case(format, name, golden::CaseKind::decode);
    golden::DecodeCase& d = c.d;
    d.p = capi::decode_params(params);
    c.threshold = d.p.threshold;
    require("tqref_case_make_decode", check_decode_params(c.format, d.p));
    const CacheGeometry g{d.p.num_kv_heads, d.p.head_dim, d.p.block_size, 0,
                          d.p.v_block_stride_bytes, d.p.v_data_section_bytes};
    d.num_blocks = pool_blocks_of(g, k_cache_bytes, v_cache_bytes);
    d.q = copy_of(q, q_elems, "q");
    d.block_tables = copy_of(block_tables, block_tables_elems, "block_tables");
    d.seq_lens = copy_of(seq_lens, seq_lens_elems, "seq_lens");
    d.k_init = copy_of(k_cache, k_cache_bytes, "k_cache");
    d.v_init = copy_of(v_cache, v_cache_bytes, "v_cache");
    const uint64_t out_n = uint64_t(d.p.num_seqs) * d.p.num_q_heads * d.p.head_dim;
    if (output_init) {
      if (output_elems != out_n)
        throw capi::BadArgument("output holds " + std::to_string(output_elems) +
                                " elements; allowed: num_seqs*num_q_heads*head_dim = " + std::to_string(out_n));
      d.out_init = copy_of(output_init, output_elems, "output");
    } else {
      d.out_init.assign(out_n, 0xFFFF);  // the generator's background: a NaN no kernel writes
    }
    if (v_values && v_values_elems != uint64_t(d.num_blocks) * d.p.block_size * g.elems_per_token())
      throw capi::BadArgument("v_values holds " + std::to_string(v_values_elems) +
                              " elements; allowed: like the K pool, num_blocks*block_size*num_kv_heads*head_dim = " +
                              std::to_string(uint64_t(d.num_blocks) * d.p.block_size * g.elems_per_token()));
    const std::vector<uint16_t> vv = v_values ? copy_of(v_values, v_values_elems, "v_values")
                                              : std::vector<uint16_t>{};
    d.out_expected = d.out_init;  // the launch checks look at the output buffer's size
    if (const std::string why = common::check_case(c); !why.empty()) throw capi::BadArgument(why);
    finish_user_decode(c, vv, ex2->profile);
    *out = new_case(std::move(c));
  });
}

int tqref_golden_write(const char* path, const tqref_case* const* cases, int n,
                       const tqref_ex2* ex2, const char* command_line) {
  return c_call([&] {
    require(path, "path");
    if (n < 1) throw capi::BadArgument("n = " + std::to_string(n) + "; allowed: >= 1 case");
    require(cases, "cases");
    golden::Provenance prov;
    prov.tqref_version = kVersion;
    prov.git_commit = kGitCommit;
    prov.suite = "user";
    prov.shard = "0/1";
    prov.command_line = command_line ? command_line : "";
    prov.threshold = kSparseVThreshold;
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) {
      require(cases[i], "cases[i]");
      const golden::GoldenCase& c = cases[i]->c;
      if (std::find(names.begin(), names.end(), c.name) != names.end())
        throw capi::BadArgument("cases[" + std::to_string(i) + "].name = '" + c.name + "' repeats; allowed: distinct names");
      names.push_back(c.name);
      if (c.kind == golden::CaseKind::decode) {
        require(ex2, "ex2 (the profile of the decode cases)");
        prov.ex2_profile_id = ex2->profile.id();
        prov.threshold = c.threshold;
        if (c.d.diag.out_f32.empty())
          throw capi::BadArgument("cases[" + std::to_string(i) + "] ('" + c.name +
                                  "') was read without diagnostics; allowed: a case with them");
      }
    }
    std::lock_guard<std::mutex> lock(capi::hdf5_lock());
    common::AtomicOutput output(path);  // nothing at `path` unless the whole file is written
    {
      h5::Node root = h5::Node::create_file(output.temp_path());
      golden::write_provenance(root, prov);
      const h5::Node g = root.create_group("cases");
      for (int i = 0; i < n; ++i) golden::write_case(g, cases[i]->c);
    }
    output.commit();
  });
}

}  // extern "C"
