#include "cases/suites.h"

#include <algorithm>
#include <stdexcept>

#include "cases/l_tie.h"
#include "cases/model_table.h"
#include "cases/observe.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

CaseSpec writer(Format f, uint32_t D, uint32_t H, uint32_t B, uint32_t tokens, Dist dist) {
  CaseSpec s;
  s.kind = CaseKind::writer;
  s.format = f;
  s.head_dim = D;
  s.num_kv_heads = H;
  s.block_size = B;
  s.num_tokens = tokens;
  s.dist = dist;
  return s;
}

CaseSpec decode(Format f, uint32_t D, uint32_t H, uint32_t gqa, uint32_t B,
                std::vector<int32_t> lens, uint32_t window, Dist dist) {
  CaseSpec s;
  s.kind = CaseKind::decode;
  s.format = f;
  s.head_dim = D;
  s.num_kv_heads = H;
  s.q_per_kv = gqa;
  s.block_size = B;
  s.seq_lens = std::move(lens);
  s.sliding_window = window;
  s.dist = dist;
  return s;
}

// smoke: every format x {writer, decode} x both HDIMs, a few dimensions each; seconds to
// generate, well under 1 MB.
std::vector<CaseSpec> smoke() {
  std::vector<CaseSpec> v;
  for (const auto& t : kFormats) {
    CaseSpec w = writer(t.format, 128, 2, 16, 37, Dist::gaussian);
    w.padding_tokens = 3;
    w.key_pad = 4;
    w.value_pad = 16;
    w.v_data_pad = 8;
    w.v_block_pad = 24;
    w.layout = Layout::shuffled;
    v.push_back(w);
    v.push_back(writer(t.format, 256, 1, 7, 20, Dist::special_groups));
    CaseSpec d = decode(t.format, 128, 2, 4, 16, {0, 1, 5, 37}, 0, Dist::adversarial_skip);
    d.layout = Layout::shuffled;
    d.q_pad = 8;
    d.padding_tokens = 2;
    v.push_back(d);
    CaseSpec m = decode(t.format, 256, 1, 8, 7, {3, 19, 23}, 5, Dist::gaussian);  // MQA
    m.layout = Layout::shared;
    m.v_block_pad = 16;
    v.push_back(m);
  }
  v.push_back(decode(Format::turbo3v, 128, 1, 2, 16, {}, 0, Dist::threshold));
  v.push_back(decode(Format::turbo4v, 128, 2, 1, 32, {9, 64}, 0, Dist::ties));
  // Crafted cases for the mutants ordinary data misses (docs/mutants.md): EXPF without the split
  // (14; one case per HDIM build, modes in-warp / merge a / merge c) and the FMA-contracted
  // writer (13; every V group sensitive, one case per format).
  CaseSpec tr = decode(Format::turbo2v, 128, 1, 2, 16, {17, 18, 19}, 0, Dist::tiny_rescale);
  tr.layout = Layout::shuffled;
  v.push_back(tr);
  v.push_back(decode(Format::turbo4v, 256, 1, 1, 16, {17, 18, 19}, 0, Dist::tiny_rescale));
  for (const auto& t : kFormats) v.push_back(writer(t.format, 128, 1, 16, 4, Dist::fma_sensitive));
  return v;
}

