// Studies 1-3 on real traces (data/traces/*.h5, docs/trace-schema.md): V quantisation error per
// layer with and without the Hadamard rotation, and decode error at every 8th position.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "analysis/study/decode_study.h"
#include "analysis/study/study.h"
#include "analysis/study/vq_measure.h"
#include "io/trace_file.h"
#include "tqref/numeric.h"

namespace tqref::study {

namespace {

std::vector<std::string> trace_files(const std::string& dir) {
  std::vector<std::string> files;
  if (dir.empty() || !std::filesystem::is_directory(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".h5") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

void vq_layer(const StudyOptions& o, const std::string& source, int64_t layer,
              const trace::Trace& tr, Table& t) {
  const auto& m = tr.meta;
  const uint32_t H = uint32_t(m.num_kv_heads), D = uint32_t(m.head_dim);
  std::vector<uint16_t> v;  // every sequence's rows of this layer, [tokens][H * D]
  for (const auto& s : tr.sequences) v.insert(v.end(), s.v[layer].begin(), s.v[layer].end());
  double ms = 0;
  for (uint16_t b : v) ms += double(bf16_to_f32(b)) * bf16_to_f32(b);
  const double rms = std::sqrt(ms / v.size());  // the oracle's "known" scale for real data
  const RandomRotation rot(D, o.seed);
  for (const auto& f : kFormats) {
    for (CodebookKind cbk : {CodebookKind::spec, CodebookKind::exact}) {
      GroupCodebook cb = make_group_codebook(f, cbk);
      std::vector<Variant> vs;
      for (ScaleRule r : {ScaleRule::matched, ScaleRule::absmax, ScaleRule::lsq})
        for (ScaleEnc e : {ScaleEnc::fp8, ScaleEnc::fp32})
          vs.push_back({cbk, r, e, cbk == CodebookKind::spec && r == ScaleRule::matched && e == ScaleEnc::fp8});
      vs.push_back({cbk, ScaleRule::oracle, ScaleEnc::fp32, false});
      for (const Variant& var : vs) {
        add_vq_row(t, source, "trace", layer, rms, f, var, false, measure_vq(f, cb, var, v, H, D, rms, nullptr));
        if (var.writer_model || (cbk == CodebookKind::spec && var.rule == ScaleRule::absmax && var.enc == ScaleEnc::fp8))
          add_vq_row(t, source, "trace", layer, rms, f, var, true, measure_vq(f, cb, var, v, H, D, rms, &rot));
      }
    }
  }
}

// Decode queries of one layer: position t-1 of each sequence attends to positions 0 .. t-1, for
// t = 8, 16, ... and the last position (every 8th step keeps the table small).
DecodeBatch layer_batch(const std::string& source, int64_t layer, const trace::Trace& tr, bool quick) {
  const auto& m = tr.meta;
  DecodeBatch b;
  b.source = source;
  b.layer = layer;
  b.kv_heads = uint32_t(m.num_kv_heads);
  b.q_heads = uint32_t(m.num_q_heads);
  b.head_dim = uint32_t(m.head_dim);
  b.inv_sqrt_d = float(m.attn_scale);
  const uint64_t nk = uint64_t(b.kv_heads) * b.head_dim, nq = uint64_t(b.q_heads) * b.head_dim;
  for (const auto& s : tr.sequences) {
    std::vector<uint32_t> ts;
    const uint32_t T = uint32_t(s.num_tokens), step = quick ? 64 : 8;
    for (uint32_t t = step; t < T; t += step) ts.push_back(t);
    ts.push_back(T);
    for (uint32_t t : ts) {
      b.lens.push_back(t);
      b.k.emplace_back(s.k[layer].begin(), s.k[layer].begin() + t * nk);
      b.v.emplace_back(s.v[layer].begin(), s.v[layer].begin() + t * nk);
      b.q.emplace_back(s.q[layer].begin() + (t - 1) * nq, s.q[layer].begin() + t * nq);
    }
    if (quick) break;
  }
  return b;
}

}  // namespace

void run_traces(const StudyOptions& o, const Ex2Profile* ex2, std::vector<Table>& out) {
  const auto files = trace_files(o.traces_dir);
  if (files.empty()) {
    progress(o, "traces: no *.h5 in '%s': real-trace parts skipped", o.traces_dir.c_str());
    return;
  }
  Table vq{"vq_trace", vq_columns(), {}};
  Table dec{"decode_trace", decode_columns(), {}};
  for (const auto& path : files) {
    progress(o, "traces: reading %s", path.c_str());
    const trace::Trace tr = trace::read_trace(path);
    const std::string name = tr.meta.model_name.empty()
                                 ? std::filesystem::path(path).stem().string()
                                 : tr.meta.model_name;
    const int layers = o.quick ? std::min(tr.meta.num_layers, 1) : tr.meta.num_layers;
    for (int l = 0; l < layers; ++l) {
      progress(o, "traces: %s layer %d: V quantisation", name.c_str(), l);
      vq_layer(o, name, l, tr, vq);
      if (ex2) run_decode_batch(o, layer_batch(name, l, tr, o.quick), *ex2, kThresholds, dec);
    }
  }
  out.push_back(std::move(vq));
  if (ex2) out.push_back(std::move(dec));
}

}  // namespace tqref::study
