// Writer cases: poisoned pools, strided token rows with poisoned padding, slot -1 tokens, and the
// model's expected pools.
#include <algorithm>

#include "cases/builders.h"
#include "cases/fma_groups.h"
#include "cases/mutant_models.h"
#include "cases/values.h"
#include "tqref/contract.h"
#include "tqref/quantize.h"
#include "tqref/writer.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

// The launch parameters of a writer spec; a spec that breaks a rule of the contract throws
// ContractError before anything is allocated.
WriterParams writer_params(const CaseSpec& s) {
  const FormatTraits& t = traits(s.format);
  WriterParams p;
  p.num_kv_heads = s.num_kv_heads;
  p.head_dim = s.head_dim;
  p.block_size = s.block_size;
  const uint32_t n = s.num_kv_heads * s.head_dim;
  p.key_stride = n + s.key_pad;
  p.value_stride = n + s.value_pad;
  p.k_block_stride_bytes = uint64_t(n) * 2 * s.block_size;
  p.v_data_section_bytes = uint64_t(s.block_size) * n * t.bits / 8 + s.v_data_pad;
  p.v_block_stride_bytes =
      p.v_data_section_bytes + uint64_t(s.block_size) * (n / kGroupSize) + s.v_block_pad;
  require("writer spec", check_writer_params(s.format, p));
  return p;
}

}  // namespace

GoldenCase build_writer_from_tokens(const CaseSpec& spec, const std::string& name, uint64_t seed,
                                    uint32_t num_blocks, std::vector<int64_t> slots,
                                    const std::vector<uint16_t>& k_rows,
                                    const std::vector<uint16_t>& v_rows) {
  Rng rng(seed ^ 0x5752495445520000ull);  // "WRITER": poison stream separate from the values
  GoldenCase c;
  c.name = name;
  c.kind = CaseKind::writer;
  c.format = spec.format;
  c.threshold = spec.threshold;
  c.seed = seed;
  c.distribution = dist_name(spec.dist);
  WriterCase& w = c.w;
  w.p = writer_params(spec);
  w.num_blocks = num_blocks;
  const uint32_t n = spec.num_kv_heads * spec.head_dim;
  // slot -1 padding tokens at random places among the real ones; their rows hold values too
  const uint32_t real = uint32_t(slots.size());
  std::vector<int64_t> order;
  std::vector<uint32_t> src;  // token -> index into k_rows/v_rows, or UINT32_MAX for padding
  uint32_t pad_left = spec.padding_tokens, next = 0;
  while (next < real || pad_left > 0) {
    const bool pad = pad_left > 0 && (next == real || rng.below(real + spec.padding_tokens) < spec.padding_tokens);
    if (pad) {
      order.push_back(pad_left % 2 ? -1 : -7);  // any negative slot means padding
      src.push_back(UINT32_MAX);
      --pad_left;
    } else {
      order.push_back(slots[next]);
      src.push_back(next++);
    }
  }
  w.num_tokens = uint32_t(order.size());
  w.slot_mapping = order;
  w.key.assign(uint64_t(w.num_tokens) * w.p.key_stride, 0);
  w.value.assign(uint64_t(w.num_tokens) * w.p.value_stride, 0);
  std::vector<uint16_t> junk(n);
  for (uint32_t t = 0; t < w.num_tokens; ++t) {
    uint16_t* kr = w.key.data() + uint64_t(t) * w.p.key_stride;
    uint16_t* vr = w.value.data() + uint64_t(t) * w.p.value_stride;
    if (src[t] == UINT32_MAX) {  // padding token: values the kernel must not store anywhere
      fill_k_row(rng, Dist::gaussian, t, junk);
      std::copy(junk.begin(), junk.end(), kr);
      fill_v_row(rng, Dist::gaussian, t, junk);
      std::copy(junk.begin(), junk.end(), vr);
    } else {
      std::copy_n(k_rows.data() + uint64_t(src[t]) * n, n, kr);
      std::copy_n(v_rows.data() + uint64_t(src[t]) * n, n, vr);
    }
    poison_bf16(rng, {kr + n, w.p.key_stride - n});
    poison_bf16(rng, {vr + n, w.p.value_stride - n});
  }
  const CacheGeometry g{w.p.num_kv_heads, w.p.head_dim, w.p.block_size, num_blocks,
                        w.p.v_block_stride_bytes, w.p.v_data_section_bytes};
  w.k_init.assign(g.k_pool_bytes(), 0);
  w.v_init.assign(g.v_pool_bytes(), 0);
  poison_k(rng, w.k_init);
  poison_v_pool(rng, w.v_init, g, traits(spec.format).bits);
  w.k_expected = w.k_init;
  w.v_expected = w.v_init;
  reshape_and_cache_model(spec.format, w.key, w.value, w.k_expected, w.v_expected, w.slot_mapping,
                          w.p);
  c.exercises = "writer: " + std::to_string(real) + " tokens, " +
                std::to_string(spec.padding_tokens) + " slot<0 tokens" +
                (spec.key_pad || spec.value_pad ? ", padded key/value strides" : "") +
                (spec.v_data_pad || spec.v_block_pad ? ", padded V blocks" : "");
  if (spec.dist == Dist::fma_sensitive) {  // teeth: scale bytes the FMA-contracted writer changes
    std::vector<uint8_t> v(w.v_expected);
    c.exercises += ", " + std::to_string(writer_fma_contract_scales(c, v)) +
                   " V scale bytes change under FMA-contracted nsq/rsq (mutant 13)";
  }
  return c;
}

