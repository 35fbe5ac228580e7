#include "capi_call.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "io/ex2_profile_io.h"
#include "io/report_doc.h"
#include "io/hdf5_util.h"

namespace tqref::capi {

namespace {
thread_local std::string g_last_error;
}

void set_error(const std::string& msg) { g_last_error = msg; }
const std::string& last_error() { return g_last_error; }

// Bad parameters (the model's std::invalid_argument, the EX2 unit's domain_error) are the
// caller's to fix; file problems are the file's; the rest is ours.
int status_of_current_exception() {
  try {
    throw;
  } catch (const golden::BadCase& e) {
    set_error(e.what());
    return TQREF_BAD_FILE;
  } catch (const h5::Error& e) {
    set_error(e.what());
    return TQREF_BAD_FILE;
  } catch (const Ex2ProfileError& e) {
    set_error(e.what());
    return TQREF_BAD_FILE;
  } catch (const std::invalid_argument& e) {
    set_error(e.what());
    return TQREF_BAD_ARGUMENT;
  } catch (const std::domain_error& e) {
    set_error(e.what());
    return TQREF_BAD_ARGUMENT;
  } catch (const std::bad_alloc&) {
    set_error("out of memory");
    return TQREF_INTERNAL;
  } catch (const std::exception& e) {
    set_error(e.what());
    return TQREF_INTERNAL;
  } catch (...) {
    set_error("unknown C++ exception");
    return TQREF_INTERNAL;
  }
}

std::mutex& hdf5_lock() {
  static std::mutex m;
  return m;
}

char* c_string(const std::string& s) {
  char* r = static_cast<char*>(std::malloc(s.size() + 1));
  if (!r) throw std::bad_alloc();
  std::memcpy(r, s.c_str(), s.size() + 1);
  return r;
}

void require(const void* p, const char* name) {
  if (!p) throw BadArgument(std::string(name) + " = NULL; allowed: a valid pointer");
}

Format format_of(int code) {
  if (code < 0 || code >= kNumFormats)
  {
    std::string allowed;
    for (int i = 0; i < kNumFormats; ++i)
      allowed += (i ? ", " : "") + std::to_string(i) + " (" + kFormats[i].name + ")";
    throw BadArgument("format = " + std::to_string(code) + "; allowed: " + allowed);
  }
  return kFormats[code].format;
}

WriterParams writer_params(const tqref_writer_params* c) {
  require(c, "params");
  WriterParams p;
  p.num_kv_heads = c->num_kv_heads;
  p.head_dim = c->head_dim;
  p.block_size = c->block_size;
  p.key_stride = c->key_stride;
  p.value_stride = c->value_stride;
  p.k_block_stride_bytes = c->k_block_stride_bytes;
  p.v_block_stride_bytes = c->v_block_stride_bytes;
  p.v_data_section_bytes = c->v_data_section_bytes;
  return p;
}

DecodeParams decode_params(const tqref_decode_params* c) {
  require(c, "params");
  DecodeParams p;
  p.max_blocks_per_seq = c->max_blocks_per_seq;
  p.num_q_heads = c->num_q_heads;
  p.num_kv_heads = c->num_kv_heads;
  p.head_dim = c->head_dim;
  p.block_size = c->block_size;
  p.inv_sqrt_d = c->inv_sqrt_d;
  p.q_stride = c->q_stride;
  p.v_block_stride_bytes = c->v_block_stride_bytes;
  p.v_data_section_bytes = c->v_data_section_bytes;
  p.sliding_window = c->sliding_window;
  p.num_seqs = c->num_seqs;
  p.hdim = c->hdim;
  p.threshold = c->threshold;
  return p;
}

std::string float_str(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

namespace {

int dtype_code(golden::ElemType t) {
  switch (t) {
    case golden::ElemType::u8: return TQREF_U8;
    case golden::ElemType::u16: return TQREF_U16;
    case golden::ElemType::u32: return TQREF_U32;
    case golden::ElemType::u64: return TQREF_U64;
    case golden::ElemType::i32: return TQREF_I32;
    case golden::ElemType::i64: return TQREF_I64;
    case golden::ElemType::f32: return TQREF_F32;
    case golden::ElemType::f64: return TQREF_F64;
  }
  return 0;
}

// Written by hand, not through report::Json: NaN and +-Infinity go out as the tokens Python's json
// reads (a case attribute may hold them), which a strict JSON writer turns into null.
std::string attr_json(const golden::CaseAttrValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return report::json_line(*s);
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) return "NaN";
    if (std::isinf(*d)) return *d > 0 ? "Infinity" : "-Infinity";
    return report::json_line(*d);  // the shortest text that round-trips a binary64
  }
  return report::json_line(std::get<std::vector<int64_t>>(v));
}

}  // namespace

void index_case(tqref_case& h, const std::vector<golden::CaseAttr>* attrs) {
  h.arrays.clear();
  for (const golden::CaseDataset& d : golden::case_datasets(h.c)) {
    uint64_t n = 1;
    for (uint64_t e : d.shape) n *= e;
    // A case the judge derived (level I variants) carries no diagnostics: only what it holds
    // is handed out, so no view reaches past a vector's end.
    if (n == d.count) h.arrays.push_back({d.group + "/" + d.name, dtype_code(d.type), d.shape, d.data, d.encoding});
  }
  h.launch = judge::launch_buffers(h.c);
  std::string j = "{\"name\":" + report::json_line(h.c.name);
  const std::vector<golden::CaseAttr> own = attrs ? std::vector<golden::CaseAttr>{} : golden::case_attributes(h.c);
  for (const golden::CaseAttr& a : attrs ? *attrs : own) {
    j += ',';
    j += report::json_line(a.name);
    j += ':';
    j += attr_json(a.value);
  }
  h.attrs_json = j + "}";
}

}  // namespace tqref::capi
