#include "judge/level_i.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include "judge/level_i_variants.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

// What level I compares of one run: decoder "output"; writer "k_cache" and "v_cache".
struct Run {
  CaseResult r;
  std::string error;  // launch error or a missing buffer
};

Run launch(Backend& b, const GoldenCase& c) {
  Run run{b.run(c), ""};
  run.error = run.r.error;
  if (run.error.empty())
    for (const std::string& name : output_buffers(c.kind))
      if (!run.r.buffers.count(name)) run.error = "backend returned no '" + name + "' buffer";
  return run;
}

// Guard bytes changed in the output buffers of a run.
uint64_t guard_damage(const CaseResult& r) {
  uint64_t n = 0;
  for (const auto& [name, b] : r.buffers) {
    const uint64_t size = b.size();
    for (uint64_t i = 0; i < kGuardBytes; ++i)
      n += (b.bytes[i] != guard_byte(i)) + (b.bytes[kGuardBytes + size + i] != guard_byte(i));
  }
  return n;
}

// Counts the guard bytes of run r as compared, and any changed one as a difference.
void check_guards(const CaseResult& r, InvarianceCheck& chk) {
  chk.compared += 2 * kGuardBytes * r.buffers.size();
  if (const uint64_t g = guard_damage(r)) {
    chk.differing += g;
    chk.detail += (chk.detail.empty() ? "" : "; ") + std::to_string(g) + " guard bytes changed";
  }
}

uint16_t elem16(const GuardedBuffer& b, uint64_t i) {
  uint16_t v;
  std::memcpy(&v, b.data() + 2 * i, 2);
  return v;
}