namespace {

// Teeth of a rounding_sensitive case: the V groups of its stored tokens (v_rows) whose scale byte
// changes when each of the scale's three operations is one ulp up or down (the CPU model of a
// -prec-div=false / -prec-sqrt=false writer that misses by one ulp there), as "op +1/-1: N".
std::string rounding_teeth(const FormatTraits& t, const std::vector<uint16_t>& v_rows) {
  const std::pair<ScaleOp, const char*> ops[] = {
      {ScaleOp::quotient, "sqrt(nsq)/rn"}, {ScaleOp::sqrt_nsq, "sqrt(nsq)"}, {ScaleOp::sqrt_rsq, "sqrt(rsq)"}};
  std::string r;
  for (const auto& [op, what] : ops)
    for (int ulps : {1, -1}) {
      uint64_t n = 0;
      for (size_t g = 0; g + kGroupSize <= v_rows.size(); g += kGroupSize) {
        uint16_t x[kGroupSize];
        std::copy_n(v_rows.data() + g, kGroupSize, x);
        n += quantize_group(t, x).scale_byte != scale_byte_perturbed(t, x, op, ulps);
      }
      r += std::string(r.empty() ? "" : ", ") + what + (ulps > 0 ? " +1 ulp: " : " -1 ulp: ") + std::to_string(n);
    }
  return r;
}

}  // namespace

GoldenCase build_writer_case(const CaseSpec& spec, const std::string& name, uint64_t seed) {
  Rng rng(seed);
  const WriterParams p = writer_params(spec);  // refuses a spec outside the contract first
  const uint32_t n = p.num_kv_heads * p.head_dim, B = p.block_size;
  const uint32_t num_blocks = (spec.num_tokens + B - 1) / B + std::max<uint32_t>(spec.spare_blocks, 1);
  // distinct slots: in order for sequential layout, else a random subset in random order
  std::vector<int64_t> all(uint64_t(num_blocks) * B);
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  if (spec.layout != Layout::sequential)
    for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
  std::vector<int64_t> slots(all.begin(), all.begin() + spec.num_tokens);
  std::vector<uint16_t> k_rows(uint64_t(spec.num_tokens) * n), v_rows(k_rows.size());
  for (uint32_t t = 0; t < spec.num_tokens; ++t) {
    fill_k_row(rng, spec.dist, t, {k_rows.data() + uint64_t(t) * n, n});
    fill_v_row(rng, spec.dist, t, {v_rows.data() + uint64_t(t) * n, n});
    craft_v_row(spec.dist, traits(spec.format), rng, {v_rows.data() + uint64_t(t) * n, n});
  }
  GoldenCase c = build_writer_from_tokens(spec, name, seed, num_blocks, std::move(slots), k_rows,
                                          v_rows);
  c.exercises += std::string(", ") + layout_name(spec.layout) + " slots, " + dist_name(spec.dist) + " values";
  if (spec.dist == Dist::rounding_sensitive)
    c.exercises += "; V scale bytes that change with " + rounding_teeth(traits(spec.format), v_rows) +
                   " (build-flag mutants 25, 26)";
  return c;
}

}  // namespace tqref::cases