// standard: docs/spec.md section 7 crossed sensibly (each dimension value appears with every format and
// HDIM, rotated against the others rather than fully crossed).
std::vector<CaseSpec> standard() {
  std::vector<CaseSpec> v;
  const uint32_t blocks[4] = {1, 16, 32, 13};
  const uint32_t windows[4] = {0, 1, 100, 5000};  // off, 1, shorter and longer than L = 1031
  const Dist wdists[5] = {Dist::gaussian, Dist::special_groups, Dist::student_t,
                          Dist::constant_groups, Dist::outlier_channels};
  const Dist ddists[6] = {Dist::gaussian, Dist::adversarial_skip, Dist::student_t,
                          Dist::outlier_channels, Dist::constant_groups, Dist::ties};
  const Layout layouts[3] = {Layout::sequential, Layout::shuffled, Layout::shared};
  uint32_t r = 0;
  for (const auto& t : kFormats)
    for (uint32_t D : {128u, 256u}) {
      for (uint32_t bi = 0; bi < 4; ++bi) {
        const uint32_t B = blocks[bi];
        for (uint32_t tokens : {1u, 37u, 200u}) {
          CaseSpec w = writer(t.format, D, bi % 2 ? 2 : 1, B, tokens, wdists[r % 5]);
          w.padding_tokens = r % 3;
          w.key_pad = (r % 2) * 4;
          w.value_pad = (r % 3) * 3;
          w.v_data_pad = (r % 2) * 16;
          w.v_block_pad = (r % 4) * 8;
          w.layout = r % 2 ? Layout::shuffled : Layout::sequential;
          v.push_back(w);
          ++r;
        }
        // GQA 1, 2, 4, 8 with 2 kv heads, and MQA (1 kv head, 8 q heads)
        for (uint32_t g = 0; g < 5; ++g) {
          const bool mqa = g == 4;
          std::vector<int32_t> lens = {0, 1, 2, 3, 4, 5, 7, 1031, int32_t(3 * B), 64};
          CaseSpec d = decode(t.format, D, mqa ? 1 : 2, mqa ? 8 : 1u << g, B, lens,
                              windows[(bi + g) % 4], ddists[r % 6]);
          d.layout = layouts[r % 3];
          d.q_pad = (r % 2) * 8;
          d.v_data_pad = (r % 3 == 1) * 8;
          d.v_block_pad = (r % 3 == 2) * 32;
          d.padding_tokens = r % 3;
          d.spare_table_entries = 1 + r % 3;
          v.push_back(d);
          ++r;
        }
      }
      v.push_back(decode(t.format, D, 2, 4, 16, {}, 0, Dist::threshold));
      // mutant 14: sub-2^-126 rescale factors in every mode (s % 3) and delta (s % 4)
      CaseSpec tr = decode(t.format, D, 2, 2, 16, {40, 41, 42, 1031, 0, 3, 129, 64}, 0, Dist::tiny_rescale);
      tr.layout = Layout::shuffled;
      tr.v_block_pad = 16;
      v.push_back(tr);
      // mutant 13 on the writer: FMA-sensitive V groups, padded strides and slot -1 tokens
      CaseSpec fw = writer(t.format, D, 2, 13, 20, Dist::fma_sensitive);
      fw.padding_tokens = 2;
      fw.value_pad = 8;
      fw.layout = Layout::shuffled;
      v.push_back(fw);
    }
  return v;
}

// stress: 32k positions and many sequences, every format and HDIM.
std::vector<CaseSpec> stress() {
  std::vector<CaseSpec> v;
  for (const auto& t : kFormats)
    for (uint32_t D : {128u, 256u}) {
      std::vector<int32_t> lens = {32768, 32767, 4099};
      for (int i = 0; i < 29; ++i) lens.push_back(100 + 97 * i);
      CaseSpec d = decode(t.format, D, 2, 4, D == 128 ? 16 : 32, lens, 0,
                          D == 128 ? Dist::adversarial_skip : Dist::gaussian);
      d.layout = Layout::shuffled;
      v.push_back(d);
      CaseSpec w = writer(t.format, D, 2, 16, 32768, Dist::student_t);
      w.layout = Layout::shuffled;
      w.padding_tokens = 100;
      v.push_back(w);
    }
  return v;
}

