#include "anatomy/hypotheses.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "cases/mutant_models.h"
#include "io/approx_units_io.h"
#include "judge/level_i_variants.h"
#include "tqref/variant.h"
#include "tqref/decode.h"
#include "tqref/writer.h"

namespace tqref::anatomy {

using namespace golden;  // the cases the anatomy reads (harness/io)
using namespace cases;   // the CPU models of the mutants it tries (harness/cases)
using namespace judge;   // results and verdicts (harness/judge)

namespace {

// A hypothesis that does not fit the case; the message says why.
struct NotApplicable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<uint16_t> output_elems(const GuardedBuffer& b) {
  std::vector<uint16_t> v(b.size() / 2);
  std::memcpy(v.data(), b.data(), v.size() * 2);
  return v;
}

uint64_t differing(const std::vector<uint8_t>& a, const uint8_t* b, uint64_t n) {
  uint64_t d = 0;
  for (uint64_t i = 0; i < n && i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

// ---- variants of the contract (tqref/variant.h, docs/variants.md) ----------------------------

// The named variants that change a kind's kernel, less those an older hypothesis already is
// (expf-no-split; writer-fma, which fma:rsq, nvcc-fmad and fmad-mutant13 equal on the writer
// since a fused nsq changes no byte), plus what one flag makes of several: --use_fast_math as
// nvcc-fmad+ftz (fast-math without its approximate division and square root, kept as a rival).
// The variants on the measured approximate units join where their tables are present.
std::vector<Variant> hypothesis_variants(CaseKind kind) {
  std::vector<Variant> v;
  const bool approx = approx_units_present();
  if (approx) approx_units();  // loaded (or refused) before any parallel work
  for (const VariantInfo& i : named_variants()) {
    if (i.v.is_contract() || i.v.name == "expf-no-split") continue;
    const bool changes = kind == CaseKind::writer ? changes_writer(i.v) : changes_decoder(i.v);
    if (!changes || (needs_approx_units(i.v) && !approx)) continue;
    if (kind == CaseKind::writer && i.v.fused && !needs_approx_units(i.v)) continue;
    v.push_back(i.v);
  }
  v.push_back(parse_variant("nvcc-fmad+ftz"));
  return v;
}

std::string variant_what(const Variant& v) {
  for (const VariantInfo& i : named_variants())
    if (i.v.name == v.name) return i.what + " (variant " + v.name + ")";
  if (v.name == "nvcc-fmad+ftz") return "--use_fast_math without its approximate division (variant nvcc-fmad+ftz)";
  return "variant " + v.name;
}

// ---- decoder ------------------------------------------------------------------------------

// The model on case c with parameters p and (when given) replaced pools or q.
struct DecodeInputs {
  DecodeParams p;
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> q;
};

DecodeInputs inputs_of(const GoldenCase& c) {
  DecodeInputs in{c.d.p, c.d.k_init, c.d.v_init, c.d.q};
  in.p.threshold = c.threshold;
  return in;
}

std::vector<uint16_t> run_model(const GoldenCase& c, const DecodeInputs& in, const Ex2Profile& ex2) {
  std::vector<uint16_t> out(c.d.out_init);
  paged_decode_model(c.format, in.q, in.k, in.v, out, c.d.block_tables, c.d.seq_lens, in.p, ex2);
  return out;
}

// Output dims d of every row with L > 0 taken from dim d ^ x of the expectation: the kernel
// read V (codes and scale) of another dim, nothing else changed (dims are independent).
std::vector<uint16_t> swap_dims(const GoldenCase& c, uint32_t x) {
  const DecodeCase& d = c.d;
  const uint64_t D = d.p.head_dim, QH = d.p.num_q_heads;
  std::vector<uint16_t> out(d.out_expected);
  for (uint64_t s = 0; s < d.p.num_seqs; ++s) {
    if (d.seq_lens[s] <= 0) continue;
    for (uint64_t h = 0; h < QH; ++h) {
      const uint64_t row = (s * QH + h) * D;
      for (uint64_t e = 0; e < D; ++e) out[row + e] = d.out_expected[row + (e ^ x)];
    }
  }
  return out;
}

// Pools with one kv head per q head: q head h reads K of kv head fk(h) and V of fv(h).
DecodeInputs expand_heads(const GoldenCase& c, const std::function<uint32_t(uint32_t)>& fk,
                          const std::function<uint32_t(uint32_t)>& fv) {
  const DecodeParams& p = c.d.p;
  const uint32_t bits = traits(c.format).bits, QH = p.num_q_heads, D = p.head_dim;
  const CacheGeometry g = pool_geometry(c.d);
  CacheGeometry x = g;
  x.num_kv_heads = QH;
  x.v_data_section_bytes = x.min_v_data_section_bytes(bits);
  x.v_block_stride_bytes = x.min_v_block_stride_bytes();
  DecodeInputs in = inputs_of(c);
  in.p.num_kv_heads = QH;
  in.p.v_data_section_bytes = x.v_data_section_bytes;
  in.p.v_block_stride_bytes = x.v_block_stride_bytes;
  in.k.assign(x.k_pool_bytes(), 0);
  in.v.assign(x.v_pool_bytes(), 0);
  const uint64_t kb = uint64_t(D) * 2, cb = uint64_t(D) * bits / 8, sb = D / kGroupSize;
  for (uint64_t s = 0; s < uint64_t(g.num_blocks) * g.block_size; ++s)
    for (uint32_t h = 0; h < QH; ++h) {
      std::memcpy(in.k.data() + x.k_row_offset(int64_t(s)) + h * kb, c.d.k_init.data() + g.k_row_offset(int64_t(s)) + fk(h) * kb, kb);
      std::memcpy(in.v.data() + x.v_code_row_offset(int64_t(s), bits) + h * cb,
                  c.d.v_init.data() + g.v_code_row_offset(int64_t(s), bits) + fv(h) * cb, cb);
      std::memcpy(in.v.data() + x.v_scale_row_offset(int64_t(s)) + h * sb,
                  c.d.v_init.data() + g.v_scale_row_offset(int64_t(s)) + fv(h) * sb, sb);
    }
  return in;
}

struct DecodeHypothesis {
  const char* id;
  const char* what;
  std::function<std::vector<uint16_t>(const GoldenCase&, const Ex2Profile&)> predict;
};

std::vector<DecodeHypothesis> decode_hypotheses() {
  using V = std::vector<uint16_t>;
  auto kvh = [](const DecodeParams& p) {
    const uint32_t ratio = p.num_q_heads / p.num_kv_heads;
    return [ratio](uint32_t h) { return h / ratio; };
  };
  return {
      {"thresh-ge", "V is used when the factor is >= THRESH instead of > (mutant 5)",
       [](const GoldenCase& c, const Ex2Profile& e) { return decode_output_thresh_ge(c, e); }},
      {"expf-no-split", "EXPF without the split below -126: tiny factors flush to 0 (mutant 14)",
       [](const GoldenCase& c, const Ex2Profile& e) { return decode_output_expf_no_split(c, e); }},
      {"skip-disabled", "the sparse-V skip is off: V of every position is read (mutant 15)",
       [](const GoldenCase& c, const Ex2Profile& e) {
         DecodeInputs in = inputs_of(c);
         in.p.threshold = -1.0f;
         return run_model(c, in, e);
       }},
      {"neighbour-scale", "dequant uses the scale byte of the neighbouring group g^1 (mutant 6)",
       [](const GoldenCase& c, const Ex2Profile& e) {
         DecodeInputs in = inputs_of(c);
         const CacheGeometry g = pool_geometry(c.d);
         for (int64_t s = 0; s < int64_t(g.num_blocks) * g.block_size; ++s) {
           uint8_t* row = in.v.data() + g.v_scale_row_offset(s);
           for (uint32_t k = 0; k + 1 < g.v_scale_row_bytes(); k += 2) std::swap(row[k], row[k + 1]);
         }
         return run_model(c, in, e);
       }},
      {"neighbour-group-v", "dims of group g read the codes and scale of group g^1",
       [](const GoldenCase& c, const Ex2Profile&) { return swap_dims(c, kGroupSize); }},
      {"neighbour-lane-v", "lane l's dims read the V of lane l^1 (dim d from d ^ VEC)",
       [](const GoldenCase& c, const Ex2Profile&) { return swap_dims(c, c.d.p.hdim / kWarpSize); }},
      {"k-other-head", "scores use K of the next kv head (kvh + 1) % H",
       [kvh](const GoldenCase& c, const Ex2Profile& e) -> V {
         const uint32_t H = c.d.p.num_kv_heads;
         if (H < 2) throw NotApplicable("one kv head");
         auto f = kvh(c.d.p);
         return run_model(c, expand_heads(c, [=](uint32_t h) { return (f(h) + 1) % H; }, f), e);
       }},
      {"v-other-head", "V of the next kv head (kvh + 1) % H",
       [kvh](const GoldenCase& c, const Ex2Profile& e) -> V {
         const uint32_t H = c.d.p.num_kv_heads;
         if (H < 2) throw NotApplicable("one kv head");
         auto f = kvh(c.d.p);
         return run_model(c, expand_heads(c, f, [=](uint32_t h) { return (f(h) + 1) % H; }), e);
       }},
      {"gqa-modulo", "kv head qh % H instead of qh / (num_q_heads / H)",
       [](const GoldenCase& c, const Ex2Profile& e) -> V {
         const uint32_t H = c.d.p.num_kv_heads;
         if (H < 2 || c.d.p.num_q_heads == H) throw NotApplicable("needs GQA with several kv heads");
         auto f = [H](uint32_t h) { return h % H; };
         return run_model(c, expand_heads(c, f, f), e);
       }},
      {"window-plus1", "the sliding window starts one position early (mutant 12)",
       [](const GoldenCase& c, const Ex2Profile& e) -> V {
         DecodeInputs in = inputs_of(c);
         if (in.p.sliding_window == 0) throw NotApplicable("no sliding window");
         in.p.sliding_window += 1;
         return run_model(c, in, e);
       }},
      {"window-minus1", "the sliding window starts one position late",
       [](const GoldenCase& c, const Ex2Profile& e) -> V {
         DecodeInputs in = inputs_of(c);
         if (in.p.sliding_window < 2) throw NotApplicable("no sliding window longer than 1");
         in.p.sliding_window -= 1;
         return run_model(c, in, e);
       }},
      {"tight-block-stride", "the V block stride assumed tight (mutant 8)",
       [](const GoldenCase& c, const Ex2Profile& e) -> V {
         DecodeInputs in = inputs_of(c);
         const uint64_t tight = pool_geometry(c.d).min_v_block_stride_bytes();
         if (in.p.v_block_stride_bytes == tight) throw NotApplicable("the V block stride is tight");
         in.p.v_block_stride_bytes = tight;
         return run_model(c, in, e);
       }},
      {"tight-data-section", "the V scale section assumed at B*n*b/8 (mutant 7)",
       [](const GoldenCase& c, const Ex2Profile& e) -> V {
         DecodeInputs in = inputs_of(c);
         const uint64_t tight = pool_geometry(c.d).min_v_data_section_bytes(traits(c.format).bits);
         if (in.p.v_data_section_bytes == tight) throw NotApplicable("the V data section is tight");
         in.p.v_data_section_bytes = tight;
         return run_model(c, in, e);
       }},
      {"q-tight-stride", "q rows read with stride num_q_heads*head_dim instead of q_stride",
       [](const GoldenCase& c, const Ex2Profile& e) -> V {
         DecodeInputs in = inputs_of(c);
         const uint64_t row = uint64_t(in.p.num_q_heads) * in.p.head_dim, qs = in.p.q_stride;
         if (qs == row) throw NotApplicable("q_stride is tight");
         for (uint64_t s = 0; s < in.p.num_seqs; ++s)
           std::copy_n(c.d.q.data() + s * row, row, in.q.data() + s * qs);
         return run_model(c, in, e);
       }},
  };
}

// A large case cut down to its shortest wrong sequences (at most `budget` position x q-head
// pairs, at least one sequence); the kernel's rows of those sequences alongside.
struct Scoped {
  GoldenCase c;
  std::vector<uint16_t> got;
  std::string scope;
};

Scoped scope_decode(const GoldenCase& c, const std::vector<uint16_t>& got, uint64_t budget) {
  const DecodeCase& d = c.d;
  const uint64_t QH = d.p.num_q_heads, row = QH * d.p.head_dim;
  uint64_t total = 0;
  for (int32_t L : d.seq_lens) total += uint64_t(std::max(L, 0)) * QH;
  if (total <= budget) return {c, got, ""};
  std::vector<int32_t> wrong;
  for (uint32_t s = 0; s < d.p.num_seqs; ++s)
    if (!std::equal(got.begin() + s * row, got.begin() + (s + 1) * row, d.out_expected.begin() + s * row))
      wrong.push_back(int32_t(s));
  std::stable_sort(wrong.begin(), wrong.end(), [&](int32_t a, int32_t b) { return d.seq_lens[a] < d.seq_lens[b]; });
  std::vector<int32_t> pick, lens;
  uint64_t used = 0;
  for (int32_t s : wrong) {
    const uint64_t cost = uint64_t(std::max(d.seq_lens[s], 0)) * QH;
    if (!pick.empty() && used + cost > budget) break;
    pick.push_back(s);
    lens.push_back(d.seq_lens[s]);
    used += cost;
  }
  std::sort(pick.begin(), pick.end());
  lens.clear();
  for (int32_t s : pick) lens.push_back(d.seq_lens[s]);
  Scoped out{select_sequences(c, pick, lens, "hypotheses"), {}, "sequences"};
  for (size_t i = 0; i < pick.size(); ++i) {
    out.scope += (i ? ", " : " ") + std::to_string(pick[i]);
    std::copy_n(d.out_expected.begin() + pick[i] * row, row, out.c.d.out_expected.begin() + i * row);
    out.got.insert(out.got.end(), got.begin() + pick[i] * row, got.begin() + (pick[i] + 1) * row);
  }
  out.scope += " of " + std::to_string(d.p.num_seqs) + " (the case is larger than the hypothesis budget)";
  return out;
}

HypothesisReport decode_report(const GoldenCase& c, const CaseResult& r, const ExplainOptions& o) {
  HypothesisReport rep;
  rep.unit = "output element";
  if (!o.ex2) {
    rep.scope = "not tested: no EX2 profile to run the model with";
    return rep;
  }
  const Scoped sc = scope_decode(c, output_elems(r.buffers.at("output")), o.budget);
  rep.scope = sc.scope;
  rep.compared = sc.got.size();
  rep.spec_differing = count_differing(sc.got, sc.c.d.out_expected);
  auto score = [&](const std::string& id, const std::string& what,
                   const std::function<std::vector<uint16_t>()>& predict) {
    HypothesisResult h{id, what, false, "", 0, 0};
    try {
      const std::vector<uint16_t> p = predict();
      h.differing = count_differing(sc.got, p);
      h.effect = count_differing(sc.c.d.out_expected, p);
      h.tested = true;
    } catch (const NotApplicable& e) {
      h.why_not = e.what();
    } catch (const std::invalid_argument& e) {  // the model refuses the changed parameters
      h.why_not = e.what();
    }
    rep.results.push_back(std::move(h));
  };
  for (const DecodeHypothesis& h : decode_hypotheses())
    score(h.id, h.what, [&] { return h.predict(sc.c, *o.ex2); });
  for (const Ex2Profile* p : o.other_ex2)
    if (p && p->id() != o.ex2->id())
      score("ex2:" + p->id(), "the GPU's EX2 unit is " + p->id() + " (" + p->arch() + ")",
            [&] { return run_model(sc.c, inputs_of(sc.c), *p); });
  for (const Variant& v : hypothesis_variants(CaseKind::decode))
    score("variant:" + v.name, variant_what(v), [&] {
      std::vector<uint16_t> out(sc.c.d.out_init);
      const DecodeInputs in = inputs_of(sc.c);
      paged_decode_model(sc.c.format, in.q, in.k, in.v, out, sc.c.d.block_tables, sc.c.d.seq_lens,
                         in.p, *o.ex2, v);
      return out;
    });
  return rep;
}

// ---- writer -------------------------------------------------------------------------------

struct Pools {
  std::vector<uint8_t> k, v;
};

Pools run_writer(const GoldenCase& c, const WriterParams& p, const std::vector<int64_t>& slots,
                 const std::vector<uint16_t>& key, const std::vector<uint16_t>& value) {
  Pools out{c.w.k_init, c.w.v_init};
  reshape_and_cache_model(c.format, key, value, out.k, out.v, slots, p);
  return out;
}

Pools run_writer(const GoldenCase& c, const WriterParams& p) {
  return run_writer(c, p, c.w.slot_mapping, c.w.key, c.w.value);
}

// The expected pools with a mutant model (cases/mutant_models.h) applied to the V pool.
Pools on_expected(const GoldenCase& c, uint64_t (*mutant)(const GoldenCase&, std::span<uint8_t>)) {
  Pools p{c.w.k_expected, c.w.v_expected};
  mutant(c, p.v);
  return p;
}

// Token rows read with the tight stride n instead of `stride` (key or value).
std::vector<uint16_t> tight_rows(const std::vector<uint16_t>& rows, uint32_t stride, uint32_t n) {
  if (stride == n) throw NotApplicable("the stride is tight");
  std::vector<uint16_t> out(rows);
  for (uint64_t t = 0; t * stride < rows.size(); ++t)
    std::copy_n(rows.data() + t * n, n, out.data() + t * stride);
  return out;
}

struct WriterHypothesis {
  const char* id;
  const char* what;
  std::function<Pools(const GoldenCase&)> predict;
  std::string variant_id, variant_what;  // a variant's, when id and what are null
};

std::vector<WriterHypothesis> writer_hypotheses() {
  return {
      {"slot-plus1", "every token written one slot too far, s+1 (mutant 1)",
       [](const GoldenCase& c) {
         std::vector<int64_t> s(c.w.slot_mapping);
         for (int64_t& x : s)
           if (x >= 0) ++x;
         return run_writer(c, c.w.p, s, c.w.key, c.w.value);
       }},
      {"bound-strict", "code index counts BD[j] < y instead of <= (mutant 2)",
       [](const GoldenCase& c) { return on_expected(c, writer_bound_strict); }},
      {"scale-fp8-rz", "fp8 scale rounded toward zero (mutant 9)",
       [](const GoldenCase& c) { return on_expected(c, writer_scale_rz_scales); }},
      {"pad-slot0", "slot -1 tokens written to slot 0 (mutant 11; the last one wins)",
       [](const GoldenCase& c) {
         std::vector<int64_t> s(c.w.slot_mapping);
         bool any = false;
         for (int64_t& x : s) {
           if (x == 0) throw NotApplicable("a real token uses slot 0");
           if (x < 0) any = true;
         }
         if (!any) throw NotApplicable("no slot -1 token");
         for (size_t t = s.size(); t-- > 0;)  // the last padding token's data lands in slot 0
           if (s[t] < 0) {
             s[t] = 0;
             break;
           }
         return run_writer(c, c.w.p, s, c.w.key, c.w.value);
       }},
      {"writer-fma", "nsq and rsq contracted into fused multiply-adds (mutant 13; variants fma:rsq, nvcc-fmad, fmad-mutant13 on the writer)",
       [](const GoldenCase& c) { return on_expected(c, writer_fma_contract_scales); }},
      {"writer-tight-data-section", "the V scale section assumed at B*n*b/8 (mutant 17)",
       [](const GoldenCase& c) {
         WriterParams p = c.w.p;
         const uint64_t tight = pool_geometry(c.w).min_v_data_section_bytes(traits(c.format).bits);
         if (p.v_data_section_bytes == tight) throw NotApplicable("the V data section is tight");
         p.v_data_section_bytes = tight;
         return run_writer(c, p);
       }},
      {"key-tight-stride", "key rows read with stride n instead of key_stride",
       [](const GoldenCase& c) {
         const uint32_t n = c.w.p.num_kv_heads * c.w.p.head_dim;
         return run_writer(c, c.w.p, c.w.slot_mapping, tight_rows(c.w.key, c.w.p.key_stride, n), c.w.value);
       }},
      {"value-tight-stride", "value rows read with stride n instead of value_stride",
       [](const GoldenCase& c) {
         const uint32_t n = c.w.p.num_kv_heads * c.w.p.head_dim;
         return run_writer(c, c.w.p, c.w.slot_mapping, c.w.key, tight_rows(c.w.value, c.w.p.value_stride, n));
       }},
  };
}

HypothesisReport writer_report(const GoldenCase& c, const CaseResult& r) {
  HypothesisReport rep;
  rep.unit = "pool byte";
  const GuardedBuffer& k = r.buffers.at("k_cache");
  const GuardedBuffer& v = r.buffers.at("v_cache");
  rep.compared = k.size() + v.size();
  rep.spec_differing = differing(c.w.k_expected, k.data(), k.size()) + differing(c.w.v_expected, v.data(), v.size());
  std::vector<WriterHypothesis> hyps = writer_hypotheses();
  for (const Variant& v : hypothesis_variants(CaseKind::writer))
    hyps.push_back({nullptr, nullptr, [v](const GoldenCase& c) {
                      Pools out{c.w.k_init, c.w.v_init};
                      reshape_and_cache_model(c.format, c.w.key, c.w.value, out.k, out.v,
                                              c.w.slot_mapping, c.w.p, v);
                      return out;
                    }, "variant:" + v.name, variant_what(v)});
  for (const WriterHypothesis& h : hyps) {
    HypothesisResult res{h.id ? h.id : h.variant_id, h.what ? h.what : h.variant_what, false, "", 0, 0};
    try {
      const Pools p = h.predict(c);
      res.differing = differing(p.k, k.data(), k.size()) + differing(p.v, v.data(), v.size());
      res.effect = differing(p.k, c.w.k_expected.data(), p.k.size()) + differing(p.v, c.w.v_expected.data(), p.v.size());
      res.tested = true;
    } catch (const NotApplicable& e) {
      res.why_not = e.what();
    } catch (const std::invalid_argument& e) {
      res.why_not = e.what();
    }
    rep.results.push_back(std::move(res));
  }
  return rep;
}

}  // namespace

HypothesisReport test_hypotheses(const GoldenCase& c, const CaseResult& r, const ExplainOptions& o) {
  HypothesisReport rep = c.kind == CaseKind::decode ? decode_report(c, r, o) : writer_report(c, r);
  // "Closest" only for a hypothesis that explains at least half of what the spec leaves unexplained:
  // below that a few elements that agree by chance would name a cause.
  uint64_t best = rep.spec_differing / 2 + 1;
  std::vector<const HypothesisResult*> hits;
  for (const HypothesisResult& h : rep.results) {
    if (!h.tested || h.effect == 0) continue;
    if (h.differing == 0) hits.push_back(&h);
    if (h.differing < best) {
      best = h.differing;
      rep.closest = h.id;
    }
  }
  // The narrowest change that reproduces the kernel first (poisoned V makes a kernel that reads
  // one skipped position and one that reads them all equally NaN); then list order.
  std::stable_sort(hits.begin(), hits.end(), [](auto* a, auto* b) { return a->effect < b->effect; });
  for (const HypothesisResult* h : hits) rep.reproduced.push_back(h->id);
  return rep;
}

}  // namespace tqref::anatomy
