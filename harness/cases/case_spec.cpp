#include "cases/case_spec.h"

#include <cctype>
#include <cstdio>

#include "tqref/numeric.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {
constexpr const char* kDistNames[kNumDists] = {"gaussian",       "student_t",        "outlier_channels",
                                               "constant_groups", "special_groups",  "adversarial_skip",
                                               "threshold",      "ties",             "tiny_rescale",
                                               "fma_sensitive",  "rounding_sensitive",
                                               "step_sensitive", "cancelling",
                                               "overflow_pair",  "rising_scores",
                                               "l_tie",          "subnormal_rescale"};
constexpr const char* kLayoutNames[3] = {"sequential", "shuffled", "shared"};
}  // namespace

const char* dist_name(Dist d) { return kDistNames[int(d)]; }
bool parse_dist(const std::string& s, Dist* d) {
  for (int i = 0; i < kNumDists; ++i)
    if (s == kDistNames[i]) {
      *d = Dist(i);
      return true;
    }
  return false;
}
std::vector<int32_t> built_seq_lens(const CaseSpec& s) {
  return s.dist == Dist::threshold ? std::vector<int32_t>{16, 32} : s.seq_lens;
}

std::string dist_names_list() {
  std::string r;
  for (int i = 0; i < kNumDists; ++i) r += std::string(i ? ", " : "") + kDistNames[i];
  return r;
}
const char* layout_name(Layout l) { return kLayoutNames[int(l)]; }
bool parse_layout(const std::string& s, Layout* l) {
  for (int i = 0; i < 3; ++i)
    if (s == kLayoutNames[i]) {
      *l = Layout(i);
      return true;
    }
  return false;
}

std::string spec_name(const CaseSpec& s, uint64_t index) {
  char idx[16];
  std::snprintf(idx, sizeof idx, "%04llu", static_cast<unsigned long long>(index));
  std::string r = std::string(idx) + "_" + kind_name(s.kind) + "_" + traits(s.format).name + "_d" +
                  std::to_string(s.head_dim) + "_kv" + std::to_string(s.num_kv_heads);
  if (s.kind == CaseKind::decode) r += "_gqa" + std::to_string(s.q_per_kv);
  r += "_bs" + std::to_string(s.block_size);
  if (s.kind == CaseKind::writer) {
    r += "_t" + std::to_string(s.num_tokens);
  } else {
    // the threshold distribution fixes its own sequences (build_decode.cpp)
    const std::vector<int32_t> lens = s.dist == Dist::threshold ? std::vector<int32_t>{16, 32} : s.seq_lens;
    r += "_L";
    for (size_t i = 0; i < lens.size() && i < 4; ++i) {
      if (i) r.push_back('-');
      r.append(std::to_string(lens[i]));
    }
    if (lens.size() > 4) r += "-x" + std::to_string(lens.size());
    r += "_win" + std::to_string(s.sliding_window);
  }
  if (s.padding_tokens) r += "_pad" + std::to_string(s.padding_tokens);
  r += std::string("_") + layout_name(s.layout);
  if (s.key_pad || s.value_pad || s.q_pad) r += "_stridepad";
  if (s.v_data_pad || s.v_block_pad) r += "_vpad";
  r += std::string("_") + dist_name(s.dist);
  if (s.pool == PoolPlacement::beyond_4g) r += "_pool_beyond4g";
  if (s.pool == PoolPlacement::max_id) r += "_pool_maxid";
  if (!s.label.empty()) {  // HDF5 group names: keep letters, digits, '-', '.', '_'
    r += "_";
    for (char ch : s.label) r += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ? ch : '_';
  }
  if (f32_bits(s.threshold) != f32_bits(kSparseVThreshold)) {
    char thr[24];
    std::snprintf(thr, sizeof thr, "_thr0x%08x", f32_bits(s.threshold));
    r += thr;
  }
  return r;
}

}  // namespace tqref::cases