std::string range_text(uint32_t lo, uint32_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

// ---- decoder comparison -------------------------------------------------------------------

// Variant sequence i against baseline sequence s (or, for L == 0, against its initial poison).
struct SeqDiff {
  uint32_t seq = 0, index = 0;
  int32_t L = 0;
  uint64_t differing = 0, elements = 0;
  uint32_t qh_lo = UINT32_MAX, qh_hi = 0, dim_lo = UINT32_MAX, dim_hi = 0, max_ulp = 0;
  bool nan = false;
};

std::string seq_diff_text(const SeqDiff& d) {
  std::string t = "seq " + std::to_string(d.seq) + " (L " + std::to_string(d.L) + ", at index " +
                  std::to_string(d.index) + "): " + std::to_string(d.differing) + " of " +
                  std::to_string(d.elements) + " elements differ";
  if (d.L == 0) return t + " (an L == 0 row was written)";
  t += ", q heads " + range_text(d.qh_lo, d.qh_hi) + ", dims " + range_text(d.dim_lo, d.dim_hi);
  return t + (d.nan ? ", NaN on one side" : ", up to " + std::to_string(d.max_ulp) + " ulp");
}

void compare_decode(const GoldenCase& base, const Run& b, const VariantLaunch& v, const Run& r,
                    InvarianceCheck& chk) {
  const DecodeParams& p = base.d.p;
  const uint64_t D = p.head_dim, QH = p.num_q_heads, row = D * QH;
  const GuardedBuffer& bo = b.r.buffers.at("output");
  const GuardedBuffer& vo = r.r.buffers.at("output");
  std::vector<SeqDiff> diffs;
  for (uint32_t i = 0; i < v.seq_of.size(); ++i) {
    if (v.seq_of[i] < 0) continue;
    SeqDiff sd;
    sd.seq = uint32_t(v.seq_of[i]);
    sd.index = i;
    sd.L = base.d.seq_lens[sd.seq];
    sd.elements = row;
    chk.compared += row;
    for (uint64_t e = 0; e < row; ++e) {
      const uint16_t got = elem16(vo, i * row + e);
      const uint16_t want = sd.L <= 0 ? v.c.d.out_init[i * row + e] : elem16(bo, sd.seq * row + e);
      if (got == want) continue;
      ++sd.differing;
      const uint32_t qh = uint32_t(e / D), dim = uint32_t(e % D);
      sd.qh_lo = std::min(sd.qh_lo, qh);
      sd.qh_hi = std::max(sd.qh_hi, qh);
      sd.dim_lo = std::min(sd.dim_lo, dim);
      sd.dim_hi = std::max(sd.dim_hi, dim);
      if (bf16_is_nan(got) != bf16_is_nan(want)) sd.nan = true;
      else sd.max_ulp = std::max(sd.max_ulp, bf16_ulp_distance(got, want));
    }
    if (sd.differing) {
      chk.differing += sd.differing;
      diffs.push_back(sd);
    }
  }
  for (size_t k = 0; k < diffs.size() && k < 3; ++k)
    chk.detail += (k ? "; " : "") + seq_diff_text(diffs[k]);
  if (diffs.size() > 3) chk.detail += "; and " + std::to_string(diffs.size() - 3) + " more sequences";
}

// ---- writer comparison --------------------------------------------------------------------

// Where differing pool bytes are: per field, and the first slots.
struct PoolDiff {
  uint64_t k = 0, codes = 0, scales = 0, other = 0;
  std::set<int64_t> slots;
};

void pool_diff(const GoldenCase& c, const uint8_t* a, const uint8_t* b, uint64_t n, bool is_k, PoolDiff& d) {
  const CacheGeometry g = pool_geometry(c.w);
  const uint32_t bits = traits(c.format).bits;
  for (uint64_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    if (is_k) {
      ++d.k;
      d.slots.insert(int64_t(i / g.k_row_bytes()));
      continue;
    }
    const uint64_t blk = i / g.v_block_stride_bytes, in = i % g.v_block_stride_bytes;
    const uint64_t code_end = g.min_v_data_section_bytes(bits);
    const uint64_t scale_end = g.v_data_section_bytes + uint64_t(g.v_scale_row_bytes()) * g.block_size;
    if (in < code_end) {
      ++d.codes;
      d.slots.insert(int64_t(blk * g.block_size + in / g.v_code_row_bytes(bits)));
    } else if (in >= g.v_data_section_bytes && in < scale_end) {
      ++d.scales;
      d.slots.insert(int64_t(blk * g.block_size + (in - g.v_data_section_bytes) / g.v_scale_row_bytes()));
    } else {
      ++d.other;
    }
  }
}

std::string pool_diff_text(const PoolDiff& d) {
  std::string t;
  auto field = [&t](uint64_t n, const char* what) {
    if (n) t += (t.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  field(d.k, "K bytes");
  field(d.codes, "code bytes");
  field(d.scales, "scale bytes");
  field(d.other, "V padding bytes");
  std::string s;
  size_t k = 0;
  for (int64_t slot : d.slots) {
    if (k++ == 6) {
      s += ", ...";
      break;
    }
    s += (s.empty() ? "" : ", ") + std::to_string(slot);
  }
  return t + (s.empty() ? "" : " (slots " + s + ")");
}

void compare_writer(const GoldenCase& base, const Run& b, const VariantLaunch& v, const Run& r,
                    InvarianceCheck& chk) {
  PoolDiff d;
  const GuardedBuffer& bk = b.r.buffers.at("k_cache");
  const GuardedBuffer& rk = r.r.buffers.at("k_cache");
  chk.compared += bk.size();
  pool_diff(base, rk.data(), bk.data(), bk.size(), true, d);
  const GuardedBuffer& bv = b.r.buffers.at("v_cache");
  const GuardedBuffer& rv = r.r.buffers.at("v_cache");
  std::vector<uint8_t> got(rv.data(), rv.data() + rv.size());
  const uint32_t bits = traits(base.format).bits;
  if (v.v_repacked) {
    const CacheGeometry vg = pool_geometry(v.c.w);
    d.other += v_padding_differing(got, v.c.w.v_init, vg, bits);
    got = repack_v_pool(got, vg, pool_geometry(base.w), bits,
                        std::vector<uint8_t>(bv.data(), bv.data() + bv.size()));
  }
  chk.compared += bv.size();
  pool_diff(base, got.data(), bv.data(), bv.size(), false, d);
  chk.differing = d.k + d.codes + d.scales + d.other;
  if (chk.differing) chk.detail = pool_diff_text(d);
}

// ---- one variant ----------------------------------------------------------------------------

InvarianceCheck run_variant(const GoldenCase& base, const Run& b, Backend& be, const VariantBuilder& vb) {
  InvarianceCheck chk;
  chk.property = vb.property;
  chk.variant = vb.name;
  VariantLaunch v = vb.build();
  Run r = launch(be, v.c);
  if (r.error.empty() && v.second) {
    v.second->w.k_init.assign(r.r.buffers["k_cache"].data(), r.r.buffers["k_cache"].data() + r.r.buffers["k_cache"].size());
    v.second->w.v_init.assign(r.r.buffers["v_cache"].data(), r.r.buffers["v_cache"].data() + r.r.buffers["v_cache"].size());
    v.second->w.k_expected = v.second->w.k_init;
    v.second->w.v_expected = v.second->w.v_init;
    const uint64_t first_guards = guard_damage(r.r);
    r = launch(be, *v.second);
    if (first_guards) chk.detail = "first launch: " + std::to_string(first_guards) + " guard bytes changed; ";
  }
  if (!r.error.empty()) {
    chk.error = r.error;
    return chk;
  }
  if (base.kind == CaseKind::decode) compare_decode(base, b, v, r, chk);
  else compare_writer(base, b, v, r, chk);
  check_guards(r.r, chk);
  chk.pass = chk.differing == 0 && chk.detail.empty();
  return chk;
}

// The baseline's own L == 0 rows and guards (level I needs no expectation for them).
InvarianceCheck baseline_check(const GoldenCase& c, const Run& b) {
  InvarianceCheck chk;
  chk.property = "baseline";
  chk.variant = "L == 0 rows and guard bands";
  if (c.kind == CaseKind::decode) {
    VariantLaunch self;
    self.c = c;
    for (uint32_t s = 0; s < c.d.p.num_seqs; ++s) self.seq_of.push_back(c.d.seq_lens[s] <= 0 ? int32_t(s) : -1);
    compare_decode(c, b, self, b, chk);
  }
  check_guards(b.r, chk);
  chk.pass = chk.differing == 0;
  return chk;
}

// ---- anatomy --------------------------------------------------------------------------------

const char* property_phrase(const std::string& p) {
  static const std::map<std::string, const char*> m = {
      {"baseline", "its own launch (L == 0 rows or guard bands)"},
      {"placement", "the sequence's place and company in the batch"},
      {"blocks", "the physical block numbering"},
      {"strides", "padded strides"},
      {"repeat", "repeating the same launch"},
      {"other-lengths", "the lengths of the other sequences"},
      {"token-order", "the token order"},
      {"padding-tokens", "slot -1 padding tokens"},
      {"split-launch", "splitting the tokens over two launches"}};
  auto it = m.find(p);
  return it == m.end() ? "?" : it->second;
}

const char* property_suspect(const std::string& p) {
  static const std::map<std::string, const char*> m = {
      {"baseline", "writes outside the rows the launch may write"},
      {"placement", "a code path or reduction order chosen by batch size or batch index (e.g. split-KV by batch size)"},
      {"blocks", "the physical block id entering the arithmetic or the address computation"},
      {"strides", "a stride assumed tight, or padding bytes read"},
      {"repeat", "non-determinism: atomics in completion order, a race, or state left by an earlier launch"},
      {"other-lengths", "work split sized by the batch (e.g. by its longest sequence)"},
      {"token-order", "a shortcut that assumes ordered or contiguous slots"},
      {"padding-tokens", "padding tokens written, or taken as the end of the batch"},
      {"split-launch", "state shared between the tokens of one launch, or a path chosen by the number of tokens"}};
  auto it = m.find(p);
  return it == m.end() ? "?" : it->second;
}

void summarise(LevelIVerdict& v) {
  std::vector<std::string> holds;
  std::string first_detail;
  for (const InvarianceCheck& c : v.checks) {
    const bool broken = std::find(v.broken.begin(), v.broken.end(), c.property) != v.broken.end();
    if (!c.pass && !broken) v.broken.push_back(c.property);
    if (!c.pass && first_detail.empty())  // the first clause: one sequence or one pool summary
      first_detail = c.variant + ": " + (c.error.empty() ? c.detail.substr(0, c.detail.find("; ")) : "launch failed: " + c.error);
  }
  for (const InvarianceCheck& c : v.checks)
    if (std::find(v.broken.begin(), v.broken.end(), c.property) == v.broken.end() &&
        std::find(holds.begin(), holds.end(), c.property) == holds.end() && c.property != "baseline")
      holds.push_back(c.property);
  if (v.broken.empty()) return;
  std::string s = "output bits change with ";
  for (size_t i = 0; i < v.broken.size(); ++i)
    s += std::string(i ? (i + 1 == v.broken.size() ? " and " : ", ") : "") + property_phrase(v.broken[i]);
  s += " (" + first_detail + ")";
  if (!holds.empty()) {
    s += "; unchanged under ";
    for (size_t i = 0; i < holds.size(); ++i)
      s += std::string(i ? (i + 1 == holds.size() ? " and " : ", ") : "") + property_phrase(holds[i]);
  }
  if (v.broken[0] == "repeat") s += "; while repeats differ, the other variants are not conclusive";
  v.sentence = s + ": suspect " + property_suspect(v.broken[0]);
  v.diagnosis = "invariance:" + v.broken[0];
}

}  // namespace

LevelIVerdict judge_level_i(const GoldenCase& c, Backend& b, const LevelIOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  LevelIVerdict v;
  v.name = c.name;
  v.kernel = kernel_name(c.kind, c.format);
  v.kind = kind_name(c.kind);
  const Run base = launch(b, c);
  if (!base.error.empty()) {
    v.error = base.error;
  } else {
    v.checks.push_back(baseline_check(c, base));
    for (const VariantBuilder& vb : variant_builders(c, o)) v.checks.push_back(run_variant(c, base, b, vb));
    summarise(v);
    v.pass = v.broken.empty();
  }
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return v;
}

CaseVerdict level_i_case_verdict(const LevelIVerdict& l) {
  CaseVerdict v;
  v.name = l.name;
  v.kernel = l.kernel;
  v.kind = l.kind;
  v.pass = l.pass;
  v.error = l.error;
  v.seconds = l.seconds;
  for (const InvarianceCheck& c : l.checks) {
    v.bytes_compared += c.compared;
    v.bytes_differing += c.differing;
    if (!c.pass) ++v.categories["invariance:" + c.property];
  }
  v.explanation.sentence = l.sentence;
  v.explanation.diagnosis = l.diagnosis;
  return v;
}

std::string level_i_text(const LevelIVerdict& l) {
  std::string t = (l.pass ? "PASS I " : "FAIL I ") + l.name;
  if (!l.error.empty()) return t + ": baseline launch failed: " + l.error + "\n";
  size_t failed = 0;
  for (const auto& c : l.checks) failed += !c.pass;
  t += ": " + std::to_string(l.checks.size()) + " checks, " + std::to_string(failed) + " differ\n";
  for (const auto& c : l.checks)
    if (!c.pass)
      t += "    " + c.property + " / " + c.variant + ": " + (c.error.empty() ? c.detail : "launch failed: " + c.error) + "\n";
  if (!l.sentence.empty()) t += "    anatomy: " + l.sentence + "\n";
  return t;
}

report::Json level_i_json(const std::vector<LevelIVerdict>& vs) {
  report::Json cases = report::Json::array();
  for (const LevelIVerdict& l : vs) {
    report::Json checks = report::Json::array();
    for (const InvarianceCheck& c : l.checks)
      checks.push_back({{"property", c.property},
                        {"variant", c.variant},
                        {"pass", c.pass},
                        {"error", c.error},
                        {"compared", c.compared},
                        {"differing", c.differing},
                        {"detail", c.detail}});
    cases.push_back({{"name", l.name},
                     {"kernel", l.kernel},
                     {"pass", l.pass},
                     {"error", l.error},
                     {"sentence", l.sentence},
                     {"diagnosis", l.diagnosis},
                     {"seconds", report::json_number(l.seconds, "%.6f")},
                     {"checks", std::move(checks)}});
  }
  return {{"level", "I"}, {"cases", std::move(cases)}};
}

}  // namespace tqref::judge
