#include "cases/trace_golden.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>

#include "cases/builders.h"
#include "cases/finish_decode.h"
#include "cases/rng.h"
#include "io/case_io.h"
#include "io/file_bytes.h"
#include "io/memory_budget.h"
#include "io/sha256.h"
#include "io/text_escape.h"
#include "tqref/build_info.h"
#include "tqref/contract.h"
#include "tqref/decode.h"

namespace tqref::cases {

using golden::GoldenCase;
using namespace trace;  // the trace file the cases are built from (harness/io)

namespace {

// Query positions: lengths 1..5, 7, 8, around block multiples of 16 and 32, powers of two, and
// the last positions. Clipped to the sequence.
const int kDefaultQueries[] = {0, 1, 2, 3, 4, 6, 7, 15, 16, 17, 31, 32, 63, 64, 100, -3, -2, -1};

struct Unit {
  size_t seq;
  int layer;
  Format format;
};

// Rows of `heads` heads of D values, each padded with zeros to HD: [T, heads*HD].
std::vector<uint16_t> pad_rows(const std::vector<uint16_t>& src, size_t rows, int heads, int D,
                               uint32_t HD) {
  std::vector<uint16_t> out(rows * size_t(heads) * HD, 0);
  for (size_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h)
      std::copy_n(src.data() + (r * size_t(heads) + size_t(h)) * size_t(D), size_t(D),
                  out.data() + (r * size_t(heads) + size_t(h)) * HD);
  return out;
}

// Positions outside the sequence are dropped; a list that leaves none is refused (a decode case
// needs at least one query).
std::vector<int> query_positions(const TraceGoldenOptions& opt, int T, const std::string& seq) {
  std::vector<int> want(opt.query_positions);
  if (want.empty()) want.assign(std::begin(kDefaultQueries), std::end(kDefaultQueries));
  std::vector<int> q;
  for (int p : want) {
    const int64_t pos = p < 0 ? int64_t(T) + p : p;  // negative: from the end
    if (pos >= 0 && pos < T) q.push_back(int(pos));
  }
  if (q.empty())
    throw std::invalid_argument("--trace-queries: no position inside sequence '" + seq + "' (num_tokens " +
                                std::to_string(T) + "); allowed: -" + std::to_string(T) + " .. " +
                                std::to_string(T - 1));
  std::sort(q.begin(), q.end());
  q.erase(std::unique(q.begin(), q.end()), q.end());
  return q;
}

// Memory of one unit's two cases, from the trace's shape and the options alone, as build_unit
// allocates it: the padded K, V, Q copies; the writer case's gathered rows, then its key and value
// rows of every token (padding tokens included, which take rows but no blocks) with the slot
// mapping and its working copies, and its pools three times (initial, expected, the builder's);
// the decode case's V values, pools three times, q rows, block tables, outputs (bf16 twice, fp32,
// fp64 references twice), row statistics and skip masks. Saturating (io/memory_budget.h); the V
// pool counted at one byte a value (4-bit codes and scales take less).
uint64_t unit_bytes(const TraceMeta& m, int T, uint32_t queries, const TraceGoldenOptions& opt) {
  const uint64_t HD = engine_hdim(uint32_t(m.head_dim)), QH = uint64_t(m.num_q_heads), B = opt.block_size,
                 n = mul_sat(uint64_t(m.num_kv_heads), HD), rows = mul_sat(queries, QH);
  const uint64_t NB = uint64_t(T) / B + 2, MB = NB;  // build_unit: ceil(T/B) + 1 each
  const uint64_t tokens = add_sat(uint64_t(T), opt.padding_tokens);
  const uint64_t pools = mul_sat(mul_sat(NB, B), mul_sat(n, 3));  // K (bf16) and V
  const uint64_t copies = mul_sat(uint64_t(T), add_sat(mul_sat(n, 4), mul_sat(QH, HD * 2)));
  const uint64_t writer = add_sat(add_sat(mul_sat(uint64_t(T), mul_sat(n, 4)), mul_sat(tokens, add_sat(mul_sat(n, 4), 20))),
                                  mul_sat(pools, 3));
  const uint64_t decode = add_sat(add_sat(mul_sat(pools, 3), mul_sat(mul_sat(NB, B), mul_sat(n, 2))),
                                  add_sat(add_sat(mul_sat(rows, HD * 2), mul_sat(mul_sat(queries, MB), 4)),
                                          add_sat(mul_sat(mul_sat(rows, HD), 28), mul_sat(rows, add_sat(uint64_t(T), 24)))));
  return add_sat(copies, add_sat(writer, decode));
}

// One (sequence, layer, format): {writer, decode}.
std::vector<GoldenCase> build_unit(const Trace& t, const std::string& trace_name, const Unit& u,
                                   const TraceGoldenOptions& opt, uint64_t seed,
                                   const Ex2Profile& ex2) {
  const TraceMeta& m = t.meta;
  const TraceSequence& sq = t.sequences[u.seq];
  const int D = m.head_dim, T = sq.num_tokens;
  const uint32_t HD = engine_hdim(uint32_t(D)), H = uint32_t(m.num_kv_heads), QH = uint32_t(m.num_q_heads),
                 B = opt.block_size, n = H * HD;
  const FormatTraits& ft = traits(u.format);
  // Sequence names passed name_problem() in validate_trace; the model name is free text.
  std::string name = "real_" + name_token(m.model_name) + "_" + sq.name + "_layer" + std::to_string(u.layer) +
                     "_" + ft.name + "_hdim" + std::to_string(HD) +
                     (uint32_t(D) != HD ? "_pad" + std::to_string(D) : "") + "_bs" + std::to_string(B);
  Rng rng(seed);

  // ---- pool: logical block j of the sequence lives in physical block perm[j] ----------------
  const uint32_t nblk = (uint32_t(T) + B - 1) / B, NB = nblk + 1;  // one spare (poisoned) block
  std::vector<int32_t> perm(NB);
  for (uint32_t i = 0; i < NB; ++i) perm[i] = int32_t(i);
  for (uint32_t i = NB; i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  auto slot_of = [&](int p) { return int64_t(perm[uint32_t(p) / B]) * B + uint32_t(p) % B; };

  const std::vector<uint16_t> K = pad_rows(sq.k[size_t(u.layer)], size_t(T), int(H), D, HD);
  const std::vector<uint16_t> V = pad_rows(sq.v[size_t(u.layer)], size_t(T), int(H), D, HD);
  const std::vector<uint16_t> Q = pad_rows(sq.q[size_t(u.layer)], size_t(T), int(QH), D, HD);

  // ---- writer: every position, in shuffled token order ----------------------------------------
  std::vector<int> order(static_cast<size_t>(T));
  for (int i = 0; i < T; ++i) order[size_t(i)] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<int64_t> slots;
  std::vector<uint16_t> k_rows, v_rows;
  for (int p : order) {
    slots.push_back(slot_of(p));
    k_rows.insert(k_rows.end(), K.begin() + int64_t(p) * n, K.begin() + int64_t(p + 1) * n);
    v_rows.insert(v_rows.end(), V.begin() + int64_t(p) * n, V.begin() + int64_t(p + 1) * n);
  }
  CaseSpec ws;
  ws.kind = golden::CaseKind::writer;
  ws.format = u.format;
  ws.head_dim = HD;
  ws.num_kv_heads = H;
  ws.block_size = B;
  ws.num_tokens = uint32_t(T);
  ws.padding_tokens = opt.padding_tokens;
  ws.layout = Layout::shuffled;
  GoldenCase wc = build_writer_from_tokens(ws, name + "__writer", seed, NB, slots, k_rows, v_rows);
  const std::string source = "trace " + trace_name + " " + sq.name + " layer " +
                             std::to_string(u.layer) + " (" + m.model_name + ")";
  const std::string padding = uint32_t(D) == HD ? std::string("head_dim ") + std::to_string(D)
                              : "head_dim " + std::to_string(D) + " zero-padded to " +
                                    std::to_string(HD) + " (padded q, k, v dims are +0)";
  wc.distribution = "trace";
  wc.exercises = "writer half of " + name + ": " + source + ", all " + std::to_string(T) +
                 " positions, shuffled slots, " + std::to_string(opt.padding_tokens) +
                 " slot<0 tokens, " + padding;

  // ---- decode: queries at chosen positions over their causal prefixes -------------------------
  const std::vector<int> qpos = query_positions(opt, T, sq.name);
  const uint32_t S = uint32_t(qpos.size()), MB = nblk + 1;  // one out-of-range entry at least
  const int32_t oor[4] = {-1, int32_t(NB), int32_t(NB) + 100000, INT32_MIN};
  DecodeParams p;
  p.max_blocks_per_seq = MB;
  p.num_q_heads = QH;
  p.num_kv_heads = H;
  p.head_dim = HD;
  p.block_size = B;
  p.inv_sqrt_d = float(m.attn_scale);  // the model's scale (1/sqrt(48)), not 1/sqrt(HDIM)
  p.q_stride = QH * HD;
  p.sliding_window = 0;
  p.num_seqs = S;
  p.hdim = HD;
  std::vector<int32_t> seq_lens(S), tables(uint64_t(S) * MB);
  std::vector<uint16_t> q(uint64_t(S) * p.q_stride);
  for (uint32_t s = 0; s < S; ++s) {
    seq_lens[s] = qpos[s] + 1;
    const uint32_t used = (uint32_t(seq_lens[s]) + B - 1) / B;
    for (uint32_t j = 0; j < MB; ++j)
      tables[uint64_t(s) * MB + j] = j < used ? perm[j] : oor[(s + j) % 4];
    std::copy_n(Q.begin() + int64_t(qpos[s]) * p.q_stride, p.q_stride,
                q.begin() + int64_t(s) * p.q_stride);
  }
  DecodeInputs in;
  in.name = name;
  in.distribution = "trace";
  in.seed = seed;
  in.p = p;
  in.num_blocks = NB;
  in.q = std::move(q);
  in.block_tables = std::move(tables);
  in.seq_lens = std::move(seq_lens);
  in.v_values.assign(uint64_t(NB) * B * n, 0);
  for (int pos = 0; pos < T; ++pos)
    std::copy_n(V.begin() + int64_t(pos) * n, n, in.v_values.begin() + slot_of(pos) * n);
  // Positions up to the last query are read; later ones are written, but no query reaches them.
  for (int pos = 0; pos < T; ++pos)
    (pos <= qpos.back() ? in.read_slots : in.unread_slots).push_back(slot_of(pos));
  DecodeStats st;
  GoldenCase dc = finish_decode_case(std::move(in), wc, ex2, &st);
  std::string qs;
  for (int pos : qpos) qs += (qs.empty() ? "" : ",") + std::to_string(pos);
  dc.exercises = "decode: " + source + ", " + padding + ", queries at positions " + qs +
                 " (seq_len = position + 1, shared blocks), all " + std::to_string(QH) +
                 " q heads; " + std::to_string(st.skipped) + " of " + std::to_string(st.reads) +
                 " (row, position) pairs skipped, " + std::to_string(st.poisoned_groups) +
                 " poisoned skipped V groups";
  std::vector<GoldenCase> pair;  // not {wc, dc}: an initializer list copies its elements
  pair.reserve(2);
  pair.push_back(std::move(wc));
  pair.push_back(std::move(dc));
  return pair;
}

// Every unit's cases are held until the file is written: their sum, with the trace itself,
// within the budget before anything is built. Padding tokens only add writer rows, so when the
// padding alone goes past the budget the refusal names the most this trace allows.
void check_memory(const Trace& t, const std::string& trace_name, const std::vector<Unit>& units,
                  const TraceGoldenOptions& opt) {
  uint64_t trace = 0;
  for (const TraceSequence& sq : t.sequences)
    for (const auto* part : {&sq.q, &sq.k, &sq.v})
      for (const auto& layer : *part) trace = add_sat(trace, mul_sat(layer.size(), 2));
  const auto total = [&](uint32_t padding) {
    TraceGoldenOptions o = opt;
    o.padding_tokens = padding;
    uint64_t bytes = trace;
    for (const Unit& u : units) {
      const TraceSequence& sq = t.sequences[u.seq];
      bytes = add_sat(bytes, unit_bytes(t.meta, sq.num_tokens, uint32_t(query_positions(opt, sq.num_tokens, sq.name).size()), o));
    }
    return bytes;
  };
  const uint64_t need = total(opt.padding_tokens);
  if (need <= memory_budget()) return;
  const std::string over = over_budget(need, "building the " + std::to_string(units.size() * 2) + " cases of " + trace_name);
  if (total(0) > memory_budget())
    throw std::invalid_argument(over + " (choose fewer --trace-sequences or --trace-layers)");
  uint32_t lo = 0, hi = opt.padding_tokens;  // total(lo) fits, total(hi) does not
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    (total(mid) <= memory_budget() ? lo : hi) = mid;
  }
  throw TraceOptionError("--trace-padding-tokens " + std::to_string(opt.padding_tokens) + ": " + over +
                         "; with this trace and budget: --trace-padding-tokens 0 .. " + std::to_string(lo));
}

}  // namespace

std::vector<GoldenCase> build_trace_cases(const Trace& t, const std::string& trace_name,
                                          const TraceGoldenOptions& opt, const Ex2Profile& ex2) {
  if (opt.block_size < 1 || opt.block_size > 1024)
    throw std::invalid_argument("--block-size = " + std::to_string(opt.block_size) + "; allowed 1..1024");
  if (opt.padding_tokens > kMaxPaddingTokens)
    throw TraceOptionError("--trace-padding-tokens " + std::to_string(opt.padding_tokens) + "; allowed: 0 .. " +
                           std::to_string(kMaxPaddingTokens));
  if (opt.formats != "rotate" && opt.formats != "all")
    throw std::invalid_argument("--trace-formats = " + opt.formats + "; allowed: rotate, all");
  require("trace", check_engine_head_dim(uint32_t(std::max(t.meta.head_dim, 0))));
  std::vector<size_t> seqs;
  for (size_t i = 0; i < t.sequences.size(); ++i)
    if (opt.sequences.empty() ||
        std::find(opt.sequences.begin(), opt.sequences.end(), t.sequences[i].name) != opt.sequences.end())
      seqs.push_back(i);
  for (const std::string& s : opt.sequences)
    if (std::none_of(t.sequences.begin(), t.sequences.end(), [&](auto& q) { return q.name == s; }))
      throw std::invalid_argument("--trace-sequences: " + trace_name + " has no sequence '" + s + "'");
  std::vector<int> layers = opt.layers;
  if (layers.empty())
    for (int l = 0; l < t.meta.num_layers; ++l) layers.push_back(l);
  for (int l : layers)
    if (l < 0 || l >= t.meta.num_layers)
      throw std::invalid_argument("--trace-layers: layer " + std::to_string(l) + "; allowed 0.." +
                                  std::to_string(t.meta.num_layers - 1));
  std::vector<Unit> units;
  for (size_t si = 0; si < seqs.size(); ++si)
    for (int l : layers) {
      if (opt.formats == "all") {
        for (const auto& f : kFormats) units.push_back({seqs[si], l, f.format});
      } else {
        units.push_back({seqs[si], l, kFormats[(seqs[si] + size_t(l)) % 3].format});
      }
    }
  check_memory(t, trace_name, units, opt);
  std::vector<std::vector<GoldenCase>> built(units.size());
  std::vector<std::exception_ptr> errors(units.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < int64_t(units.size()); ++i) {
    try {
      built[size_t(i)] = build_unit(t, trace_name, units[size_t(i)], opt,
                                    case_seed(opt.seed, uint64_t(i)) & 0x7FFFFFFFFFFFFFFFull, ex2);
    } catch (...) {
      errors[size_t(i)] = std::current_exception();
    }
  }
  std::vector<GoldenCase> out;
  for (size_t i = 0; i < units.size(); ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    for (auto& c : built[i]) out.push_back(std::move(c));
  }
  return out;
}

size_t generate_trace_golden(const std::string& trace_path, const std::string& out,
                             const TraceGoldenOptions& opt, const Ex2Profile& ex2,
                             const std::string& command_line) {
  Trace t = read_trace(trace_path);
  const std::string trace_name = std::filesystem::path(trace_path).filename().string();
  std::vector<GoldenCase> cases = build_trace_cases(t, trace_name, opt, ex2);
  std::vector<uint8_t> bytes = read_file_bytes(trace_path, "trace");
  golden::Provenance prov;
  prov.tqref_version = kVersion;
  prov.git_commit = kGitCommit;
  prov.seed = opt.seed;
  prov.threshold = kSparseVThreshold;
  prov.ex2_profile_id = ex2.id();
  prov.command_line = command_line;
  prov.suite = "real";
  prov.shard = "0/1";
  h5::write_file_atomic(out, [&](const h5::Node& root) {  // whole or not at all
    golden::write_provenance(root, prov);
    root.set_attr("trace_file", trace_name);
    root.set_attr("trace_sha256", sha256_hex(bytes.data(), bytes.size()));
    root.set_attr("trace_model_name", t.meta.model_name);
    for (const auto& [k, v] : t.meta.provenance)
      if (k == "checkpoint_sha256") root.set_attr("trace_checkpoint_sha256", v);
    h5::Node group = root.create_group("cases");
    for (const GoldenCase& c : cases) {
      golden::write_case(group, c);
      // Marks padded cases for readers that filter them: the trace's own head_dim.
      group.set_attr("trace_head_dim", int64_t(t.meta.head_dim), c.name);
    }
  });
  return cases.size();
}

}  // namespace tqref::cases