// pools: blocks of pools of production size (cases/large_pool.h, docs/golden-schema.md): per
// format a writer case and a decode pair whose blocks straddle 2^31, 2^32 and 2^33 bytes of both
// pools (the V block padded to the K block's size, so both pools pass 2^33 bytes at the same
// ids), and a writer case at the largest int32 block id of a 2^31-block pool (tight V).
std::vector<CaseSpec> pools() {
  std::vector<CaseSpec> v;
  const uint32_t dims[3] = {128, 256, 128};
  for (int i = 0; i < kNumFormats; ++i) {
    const FormatTraits& t = kFormats[i];
    const uint32_t D = dims[i], B = 16, n = D;  // one kv head
    const uint32_t k_block = B * n * 2, tight_v = B * n * t.bits / 8 + B * n / kGroupSize;
    CaseSpec w = writer(t.format, D, 1, B, 12 * B, Dist::gaussian);
    w.pool = PoolPlacement::beyond_4g;
    w.layout = Layout::shuffled;
    w.padding_tokens = 2;
    w.v_block_pad = k_block - tight_v;
    v.push_back(w);
    CaseSpec d = decode(t.format, D, 1, 4, B, {37, 100, 3, 0}, i == 1 ? 50 : 0, Dist::gaussian);
    d.pool = PoolPlacement::beyond_4g;
    d.layout = Layout::shuffled;
    d.v_block_pad = k_block - tight_v;
    v.push_back(d);
  }
  CaseSpec m = writer(Format::turbo2v, 16, 1, 1, 24, Dist::gaussian);
  m.pool = PoolPlacement::max_id;
  m.layout = Layout::shuffled;
  v.push_back(m);
  return v;
}

// flags: what the other suites cannot see for certain (docs/mutants.md, "Build-flag mutants";
// docs/variants.md, "Coverage"). Per format:
// - a writer case whose every V group changes its scale byte when the scale's quotient and
//   sqrt(nsq) are one ulp off (-prec-div=false, -prec-sqrt=false), half of the groups for an
//   error up, half down; 2 kv heads x 16 tokens = 256 groups;
// - a writer case of the step_sensitive groups (cases/step_groups.h): every writer coverage entry;
// - per HDIM, a Gaussian decode case searched until it observes every decoder entry that
//   ordinary values can reach, and a tiny_rescale one searched for the entries of EXPF's split
//   path (the halving and squaring steps, the unsplit EXPF and flush-to-zero), and a
//   subnormal_rescale one, on which flush-to-zero and the unsplit EXPF differ (they write the
//   same bits on every other case).
// The decoder entries only EXPF's split path below y = -126 can show (tiny_rescale cases).
bool split_path_entry(const std::string& name) {
  return name.find("d-expf-half") != std::string::npos ||
         name.find("d-expf-square") != std::string::npos || name == "expf-no-split" || name == "ftz";
}

// The FMA sites of o's updates: a fused product shows only where the contract's sum cancels
// exactly (cancelling cases).
bool o_fusion_entry(const std::string& name) {
  return name == "nvcc-fmad" || (name.rfind("fma:", 0) == 0 && name.find("-o-") != std::string::npos) ||
         name == "fma:batch-ev";
}

// The entries whose change reaches the output only through l, 1/l, o*inv or an unrounded o*eo
// in a single: an ulp of the row's scale, seen where some element sits at a bf16 rounding
// point, so by many rows (about 1 element in 2^16 per ulp).
bool row_scale_entry(const std::string& name) {
  for (const char* s : {"d-l-mul", "d-l-add", "d-inv-div", "d-out-mul"})
    if (name.find(s) != std::string::npos) return true;
  return name == "fma:batch-l" || name == "fma:single-l" || name.rfind("fma:merge-l", 0) == 0 ||
         name.rfind("fma:single-o", 0) == 0;
}

// The score pair's products are exact for bf16 q and k unless one overflows (overflow_pair).
bool pair_fusion_entry(const std::string& name) { return name.rfind("fma:pair", 0) == 0; }

// A decode spec searched against the coverage entries `pick` selects (CaseSpec::search_attempts).
CaseSpec searched(CaseSpec d, uint32_t attempts, bool (*pick)(const std::string&)) {
  d.search_attempts = attempts;
  for (const Variant& e : coverage_entries(CaseKind::decode))
    if (pick(e.name)) d.observe.push_back(e.name);
  return d;
}

