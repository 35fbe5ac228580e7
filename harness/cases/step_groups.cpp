#include "cases/step_groups.h"

#include <cmath>
#include <mutex>

#include "cases/fma_groups.h"
#include "cases/observe.h"
#include "cases/rng.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

using Group = std::array<uint16_t, kGroupSize>;

// bf16 of a float that is exactly representable (the candidates below are built so).
uint16_t bf16(float f) { return static_cast<uint16_t>(f32_bits(f) >> 16); }

// Groups {amax, x, 0, ..., 0}: x * f32(MAX/amax) is the bound BD[j] itself (a -1 step of the
// product or the quotient lowers the code) or the binary32 just below it (+1 raises it). The
// scaled value depends on x/amax only, so amax runs over one binade and x over the binades below.
void near_bound_groups(const FormatTraits& t, std::vector<Group>& out) {
  for (uint32_t j = 0; j + 1 < t.levels; ++j) {
    const float bd = t.bounds[j];
    if (bd == 0.0f) continue;  // the 0.0 bound: see zero_group
    const float below = std::nextafter(bd, -INFINITY);
    int found_at = 0, found_below = 0;
    for (uint32_t ma = 128; ma < 256 && (found_at < 2 || found_below < 2); ++ma) {
      const float amax = float(ma) / 128.0f;
      const float inv = t.max / amax;
      for (int e = 0; e < 10; ++e)
        for (uint32_t mx = 128; mx < 256; ++mx) {
          const float x = std::copysign(float(mx) / 128.0f * std::ldexp(1.0f, -e), bd);
          if (std::fabs(x) > amax) continue;
          const float y = x * inv;
          if (y != bd && y != below) continue;
          int& n = y == bd ? found_at : found_below;
          if (n >= 2) continue;
          ++n;
          Group g{};
          g[0] = bf16(amax);
          g[1] = bf16(x);
          out.push_back(g);
        }
    }
  }
}

// x = +0 scales to +0, on the 0.0 bound every format has: one step down is -2^-149, below it.
// x = -2^-133 (the smallest bf16 subnormal) with amax = 2^17 scales to -2^-149: one step up is -0.
void zero_groups(std::vector<Group>& out) {
  Group a{};
  a[0] = bf16(1.0f);
  out.push_back(a);
  Group b{};
  b[0] = bf16(131072.0f);
  b[1] = 0x8001;
  out.push_back(b);
}

// Negative and positive subnormals only: amax <= 1e-12 keeps inv = 1, so the codes see the
// subnormals themselves, which a flush-to-zero build reads as zeros of either sign.
void subnormal_groups(std::vector<Group>& out) {
  Group g{};
  for (uint32_t i = 0; i < kGroupSize; ++i) g[i] = static_cast<uint16_t>((i % 2 ? 0x8000u : 0u) | (1u + i * 7u));
  out.push_back(g);
}

void searched_groups(const FormatTraits& t, std::vector<Group>& out) {
  Rng rng(0x5E9517u + t.bits);
  Group g;
  for (int i = 0; i < 4; ++i) {
    fma_sensitive_group(t, rng, g.data());
    out.push_back(g);
    rounding_sensitive_group(t, rng, 1, g.data());
    out.push_back(g);
    rounding_sensitive_group(t, rng, -1, g.data());
    out.push_back(g);
  }
  for (int i = 0; i < 8; ++i) {
    for (uint16_t& v : g) v = f32_to_bf16(float(rng.gaussian()));
    out.push_back(g);
  }
}

}  // namespace

