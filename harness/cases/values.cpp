#include "cases/values.h"

#include <stdexcept>
#include <string>

#include "tqref/numeric.h"

namespace tqref::cases {

uint16_t to_bf16(double x) { return f32_to_bf16(float(x)); }

// hi = top 8 significant bits, mid = next 8, lo = the rest (truncation keeps signs equal).
void split3(float x, uint16_t out[3]) {
  const uint16_t hi = uint16_t(f32_bits(x) >> 16);
  const float r1 = x - bf16_to_f32(hi);
  const uint16_t mid = uint16_t(f32_bits(r1) >> 16);
  const float r2 = r1 - bf16_to_f32(mid);
  out[0] = hi;
  out[1] = mid;
  out[2] = uint16_t(f32_bits(r2) >> 16);
  if (bf16_to_f32(out[0]) + bf16_to_f32(out[1]) + bf16_to_f32(out[2]) != x ||
      (f32_bits(r2) & 0xFFFF) != 0)
    throw std::logic_error("split3: " + std::to_string(x) + " is not a sum of three bf16");
}

namespace {

// Channels (element indices of a token row) that carry outliers: a fixed, sparse set.
bool outlier_channel(uint32_t e) { return e % 37 == 5; }

// One V group of a special kind (docs/spec.md section 7: zero, NaN, Inf, huge element, fp8 underflow and
// saturation of the scale).
void special_group(Rng& rng, uint32_t kind, uint16_t* x) {
  for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = to_bf16(rng.gaussian());
  const uint32_t at = uint32_t(rng.below(kGroupSize));
  switch (kind) {
    case 0: break;                                                    // ordinary group
    case 1: for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = (i & 1) ? 0x8000 : 0; break;  // +-0
    case 2: x[at] = rng.below(2) ? 0x7FC0 : 0xFFA1; break;            // one NaN
    case 3: x[at] = 0x7F80; break;                                    // +Inf
    case 4: x[at] = 0xFF80; break;                                    // -Inf
    case 5: x[at] = rng.below(2) ? 0x7F7F : 0xFF7F; break;            // +-max finite bf16
    case 6:                                                           // scale underflows to 0
      for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = to_bf16(1e-6 * rng.gaussian());
      break;
    case 7:                                                           // scale saturates at 448
      for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = to_bf16(3e4 * rng.gaussian());
      break;
    case 8:                                                           // fp8 subnormal scale
      for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = to_bf16(5e-3 * rng.gaussian());
      break;
    case 9:                                                           // amax <= 1e-12: inv = 1
      for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = to_bf16(1e-13 * rng.gaussian());
      break;
    default:                                                          // bf16 subnormals
      for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = uint16_t(rng.below(0x80) | (rng.below(2) << 15));
      break;
  }
}
constexpr uint32_t kSpecialKinds = 11;

}  // namespace

void fill_k_row(Rng& rng, Dist dist, uint32_t row, std::span<uint16_t> out) {
  (void)row;
  for (uint32_t e = 0; e < out.size(); ++e) {
    switch (dist) {
      case Dist::student_t: out[e] = to_bf16(rng.student_t(3)); break;
      case Dist::outlier_channels:
        out[e] = to_bf16(rng.gaussian() * (outlier_channel(e) ? 50.0 : 1.0));
        break;
      case Dist::special_groups:  // K is copied bit for bit: any pattern, NaN payloads included
        out[e] = uint16_t(rng.next() & 0xFFFF);
        break;
      default: out[e] = to_bf16(rng.gaussian()); break;
    }
  }
}

void fill_v_row(Rng& rng, Dist dist, uint32_t row, std::span<uint16_t> out) {
  const uint32_t groups = uint32_t(out.size() / kGroupSize);
  for (uint32_t g = 0; g < groups; ++g) {
    uint16_t* x = out.data() + g * kGroupSize;
    switch (dist) {
      case Dist::student_t:
        for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = to_bf16(rng.student_t(3));
        break;
      case Dist::outlier_channels:
        for (uint32_t i = 0; i < kGroupSize; ++i)
          x[i] = to_bf16(rng.gaussian() * (outlier_channel(g * kGroupSize + i) ? 50.0 : 1.0));
        break;
      case Dist::constant_groups: {
        const uint16_t c = to_bf16(rng.gaussian());
        for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = c;
        break;
      }
      case Dist::special_groups: special_group(rng, (row * 7 + g) % kSpecialKinds, x); break;
      default:
        for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = to_bf16(rng.gaussian());
        break;
    }
  }
}

void poison_k(Rng& rng, std::span<uint8_t> bytes) {
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    // exponent all ones: +-Inf (mantissa 0) or NaN; any read turns a score into Inf/NaN
    const uint16_t v = uint16_t(0x7F80 | (rng.next() & 0x807F));
    bytes[i] = uint8_t(v & 0xFF);
    bytes[i + 1] = uint8_t(v >> 8);
  }
}

void poison_v_codes(Rng& rng, std::span<uint8_t> bytes) {
  for (auto& b : bytes) b = uint8_t(rng.next());
}

void poison_v_scales(Rng& rng, std::span<uint8_t> bytes) {
  for (auto& b : bytes) b = rng.below(2) ? 0x7F : 0xFF;  // fp8 E4M3 NaN
}

void poison_v_pool(Rng& rng, std::span<uint8_t> pool, const CacheGeometry& g, uint32_t bits) {
  (void)bits;  // the code section is random bytes whatever the width
  const uint64_t scale_bytes = g.v_scale_row_bytes() * g.block_size;
  for (uint64_t b = 0; b < g.num_blocks; ++b) {
    uint8_t* blk = pool.data() + b * g.v_block_stride_bytes;
    poison_v_codes(rng, {blk, g.v_block_stride_bytes});  // codes and padding: random bytes
    poison_v_scales(rng, {blk + g.v_data_section_bytes, scale_bytes});
  }
}

void poison_bf16(Rng& rng, std::span<uint16_t> elems) {
  for (auto& e : elems) e = uint16_t(0x7FC0 | (rng.next() & 0x803F));  // NaN patterns
}

}  // namespace tqref::cases