std::vector<CaseSpec> flags() {
  std::vector<CaseSpec> v;
  for (const auto& t : kFormats) {
    CaseSpec w = writer(t.format, 128, 2, 16, 16, Dist::rounding_sensitive);
    w.layout = Layout::shuffled;
    v.push_back(w);
    CaseSpec s = writer(t.format, 128, 2, 16, 16, Dist::step_sensitive);
    s.layout = Layout::shuffled;
    v.push_back(s);
    for (uint32_t D : {128u, 256u}) {
      const std::vector<int32_t> lens = {61, 45, 37, 50, 29, 64, 53, 40, 9, 17, 33, 25,
                                         57, 12, 48, 21, 64, 31, 44, 16, 27, 38, 55, 62};
      CaseSpec d = decode(t.format, D, 2, 4, 16, lens, 0, Dist::gaussian);
      d.layout = Layout::shuffled;
      v.push_back(searched(d, 16, [](const std::string& n) {
        return !split_path_entry(n) && !o_fusion_entry(n) && !row_scale_entry(n) &&
               !pair_fusion_entry(n);
      }));
      std::vector<int32_t> short_lens;  // 17, 24: singles only; 64: two batches per warp
      for (int i = 0; i < 48; ++i) short_lens.push_back(i % 3 == 0 ? 64 : i % 3 == 1 ? 24 : 17);
      CaseSpec r = decode(t.format, D, 1, 16, 16, short_lens, 0, Dist::rising_scores);
      v.push_back(searched(r, 40, row_scale_entry));
      const int32_t tie = int32_t(kLTieLength);  // batches, merges (blocks of 16); singles (2)
      v.push_back(decode(t.format, D, 1, 1, 16, {tie, tie, tie}, 0, Dist::l_tie));
      v.push_back(decode(t.format, D, 1, 1, 2, {tie}, 0, Dist::l_tie));
      CaseSpec o = decode(t.format, D, 1, 2, 16, {12, 13}, 0, Dist::overflow_pair);
      v.push_back(searched(o, 2, pair_fusion_entry));
      CaseSpec c = decode(t.format, D, 2, 2, 16, {64, 40, 29, 57, 16, 33, 48, 21, 64, 24, 40, 64},
                          0, Dist::cancelling);
      v.push_back(searched(c, 24, o_fusion_entry));
      CaseSpec tr = decode(t.format, D, 2, 2, 16, {40, 41, 42, 64}, 0, Dist::tiny_rescale);
      v.push_back(searched(tr, 40, split_path_entry));
      v.push_back(decode(t.format, D, 2, 2, 16, {40, 41, 42, 64}, 0, Dist::subnormal_rescale));
    }
  }
  return v;
}

}  // namespace

std::vector<CaseSpec> tell_apart_specs(const std::vector<std::string>& rivals, CaseKind kind,
                                       Format format, uint32_t hdim, uint32_t attempts) {
  std::vector<CaseSpec> v;
  for (CaseSpec s : flags()) {
    if (s.kind != kind || s.format != format || (kind == CaseKind::decode && s.head_dim != hdim))
      continue;
    s.search_attempts = std::max(s.search_attempts, attempts);
    s.observe.clear();
    s.tell_apart = rivals;
    v.push_back(std::move(s));
  }
  return v;
}

std::vector<CaseSpec> suite_specs(const std::string& name) {
  if (name == "smoke") return smoke();
  if (name == "standard") return standard();
  if (name == "stress") return stress();
  if (name == "models") return models_suite(builtin_model_table());
  if (name == "pools") return pools();
  if (name == "flags") return flags();
  throw std::invalid_argument("unknown suite '" + name + "'; allowed: smoke, standard, stress, models, pools, flags");
}

}  // namespace tqref::cases
