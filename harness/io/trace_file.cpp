#include "io/trace_file.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <unistd.h>

#include "io/hdf5_util.h"
#include "io/text_escape.h"

namespace tqref::trace {

namespace {

// Optional string attributes that read_trace carries back (root, then per sequence).
const char* const kRootOptional[] = {"checkpoint_sha256", "tokenizer_sha256", "tqref_version",
                                     "tqref_commit", "rope", "norm", "command", "source"};
const char* const kSeqOptional[] = {"prompt", "generated_text", "stop_reason"};

constexpr int kMaxLayers = 4096, kMaxHeads = 4096, kMaxHeadDim = 4096;
constexpr int64_t kMaxTokens = int64_t(1) << 24;

std::string layer_name(int l) { return "layer_" + std::to_string(l); }

// Runs f, turning an exception into a recorded problem; returns whether f succeeded.
template <class F>
bool guard(std::vector<std::string>& problems, F&& f) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    problems.push_back(e.what());
    return false;
  }
}

void check_shapes(const Trace& t) {
  const TraceMeta& m = t.meta;
  if (m.num_layers < 1 || m.num_q_heads < 1 || m.num_kv_heads < 1 || m.head_dim < 1 ||
      m.num_q_heads % m.num_kv_heads != 0)
    throw std::invalid_argument("write_trace: bad geometry (layers, q heads, kv heads, head_dim)");
  for (const TraceSequence& s : t.sequences) {
    size_t T = size_t(s.num_tokens);
    size_t nq = T * size_t(m.num_q_heads) * size_t(m.head_dim);
    size_t nkv = T * size_t(m.num_kv_heads) * size_t(m.head_dim);
    bool ok = s.num_tokens >= 1 && s.q.size() == size_t(m.num_layers) &&
              s.k.size() == s.q.size() && s.v.size() == s.q.size() &&
              (s.token_ids.empty() || s.token_ids.size() == T);
    for (size_t l = 0; ok && l < s.q.size(); ++l)
      ok = s.q[l].size() == nq && s.k[l].size() == nkv && s.v[l].size() == nkv;
    if (!ok)
      throw std::invalid_argument("write_trace: sequence '" + s.name +
                                  "' arrays do not match T = " + std::to_string(T) +
                                  " and the trace geometry");
  }
}

// bf16 content checks of one dataset: finite everywhere and not all zero.
void check_values(std::vector<std::string>& problems, const std::string& where,
                  const std::vector<uint16_t>& bits, int heads, int dim) {
  bool any_nonzero = false;
  for (size_t i = 0; i < bits.size(); ++i) {
    if ((bits[i] & 0x7F80u) == 0x7F80u) {
      size_t row = i / size_t(heads * dim), h = i / size_t(dim) % size_t(heads), d = i % size_t(dim);
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%04X", bits[i]);
      problems.push_back(where + ": bf16 " + hex + " (NaN or Inf) at [" + std::to_string(row) +
                         ", " + std::to_string(h) + ", " + std::to_string(d) +
                         "]; a trace must hold finite values");
      return;
    }
    any_nonzero = any_nonzero || (bits[i] & 0x7FFFu) != 0;
  }
  if (!any_nonzero)
    problems.push_back(where + ": every value is zero; the dump wrote nothing");
}

}  // namespace

void write_trace(const std::string& path, const Trace& t) {
  check_shapes(t);
  const TraceMeta& m = t.meta;
  h5::write_file_atomic(path, [&](const h5::Node& f) {
    f.set_attr("schema", std::string(kTraceSchema));
    f.set_attr("schema_version", int64_t(kTraceSchemaVersion));
    f.set_attr("model_name", m.model_name);
    f.set_attr("producer", m.producer);
    f.set_attr("num_layers", int64_t(m.num_layers));
    f.set_attr("num_q_heads", int64_t(m.num_q_heads));
    f.set_attr("num_kv_heads", int64_t(m.num_kv_heads));
    f.set_attr("head_dim", int64_t(m.head_dim));
    f.set_attr("attn_scale", m.attn_scale);
    f.set_attr("encoding", std::string("bf16"));
    for (const auto& [k, v] : m.provenance) f.set_attr(k, v);
    h5::Node seqs = f.create_group("sequences");
    for (const TraceSequence& s : t.sequences) {
      h5::Node g = seqs.create_group(s.name);
      uint64_t T = uint64_t(s.num_tokens);
      g.set_attr("num_tokens", int64_t(s.num_tokens));
      if (s.prompt_tokens >= 0) g.set_attr("prompt_tokens", int64_t(s.prompt_tokens));
      for (const auto& [k, v] : s.attrs) g.set_attr(k, v);
      if (!s.token_ids.empty()) g.write("token_ids", s.token_ids, {T});
      for (int l = 0; l < m.num_layers; ++l) {
        h5::Node lg = g.create_group(layer_name(l));
        uint64_t hq = uint64_t(m.num_q_heads), hkv = uint64_t(m.num_kv_heads), d = uint64_t(m.head_dim);
        lg.write("q", s.q[size_t(l)], {T, hq, d}, "bf16");
        lg.write("k", s.k[size_t(l)], {T, hkv, d}, "bf16");
        lg.write("v", s.v[size_t(l)], {T, hkv, d}, "bf16");
      }
    }
  });
}

