// The `models` suite: the launches a serving engine makes for real models (docs/models.md), one
// group of specs per entry of the model table (model_table.h).
#include <algorithm>

#include "cases/model_table.h"
#include "cases/suites.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

// Cache-element budget (tokens x num_kv_heads x head_dim) of one long decode spec: about 2 MB of
// K per pool copy, so that the whole suite stays near 100 MB and generates in seconds. Long and
// sliding-window specs of larger geometries keep the model's head_dim and GQA ratio and use
// fewer kv heads (their `exercises` attribute says how many).
constexpr uint64_t kLongSpecElements = uint64_t(1) << 20;
// Sequence length of the long full-attention specs: past 4096, not a multiple of a block size.
constexpr int32_t kLongLength = 4099;
constexpr uint32_t kBlockSizes[3] = {16, 32, 64};

CaseSpec base(const ModelGeometry& m, size_t k, CaseKind kind) {
  CaseSpec s;
  s.kind = kind;
  s.label = m.name;
  s.format = kFormats[k % kNumFormats].format;
  s.head_dim = m.head_dim;
  s.num_kv_heads = m.num_kv_heads;
  s.q_per_kv = m.gqa_ratio();
  return s;
}

// Sequence lengths clipped to the model's context.
std::vector<int32_t> lengths(const ModelGeometry& m, std::vector<int32_t> want) {
  for (int32_t& L : want) L = std::min<int32_t>(L, int32_t(std::min<uint32_t>(m.context, INT32_MAX)));
  return want;
}

// Fits spec s (its sequences set) into the budget: fewer kv heads (at least 1), the model's GQA
// ratio and head_dim kept; the label then says "<model>-kv<used>of<model's>".
void fit_budget(const ModelGeometry& m, CaseSpec& s) {
  uint64_t tokens = 0;
  for (int32_t L : s.seq_lens) tokens += uint64_t(L);
  const uint64_t fit = kLongSpecElements / (tokens * m.head_dim);
  s.num_kv_heads = uint32_t(std::clamp<uint64_t>(fit, 1, m.num_kv_heads));
  if (s.num_kv_heads < m.num_kv_heads)
    s.label += "-kv" + std::to_string(s.num_kv_heads) + "of" + std::to_string(m.num_kv_heads);
}

void add_model(const ModelGeometry& m, size_t k, std::vector<CaseSpec>& v) {
  // Writer: the model's whole token row (num_kv_heads x head_dim), inside the contract for any
  // head_dim that is a multiple of 16 (docs/spec.md section 4): judged bit for bit.
  CaseSpec w = base(m, k, CaseKind::writer);
  w.block_size = kBlockSizes[k % 3];
  w.num_tokens = 2 * w.block_size + 5;
  w.padding_tokens = 2;
  w.layout = Layout::shuffled;
  w.key_pad = (k % 2) * 4;
  w.value_pad = (k % 3) * 3;
  w.v_data_pad = (k % 2) * 8;
  w.dist = k % 3 == 1 ? Dist::special_groups : k % 3 == 2 ? Dist::outlier_channels : Dist::gaussian;
  v.push_back(w);
  // Decode with the model's head counts: empty, single, batch-boundary and multi-block sequences.
  CaseSpec d = base(m, k, CaseKind::decode);
  d.block_size = kBlockSizes[(k + 1) % 3];
  d.seq_lens = lengths(m, {0, 1, 5, 37, 300});
  d.layout = k % 2 ? Layout::shuffled : Layout::shared;
  d.q_pad = (k % 2) * 8;
  d.padding_tokens = 1;
  d.dist = k % 3 == 0 ? Dist::gaussian : k % 3 == 1 ? Dist::adversarial_skip : Dist::student_t;
  v.push_back(d);
  // Each sliding window of the model: sequences just past it (and, for small windows, twice it).
  for (uint32_t win : m.sliding_windows) {
    CaseSpec s = base(m, k + 1, CaseKind::decode);
    s.block_size = kBlockSizes[(k + 2) % 3];
    s.sliding_window = win;
    s.seq_lens = lengths(m, win <= 1024 ? std::vector<int32_t>{3, int32_t(win) + 3, int32_t(2 * win) + 1}
                                        : std::vector<int32_t>{int32_t(win) + 3});
    fit_budget(m, s);
    s.layout = Layout::shuffled;
    v.push_back(s);
  }
  // Full attention over more than 4096 positions, where the model's context allows it.
  // (every third model: the long specs dominate the suite's size)
  if (m.sliding_windows.empty() && m.context > uint32_t(kLongLength) && k % 3 == 0) {
    CaseSpec l = base(m, k + 2, CaseKind::decode);
    l.block_size = kBlockSizes[k % 3];
    l.seq_lens = {kLongLength, 2};
    fit_budget(m, l);
    l.layout = Layout::shuffled;
    v.push_back(l);
  }
}

}  // namespace

std::vector<CaseSpec> models_suite(const std::vector<ModelGeometry>& table) {
  std::vector<CaseSpec> v;
  for (size_t k = 0; k < table.size(); ++k) add_model(table[k], k, v);
  return v;
}

}  // namespace tqref::cases