std::vector<Group> inverse_scale_sensitive_groups(const FormatTraits& t) {
  std::vector<Group> out;
  auto try_pair = [&](float amax, float x) {
    const float inv = t.max / amax;
    const uint32_t c = code_index(t, x * inv);
    if (code_index(t, x * std::nextafter(inv, INFINITY)) == c &&
        code_index(t, x * std::nextafter(inv, 0.0f)) == c)
      return;
    Group g{};
    g[0] = bf16(amax);
    g[1] = bf16(x);
    out.push_back(g);
  };
  // (1) A nonzero bound (|y| >= 0.25): while inv and y are normal, y depends on x/amax only, so
  // amax in [1, 2) and x/amax down to 2^-6 stand for every binade.
  for (uint32_t ma = 128; ma < 256; ++ma)
    for (int e = 0; e <= 6; ++e)
      for (uint32_t mx = 128; mx < 256; ++mx)
        for (float sign : {1.0f, -1.0f}) {
          const float amax = float(ma) / 128.0f, x = sign * float(mx) / 128.0f * std::ldexp(1.0f, -e);
          if (std::fabs(x) <= amax) try_pair(amax, x);
        }
  // (1b) amax in the top binade, where MAX/amax may be subnormal: every x.
  for (uint32_t ma = 0; ma < 128; ++ma) {
    const float amax = bf16_to_f32(uint16_t(254u << 7 | ma));
    for (uint32_t xb = 0; xb < 0x7F80u; ++xb)
      for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) try_pair(amax, bf16_to_f32(uint16_t(sign | xb)));
  }
  // (2) The 0.0 bound: a code changes only where x*inv rounds to -0 on one side and to -2^-149 on
  // the other, |x * inv| near 2^-150: for every amax > 1e-12, the bf16 x around 2^-150 / inv.
  for (uint32_t ab = 0x2B8Du; ab < 0x7F80u; ++ab) {  // 0x2B8D: the first bf16 above 1e-12
    const float amax = bf16_to_f32(uint16_t(ab)), inv = t.max / amax;
    const uint16_t at = f32_to_bf16(std::ldexp(1.0f, -150) / inv);
    for (int d = -4; d <= 4; ++d) {
      const int xb = int(at) + d;
      if (xb <= 0 || xb >= 0x7F80 || bf16_to_f32(uint16_t(xb)) > amax) continue;
      for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) try_pair(amax, bf16_to_f32(uint16_t(sign | xb)));
    }
  }
  return out;
}

namespace {

bool group_changes(const FormatTraits& t, const Group& x, const Variant& v) {
  QuantizedGroup a, b;
  quantize_groups(t, x.data(), 1, &a);
  quantize_groups(t, x.data(), 1, &b, v);
  if (a.scale_byte != b.scale_byte) return true;
  for (uint32_t i = 0; i < kGroupSize; ++i)
    if (a.codes[i] != b.codes[i]) return true;
  return false;
}

std::vector<SensitiveGroup> search(const FormatTraits& t) {
  std::vector<Group> candidates;
  zero_groups(candidates);
  subnormal_groups(candidates);
  near_bound_groups(t, candidates);
  for (const Group& g : inverse_scale_sensitive_groups(t)) candidates.push_back(g);
  searched_groups(t, candidates);
  std::vector<SensitiveGroup> chosen;
  for (const Variant& v : coverage_entries(CaseKind::writer))
    for (const Group& g : candidates)
      if (group_changes(t, g, v)) {
        bool have = false;
        for (SensitiveGroup& c : chosen)
          if (c.x == g) {
            c.entry += ", " + v.name;
            have = true;
          }
        if (!have) chosen.push_back({g, v.name});
        break;
      }
  return chosen;
}

}  // namespace

const std::vector<SensitiveGroup>& step_sensitive_groups(const FormatTraits& t) {
  static std::once_flag once[kNumFormats];
  static std::vector<SensitiveGroup> groups[kNumFormats];
  const int i = int(&t - kFormats);
  std::call_once(once[i], [&] { groups[i] = search(t); });
  return groups[i];
}

}  // namespace tqref::cases

namespace tqref::cases {

namespace {

bool is_bf16_midpoint(float v) { return (f32_bits(v) & 0xFFFFu) == 0x8000u; }

}  // namespace

// Element values CB[c] * gs(sb): one extreme element (code levels-1, which fixes amax and so the
// scaling) and 15 elements of code c; the writer must give back c and sb.
bool craft_group(const FormatTraits& t, uint32_t c, uint8_t sb, uint16_t* out) {
  const float s = fp8e4m3_to_f32(sb);
  out[0] = f32_to_bf16(t.codebook[t.levels - 1] * s);
  for (uint32_t i = 1; i < kGroupSize; ++i) out[i] = f32_to_bf16(t.codebook[c] * s);
  QuantizedGroup q;
  quantize_groups(t, out, 1, &q);
  if (q.scale_byte != sb) return false;
  for (uint32_t i = 1; i < kGroupSize; ++i)
    if (q.codes[i] != c) return false;
  return true;
}

bool midpoint_group(const FormatTraits& t, uint64_t pick, uint16_t* out) {
  std::vector<std::pair<uint32_t, uint8_t>> found;
  for (uint32_t c = 0; c < t.levels; ++c)
    for (uint32_t sb = 1; sb < 0x7F; ++sb)
      if (is_bf16_midpoint(dequantize_code(t, c, uint8_t(sb)))) found.emplace_back(c, uint8_t(sb));
  for (size_t k = 0; k < found.size(); ++k) {
    const auto [c, sb] = found[(pick + k) % found.size()];
    if (craft_group(t, c, sb, out)) return true;
  }
  return false;
}

}  // namespace tqref::cases