std::vector<std::string> validate_trace(const std::string& path) {
  std::vector<std::string> P;
  std::optional<h5::Node> file;
  if (!guard(P, [&] { file.emplace(h5::Node::open_file(path)); })) return P;
  const h5::Node& f = *file;
  auto need_string = [&](const char* name, const std::string& want) {
    guard(P, [&] {
      std::string v = f.attr_string(name);
      if (!want.empty() && v != want)
        throw std::runtime_error(f.where() + ": attribute '" + name + "' is \"" + printable(v) +
                                 "\"; expected \"" + want + "\"");
      if (v.empty()) throw std::runtime_error(f.where() + ": attribute '" + name + "' is empty");
    });
  };
  auto need_int = [&](const char* name, int64_t lo, int64_t hi, int64_t& out) {
    return guard(P, [&] {
      out = f.attr_int(name);
      if (out < lo || out > hi)
        throw std::runtime_error(f.where() + ": attribute '" + name + "' = " + std::to_string(out) +
                                 "; allowed " + std::to_string(lo) + ".." + std::to_string(hi));
    });
  };
  need_string("schema", kTraceSchema);
  int64_t version = 0, L = 0, hq = 0, hkv = 0, D = 0;
  need_int("schema_version", kTraceSchemaVersion, kTraceSchemaVersion, version);
  need_string("model_name", "");
  need_string("producer", "");
  need_string("encoding", "bf16");
  bool geo = need_int("num_layers", 1, kMaxLayers, L);
  geo = need_int("num_q_heads", 1, kMaxHeads, hq) && geo;
  geo = need_int("num_kv_heads", 1, kMaxHeads, hkv) && geo;
  geo = need_int("head_dim", 1, kMaxHeadDim, D) && geo;
  if (geo && hq % hkv != 0)
    P.push_back(f.where() + ": num_q_heads = " + std::to_string(hq) +
                " is not a multiple of num_kv_heads = " + std::to_string(hkv));
  guard(P, [&] {
    double s = f.attr_double("attn_scale");
    if (!std::isfinite(s) || s <= 0)
      throw std::runtime_error(f.where() + ": attribute 'attn_scale' = " + std::to_string(s) +
                               "; must be finite and > 0");
  });
  if (!P.empty() || !geo) return P;  // shapes below depend on the root attributes

  std::optional<h5::Node> seqs;
  if (!guard(P, [&] { seqs.emplace(f.group("sequences")); })) return P;
  // Listing can fail on a damaged file (found by fuzzing): a problem, never an exception.
  std::vector<std::string> names;
  if (!guard(P, [&] { names = seqs->children(); })) return P;
  if (names.empty()) P.push_back(seqs->where() + ": no sequences");
  for (const std::string& name : names) {
    // Selected by --trace-sequences and part of the golden case names built from the trace.
    if (const std::string why = name_problem(name); !why.empty()) {
      P.push_back(seqs->where() + ": sequence name " + why);
      continue;
    }
    std::optional<h5::Node> g;
    if (!guard(P, [&] { g.emplace(seqs->group(name)); })) continue;
    int64_t T = 0;
    bool t_ok = guard(P, [&] {
      T = g->attr_int("num_tokens");
      if (T < 1 || T > kMaxTokens)
        throw std::runtime_error(g->where() + ": attribute 'num_tokens' = " + std::to_string(T) +
                                 "; allowed 1.." + std::to_string(kMaxTokens));
    });
    if (!t_ok) continue;
    guard(P, [&] {
      if (!g->has_attr("prompt_tokens")) return;
      int64_t p = g->attr_int("prompt_tokens");
      if (p < 0 || p > T)
        throw std::runtime_error(g->where() + ": attribute 'prompt_tokens' = " +
                                 std::to_string(p) + "; allowed 0..num_tokens (" +
                                 std::to_string(T) + ")");
    });
    for (const char* a : kSeqOptional)
      guard(P, [&] {
        if (g->has_attr(a)) g->attr_string(a);
      });
    std::vector<std::string> kids;
    guard(P, [&] { kids = g->children(); });
    for (const std::string& child : kids) {
      bool known = child == "token_ids";
      for (int64_t l = 0; l < L && !known; ++l) known = child == layer_name(int(l));
      if (!known)
        P.push_back(g->where(child) + ": unexpected object; a sequence holds token_ids and layer_0.." +
                    layer_name(int(L - 1)));
    }
    if (g->has("token_ids"))
      guard(P, [&] {
        std::vector<uint64_t> shape = {uint64_t(T)};
        std::vector<int32_t> ids = g->read<int32_t>("token_ids", &shape);
        for (size_t i = 0; i < ids.size(); ++i)
          if (ids[i] < 0)
            throw std::runtime_error(g->where("token_ids") + ": entry " + std::to_string(i) +
                                     " = " + std::to_string(ids[i]) + "; token ids are >= 0");
      });
    for (int64_t l = 0; l < L; ++l) {
      std::optional<h5::Node> lg;
      if (!guard(P, [&] { lg.emplace(g->group(layer_name(int(l)))); })) continue;
      for (const char* t : {"q", "k", "v"}) {
        int64_t heads = t[0] == 'q' ? hq : hkv;
        guard(P, [&] {
          std::vector<uint64_t> shape = {uint64_t(T), uint64_t(heads), uint64_t(D)};
          if (!lg->has(t)) throw std::runtime_error(lg->where(t) + ": dataset missing");
          std::string enc = lg->has_attr("encoding", t) ? lg->attr_string("encoding", t) : "";
          if (enc != "bf16")
            throw std::runtime_error(lg->where(t) + ": attribute 'encoding' is \"" + printable(enc) +
                                     "\"; expected \"bf16\"");
          std::vector<uint16_t> bits = lg->read<uint16_t>(t, &shape);
          check_values(P, lg->where(t), bits, int(heads), int(D));
        });
      }
    }
  }
  return P;
}

Trace read_trace(const std::string& path) {
  std::vector<std::string> problems = validate_trace(path);
  if (!problems.empty()) {
    std::string msg = path + ": not a valid " + std::string(kTraceSchema) + " file:";
    for (const auto& p : problems) msg += "\n  " + p;
    throw std::invalid_argument(msg);
  }
  h5::Node f = h5::Node::open_file(path);
  Trace t;
  TraceMeta& m = t.meta;
  m.model_name = f.attr_string("model_name");
  m.producer = f.attr_string("producer");
  m.num_layers = int(f.attr_int("num_layers"));
  m.num_q_heads = int(f.attr_int("num_q_heads"));
  m.num_kv_heads = int(f.attr_int("num_kv_heads"));
  m.head_dim = int(f.attr_int("head_dim"));
  m.attn_scale = f.attr_double("attn_scale");
  for (const char* a : kRootOptional)
    if (f.has_attr(a)) m.provenance.emplace_back(a, f.attr_string(a));
  h5::Node seqs = f.group("sequences");
  for (const std::string& name : seqs.children()) {
    h5::Node g = seqs.group(name);
    TraceSequence s;
    s.name = name;
    s.num_tokens = int(g.attr_int("num_tokens"));
    if (g.has_attr("prompt_tokens")) s.prompt_tokens = int(g.attr_int("prompt_tokens"));
    for (const char* a : kSeqOptional)
      if (g.has_attr(a)) s.attrs.emplace_back(a, g.attr_string(a));
    if (g.has("token_ids")) s.token_ids = g.read<int32_t>("token_ids");
    for (int l = 0; l < m.num_layers; ++l) {
      h5::Node lg = g.group(layer_name(l));
      s.q.push_back(lg.read<uint16_t>("q"));
      s.k.push_back(lg.read<uint16_t>("k"));
      s.v.push_back(lg.read<uint16_t>("v"));
    }
    t.sequences.push_back(std::move(s));
  }
  return t;
}

}  // namespace tqref::trace
